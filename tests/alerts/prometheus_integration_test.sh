#!/usr/bin/env bash
# A real Prometheus (Debian's) on loopback scrapes `mesh-host run`, which
# drives the project's sandboxed real systemd, with the shipped rules loaded
# in a test copy whose windows are short (15m -> 30s, for: -> 0s/5s): a unit
# that crash-loops makes MeshHostUnitFlapping pending or firing, and a unit
# killed makes MeshHostDaemonDead fire. Bounded waits; everything torn down.
set -euo pipefail
ROOTDIR=$PWD
[ -x "$ROOTDIR/host/mesh-host" ] || ROOTDIR=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$ROOTDIR/host/mesh-host
[ -x "$BIN" ] || BIN=$ROOTDIR/bazel-bin/host/mesh-host
SDBOX=$ROOTDIR/tests/systemd/sdbox.sh
RULES=$ROOTDIR/metrics/alerts/mesh-host.rules.yml
. "$ROOTDIR/tests/testing/prometheus.sh"
[ "$(id -u)" = 0 ] || { echo "SKIP (LOUD): needs root for namespaces; not run" >&2; exit 0; }
command -v prometheus >/dev/null || { echo "prometheus missing (Debian package prometheus)" >&2; exit 1; }
T=$(mktemp -d /tmp/mesh-host-prom.XXXXXX)
export SDBOX_DIR=$T/prometheus-${T##*.}-box  # its cgroup is named for it
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  sleep 0.3
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  "$SDBOX" down >/dev/null 2>&1 || true
  rm -rf "$T"
}
trap cleanup EXIT
"$SDBOX" up
eval "$("$SDBOX" env)"
export DBUS_SYSTEM_BUS_ADDRESS
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
until_true() { local end=$(( $(date +%s%N) + $1 * 1000000000 )); while [ "$(date +%s%N)" -lt "$end" ]; do eval "$2" && return 0; sleep 0.5; done; return 1; }
json() { python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))'; }

mkdir -p "$T/root" "$T/etc"
WEB=$(printf '[Service]\nExecStart=/bin/sleep infinity\n' | json)
FLAP=$(printf '[Unit]\nStartLimitIntervalSec=0\n[Service]\nRestart=always\nRestartSec=0\nExecStart=/bin/sh -c "sleep 0.4; exit 1"\n' | json)
printf '{"machine":"box","generation":1,"resources":[
 {"id":"web","kind":"service","unit":"web.service","state":"running","unit_text":%s},
 {"id":"flap","kind":"service","unit":"flap.service","state":"running","unit_text":%s}]}' "$WEB" "$FLAP" > "$T/etc/declaration.json"
HPORT=$(free_port)
"$BIN" run --declaration "$T/etc/declaration.json" --root "$T/root" --state-dir "$T/state" \
  --unit-dir "$SDBOX_DIR/units" --machine box --listen "127.0.0.1:$HPORT" --interval 1h 2> "$T/host.log" &
PIDS+=($!)
until_true 15 'curl -sf "http://127.0.0.1:$HPORT/metrics" >/dev/null'

# A test copy of the shipped rules with short windows, documented above.
sed -e 's/\[15m\]/[30s]/; s/\[1h\]/[1m]/g; s/for: 1m/for: 5s/; s/for: 2m/for: 5s/; s/for: 10m/for: 5s/' "$RULES" > "$T/rules.yml"
promtool check rules "$T/rules.yml" >/dev/null
start_prometheus "$T/rules.yml" "127.0.0.1:$HPORT"
echo "ok   - prometheus scrapes mesh-host (up == 1)"

fails=0
alert_state() {  # alert_state NAME UNIT -> pending|firing|""
  curl -s "$API/alerts" | python3 -c '
import json, sys
name, unit = sys.argv[1], sys.argv[2]
for a in json.load(sys.stdin)["data"]["alerts"]:
    if a["labels"].get("alertname") == name and a["labels"].get("unit") == unit:
        print(a["state"]); break' "$1" "$2"
}
if until_true 60 '[ -n "$(alert_state MeshHostUnitFlapping flap.service)" ]'; then
  echo "ok   - MeshHostUnitFlapping $(alert_state MeshHostUnitFlapping flap.service) for the crash-looping unit"
else
  echo "FAIL - MeshHostUnitFlapping never pending"; fails=$((fails+1))
  curl -s "$API/query?query=mesh_host_unit_systemd_restarts_total"; echo
fi
check_silent() { [ -z "$(alert_state MeshHostUnitFlapping web.service)" ]; }
if check_silent; then echo "ok   - the steady unit does not flap"; else echo "FAIL - web.service flapping"; fails=$((fails+1)); fi

nsenter -t "$SDBOX_PID" -m -p systemctl kill --signal=KILL web.service
if until_true 40 '[ "$(alert_state MeshHostDaemonDead web.service)" = firing ]'; then
  echo "ok   - MeshHostDaemonDead fires for the killed unit"
else
  echo "FAIL - MeshHostDaemonDead did not fire"; fails=$((fails+1))
fi
echo "prometheus integration: $fails failed"
[ "$fails" = 0 ]
