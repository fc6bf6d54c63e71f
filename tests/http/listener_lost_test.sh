#!/usr/bin/env bash
# The daemon's listening socket dies under it (here: destroyed from
# outside with `ss -K`, which makes accept() fail as an exhausted system
# does). httplib then ends its loop and closes the socket: `run` must not
# go on blind, answering nobody while the service manager sees it
# active. It says why, finishes as on SIGTERM, and exits 1, so that
# Restart=on-failure starts it listening again.
set -euo pipefail
BIN=$PWD/host/mesh-host
command -v ss >/dev/null || { echo "ss is missing (iproute2, tools/lib/packages.sh)" >&2; exit 1; }
T=$(mktemp -d /tmp/mesh-host-lost.XXXXXX)
HOST=
trap '[ -z "$HOST" ] || kill -KILL $HOST 2>/dev/null; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; [ -f "$T/log" ] && tail -5 "$T/log"; exit 1; }
cd "$T"
printf '{"machine":"m","generation":1,"resources":[]}' > d.json
mkdir -p root
"$BIN" run --declaration d.json --root "$T/root" --state-dir "$T/st" --unit-dir "$T/u" \
  --artifacts "$T/a" --machine m --listen 127.0.0.1:0 --interval 1h 2> "$T/log" &
HOST=$!
for _ in $(seq 1 100); do grep -q "^apply ok" "$T/log" 2>/dev/null && break; sleep 0.05; done
PORT=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$T/log" | head -1)
[ -n "$PORT" ] || fail "did not start: $(cat "$T/log")"
curl -s -o /dev/null --max-time 5 "http://127.0.0.1:$PORT/healthz" || fail "no answer before"

ss -K -t state listening src "127.0.0.1:$PORT" > /dev/null
ss -H -t -l src "127.0.0.1:$PORT" | grep -q . &&
  fail "ss -K left the socket listening: this kernel cannot destroy sockets (CONFIG_INET_DIAG_DESTROY)"

code=
for _ in $(seq 1 100); do
  if ! kill -0 $HOST 2>/dev/null; then
    wait $HOST && code=0 || code=$?
    HOST=
    break
  fi
  sleep 0.05
done
[ -n "$code" ] || fail "still running 5 s after its listener died: blind, and looks fine"
[ "$code" = 1 ] || fail "exit $code, not 1 (Restart=on-failure would not start it again)"
grep -q "the HTTP listener on 127.0.0.1:$PORT stopped: .*; stopping, to be started again (exit 1)" log ||
  fail "the log does not say why it stopped"
echo PASS
