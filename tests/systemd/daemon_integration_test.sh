#!/usr/bin/env bash
# mesh-host run against a real systemd (tests/systemd/sdbox.sh): sd_notify
# READY=1 and WATCHDOG=1 on a test socket; /healthz, /status, /metrics; a
# unit killed with SIGKILL shows as dead within seconds (no reconcile), and
# so does one killed while an apply waits on another unit's stop; SIGHUP
# applies; an atomic rename of a new declaration triggers exactly one apply; a
# crash-looping unit's systemd restart counter rises; the bus gone, /healthz
# says the units are unseen, on /metrics and to a real Prometheus too;
# `mesh-host status`;
# SIGTERM stops it cleanly with the record whole.
. "$(dirname "$0")/box_suite.sh" daemon /tmp
mkdir -p "$T/root" "$T/etc"
svc() {
  printf '{"id":"%s","kind":"service","unit":"%s.service","state":"running","unit_text":%s}' \
    "$1" "$1" "$(printf '%s' "$2" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))')"
}
WEB=$(svc web $'[Service]\nExecStart=/bin/sleep infinity\n')
# flap dies 0.4 s into every run: the second look, a 1 s settle on, falls
# inside a run of a new invocation, unless a restart costs some 0.1 s.
FLAP=$(svc flap $'[Unit]\nStartLimitIntervalSec=0\n[Service]\nRestart=always\nRestartSec=0\nExecStart=/bin/sh -c \'sleep 0.4; exit 1\'\n')
# slowflap dies 2 s into every run: each run outlasts the 1 s settle, so
# the apply's two looks pass, but the watch must not call it up.
SLOWFLAP=$(svc slowflap $'[Unit]\nStartLimitIntervalSec=0\n[Service]\nRestart=always\nRestartSec=0.5\nExecStart=/bin/sh -c \'sleep 2; exit 1\'\n')
CONF='{"id":"web.conf","kind":"file","path":"/etc/web.conf","content":"v1\n"}'
printf '{"machine":"box","generation":1,"resources":[%s,%s]}' "$CONF" "$WEB" > "$T/etc/declaration.json"

# A notify socket, as systemd would give a Type=notify service.
python3 - "$T/notify.sock" "$T/notify.log" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as log:
    while True:
        log.write(s.recv(4096).decode() + "\n")
PY
PIDS+=($!)
until_true 5 '[ -S "$T/notify.sock" ]'

NOTIFY_SOCKET=$T/notify.sock WATCHDOG_USEC=400000 "$BIN" run --declaration "$T/etc/declaration.json" \
  --root "$T/root" --state-dir "$T/state" --artifacts "$T/art" --unit-dir "$SDBOX_DIR/units" \
  --machine box --settle 1s --interval 1h --listen 127.0.0.1:0 2> "$T/run.log" &
HOST=$!
PIDS+=($HOST)
until_true 10 'grep -q "listening on" "$T/run.log"'
PORT=$(grep -o 'listening on 127.0.0.1:[0-9]*' "$T/run.log" | cut -d: -f2)
URL=http://127.0.0.1:$PORT
code() { curl -s -o /dev/null -w '%{http_code}' "$URL$1"; }
applies() { grep -c '^apply ' "$T/run.log" || true; }

check "healthy after the first apply" 'until_true 10 "[ \$(code /healthz) = 200 ]"'
check "READY=1 sent" 'until_true 5 "grep -q READY=1 \"$T/notify.log\""'
check "WATCHDOG=1 sent" 'until_true 5 "grep -q WATCHDOG=1 \"$T/notify.log\""'
# The first apply (a start, then a 1 s settle) outlasts the 0.4 s watchdog:
# it must be petted while the apply runs, before READY=1, or systemd would
# kill the daemon in the middle of it.
check "watchdog petted during an apply longer than its period" '[ "$(sed -n "1,/READY=1/p" "$T/notify.log" | grep -c WATCHDOG=1)" -ge 3 ]'
check "STATUS= summary sent" 'grep -q "STATUS=generation 1: 2 resource(s)" "$T/notify.log"'
check "/status names the unit" 'curl -s $URL/status | python3 -c "import json,sys; d=json.load(sys.stdin); assert d[\"resources\"][1][\"unit\"][\"name\"]==\"web.service\""'

