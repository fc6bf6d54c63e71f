#!/usr/bin/env bash
# Issue 38 against a real systemd: verdicts where units are templated,
# stopping, or dropped. Each check names the class; each fails on the
# binary before the fix (a8b092c).
#   2. an instance follows its template and the template's drop-ins; a
#      hand edit of the template put back restarts nothing;
#   4. a service its timer or socket runs, declared triggered, is neither
#      started nor stopped, and its new definition waits for its next run;
#   6. a unit declared stopped whose stop has not finished is not stopped;
#   8. a daemon started on a refused declaration shows the recorded truth;
#  10. a start systemd skipped names the condition that was false;
#  13, 14. a config put back under a run, or a reload, the host did not
#      start is read again; 15. a unit file touched under the host's own
#      run is loaded again, not restarted;
#   3. a start whose job is still queued behind a unit that never comes up
#      is not accepted (SPEC: activating, nothing else); a oneshot that
#      remains after exit, stopped since, is not "finished";
#   7. a dropped unit the host wrote is disabled (no dangling links),
#      stopped and its unit file and drop-in folder deleted; an operator's
#      own unit is forgotten, still running; a dropped process's tree goes
#      once its unit no longer runs (SPEC 8), and so does the unit file of
#      a dropped service whose stop reads it.
# With TRUTH_MODE=run (truth_run_integration_test.sh) every apply is one
# of a `mesh-host run` instead, started at the first: a changed declaration
# is applied by its file watch, the same one by SIGHUP. After each, beside
# the class's own checks, /healthz, /status and /metrics must agree with
# the apply's outcome lines (run_agrees).
. "$(dirname "$0")/box_suite.sh" "truth${TRUTH_MODE:+-$TRUTH_MODE}"
ROOT=$SDBOX_DIR  # --unit-dir ($UNITS) under --root: a `file` can define a unit
decl() {  # decl GENERATION JSON-RESOURCES (renamed into place: the daemon reads it whole)
  printf '{"machine":"box","generation":%s,"resources":[%s]}' "$1" "$2" > "$T/.decl.json.new"
  mv "$T/.decl.json.new" "$T/decl.json"
}
HOST_PID=
mkdir -p "$T/seen"
# apply_now: one apply of $T/decl.json, one-shot or by the daemon; sets OUT
# (its outcome lines and summary) and RC (0 ok, 1 failed, 2 refused).
apply_now() {
  if [ "${TRUTH_MODE:-}" != run ]; then box_apply "$ROOT"; return; fi
  local n=0
  if [ -z "$HOST_PID" ]; then
    "$BIN" run --verbose --declaration "$T/decl.json" --root "$ROOT" --state-dir "$T/state" \
      --artifacts "$T/art" --unit-dir "$UNITS" --machine box --settle 300ms --interval 1h \
      --listen 127.0.0.1:0 2> "$T/host.log" &
    HOST_PID=$!
    PIDS+=($HOST_PID)
  else
    n=$(grep -c '^apply ' "$T/host.log" || true)
    cmp -s "$T/decl.json" "$T/seen/decl.json" && kill -HUP "$HOST_PID"
  fi
  cp "$T/decl.json" "$T/seen/decl.json"
  until_true 60 "[ \$(grep -c '^apply ' \"$T/host.log\" || true) -gt $n ]" || true
  OUT=$(awk -v n="$n" '/^apply /{ if (c == n) print; c++; next } c == n' "$T/host.log")
  case "$(tail -1 <<<"$OUT")" in
    "apply ok"*) RC=0 ;;
    "apply failed"*) RC=1 ;;
    *) RC=2 ;;
  esac
  printf '%s\n(apply %s)\n' "$OUT" "$RC" | sed 's/^/    /'
  HOST_URL=http://$(sed -n 's/^listening on \([0-9.:]*\).*/\1/p' "$T/host.log" | head -1)
  run_agrees
}
# What the daemon shows after an apply agrees with its outcome lines:
# /healthz 200 only after an apply that failed nothing, each resource's
# outcome on /status, mesh_host_resource_failed for exactly the failed
# ones, and a mesh_host_unit_active series for every unit declared running.
run_agrees() {
  local code
  code=$(curl -s -o /dev/null -w '%{http_code}' "$HOST_URL/healthz")
  check "  (run) /healthz $code after an apply that exited $RC" \
    '{ [ $RC = 0 ] && [ $code = 200 ]; } || { [ $RC != 0 ] && [ $code = 503 ]; }'
  check "  (run) /status and /metrics say what the apply said" \
    'OUT="$OUT" python3 - "$HOST_URL" <<"PY"
import json, os, re, sys, urllib.request
url = sys.argv[1]
status = json.load(urllib.request.urlopen(url + "/status", timeout=5))
metrics = urllib.request.urlopen(url + "/metrics", timeout=5).read().decode()
said = {m[1]: m[0] for m in re.findall(r"^(\w+) (\S+) \(\w+\): ", os.environ["OUT"], re.M)}
shown = {r["id"]: r for r in status["resources"]}
for rid, word in said.items():
    if word != "removed":
        assert shown[rid]["outcome"] == word, (rid, word, shown[rid]["outcome"])
failed = set(re.findall(r"^mesh_host_resource_failed\{[^}]*resource=\"([^\"]+)\"[^}]*\} 1$", metrics, re.M))
assert failed == {r for r, w in said.items() if w == "failed"}, (failed, said)
for r in status["resources"]:
    u = r.get("unit")
    if u and u["declared_state"] == "running":
        assert re.search(r"^mesh_host_unit_active\{unit=\"%s\"\} [01]$" % re.escape(u["name"]),
                         metrics, re.M), u["name"]
PY'
}
prop() { busctl get-property org.freedesktop.systemd1 "/org/freedesktop/systemd1/unit/$1" \
           org.freedesktop.systemd1.Unit "$2" | cut -d' ' -f2- | tr -d '"'; }
