#!/usr/bin/env bash
# The series-per-host figures the docs state come from here: `mesh-host run`
# with N healthy files (10, 1,000, 10,000), three applies, under
# --metrics-resources all and failing; the series and bytes of /metrics are
# checked against the tables of docs/metrics.md and docs/fleet.md (series
# exactly, bytes within 3 %: timestamps and durations change a few digits)
# and the fixed count against fleet.md's sentence. A change to the metrics
# that moves a figure fails here until the docs say the new one.
set -euo pipefail
ROOTDIR=$PWD
[ -x "$ROOTDIR/host/mesh-host" ] || ROOTDIR=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$ROOTDIR/host/mesh-host
[ -x "$BIN" ] || BIN=$ROOTDIR/bazel-bin/host/mesh-host
DOCS=$ROOTDIR/docs
[ -f "$DOCS/metrics.md" ] || DOCS=$(cd "$(dirname "$0")/../.." && pwd)/docs
T=$(mktemp -d "${TEST_TMPDIR:-/tmp}/mesh-host-series.XXXXXX")
HOST=
trap '[ -z "$HOST" ] || kill -KILL $HOST 2>/dev/null || true; rm -rf "$T"' EXIT
fails=0
check() { if eval "$2"; then echo "ok   - $1"; else echo "FAIL - $1"; fails=$((fails + 1)); fi; }
# Bounded at 120 s a wait: it runs beside other tests, where an unoptimised
# build applying 10,000 files is several times slower than alone.
until_true() {
  local end=$((SECONDS + 120))
  while [ $SECONDS -lt $end ]; do eval "$1" && return 0; sleep 0.05; done
  return 1
}

# measure N MODE: sets SERIES and BYTES.
measure() {
  local n=$1 mode=$2 d=$T/$1-$2 a
  mkdir -p "$d/root"
  python3 -c '
import json, sys
n = int(sys.argv[1])
print(json.dumps({"machine": "m", "generation": 1, "resources": [
    {"id": f"f{i}", "kind": "file", "path": f"/srv/f{i}", "content": "x\n"} for i in range(n)]}))' "$n" > "$d/d.json"
  "$BIN" run --declaration "$d/d.json" --root "$d/root" --state-dir "$d/state" --machine m \
    --listen 127.0.0.1:0 --interval 1h --metrics-resources "$mode" 2> "$d/log" &
  HOST=$!
  until_true 'grep -q "^apply ok" "$d/log"'
  for a in 2 3; do
    kill -HUP $HOST
    until_true '[ "$(grep -c "^apply ok" "$d/log")" -ge '$a' ]'
  done
  curl -sf "http://$(grep -o 'listening on [0-9.:]*' "$d/log" | cut -d' ' -f3)/metrics" > "$d/metrics"
  kill -TERM $HOST; wait $HOST || true; HOST=
  SERIES=$(grep -vc '^#' "$d/metrics")
  BYTES=$(wc -c < "$d/metrics")
}
near() { python3 -c 'import sys; a, b = int(sys.argv[1]), int(sys.argv[2]); sys.exit(abs(a - b) > 0.03 * b)' "$1" "$2"; }

for n in 10 1000 10000; do
  measure $n all; all_s=$SERIES all_b=$BYTES
  measure $n failing; fail_s=$SERIES fail_b=$BYTES
  echo "       $n files: all $all_s series, $all_b bytes; failing $fail_s series, $fail_b bytes"
  shown=$(python3 -c 'import sys; print(f"{int(sys.argv[1]):,}")' "$n")
  # docs/metrics.md: | 1,000 | 1,077 | 88,216 | 77 | 6,123 |
  row=$(grep -E "^\| $shown \| " "$DOCS/metrics.md" | head -1 | tr -d ', ')
  IFS='|' read -r _ _ m_all_s m_all_b m_fail_s m_fail_b _ <<<"$row"
  check "metrics.md, $shown files: series $m_all_s / $m_fail_s as measured" \
    '[ "$m_all_s" = "$all_s" ] && [ "$m_fail_s" = "$fail_s" ]'
  check "metrics.md, $shown files: bytes $m_all_b / $m_fail_b within 3 % of $all_b / $fail_b" \
    'near "$all_b" "$m_all_b" && near "$fail_b" "$m_fail_b"'
  # docs/fleet.md: | 1,000 | 1,077, 88 KB | 77, 6 KB |
  row=$(grep -E "^\| $shown \| " "$DOCS/fleet.md" | head -1)
  f_all_s=$(sed -E 's/^\| [0-9,]+ \| ([0-9,]+),.*/\1/' <<<"$row" | tr -d ,)
  f_fail_s=$(sed -E 's/.*\| ([0-9,]+), [0-9]+ KB \|$/\1/' <<<"$row" | tr -d ,)
  check "fleet.md, $shown files: series $f_all_s / $f_fail_s as measured" \
    '[ "$f_all_s" = "$all_s" ] && [ "$f_fail_s" = "$fail_s" ]'
done
check "fleet.md's fixed series per host ($fail_s) as measured" \
  'grep -q "A host exports $fail_s fixed series" "$DOCS/fleet.md"'
# fleet.md's arithmetic (hosts x resources) from the same measurement: a
# host has $fail_s fixed series, and one more per resource under `all`.
arithmetic() {
  python3 - "$DOCS/fleet.md" "$fail_s" "$all_s" <<'PY'
import re, sys
doc, fixed, all_10k = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
per_resource = (all_10k - fixed) / 10000
rows = re.findall(r"^\| ([\d,]+) × ([\d,]+) \| ([\d.]+) M[^|]*\| ([\d.]+) M[^|]*\|$", open(doc).read(), re.M)
bad = []
for hosts, res, all_m, fail_m in rows:
    hosts, res = int(hosts.replace(",", "")), int(res.replace(",", ""))
    for shown, series in ((all_m, hosts * (fixed + per_resource * res)), (fail_m, hosts * fixed)):
        exact = series / 1e6
        decimals = len(shown.split(".")[1]) if "." in shown else 0
        if abs(float(shown) - exact) > max(0.5 * 10 ** -decimals, 0.01 * exact):
            bad.append(f"{hosts} x {res}: {shown} M shown, {exact:.3f} M measured")
print("; ".join(bad) or f"{len(rows)} rows")
sys.exit(1 if bad or len(rows) < 4 else 0)
PY
}
check "fleet.md's arithmetic, hosts x resources, from these series ($(arithmetic || true))" 'arithmetic >/dev/null'
echo "series figures: $fails failed"
[ "$fails" = 0 ]
