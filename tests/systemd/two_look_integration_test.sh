#!/usr/bin/env bash
# ADR 184 against a real systemd: the built mesh-host apply, driven over the
# bus of the project's sandboxed systemd (sdbox.sh). Each scenario has its own
# state dir; all share one systemd. Timings use --settle 1s and generous
# bounds: they tell "one shared pause" from "one per unit" (12 s), and "not
# waited on" from an 8 s stop.
. "$(dirname "$0")/box_suite.sh" twolook
mkdir -p "$T/root" "$T/art"
# apply NAME DECL_JSON: runs apply, sets OUT, RC, MS.
apply() {
  printf '%s' "$2" > "$T/$1.json"
  local t0; t0=$(date +%s%N)
  set +e
  OUT=$("$BIN" apply --declaration "$T/$1.json" --root "$T/root" --state-dir "$T/state-$1" \
        --artifacts "$T/art" --unit-dir "$UNITS" --machine box --settle 1s 2>&1)
  RC=$?
  set -e
  MS=$(( ($(date +%s%N) - t0) / 1000000 ))
  printf '%s\n(exit %s, %s ms)\n' "$OUT" "$RC" "$MS" | sed "s/^/    [$1] /"
}
decl() { printf '{"machine":"box","generation":%s,"resources":[%s]}' "$1" "$2"; }
svc() {  # svc ID UNIT_TEXT [extra json]
  printf '{"id":"%s","kind":"service","unit":"%s.service","state":"running","unit_text":%s%s}' \
    "$1" "$1" "$(printf '%s' "$2" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))')" "${3:-}"
}
invocation() {
  local path
  path=$(busctl call org.freedesktop.systemd1 /org/freedesktop/systemd1 org.freedesktop.systemd1.Manager GetUnit s "$1" | cut -d'"' -f2)
  busctl get-property org.freedesktop.systemd1 "$path" org.freedesktop.systemd1.Unit InvocationID
}

# 1. A healthy unit is accepted.
apply healthy "$(decl 1 "$(svc healthy $'[Service]\nExecStart=/bin/sleep infinity\n')")"
check "healthy unit accepted" '[ $RC = 0 ] && grep -q "^created healthy (service): .*running as healthy.service (active (running))" <<<"$OUT"'

# 2. The incident: a daemon that refuses its new config dies 221 ms after the restart.
conf() { printf '{"id":"jail.conf","kind":"file","path":"/etc/jail.conf","content":"%s"}' "$1"; }
JAIL=$'[Service]\nExecStart=/bin/sh -c \'grep -q good '"$T"$'/root/etc/jail.conf || { sleep 0.221; exit 1; }; exec sleep infinity\'\n'
apply incident "$(decl 1 "$(conf good),$(svc jail "$JAIL" ',"restart_on":["jail.conf"]')")"
check "jail starts on a good config" '[ $RC = 0 ]'
apply incident "$(decl 2 "$(conf bad),$(svc jail "$JAIL" ',"restart_on":["jail.conf"]')")"
check "incident: apply exits 1" '[ $RC = 1 ]'
check "incident: names the unit and failed" 'grep -Eq "^failed jail \(service\): jail\.service failed \(Result=exit-code\) [0-9]+\.[0-9] s after restart" <<<"$OUT"'

# 3. Type=notify, not ready for 5 s: accepted without waiting for it.
apply notify "$(decl 1 "$(svc slow $'[Service]\nType=notify\nNotifyAccess=all\nExecStart=/bin/sh -c \'sleep 5; systemd-notify --ready; exec sleep infinity\'\n')")"
check "slow notify unit accepted" '[ $RC = 0 ] && grep -q "still starting" <<<"$OUT"'
check "slow notify unit not waited for (< 4 s)" '[ $MS -lt 4000 ]'

