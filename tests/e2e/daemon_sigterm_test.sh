#!/usr/bin/env bash
# SIGTERM arrives while `mesh-host run` is in the middle of an apply of many
# files: the apply finishes (every file whole, the record parseable and
# complete), the daemon exits 0. Also: SIGINT does the same when idle.
set -euo pipefail
BIN=$PWD/host/mesh-host
T=$(mktemp -d /tmp/mesh-host-sigterm.XXXXXX)
HOST=
trap '[ -z "$HOST" ] || kill -KILL $HOST 2>/dev/null; rm -rf "$T"' EXIT
python3 - "$T/decl.json" <<'PY'
import json, sys
res = [{"id": f"f{i}", "kind": "file", "path": f"/data/d{i // 100:03d}/f{i:05d}", "content": f"{i}:" + "x" * 16384}
       for i in range(3000)]
json.dump({"machine": "t", "generation": 1, "resources": res}, open(sys.argv[1], "w"))
PY
"$BIN" run --declaration "$T/decl.json" --root "$T/root" --state-dir "$T/state" --unit-dir "$T/units" \
  --machine t --listen 127.0.0.1:0 --interval 1h 2> "$T/log" &
HOST=$!
mkdir -p "$T/root"
# Wait until the apply is under way (some files written), then SIGTERM.
for _ in $(seq 1 200); do [ -n "$(find "$T/root" -type f -print -quit 2>/dev/null)" ] && break; sleep 0.02; done
fail() { echo "FAIL: $*"; cat "$T/log" | tail -5; exit 1; }
if ! kill -TERM $HOST 2>/dev/null; then  # say why, not just that kill failed
  set +e; wait $HOST; rc=$?; set -e
  HOST=
  fail "the daemon was gone before SIGTERM (exit $rc)"
fi
set +e; wait $HOST; rc=$?; set -e
HOST=
[ "$rc" = 0 ] || fail "exit $rc"
grep -q "stopping on Terminated" "$T/log" || fail "no clean stop in the log"
python3 - "$T" <<'PY' || exit 1
import json, os, sys
t = sys.argv[1]
lines = open(f"{t}/state/state.json").read().splitlines()
head, entries = json.loads(lines[0]), [json.loads(l) for l in lines[1:]]
assert head["entries"] == len(entries) == 3000, f"record has {len(entries)} of {head['entries']} entries"
for i in range(3000):
    p = f"{t}/root/data/d{i // 100:03d}/f{i:05d}"
    with open(p) as f:
        assert f.read() == f"{i}:" + "x" * 16384, f"{p} not whole"
left = [n for d, _, fs in os.walk(t) for n in fs if ".mesh-host-tmp." in n]
assert not left, f"temporary files left: {left[:3]}"
print("ok   - SIGTERM during an apply of 3000 files: exit 0, all whole, record complete")
PY
"$BIN" run --declaration "$T/decl.json" --root "$T/root" --state-dir "$T/state" --unit-dir "$T/units" \
  --machine t --listen 127.0.0.1:0 --interval 1h 2> "$T/log2" &
HOST=$!
for _ in $(seq 1 200); do grep -q "^apply ok" "$T/log2" && break; sleep 0.05; done
kill -INT $HOST
set +e; wait $HOST; rc=$?; set -e
HOST=
[ "$rc" = 0 ] || fail "SIGINT exit $rc"
grep -q "apply ok: generation 1: 3000 resource(s), 0 changed" "$T/log2" || fail "restart was not a no-op"
echo "ok   - restarted daemon: a no-op apply; SIGINT: exit 0"
# Quiet by default: the no-op logs its summary, not 3,000 unchanged lines.
[ "$(grep -c '^unchanged ' "$T/log2" || true)" = 0 ] || fail "the no-op logged its unchanged resources"
echo "ok   - a quiet no-op: one summary line, no unchanged lines"
