#!/usr/bin/env bash
# SPEC "Reconcile" 7 against a real systemd: what an apply owes survives a
# reload systemd refuses, a daemon-reload systemd refuses (a full /run), a
# write that fails under reload_on, and the bus lost after the writes. Each
# daemon records the config it read when it started or reloaded: the test
# judges by that, not by what the host reports. (Kills at every step are
# tests/crash/units_campaign.py.)
. "$(dirname "$0")/box_suite.sh" owed
command -v strace >/dev/null || { echo "strace is missing (tools/lib/packages.sh installs it)" >&2; exit 1; }
mkdir -p "$T/root/etc" "$T/loaded"
# apply NAME [WRAPPER...]: runs apply on $T/NAME.json, sets OUT and RC.
apply() {
  local name=$1; shift
  set +e
  OUT=$("$@" "$BIN" apply --declaration "$T/$name.json" --root "$T/root" --state-dir "$T/state-$name" \
        --artifacts "$T/art" --unit-dir "$UNITS" --machine box --settle 300ms 2>&1)
  RC=$?
  set -e
  printf '%s\n(exit %s)\n' "$OUT" "$RC" | sed "s/^/    [$name] /"
}
json() { python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$1"; }
# A daemon that records "CONFIG VERSION" when it starts and on SIGHUP, and
# counts its loads.
daemon() {  # daemon NAME VERSION [EXTRA_SERVICE_LINES]
  local load="echo \"\$(cat $T/root/etc/$1.conf) \$V\" > $T/loaded/$1.new && mv $T/loaded/$1.new $T/loaded/$1 && echo >> $T/loaded/$1.loads"
  printf '[Service]\nEnvironment=V=%s\n%b' "$2" "${3:-}"
  printf 'ExecStart=/bin/sh -c '"'"'load() { %s; }; trap load HUP; load; while :; do sleep 1 & wait $!; done'"'"'\n' "$load"
}
decl() {  # decl NAME GENERATION CONTENT VERSION ON [EXTRA]
  printf '{"machine":"box","generation":%s,"resources":[{"id":"%s.conf","kind":"file","path":"/etc/%s.conf","content":"%s"},{"id":"%s","kind":"service","unit":"%s.service","state":"running","unit_text":%s,"%s":["%s.conf"]}]}' \
    "$2" "$1" "$1" "$3" "$1" "$1" "$(json "$(daemon "$1" "$4" "${6:-}")")" "$5" "$1" > "$T/$1.json"
}
runs() { cat "$T/loaded/$1" 2>/dev/null; }
loads() { wc -l < "$T/loaded/$1.loads"; }

# 1. A reload systemd refuses (no ExecReload): the apply fails, and so does
# the next — never "unchanged" while the daemon runs the old config.
decl noreload 1 a 1 reload_on; apply noreload
check "no-ExecReload unit starts" '[ $RC = 0 ] && [ "$(runs noreload)" = "a 1" ]'
decl noreload 2 b 1 reload_on; apply noreload
check "refused reload fails, named" '[ $RC = 1 ] && grep -q "^failed noreload (service): .*JobTypeNotApplicable" <<<"$OUT"'
apply noreload
check "... and fails again, owed, not unchanged" '[ $RC = 1 ] && grep -q "^failed noreload (service): .*(reload pending since generation 2)" <<<"$OUT"'
check "... the daemon still runs the old config" '[ "$(runs noreload)" = "a 1" ]'

# 2. A daemon-reload systemd refuses: with /run nearly full systemd says
# "Refusing to reload, not enough space". The unit whose definition changed
# fails and is not restarted onto its old definition; the next apply, with
# space again, reloads and restarts, saying it was owed.
decl full 1 a 1 restart_on; apply full
check "unit starts on version 1" '[ $RC = 0 ] && [ "$(runs full)" = "a 1" ]'
before=$(loads full)
nsenter -t "$SDBOX_PID" -m -p sh -c 'mount -o remount,size=24m /run && dd if=/dev/zero of=/run/ballast bs=1M count=12 2>/dev/null'
decl full 2 a 2 restart_on; apply full
check "refused daemon-reload fails the unit, named" '[ $RC = 1 ] && grep -q "^failed full (service): not restarted: daemon-reload failed (.*Refusing to reload" <<<"$OUT"'
check "... the daemon was not restarted onto the old definition" 'sleep 0.3; [ "$(loads full)" = "$before" ]'
nsenter -t "$SDBOX_PID" -m -p rm -f /run/ballast
apply full
check "next apply reloads and restarts, owed" '[ $RC = 0 ] && grep -q "^restarted full (service): unit file full.service changed (pending since generation 2); full.service active (running)" <<<"$OUT"'
check "... the daemon runs version 2" 'until_true 2 "[ \"\$(runs full)\" = \"a 2\" ]"'

# 3. reload_on onto a write that fails (its directory read-only): not
# reloaded; once the write lands, reloaded.
decl ro 1 a 1 reload_on 'ExecReload=/bin/kill -HUP $MAINPID\n'; apply ro
check "reloadable unit starts" '[ $RC = 0 ] && [ "$(runs ro)" = "a 1" ]'
before=$(loads ro)
decl ro 2 b 1 reload_on 'ExecReload=/bin/kill -HUP $MAINPID\n'
apply ro unshare -m sh -c 'mount --bind "$0/root/etc" "$0/root/etc" && mount -o remount,ro,bind "$0/root/etc" && exec "$@"' "$T"
check "a failed write holds the reload back" '[ $RC = 1 ] && grep -q "^failed ro (service): not reloaded: reload_on resource ro.conf failed; ro.service keeps its previous configuration" <<<"$OUT"'
check "... never reloaded" 'sleep 0.3; [ "$(loads ro)" = "$before" ]'
apply ro
check "the write lands, then the reload" '[ $RC = 0 ] && grep -q "^updated ro.conf (file)" <<<"$OUT" && grep -q "^reloaded ro (service): reload_on ro.conf changed" <<<"$OUT"'
check "... the daemon runs the new config" 'until_true 2 "[ \"\$(runs ro)\" = \"b 1\" ]"'

# 4. The bus lost after the writes: the apply pauses just after its config
# write lands (strace delays that rename's return) while the box's bus is
# killed, its socket stopped so that nothing starts it again; its restart
# cannot be asked. The next apply, the bus back, restarts, owed.
SC=(nsenter -t "$SDBOX_PID" -m -p systemctl)
decl bus 1 a 1 restart_on; apply bus
check "unit starts" '[ $RC = 0 ] && [ "$(runs bus)" = "a 1" ]'
decl bus 2 b 1 restart_on
( until_true 5 'grep -q b "$T/root/etc/bus.conf"' && "${SC[@]}" stop dbus.socket && "${SC[@]}" kill --signal=KILL dbus.service ) &
apply bus strace -f -qq -o /dev/null -e trace=renameat -e inject=renameat:delay_exit=1500000:when=2
wait
check "bus lost after the write: failed, named" '[ $RC = 1 ] && grep -Eq "^failed bus \(service\): .*(Connection reset|Broken pipe|not connected|Transport endpoint|no systemd answers on the system bus)" <<<"$OUT"'
check "... the config landed, the daemon still runs the old one" '[ "$(cat "$T/root/etc/bus.conf")" = b ] && [ "$(runs bus)" = "a 1" ]'
"${SC[@]}" start dbus.socket
until_true 5 'busctl get-property org.freedesktop.systemd1 /org/freedesktop/systemd1 org.freedesktop.systemd1.Manager SystemState >/dev/null 2>&1' || true
apply bus
check "next apply restarts, owed" '[ $RC = 0 ] && grep -q "^restarted bus (service): restart_on bus.conf changed (pending since generation 2)" <<<"$OUT"'
check "... the daemon runs the new config" 'until_true 2 "[ \"\$(runs bus)\" = \"b 1\" ]"'

# 5. The bus restarted under an apply (killed after the write, started again
# by its socket): the apply's connection, closed while it lay idle, is made
# again before its restart is asked, and the restart is done. Before, the
# closed connection failed the unit (and kept failing every call).
decl bus 3 c 1 restart_on
( until_true 5 'grep -q c "$T/root/etc/bus.conf"' && "${SC[@]}" kill --signal=KILL dbus.service ) &
apply bus strace -f -qq -o /dev/null -e trace=renameat -e inject=renameat:delay_exit=1500000:when=2
wait
check "bus restarted after the write: the restart is done" '[ $RC = 0 ] && grep -q "^restarted bus (service): restart_on bus.conf changed" <<<"$OUT"'
check "... the daemon runs the new config" 'until_true 2 "[ \"\$(runs bus)\" = \"c 1\" ]"'

echo "owed integration: $fails failed"
[ "$fails" = 0 ]