# 3b. Type=notify, ready 1.8 s into a 1 s settle, and refusing its config
# 0.3 s after: the pause runs from when it came up, not from the first look.
LATE=$'[Service]\nType=notify\nNotifyAccess=all\nExecStart=/bin/sh -c \'sleep 1.8; systemd-notify --ready; sleep 0.3; exit 1\'\n'
apply lateready "$(decl 1 "$(svc lateready "$LATE")")"
check "ready after its first look, then dead: failed" '[ $RC = 1 ] && grep -q "^failed lateready (service): lateready.service failed (Result=exit-code)" <<<"$OUT"'

# 4. A oneshot that finished.
apply oneshot "$(decl 1 "$(svc once $'[Service]\nType=oneshot\nExecStart=/bin/true\n')")"
check "finished oneshot accepted" '[ $RC = 0 ] && grep -q "finished (Result=success)" <<<"$OUT"'

# 5. A stop that takes 8 s is not waited on.
SLOWSTOP=$'[Service]\nExecStart=/bin/sleep infinity\nExecStop=/bin/sleep 8\n'
apply stop "$(decl 1 "$(svc slowstop "$SLOWSTOP")")"
apply stop "$(decl 2 "$(svc slowstop "$SLOWSTOP" | sed 's/"state":"running"/"state":"stopped"/')")"
check "stop reported" '[ $RC = 0 ] && grep -q "^stopped slowstop (service): stopped slowstop.service (not waited on)" <<<"$OUT"'
check "stop not waited on (< 3 s)" '[ $MS -lt 3000 ]'

# 6. Restart=always, dying every 400 ms: active at both looks, and still
# failed. Its deaths (0.4, 0.8, 1.2 s) stay clear of the second look at 1 s
# unless a restart costs some 0.1 s.
apply flap "$(decl 1 "$(svc flap $'[Unit]\nStartLimitIntervalSec=0\n[Service]\nRestart=always\nRestartSec=0\nExecStart=/bin/sh -c \'sleep 0.4; exit 1\'\n')")"
check "crash-looping unit failed" '[ $RC = 1 ] && grep -q "^failed flap (service): .*restarted by systemd" <<<"$OUT"'

# 7. Twelve units restarted in one apply cost about one settle, not twelve.
many=""; for i in $(seq 1 12); do many="$many,$(svc "many$i" $'[Service]\nExecStart=/bin/sleep infinity\n' ',"restart_on":["many.conf"]')"; done
mconf() { printf '{"id":"many.conf","kind":"file","path":"/etc/many.conf","content":"%s"}' "$1"; }
apply many "$(decl 1 "$(mconf v1)$many")"
apply many "$(decl 2 "$(mconf v2)$many")"
check "12 units restarted" '[ $RC = 0 ] && [ "$(grep -c "^restarted many[0-9]* (service): restart_on many.conf changed" <<<"$OUT")" = 12 ]'
check "12 restarts in one settle (< 3.5 s)" '[ $MS -lt 3500 ]'

# 8. Issue 210 end to end: a process applied three times is started once.
mkdir -p "$T/b/bin"; printf '#!/bin/sh\nexec sleep infinity\n' > "$T/b/bin/serve"; chmod 755 "$T/b/bin/serve"
tar -C "$T/b" -czf "$T/art/rt.tar.gz" .
SHA=$(sha256sum "$T/art/rt.tar.gz" | cut -d' ' -f1)
RT=$(printf '{"id":"node-tools.runtime","kind":"process","path":"/opt/rt","source":"rt.tar.gz","sha256":"%s","unit":"rt.service","unit_text":"[Service]\\nExecStart=%s/root/opt/rt/bin/serve\\n"}' "$SHA" "$T")
apply rt "$(decl 1 "$RT")"
check "process created and running" '[ $RC = 0 ] && grep -q "^created node-tools.runtime (process): unpacked 1 file(s), .*running as rt.service" <<<"$OUT"'
INV1=$(invocation rt.service)
apply rt "$(decl 1 "$RT")"
check "second apply unchanged" '[ $RC = 0 ] && grep -q "^unchanged node-tools.runtime (process)" <<<"$OUT"'
apply rt "$(decl 1 "$RT")"
check "third apply unchanged" '[ $RC = 0 ] && grep -q "^unchanged node-tools.runtime (process)" <<<"$OUT"'
check "never restarted after the first (same InvocationID)" '[ "$(invocation rt.service)" = "$INV1" ]'