nsenter -t "$SDBOX_PID" -m -p systemctl kill --signal=KILL web.service
check "killed unit: /healthz 503 within 5 s" 'until_true 5 "[ \$(code /healthz) = 503 ]"'
# The watch updates /status's picture, then the metrics: a scrape may come
# between the two.
check "killed unit: mesh_host_unit_active 0" 'until_true 2 "curl -s $URL/metrics | grep -q \"^mesh_host_unit_active{unit=\\\"web.service\\\"} 0\""'
check "killed unit: /healthz names it" 'curl -s $URL/healthz | grep -q "unit web.service is failed"'
check "no reconcile ran for it" '[ "$(applies)" = 1 ]'

kill -HUP $HOST
check "SIGHUP applies (the unit is started again)" 'until_true 5 "[ \$(applies) = 2 ]" && grep -q "^started web (service): was failed, started" "$T/run.log"'
check "healthy again" 'until_true 5 "[ \$(code /healthz) = 200 ]"'

# An apply that waits on one unit's stop still lets the watch follow the
# others: slow's stop takes 8 s (ExecStop=), and web is killed while an
# apply restarts slow. /healthz names web within seconds, that apply still
# under way; the apply's own second look at web, after the stop, finds it
# dead too, and the death is logged once by the watch.
unit_active_is() { grep -q "^mesh_host_unit_active{unit=\"$1\"} $2\$" <<<"$(curl -s "$URL/metrics")"; }
slow() {
  svc slow "[Service]"$'\n'"ExecStart=/bin/sleep $1"$'\n'"ExecStop=/bin/sleep 8"$'\n'"TimeoutStopSec=30"$'\n'
}
declare_gen() {  # GENERATION RESOURCE...: the declaration, renamed into place
  local g=$1; shift
  printf '{"machine":"box","generation":%s,"resources":[%s]}' "$g" "$(IFS=,; echo "$*")" > "$T/etc/.declaration.json.new"
  mv "$T/etc/.declaration.json.new" "$T/etc/declaration.json"
}
# dep is stopped and started again with slow (Requires=, After=) and, as
# Java does, exits 143 on the SIGTERM: never said dead during the apply.
DEP=$(svc dep $'[Unit]\nRequires=slow.service\nAfter=slow.service\n[Service]\nExecStart=/bin/sh -c \'trap "exit 143" TERM; while :; do sleep 0.2; done\'\n')
declare_gen 2 "$CONF" "$WEB" "$(slow infinity)" "$DEP"
check "slow started" 'until_true 10 "[ \$(applies) = 3 ]" && grep -q "^created slow (service)" "$T/run.log"'
check "healthy with slow" 'until_true 5 "[ \$(code /healthz) = 200 ]"'
between=$(grep -c "unit web.service is failed.*between applies" "$T/run.log" || true)
dep_run() { nsenter -t "$SDBOX_PID" -m -p systemctl show -p InvocationID --value dep.service; }
dep_before=$(dep_run)
declare_gen 3 "$CONF" "$WEB" "$(slow 86400)" "$DEP"
check "slow's restart waits on its stop" 'until_true 5 "[ \"\$(nsenter -t $SDBOX_PID -m -p systemctl is-active slow.service)\" = deactivating ]"'
nsenter -t "$SDBOX_PID" -m -p systemctl kill --signal=KILL web.service
check "killed during an apply: /healthz names web within 4 s" 'until_true 4 "curl -s $URL/healthz | grep -q \"unit web.service is failed\""'
check "... while that apply still waits on slow's stop" '[ "$(applies)" = 3 ]'
check "... and mesh_host_unit_active says so" 'until_true 2 "unit_active_is web.service 0"'
check "... logged as seen during the apply" 'grep -q "^unit web.service is failed (failed, Result=signal, NRestarts 0) while an apply runs" "$T/run.log"'
deps_said=0
for _ in $(seq 200); do  # bounded: 20 s; until the apply ends
  [ "$(applies)" = 3 ] || break
  if curl -s "$URL/healthz" | grep -q "dep.service"; then deps_said=1; fi
  sleep 0.1
done
check "the apply ends with slow restarted" 'until_true 20 "[ \$(applies) = 4 ]" && grep -q "^updated slow (service)" "$T/run.log"'
check "... dep, stopped and started with slow, never said dead" '[ "$deps_said" = 0 ] && ! grep -q "unit dep.service" "$T/run.log" && [ "$(dep_run)" != "$dep_before" ]'
check "... and web still shown dead" '[ "$(code /healthz)" = 503 ] && curl -s $URL/healthz | grep -q "unit web.service is failed"'
sleep 1.5
check "... its death logged once" '[ "$(grep -c "unit web.service is failed.*between applies" "$T/run.log")" = "$between" ] && [ "$(grep -c "unit web.service is failed" "$T/run.log")" = "$((between + 1))" ]'
kill -HUP $HOST
check "SIGHUP starts web again" 'until_true 5 "[ \$(applies) = 5 ]" && until_true 5 "[ \$(code /healthz) = 200 ]"'