invocation() { prop "$1" InvocationID; }
state() { prop "$1" ActiveState; }

# 2. A template declared as a file, its drop-in, and a declared instance.
tpl() { printf '{"id":"tpl","kind":"file","path":"/units/mh-tpl@.service","content":"[Service]\\nExecStart=/bin/sleep %s\\n"}' "$1"; }
tpl_env() { printf '{"id":"tpl.env","kind":"file","path":"/units/mh-tpl@.service.d/10-env.conf","content":"[Service]\\nEnvironment=V=%s\\n"}' "$1"; }
INST='{"id":"inst","kind":"service","unit":"mh-tpl@a.service","state":"running"}'
INST_PATH=mh_2dtpl_40a_2eservice
decl 1 "$(tpl 1001),$(tpl_env 1),$INST"; apply_now
check "template: the instance starts" '[ $RC = 0 ] && [ "$(state $INST_PATH)" = active ]'
inv=$(invocation $INST_PATH)
decl 2 "$(tpl 1002),$(tpl_env 1),$INST"; apply_now
check "template changed: the instance is restarted onto it" \
  '[ $RC = 0 ] && grep -q "^restarted inst (service): unit definition /units/mh-tpl@.service changed" <<<"$OUT" && [ "$(invocation $INST_PATH)" != "$inv" ]'
check "template changed: systemd runs the new definition" \
  'inside systemctl show -p ExecStart mh-tpl@a.service | grep -q "sleep 1002"'
inv=$(invocation $INST_PATH)
decl 3 "$(tpl 1002),$(tpl_env 2),$INST"; apply_now
check "template drop-in changed: the instance is restarted onto it" \
  '[ $RC = 0 ] && grep -q "^restarted inst (service)" <<<"$OUT" && [ "$(invocation $INST_PATH)" != "$inv" ] && inside systemctl show -p Environment mh-tpl@a.service | grep -q "V=2"'
apply_now
check "template: then unchanged" '[ $RC = 0 ] && grep -q "^unchanged inst (service)" <<<"$OUT"'
# A hand edit of the template, put back: the instance's run, the one the
# host recorded, began on the declared template: loaded again, not restarted.
inv=$(invocation $INST_PATH)
sed -i 's/^ExecStart=/Environment=BY=hand\nExecStart=/' "$UNITS/mh-tpl@.service"
apply_now
check "a template edited by hand, put back: loaded again, not restarted" \
  '[ $RC = 0 ] && grep -q "^updated tpl (file): .*drifted" <<<"$OUT" && grep -q "^unchanged inst (service): its run, the one the host recorded, began on the declared unit definition /units/mh-tpl@.service: loaded again (daemon-reload), not restarted" <<<"$OUT" && [ "$(invocation $INST_PATH)" = "$inv" ] && ! grep -q "BY=hand" "$UNITS/mh-tpl@.service" && [ "$(prop $INST_PATH NeedDaemonReload)" = false ]'
# The same edit loaded and run by hand, then copied back as declared: the
# file reads as declared, but the run began on the edit.
cp "$UNITS/mh-tpl@.service" "$T/tpl.declared"
sed -i 's/^ExecStart=/Environment=BY=hand\nExecStart=/' "$UNITS/mh-tpl@.service"
inside systemctl daemon-reload
inside systemctl restart mh-tpl@a.service
runs_edit() {
  inside sh -c 'tr "\0" "\n" </proc/$(systemctl show -p MainPID --value mh-tpl@a.service)/environ' |
    grep -q BY=hand
}
check "(the run by hand runs the edit)" 'runs_edit'
sleep 0.05
cp "$T/tpl.declared" "$UNITS/mh-tpl@.service"
inv=$(invocation $INST_PATH)
apply_now
check "a template run by hand on an edit, copied back: restarted onto the declared one" \
  '[ $RC = 0 ] && grep -q "^restarted inst (service): unit definition /units/mh-tpl@.service written again on the machine" <<<"$OUT" && [ "$(invocation $INST_PATH)" != "$inv" ] && ! runs_edit'