# 9. A unit killed between applies is started again (was_dead).
nsenter -t "$SDBOX_PID" -m -p systemctl kill --signal=KILL rt.service
sleep 0.3
apply rt "$(decl 1 "$RT")"
check "dead unit started again" '[ $RC = 0 ] && grep -q "^started node-tools.runtime (process): was failed, started; rt.service" <<<"$OUT"'

# 10. A unit systemd does not know: read as not-found (the looks address
# units by their escaped object path, which loads them on demand), and the
# start fails naming it.
apply ghost '{"machine":"box","generation":1,"resources":[{"id":"ghost","kind":"service","unit":"no-such-unit@x-y.service","state":"running"}]}'
check "unknown unit fails, named" '[ $RC = 1 ] && grep -q "^failed ghost (service): .*no-such-unit@x-y.service" <<<"$OUT"'
# A unit declared stopped that systemd does not know is stopped as declared.
apply ghost2 '{"machine":"box","generation":1,"resources":[{"id":"ghost","kind":"service","unit":"no-such-unit.service","state":"stopped"}]}'
check "unknown unit declared stopped is stopped" '[ $RC = 0 ] && grep -q "^unchanged ghost (service): no-such-unit.service stopped as declared" <<<"$OUT"'

# 11. A reloaded daemon that dies after the apply's first write and is
# brought back by Restart= before its reload is asked: the reload keeps the
# new run, up at both looks. The death is the apply's to say. The window is
# the writes of 2,000 files declared after the one it dies on (about 0.3 s):
# a directory between them makes the trigger a write batch of its own,
# placed before the 2,000 are staged. It dies within 10 ms of that write,
# and RestartSec=0 brings it back.
RELOADER=$'[Service]\nExecStart=/bin/sh -c \'while :; do if [ -e '"$T"$'/root/etc/trigger ] && [ ! -e '"$T"$'/died ]; then touch '"$T"$'/died; exit 1; fi; sleep 0.01; done\'\nExecReload=/bin/true\nRestart=always\nRestartSec=0\n'
many() { python3 -c 'import json,sys; print(",".join(json.dumps({"id":f"f{i}","kind":"file","path":f"/srv/many/{i}","content":"x"}) for i in range(int(sys.argv[1]))))' "$1"; }
rconf() { printf '{"id":"r.conf","kind":"file","path":"/etc/r.conf","content":"%s"}' "$1"; }
RSVC=$(svc reloader "$RELOADER" ',"reload_on":["r.conf"]')
apply reloader "$(decl 1 "$(rconf a),$RSVC")"
check "the reloader runs" '[ $RC = 0 ]'
apply reloader "$(decl 2 "{\"id\":\"trigger\",\"kind\":\"file\",\"path\":\"/etc/trigger\",\"content\":\"now\"},{\"id\":\"many\",\"kind\":\"directory\",\"path\":\"/srv/many\"},$(many 2000),$(rconf b),$RSVC")"
check "it died during the apply (its own mark)" '[ -e "$T/died" ]'
check "a death before its reload fails the apply, naming the unit" '[ $RC = 1 ] && grep -q "^failed reloader (service): reloader.service " <<<"$OUT"'
check "... as a death brought back by Restart= before the reload was asked" \
  'grep -q "^failed reloader (service): reloader.service died during this apply and was restarted by systemd (NRestarts now 1): active (running) (read as its reload was asked)" <<<"$OUT"'
apply reloader "$(decl 2 "{\"id\":\"trigger\",\"kind\":\"file\",\"path\":\"/etc/trigger\",\"content\":\"now\"},{\"id\":\"many\",\"kind\":\"directory\",\"path\":\"/srv/many\"},$(many 2000),$(rconf b),$RSVC")"
check "the reload stays owed and is done at the next apply" \
  '[ $RC = 0 ] && grep -q "^reloaded reloader (service): " <<<"$OUT"'

echo "two-look integration: $fails failed"
[ "$fails" = 0 ]