# Started again by hand between applies: not said to be systemd's doing,
# and up again a settle later, not at the watch's next 10 s refresh.
nsenter -t "$SDBOX_PID" -m -p systemctl kill --signal=KILL web.service
check "killed again: /healthz 503" 'until_true 5 "[ \$(code /healthz) = 503 ]"'
nsenter -t "$SDBOX_PID" -m -p systemctl start web.service
check "started by hand: /healthz says so" 'until_true 3 "curl -s $URL/healthz | grep -q \"unit web.service is active (running), started again (by an operator or a job: NRestarts 0)\""'
check "... and healthy within 4 s of the start" 'until_true 4 "[ \$(code /healthz) = 200 ]"'
check "... with no apply" '[ "$(applies)" = 5 ]'

# The bus gone (dbus and its socket stopped in the box, so nothing starts it
# again): the watch cannot see systemd. Within a refresh period (10 s)
# /healthz says so instead of vouching for the last look; with the bus back
# it reads every unit and is healthy again.
# A real Prometheus with the shipped rules scrapes the host throughout, so
# that the blind watch is seen where alerts are: /metrics, the rule, and
# `mesh-host status --prometheus`.
. "$(dirname "$BIN")/../tests/testing/prometheus.sh"
check "prometheus scrapes the host" \
  'start_prometheus "$(dirname "$BIN")/../metrics/alerts/mesh-host.rules.yml" "127.0.0.1:$PORT"'
unseen_alert_is() {  # STATE ("pending", "firing" or "" for none): false too when Prometheus does not answer
  local answer states
  answer=$(curl -sf "$API/query" --data-urlencode 'query=ALERTS{alertname="MeshHostUnitsUnseen"}') || return 1
  states=$(python3 -c 'import json,sys; print(" ".join(x["metric"]["alertstate"] for x in json.load(sys.stdin)["data"]["result"]))' <<<"$answer") || return 1
  [ "$states" = "$1" ]
}
metrics_have() { grep -q "$1" <<<"$(curl -sf "$URL/metrics")"; }  # whole, not piped into a grep that may leave first
fleet() { "$BIN" status --prometheus "${API%/api/v1}" > "$T/fleet.out" 2>&1; }
check "sighted: no mesh_host_units_unseen, no MeshHostUnitsUnseen" \
  'metrics_have "^mesh_host_unit_active" && ! metrics_have "^mesh_host_units_unseen" && unseen_alert_is ""'
SC=(nsenter -t "$SDBOX_PID" -m -p systemctl)
"${SC[@]}" stop dbus.socket dbus.service
check "bus gone: /healthz 503 within 15 s" 'until_true 15 "[ \$(code /healthz) = 503 ]"'
check "bus gone: /healthz says the units are unseen" 'curl -s $URL/healthz | grep -q "the live unit watch cannot follow systemd"'
check "bus gone: /status units_unseen" 'curl -s $URL/status | python3 -c "import json,sys; assert json.load(sys.stdin)[\"units_unseen\"]"'
check "bus gone: logged when it began and when /healthz turned 503, no more" '[ "$(grep -c "^the live unit watch cannot follow systemd" "$T/run.log")" = 1 ] && [ "$(grep -c "/healthz says so" "$T/run.log")" = 1 ]'
check "bus gone: /metrics mesh_host_units_unseen 1" 'metrics_have "^mesh_host_units_unseen 1$"'
check "bus gone: the shipped MeshHostUnitsUnseen is pending" 'until_true 10 "unseen_alert_is pending"'
check "bus gone: status --prometheus exits 1 and says the units are unseen" \
  '! fleet && grep -q "NOT HEALTHY  units unseen: it cannot read its units from systemd" "$T/fleet.out"'
