#!/usr/bin/env bash
# What the daemon logs as done is shown first: an apply's closing line
# ("apply ok: ...", "declaration refused: ...") once /status, /metrics and
# /healthz show that apply; "/healthz says so" of a blind unit watch once
# /healthz and /metrics do. Whoever waits for a line and then asks the host
# hears the same. strace holds every write(2) to the log half a second
# after it is done (only the log's: -P), so a line logged before the views
# change is read while they still show what was before. No systemd: the
# watch is blind because no bus answers.
set -euo pipefail
BIN=$PWD/host/mesh-host
command -v strace >/dev/null || { echo "strace is missing (tools/lib/packages.sh installs it)" >&2; exit 1; }
T=$(mktemp -d /tmp/mesh-host-said.XXXXXX)
HOST= TRACER=
# The daemon first (found by its tracer when HOST is not set yet): a tracer
# killed lets its tracee go on running.
trap '[ -z "$HOST" ] || kill -KILL $HOST 2>/dev/null || true
      [ -z "$TRACER" ] || { pkill -KILL -P $TRACER 2>/dev/null; kill -KILL $TRACER 2>/dev/null; } || true
      rm -rf "$T"' EXIT
fails=0
check() { if eval "$2"; then echo "ok   - $1"; else echo "FAIL - $1"; fails=$((fails + 1)); fi; }
# until_true SECONDS CMD: bounded poll.
until_true() { local end=$((SECONDS + $1)); while [ $SECONDS -lt $end ]; do eval "$2" && return 0; sleep 0.02; done; return 1; }
must() { until_true "$1" "$2" || { echo "FAIL - $3"; tail -5 "$T/log"; exit 1; }; }
decl() {  # decl GENERATION RESOURCES_JSON
  printf '{"machine":"t","generation":%s,"resources":[%s]}' "$1" "$2" > "$T/.decl.new"
  mv "$T/.decl.new" "$T/decl.json"
}
conf() { printf '{"id":"conf","kind":"file","path":"/etc/app.conf","content":"%s\\n"%s}' "$1" "${2:-}"; }
# traced: starts the daemon on $T/decl.json under strace; sets HOST and URL.
traced() {
  rm -rf "$T/state" "$T/log" "$T/strace.out"
  strace -f -qq -o "$T/strace.out" -P "$T/log" -e trace=write -e inject=write:delay_exit=500000 \
    "$BIN" run --declaration "$T/decl.json" --root "$T/root" --state-dir "$T/state" \
    --unit-dir "$T/units" --machine t --listen 127.0.0.1:0 --interval 1h 2> "$T/log" &
  TRACER=$!
  must 60 'grep -q "^listening on" "$T/log"' "the daemon listening"
  # Only now: strace forks short-lived children of its own as it starts
  # (probing what ptrace can do), and one of those is no daemon.
  HOST=$(pgrep -P $TRACER)
  grep -q -- "--state-dir" "/proc/$HOST/cmdline" || { echo "FAIL - no daemon under strace: $HOST"; exit 1; }
  URL=http://$(grep -o 'listening on [0-9.:]*' "$T/log" | cut -d' ' -f3)
}
stop() {
  if ! kill -TERM $HOST 2>/dev/null; then
    echo "FAIL - the daemon was gone before it was stopped"; fails=$((fails + 1))
    tail -3 "$T/strace.out"; tail -5 "$T/log"
  fi
  until_true 30 '! kill -0 $HOST 2>/dev/null' || kill -KILL $HOST 2>/dev/null || true
  HOST=
  wait $TRACER || true; TRACER=
}
status_generation() { curl -sf "$URL/status" | python3 -c 'import json,sys; print(json.load(sys.stdin)["generation"])'; }
# Read whole, not piped into a grep that may leave first.
says() { local body; body=$(curl -s "$URL/$1") && grep -q "$2" <<<"$body"; }
mkdir -p "$T/root"

# An apply, then a refusal: each line read the moment it is in the log,
# and the host asked at once.
decl 1 "$(conf one)"
traced
must 60 'grep -q "^apply ok: generation 1" "$T/log"' "the first apply"
decl 2 "$(conf two)"
must 60 'grep -q "^apply ok: generation 2" "$T/log"' "apply of generation 2"
check "apply ok: generation 2 logged, /status shows generation 2" '[ "$(status_generation)" = 2 ]'
check "... and /metrics counts its apply" 'says metrics "^mesh_host_reconciles_total{result=\"ok\"} 2$"'
decl 3 "$(conf three ',"mode":"9"')"
must 60 'grep -q "^declaration refused" "$T/log"' "the refusal of generation 3"
check "declaration refused logged, /healthz already says so" \
  '[ "$(curl -s -o /dev/null -w "%{http_code}" "$URL/healthz")" = 503 ] && says healthz "declaration refused"'
check "... and /metrics has the refusal" 'says metrics "^mesh_host_declaration_refused{"'
stop

# A unit declared, and no bus: after a refresh period (10 s) the watch
# logs that /healthz says so.
decl 1 '{"id":"web","kind":"service","unit":"web.service","state":"running","unit_text":"[Service]\nExecStart=/bin/sleep infinity\n"}'
DBUS_SYSTEM_BUS_ADDRESS=unix:path=$T/no-bus traced
must 60 'grep -q "/healthz says so" "$T/log"' "the blind watch's line"
check "'/healthz says so' logged, /healthz already says so" \
  'says healthz "the live unit watch cannot follow systemd"'
check "... and /metrics has mesh_host_units_unseen 1" 'says metrics "^mesh_host_units_unseen 1$"'
stop

echo "said when shown: $fails failed"
[ "$fails" = 0 ]