# 4. Triggered: started by hand here, as its timer would; never by the host.
job() { printf '{"id":"job","kind":"service","unit":"mh-job.service","state":"triggered","unit_text":"[Service]\\nExecStart=/bin/sleep %s\\n"}' "$1"; }
decl 10 "$(job 30)"; apply_now
check "triggered: written, not started" \
  '[ $RC = 0 ] && grep -q "^created job (service)" <<<"$OUT" && [ "$(state mh_2djob_2eservice)" = inactive ]'
inside systemctl start mh-job.service
inv=$(invocation mh_2djob_2eservice)
apply_now
check "triggered: a run in progress is left alone" \
  '[ $RC = 0 ] && grep -q "^unchanged job (service): mh-job.service left to its trigger (active (running))" <<<"$OUT" && [ "$(invocation mh_2djob_2eservice)" = "$inv" ]'
decl 11 "$(job 31)"; apply_now
check "triggered: a new definition is loaded for the next run, the run goes on" \
  '[ $RC = 0 ] && grep -q "^updated job (service).*its next activation runs the new definition" <<<"$OUT" && [ "$(invocation mh_2djob_2eservice)" = "$inv" ] && [ "$(prop mh_2djob_2eservice NeedDaemonReload)" = false ]'
inside systemctl stop mh-job.service
apply_now
check "triggered: stopped by someone else, not started" \
  '[ $RC = 0 ] && grep -q "^unchanged job (service): mh-job.service left to its trigger (inactive (dead))" <<<"$OUT" && [ "$(state mh_2djob_2eservice)" = inactive ]'

# 6. A stop that does not finish: ExecStop= hangs (TimeoutStopSec=30).
SLOW_TEXT='[Service]\nTimeoutStopSec=30\nExecStart=/bin/sleep infinity\nExecStop=/bin/sleep 60\n'
slow() { printf '{"id":"slow","kind":"service","unit":"mh-slow.service","state":"%s","unit_text":"%s"}' "$1" "$SLOW_TEXT"; }
decl 12 "$(slow running)"; apply_now
check "stopping: runs first" '[ $RC = 0 ] && [ "$(state mh_2dslow_2eservice)" = active ]'
decl 13 "$(slow stopped)"; apply_now
check "stopping: the stop is queued, not waited on" \
  '[ $RC = 0 ] && grep -q "^stopped slow (service): stopped mh-slow.service (not waited on)" <<<"$OUT"'
apply_now
check "stopping: still deactivating is not stopped as declared" \
  '[ "$(state mh_2dslow_2eservice)" = deactivating ] && grep -q "^stopped slow (service): still stopping: mh-slow.service deactivating (stop)" <<<"$OUT" && ! grep -q "stopped as declared" <<<"$OUT"'
inside systemctl kill --signal=KILL mh-slow.service
for _ in $(seq 50); do [ "$(state mh_2dslow_2eservice)" = deactivating ] || break; sleep 0.1; done
apply_now
check "stopping: once stopped, stopped as declared" \
  '[ $RC = 0 ] && grep -q "^unchanged slow (service): mh-slow.service stopped as declared" <<<"$OUT"'

# 3. A start held behind a unit it requires and is ordered after, one that
# is never ready (TimeoutStartSec=2): the start job waits while the unit is
# inactive (dead), then ends "dependency". Every apply was "still starting
# (inactive (dead))", exit 0, with the daemon never run.
printf '[Service]\nType=notify\nTimeoutStartSec=2\nExecStart=/bin/sleep infinity\n' > "$UNITS/mh-dep.service"
inside systemctl daemon-reload
HELD='{"id":"held","kind":"service","unit":"mh-held.service","state":"running","unit_text":"[Unit]\nRequires=mh-dep.service\nAfter=mh-dep.service\n[Service]\nExecStart=/bin/sleep infinity\n"}'
decl 14 "$HELD"
for k in 1 2 3; do
  apply_now
  check "held behind a dependency: apply $k fails, its start job still queued" \
    '[ $RC = 1 ] && grep -q "^failed held (service): mh-held.service its start job is still queued (behind a unit it is ordered after), inactive (dead)" <<<"$OUT" && [ "$(state mh_2dheld_2eservice)" != active ]'
  # Past the dependency's start timeout: the job ended "dependency".
  for _ in $(seq 40); do [ "$(state mh_2ddep_2eservice)" = failed ] && break; sleep 0.1; done
done

# A oneshot with RemainAfterExit=yes stopped since: inactive (dead) with
# Result=success read as a run that ended well, "unchanged" for ever.
RAE='{"id":"rae","kind":"service","unit":"mh-rae.service","state":"running","unit_text":"[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/true\n"}'
decl 15 "$RAE"; apply_now
check "RemainAfterExit: runs and remains" '[ $RC = 0 ] && [ "$(state mh_2drae_2eservice)" = active ]'
inside systemctl stop mh-rae.service
apply_now
check "RemainAfterExit: stopped since, it is started again" \
  '[ $RC = 0 ] && grep -q "^started rae (service)" <<<"$OUT" && [ "$(state mh_2drae_2eservice)" = active ]'