"${SC[@]}" start dbus.socket
check "bus back: healthy again within 15 s" 'until_true 15 "[ \$(code /healthz) = 200 ]"'
check "bus back: no mesh_host_units_unseen" 'metrics_have "^mesh_host_unit_active" && ! metrics_have "^mesh_host_units_unseen"'
check "bus back: MeshHostUnitsUnseen gone" 'until_true 10 "unseen_alert_is \"\""'
check "bus back: logged" 'grep -q "follows systemd again" "$T/run.log"'

# systemd hung (the box's PID 1 stopped, the bus up): a read of the units
# fails only at its own bound, some 11 s on. Sight was lost when that read
# began, so the moment it gives up /healthz is 503, and one log line says
# both (not "cannot follow" now and 503 a failed read later).
kill -STOP "$SDBOX_PID"
check "systemd hung: 503 as the hung read gives up, said in one line" \
  'until_true 40 "[ \$(grep -c \"/healthz says so\" \"\$T/run.log\") = 2 ]" && [ "$(grep -c "^the live unit watch cannot follow systemd" "$T/run.log")" = 1 ] && [ "$(code /healthz)" = 503 ]'
kill -CONT "$SDBOX_PID"
check "systemd answers again: healthy within 25 s" 'until_true 25 "[ \$(code /healthz) = 200 ]"'

declare_gen 4 "$(sed 's/v1/v2/' <<<"$CONF")" "$WEB" "$FLAP" "$(slow 86400)" "$DEP" "$SLOWFLAP"
check "atomic rename triggers an apply" 'until_true 5 "[ \$(applies) = 6 ]"'
sleep 1.5
check "... exactly one" '[ "$(applies)" = 6 ]'
check "/status shows generation 4" 'curl -s $URL/status | grep -q "\"generation\": 4"'
check "the crash-looping unit fails its two looks" 'grep -q "^failed flap (service): flap.service died and was restarted by systemd" "$T/run.log"'
r1=$(curl -s $URL/metrics | sed -n 's/^mesh_host_unit_systemd_restarts_total{unit="flap.service"} //p')
sleep 3
r2=$(curl -s $URL/metrics | sed -n 's/^mesh_host_unit_systemd_restarts_total{unit="flap.service"} //p')
check "crash-loop: systemd restart counter rises between applies ($r1 -> $r2)" '[ -n "$r1" ] && [ -n "$r2" ] && [ "${r2%.*}" -gt "${r1%.*}" ]'
# A loop slower than a settle read up for most of each run: /healthz and
# mesh_host_unit_active flipped, and MeshHostDaemonDead's minute never ran
# out. Past its third restart in 15 minutes, a run must outlast the loop's.
slowflap_up() { sed -n 's/^mesh_host_unit_active{unit="slowflap.service"} //p' <<<"$(curl -s "$URL/metrics")"; }
check "slow crash loop: restarted by systemd four times" \
  'until_true 20 "[ \$(nsenter -t $SDBOX_PID -m -p systemctl show -p NRestarts --value slowflap.service) -ge 4 ]"'
ups=0
for _ in $(seq 24); do  # 6 s: more than two of its runs
  [ "$(slowflap_up)" = 0 ] || ups=$((ups + 1))
  sleep 0.25
done
check "... never called up since, though each run outlasts a settle ($ups of 24 looks)" '[ "$ups" = 0 ]'
check "... and /healthz says it is a crash loop" 'curl -s $URL/healthz | grep -q "unit slowflap.service is .*more than twice in 15 minutes (a crash loop)\|unit slowflap.service is \(activating\|failed\)"'

set +e
"$BIN" status --url "$URL" > "$T/status.out"; src=$?
"$BIN" status --url http://127.0.0.1:1 >/dev/null 2>&1; src2=$?
set -e
check "status: exit 1 when not healthy, table printed" '[ $src = 1 ] && grep -q "^flap  *service  *failed" "$T/status.out"'
check "status: exit 2 when unreachable" '[ $src2 = 2 ]'

kill -TERM $HOST
set +e
until_true 10 '! kill -0 $HOST 2>/dev/null'; wait $HOST; rc=$?
set -e
check "SIGTERM: exit 0" '[ $rc = 0 ]'
check "SIGTERM: STOPPING=1 sent" 'grep -q STOPPING=1 "$T/notify.log"'
check "record whole after stop" 'python3 -c "import json, sys; l = open(sys.argv[1]).read().splitlines(); sys.exit(len(l) - 1 != json.loads(l[0])[\"entries\"] or any(json.loads(x) is None for x in l))" "$T/state/state.json"'
echo "daemon integration: $fails failed"
[ "$fails" = 0 ]