# 10. A false condition: systemd skips the start, and the words say which.
COND='{"id":"cond","kind":"service","unit":"mh-cond.service","state":"running","unit_text":"[Unit]\nConditionPathExists=/nonexistent-mesh-host\n[Service]\nExecStart=/bin/sleep infinity\n"}'
decl 16 "$COND"; apply_now
check "condition: the skip is a failure naming the condition" \
  '[ $RC = 1 ] && grep -q "^failed cond (service): mh-cond.service skipped by systemd: ConditionPathExists=/nonexistent-mesh-host is false" <<<"$OUT"'

# 7. Dropped: the host's own unit (enabled, a drop-in) and an operator's.
OWN='{"id":"own","kind":"service","unit":"mh-own.service","state":"running","enabled":true,"unit_text":"[Service]\nExecStart=/bin/sleep infinity\n[Install]\nWantedBy=multi-user.target\n","drop_ins":{"10-x.conf":"[Service]\nEnvironment=X=1\n"}}'
printf '[Service]\nExecStart=/bin/sleep infinity\n' > "$UNITS/mh-op.service"
inside systemctl daemon-reload
OP='{"id":"op","kind":"service","unit":"mh-op.service","state":"running"}'
# And a process whose daemon drains 6 s on SIGTERM, run from its tree (a
# daemon applies again 1 s, 3 s, 7 s, ... after the drop: the checks of
# what stays while it stops come within 6 s).
mkdir -p "$T/pb/bin" "$T/art"
printf '#!/bin/sh\ndrain() { trap "" TERM; sleep 6; exit 0; }\ntrap drain TERM\nwhile :; do sleep 0.1; done\n' > "$T/pb/bin/serve"
chmod 755 "$T/pb/bin/serve"
tar -C "$T/pb" -czf "$T/art/pr.tar.gz" .
PROC=$(printf '{"id":"proc","kind":"process","path":"/opt/pr","source":"pr.tar.gz","sha256":"%s","unit":"mh-proc.service","unit_text":"[Service]\\nExecStart=%s/opt/pr/bin/serve\\n"}' "$(sha256sum "$T/art/pr.tar.gz" | cut -d' ' -f1)" "$ROOT")
# And a service whose stop reads its file: an 8 s ExecStop=, its own timeout.
DRAINER='{"id":"drainer","kind":"service","unit":"mh-drainer.service","state":"running","unit_text":"[Service]\nExecStart=/bin/sleep infinity\nExecStop=/bin/sleep 8\nTimeoutStopSec=300\n"}'
# And a unit defined by a `file` of the host's, its stop reading it.
FDEF='{"id":"fdef","kind":"file","path":"/units/mh-fdef.service","content":"[Service]\nExecStart=/bin/sleep infinity\nExecStop=/bin/sleep 8\nTimeoutStopSec=300\n"}'
FSVC='{"id":"fsvc","kind":"service","unit":"mh-fdef.service","state":"running"}'
decl 17 "$OWN,$OP,$PROC,$DRAINER,$FDEF,$FSVC"; apply_now
check "dropped: both run, own enabled" \
  '[ $RC = 0 ] && [ "$(state mh_2down_2eservice)" = active ] && [ "$(state mh_2dop_2eservice)" = active ] && [ -L "$SDBOX_DIR/config/multi-user.target.wants/mh-own.service" ] && [ "$(state mh_2dproc_2eservice)" = active ] && [ "$(state mh_2ddrainer_2eservice)" = active ]'
decl 18 ""; apply_now
check "dropped: the operator's unit is forgotten, still running" \
  '[ $RC = 0 ] && grep -q "^removed op (service): no longer managed; left unit mh-op.service as it is" <<<"$OUT" && [ "$(state mh_2dop_2eservice)" = active ] && [ -f "$UNITS/mh-op.service" ]'
check "dropped: the host's unit is disabled, no link left dangling" \
  'grep -q "disabled mh-own.service" <<<"$OUT" && [ ! -e "$SDBOX_DIR/config/multi-user.target.wants/mh-own.service" ] && [ ! -L "$SDBOX_DIR/config/multi-user.target.wants/mh-own.service" ]'
check "dropped: its unit file and drop-in folder are gone" \
  '[ ! -e "$UNITS/mh-own.service" ] && [ ! -e "$UNITS/mh-own.service.d" ]'
for _ in $(seq 50); do [ "$(state mh_2down_2eservice)" = active ] || break; sleep 0.1; done
check "dropped: the host's unit is stopped" '[ "$(state mh_2down_2eservice)" != active ]'
# SPEC 8: a dropped process's tree goes once its unit no longer runs.
check "dropped process: stopped, its tree and unit file kept while it runs" \
  'grep -q "^removed proc (process): stopped mh-proc.service (not waited on); its tree and unit file go once mh-proc.service no longer runs" <<<"$OUT" && [ -x "$ROOT/opt/pr/bin/serve" ] && [ -f "$UNITS/mh-proc.service" ]'
# Deleted and reloaded mid-stop, systemd would stop it as a unit without a
# file: TimeoutStopUSec 1min 30s, no ExecStopPost= left to run.
check "dropped service whose stop reads its file: stopped, the file kept while it stops" \
  'grep -q "^removed drainer (service): stopped mh-drainer.service (not waited on); its unit file goes once mh-drainer.service no longer runs" <<<"$OUT" && [ -f "$UNITS/mh-drainer.service" ] && [ "$(state mh_2ddrainer_2eservice)" = deactivating ] && [ "$(inside systemctl show mh-drainer.service -p TimeoutStopUSec --value)" = 5min ]'
check "dropped with the file that defines it: that file kept while it stops" \
  'grep -q "^removed fdef (file): unit file /units/mh-fdef.service goes once mh-fdef.service no longer runs" <<<"$OUT" && [ -f "$UNITS/mh-fdef.service" ] && [ "$(inside systemctl show mh-fdef.service -p TimeoutStopUSec --value)" = 5min ]'
if [ "${TRUTH_MODE:-}" != run ]; then
  sleep 1; apply_now  # the unit still stopping: the file still waits
  check "dropped with the file that defines it: still kept at the next apply while it stops" \
    '[ $RC = 0 ] && [ -f "$UNITS/mh-fdef.service" ] && [ "$(inside systemctl show mh-fdef.service -p LoadState --value)" = loaded ]'
fi
for _ in $(seq 200); do
  [ "$(state mh_2dproc_2eservice)" = inactive ] && [ "$(state mh_2ddrainer_2eservice)" = inactive ] &&
    [ "$(state mh_2dfdef_2eservice)" = inactive ] && break
  sleep 0.1
done
if [ "${TRUTH_MODE:-}" = run ]; then
  # Nothing pushed: a daemon whose removal waits applies again on its own
  # (1 s on, then 2, 4, ... up to --interval, here an hour).
  until_true 30 "grep -q 'deleted unit file mh-proc.service' \"$T/host.log\" && grep -q 'deleted unit file mh-drainer.service' \"$T/host.log\" && [ ! -e \"$UNITS/mh-fdef.service\" ]" || true
  # Every apply after the one of generation 18's push.
  OUT=$(awk '/^apply .*generation 18: .*declaration changed/ {on=1; next} on && /^(removed|apply) /' "$T/host.log")
  RC=0; grep -q '^apply failed' <<<"$OUT" && RC=1
  sed 's/^/    /' <<<"$OUT"
  check "(run) the waiting removals done by the daemon's own applies, none pushed" \
    'grep -q "^apply ok: generation 18: .*(a removal waits for a unit to stop" <<<"$OUT"'
else
  apply_now
fi
check "dropped process: once it stopped, its tree and unit file go" \
  '[ $RC = 0 ] && grep -q "^removed proc (process): .*deleted unit file mh-proc.service" <<<"$OUT" && [ ! -e "$ROOT/opt/pr" ] && [ ! -e "$UNITS/mh-proc.service" ]'
check "dropped with the file that defines it: once it stopped, that file goes" \
  '[ $RC = 0 ] && [ ! -e "$UNITS/mh-fdef.service" ]'
check "dropped service whose stop reads its file: once it stopped, its file goes" \
  '[ $RC = 0 ] && grep -q "^removed drainer (service): .*deleted unit file mh-drainer.service" <<<"$OUT" && [ ! -e "$UNITS/mh-drainer.service" ]'
apply_now
check "dropped: the next apply has nothing left to do" \
  '[ $RC = 0 ] && grep -Eq "0 resource\(s\), (0 changed, )?0 failed" <<<"$OUT" && ! grep -Eq "^(removed|stopped|failed) " <<<"$OUT"'

if [ "${TRUTH_MODE:-}" = run ]; then finish; exit; fi  # 8 starts a daemon of its own

# 8. A bad push never blinds: the daemon restarted while its declaration is
# refused shows the recorded generation and units, beside the refusal.
REC='{"id":"rec","kind":"service","unit":"mh-rec.service","state":"running","unit_text":"[Service]\nExecStart=/bin/sleep infinity\n"}'
decl 19 "$REC"; apply_now
check "refused push: generation 19 applied" '[ $RC = 0 ] && [ "$(state mh_2drec_2eservice)" = active ]'
printf '{"machine":"box","generation":20,"resources":[' > "$T/decl.json"  # cut off: not JSON
: > "$T/run.log"  # exists before the child opens it: the loop below reads it at once
"$BIN" run --declaration "$T/decl.json" --root "$ROOT" --state-dir "$T/state" --artifacts "$T/art" \
  --unit-dir "$UNITS" --machine box --settle 300ms --interval 1h --listen 127.0.0.1:0 2> "$T/run.log" &
PIDS+=($!)
url=
for _ in $(seq 100); do
  url=$(sed -n 's/.*listening on \([0-9.:]*\).*/http:\/\/\1/p' "$T/run.log" | head -1)
  [ -n "$url" ] && grep -q "^declaration refused" "$T/run.log" && break; sleep 0.05
done
check "refused push: the daemon refuses it, generation 19 in force" \
  'grep -q "^declaration refused: .*; generation 19 stays in force" "$T/run.log"'
check "refused push: /status tells the recorded machine, generation and unit, beside the refusal" \
  'curl -s "$url/status" | python3 -c "
import json, sys
s = json.load(sys.stdin)
r = [x for x in s[\"resources\"] if x[\"id\"] == \"rec\"]
assert s[\"machine\"] == \"box\" and s[\"generation\"] == 19, s
assert s[\"error\"] and \"invalid JSON\" in s[\"error\"], s[\"error\"]
assert r and r[0][\"unit\"][\"active_state\"] == \"active\", r
"'
check "refused push: /metrics keeps the unit and the generation" \
  'm=$(curl -s "$url/metrics"); grep -q "^mesh_host_unit_active{unit=\"mh-rec.service\"} 1" <<<"$m" && grep -q "^mesh_host_declaration_generation 19" <<<"$m"'
kill -TERM "${PIDS[-1]}"; wait "${PIDS[-1]}" || true

# 9. A dropped unit of the host's that had failed: systemd keeps a failed
# unit listed (not-found failed) until a reboot unless it is reset.
BAD='{"id":"bad","kind":"service","unit":"mh-bad.service","state":"running","unit_text":"[Service]\nExecStart=/bin/false\n"}'
decl 21 "$BAD"; apply_now
check "dropped failed unit: it failed" '[ $RC != 0 ] && inside systemctl is-failed -q mh-bad.service'
decl 22 ""; apply_now
check "dropped failed unit: removed, and systemd lists it failed no more" \
  '[ $RC = 0 ] && grep -q "^removed bad (service): .*deleted unit file mh-bad.service" <<<"$OUT" && ! inside systemctl is-failed -q mh-bad.service && ! inside systemctl list-units --failed --no-legend --plain | grep -q mh-bad'

# 11. A path unit and the service it starts: declared stopped under its
# running trigger, or dropped alone, it fails and is left; dropped with
# its trigger, the trigger stops first and the service stays stopped (it
# was started again by the trigger, and ran with its unit file deleted).
mkdir -p "$T/flag"; touch "$T/flag/on"
DQP=$(printf '{"id":"dqp","kind":"service","unit":"mh-dq.path","state":"running","unit_text":"[Path]\\nPathExists=%s/flag/on\\nUnit=mh-dq.service\\n"}' "$T")
dq() { printf '{"id":"dq","kind":"service","unit":"mh-dq.service","state":"%s","unit_text":"[Service]\\nExecStart=/bin/sleep infinity\\n"}' "$1"; }
decl 23 "$DQP,$(dq triggered)"; apply_now
for _ in $(seq 40); do [ "$(state mh_2ddq_2eservice)" = active ] && break; sleep 0.05; done
check "trigger: its path starts the service" '[ $RC = 0 ] && [ "$(state mh_2ddq_2eservice)" = active ]'
decl 24 "$DQP,$(dq stopped)"; apply_now
check "trigger: declared stopped under its running trigger fails, not stopped" \
  '[ $RC = 1 ] && grep -q "^failed dq (service): mh-dq.service is started again by mh-dq.path" <<<"$OUT" && [ "$(state mh_2ddq_2eservice)" = active ]'
decl 25 "$DQP"; apply_now
check "trigger: dropped alone under its running trigger fails, its unit file kept" \
  '[ $RC = 1 ] && grep -q "^failed dq (service): mh-dq.service is started by mh-dq.path" <<<"$OUT" && [ -f "$UNITS/mh-dq.service" ]'
decl 26 ""; apply_now
sleep 0.5
check "trigger: dropped together, the service stays stopped" \
  '[ $RC = 0 ] && [ "$(state mh_2ddq_2eservice)" != active ] && [ "$(state mh_2ddq_2epath)" != active ]'
decl 27 "$DQP,$(dq triggered)"; apply_now
for _ in $(seq 40); do [ "$(state mh_2ddq_2eservice)" = active ] && break; sleep 0.05; done
DQP_STOPPED=${DQP/\"state\":\"running\"/\"state\":\"stopped\"}
decl 28 "$DQP_STOPPED"; apply_now
check "trigger: dropped while its trigger is declared stopped, it waits one apply" \
  '[ $RC = 1 ] && grep -q "^failed dq (service): mh-dq.service is started by mh-dq.path, which runs until" <<<"$OUT" && [ -f "$UNITS/mh-dq.service" ]'
decl 29 "$DQP_STOPPED"; apply_now
sleep 0.5
check "trigger: then removed, and stays stopped" \
  '[ $RC = 0 ] && grep -q "^removed dq (service)" <<<"$OUT" && [ "$(state mh_2ddq_2eservice)" != active ]'
decl 30 "$DQP,$(dq triggered)"; apply_now
for _ in $(seq 40); do [ "$(state mh_2ddq_2eservice)" = active ] && break; sleep 0.05; done
decl 31 "$DQP_STOPPED,$(dq stopped)"; apply_now
sleep 0.5
check "trigger: both declared stopped, the trigger first: the service stays stopped" \
  '[ $RC = 0 ] && [ "$(state mh_2ddq_2eservice)" != active ] && [ "$(state mh_2ddq_2epath)" != active ]'

# 12. The next unit text put in place by hand, the daemon restarted before
# the daemon-reload that loads it: its run began after the file changed,
# yet runs what systemd had loaded. Declared, it is restarted onto it.
ad() { printf '{"id":"ad","kind":"service","unit":"mh-ad.service","state":"running","unit_text":"[Service]\\nEnvironment=V=%s\\nExecStart=/bin/sleep infinity\\n"}' "$1"; }
env_v() {  # the V its running process was given
  local pid; pid=$(inside systemctl show mh-ad.service -p MainPID --value)
  inside cat "/proc/$pid/environ" | tr '\0' '\n' | sed -n 's/^V=//p'
}
decl 32 "$(ad 1)"; apply_now
check "adopted by hand: runs with V=1" '[ $RC = 0 ] && [ "$(env_v)" = 1 ]'
printf '[Service]\nEnvironment=V=2\nExecStart=/bin/sleep infinity\n' > "$UNITS/mh-ad.service"
inside systemctl restart mh-ad.service
inside systemctl daemon-reload
decl 33 "$(ad 2)"; apply_now
check "adopted by hand: restarted before its daemon-reload, declared: restarted onto it" \
  '[ $RC = 0 ] && grep -q "^restarted ad (service): unit file mh-ad.service found as declared, systemd last loaded unit files after its run began" <<<"$OUT" && [ "$(env_v)" = 2 ]'
printf '[Service]\nEnvironment=V=3\nExecStart=/bin/sleep infinity\n' > "$UNITS/mh-ad.service"
inside systemctl daemon-reload
inside systemctl restart mh-ad.service
decl 34 "$(ad 3)"; apply_now
check "adopted by hand: loaded, then restarted onto it: adopted, not restarted again" \
  '[ $RC = 0 ] && grep -q "^updated ad (service): unit file mh-ad.service already as declared on the machine: adopted" <<<"$OUT" && [ "$(env_v)" = 3 ]'

# 13. A config edited by hand, the daemon restarted onto the edit by hand,
# the config put back: the daemon runs on the edit, and every apply read
# unchanged. Its bytes moved after a run the host did not start.
HE=$(printf '{"id":"he.conf","kind":"file","path":"/etc/he.conf","content":"good\\n"},{"id":"he","kind":"service","unit":"mh-he.service","state":"running","restart_on":["he.conf"],"unit_text":"[Service]\\nExecStart=/bin/sh -c \\"cat %s/etc/he.conf > %s/he.seen; exec sleep infinity\\"\\n"}' "$ROOT" "$T")
decl 35 "$HE"; apply_now
apply_now
check "put back by hand: the daemon read the declared config" '[ $RC = 0 ] && [ "$(cat "$T/he.seen")" = good ]'
cp "$ROOT/etc/he.conf" "$T/he.orig"
echo HANDEDIT > "$ROOT/etc/he.conf"
inside systemctl restart mh-he.service
for _ in $(seq 40); do [ "$(cat "$T/he.seen" 2>/dev/null)" = HANDEDIT ] && break; sleep 0.05; done
sleep 0.05  # past the file system's coarse clock: the put-back's ctime is after the run began
cp "$T/he.orig" "$ROOT/etc/he.conf"
apply_now
check "put back by hand after a restart onto the edit: restarted onto the declared config" \
  '[ $RC = 0 ] && grep -q "^restarted he (service): restart_on /etc/he.conf written again on the machine after its run began" <<<"$OUT" && [ "$(cat "$T/he.seen")" = good ]'
apply_now
check "put back by hand: then unchanged" '[ $RC = 0 ] && grep -q "^unchanged he (service)" <<<"$OUT"'

# 14. The same under a reload by hand: the run is the host's own, the
# reload onto the edit is not (ExecReload='s start says when it began).
HR=$(printf '{"id":"hr.conf","kind":"file","path":"/etc/hr.conf","content":"good\\n"},{"id":"hr","kind":"service","unit":"mh-hr.service","state":"running","reload_on":["hr.conf"],"unit_text":"[Service]\\nExecStart=/bin/sh -c \\"cat %s/etc/hr.conf > %s/hr.seen; exec sleep infinity\\"\\nExecReload=/bin/sh -c \\"cat %s/etc/hr.conf > %s/hr.seen\\"\\n"}' "$ROOT" "$T" "$ROOT" "$T")
decl 36 "$HE,$HR"; apply_now
inside systemctl reload mh-hr.service
apply_now
sleep 0.05
touch "$ROOT/etc/hr.conf"
apply_now
check "reloaded by hand alone, then touched: unchanged" \
  '[ $RC = 0 ] && grep -q "^unchanged hr (service)" <<<"$OUT" && [ "$(cat "$T/hr.seen")" = good ]'
cp "$ROOT/etc/hr.conf" "$T/hr.orig"
echo HANDEDIT > "$ROOT/etc/hr.conf"
inside systemctl reload mh-hr.service
check "(the reload by hand read the edit)" '[ "$(cat "$T/hr.seen")" = HANDEDIT ]'
sleep 0.05
cp "$T/hr.orig" "$ROOT/etc/hr.conf"
apply_now
check "put back by hand after a reload onto the edit: reloaded onto the declared config" \
  '[ $RC = 0 ] && grep -q "^reloaded hr (service): reload_on /etc/hr.conf written again on the machine after its last reload began" <<<"$OUT" && [ "$(cat "$T/hr.seen")" = good ]'
apply_now
check "put back by hand after a reload: then unchanged" '[ $RC = 0 ] && grep -q "^unchanged hr (service)" <<<"$OUT"'
# A daemon-reload after the reload by hand (a package installed): systemd
# forgets its reloads (ExecReload='s status goes), the host reloads anyway.
# First a record that holds no reload (as after any daemon-reload), so that
# the no-op proof itself must hand the touched file over.
inside systemctl daemon-reload
apply_now
echo HANDEDIT > "$ROOT/etc/hr.conf"
inside systemctl reload mh-hr.service
inside systemctl daemon-reload
sleep 0.05
cp "$T/hr.orig" "$ROOT/etc/hr.conf"
apply_now
check "put back after a reload by hand and a daemon-reload: reloaded onto the declared config" \
  '[ $RC = 0 ] && grep -q "^reloaded hr (service): reload_on /etc/hr.conf written again on the machine since the host recorded it, and systemd forgets reloads" <<<"$OUT" && [ "$(cat "$T/hr.seen")" = good ]'

# 15. The host's own unit file touched under its own run: systemd says it
# needs a daemon-reload; a restart would touch a daemon that is right.
HR_PID=$(inside systemctl show mh-hr.service -p MainPID --value)
sleep 0.05
touch "$UNITS/mh-hr.service"
check "(systemd sees the touch)" '[ "$(inside systemctl show mh-hr.service -p NeedDaemonReload --value)" = yes ]'
apply_now
check "a unit file touched under the host's run: loaded again, not restarted" \
  '[ $RC = 0 ] && grep -q "^unchanged hr (service): systemd loaded mh-hr.service before its files last changed (NeedDaemonReload); its unit file is as declared, under the run the host recorded: loaded again (daemon-reload), not restarted" <<<"$OUT" && [ "$(inside systemctl show mh-hr.service -p MainPID --value)" = "$HR_PID" ] && [ "$(inside systemctl show mh-hr.service -p NeedDaemonReload --value)" = no ]'
# The same for an edit by hand the host puts back (systemd never loaded it).
HR_PID=$(inside systemctl show mh-hr.service -p MainPID --value)
sed -i 's/^\[Service\]$/[Unit]\nDescription=by hand\n[Service]/' "$UNITS/mh-hr.service"
apply_now
check "a unit file edited by hand, put back: loaded again, not restarted" \
  '[ $RC = 0 ] && grep -q "^updated hr (service): drifted: unit file mh-hr.service changed on the machine, put back; .*loaded again (daemon-reload), not restarted" <<<"$OUT" && [ "$(inside systemctl show mh-hr.service -p MainPID --value)" = "$HR_PID" ] && ! grep -q "by hand" "$UNITS/mh-hr.service"'
# Not so when a reload by hand ran what an edit loaded meanwhile: its
# ExecReload= was the edit's.
cp "$UNITS/mh-hr.service" "$T/hr.unit"
sed "s#cat $ROOT/etc/hr.conf > $T/hr.seen\"\$#echo EVIL > $T/hr.seen\"#" "$T/hr.unit" > "$UNITS/mh-hr.service"
inside systemctl daemon-reload
inside systemctl reload mh-hr.service
check "(the edited ExecReload= ran)" '[ "$(cat "$T/hr.seen")" = EVIL ]'
sleep 0.05
cp "$T/hr.unit" "$UNITS/mh-hr.service"
apply_now
check "a unit file put back after a reload by hand ran its edit: restarted onto it" \
  '[ $RC = 0 ] && grep -q "^restarted hr (service): unit file mh-hr.service is newer than what systemd loaded" <<<"$OUT" && [ "$(cat "$T/hr.seen")" = good ]'

finish
