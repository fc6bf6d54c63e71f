#!/usr/bin/env bash
# A unit file the host writes that systemd would not load, against a real
# systemd. The box reads its own /etc/systemd/system before its unit
# directory ($UNITS, the host's --unit-dir here): a file of the unit's name
# there shadows the host's, and the resource fails `shadowed`, nothing
# written, nothing restarted. The reverse, a vendor's file in a directory
# read after --unit-dir (the override every operator makes), is applied:
# the host runs inside the box for it, so that --unit-dir is
# /etc/systemd/system by the name systemd itself uses.
. "$(dirname "$0")/box_suite.sh" shadowed
mkdir -p "$T/root"
decl() {  # decl GENERATION ID SECONDS: one service whose unit_text sleeps SECONDS
  printf '{"machine":"box","generation":%s,"resources":[{"id":"%s","kind":"service","unit":"mh-%s.service","state":"running","unit_text":"[Service]\\nExecStart=/bin/sleep %s\\n"}]}' \
    "$1" "$2" "$2" "$3" > "$T/decl.json"
}
prop() { busctl get-property org.freedesktop.systemd1 "/org/freedesktop/systemd1/unit/mh_2d$1_2eservice" \
           org.freedesktop.systemd1.Unit "$2" | cut -d' ' -f2- | tr -d '"'; }
main_cmd() { inside systemctl show -p ExecStart --value "mh-$1.service" | grep -o 'sleep [0-9][0-9]*' | head -1; }

# The operator's file in the box's /etc/systemd/system, running.
printf '[Service]\nExecStart=/bin/sleep 3000\n' > "$SDBOX_DIR/config/mh-sh.service"
inside systemctl daemon-reload
inside systemctl start mh-sh.service
inv=$(prop sh InvocationID)
decl 1 sh 4000; box_apply
check "shadowed: the apply fails naming the file systemd loads and --unit-dir" \
  '[ $RC = 1 ] && grep -qF "failed sh (service): shadowed: systemd loads mh-sh.service from /etc/systemd/system/mh-sh.service, in a directory it reads before $UNITS (--unit-dir)" <<<"$OUT"'
check "shadowed: no unit file written, the unit not restarted" \
  '[ ! -e "$UNITS/mh-sh.service" ] && [ "$(prop sh InvocationID)" = "$inv" ] && [ "$(main_cmd sh)" = "sleep 3000" ]'
box_apply
check "shadowed: the next apply says so again" '[ $RC = 1 ] && grep -q "^failed sh (service): shadowed" <<<"$OUT"'

# Moved away (and systemd told): the host's file is written and runs.
rm "$SDBOX_DIR/config/mh-sh.service"
inside systemctl daemon-reload
box_apply
check "moved away: the host's file is written, loaded and run" \
  '[ $RC = 0 ] && [ -f "$UNITS/mh-sh.service" ] && [ "$(prop sh FragmentPath)" = "$UNITS/mh-sh.service" ] && [ "$(main_cmd sh)" = "sleep 4000" ] && [ "$(prop sh ActiveState)" = active ]'

# A link in /etc/systemd/system that makes the declared name an alias of
# the operator's running unit: systemd answers for that unit, and the
# host's file never runs. Dropped, the operator's unit is not stopped.
printf '[Service]\nExecStart=/bin/sleep 3100\n' > "$SDBOX_DIR/config/mh-op.service"
ln -s mh-op.service "$SDBOX_DIR/config/mh-al.service"
inside systemctl daemon-reload
inside systemctl start mh-op.service
inv=$(prop op InvocationID)
decl 2 al 4100; box_apply
check "alias: the apply's own reload shows it, failed and named, nothing restarted" \
  '[ $RC = 1 ] && grep -qF "failed al (service): shadowed: after the daemon-reload systemd reads mh-al.service as an alias of mh-op.service, from /etc/systemd/system/mh-op.service" <<<"$OUT" && [ "$(prop op InvocationID)" = "$inv" ]'
box_apply
check "alias: then judged before anything is asked" \
  '[ $RC = 1 ] && grep -qF "failed al (service): shadowed: systemd reads mh-al.service as an alias of mh-op.service" <<<"$OUT" && [ "$(prop op InvocationID)" = "$inv" ]'
# mh-al dropped; mh-al2, another alias of it, declared stopped: a stop of
# the name would stop mh-op.
ln -s mh-op.service "$SDBOX_DIR/config/mh-al2.service"
inside systemctl daemon-reload
printf '{"machine":"box","generation":3,"resources":[{"id":"al2","kind":"service","unit":"mh-al2.service","state":"stopped","unit_text":"[Service]\\nExecStart=/bin/sleep 4200\\n"}]}' > "$T/decl.json"; box_apply
check "alias dropped: the host's file goes, the operator's unit runs on" \
  '[ $RC = 1 ] && grep -qF "left unit mh-al.service as it is: systemd reads it as an alias of mh-op.service" <<<"$OUT" && [ ! -e "$UNITS/mh-al.service" ] && [ "$(prop op InvocationID)" = "$inv" ] && [ "$(prop op ActiveState)" = active ]'
check "alias declared stopped: not stopped, failed after the reload" \
  'grep -qF "failed al2 (service): shadowed: after the daemon-reload systemd reads mh-al2.service as an alias of mh-op.service" <<<"$OUT" && [ "$(prop op InvocationID)" = "$inv" ] && [ "$(prop op ActiveState)" = active ]'
printf '{"machine":"box","generation":4,"resources":[]}' > "$T/decl.json"; box_apply
check "alias declared stopped, dropped: the operator's unit runs on" \
  '[ $RC = 0 ] && grep -qF "left unit mh-al2.service as it is" <<<"$OUT" && [ "$(prop op InvocationID)" = "$inv" ] && [ "$(prop op ActiveState)" = active ]'
inside systemctl stop mh-op.service
rm "$SDBOX_DIR/config/mh-op.service" "$SDBOX_DIR/config/mh-al.service" "$SDBOX_DIR/config/mh-al2.service"
inside systemctl daemon-reload

# The host run inside the box (--root /, declaring units only), so that it
# sees /etc/systemd/system as systemd does: --unit-dir is $UNITS.
inside_apply() {  # inside_apply STATE-DIR UNIT-DIR
  set +e
  OUT=$(inside env -u DBUS_SYSTEM_BUS_ADDRESS "$BIN" apply --declaration "$T/decl.json" \
        --root / --state-dir "$1" --artifacts "$T/art" --unit-dir "$2" --machine box \
        --settle 300ms 2>&1)
  RC=$?
  set -e
  printf '%s\n(exit %s)\n' "$OUT" "$RC" | sed 's/^/    /'
}
# A file of its name put in /etc/systemd/system with no daemon-reload: the
# host's file is what systemd has loaded when the apply looks, and the
# apply's own reload moves it onto the other file. Then dropped: the host's
# file goes, the operator's daemon is not stopped.
decl 1 sd 4000; inside_apply "$T/state-sd" "$UNITS"
check "revealed: first the host's file runs" '[ $RC = 0 ] && [ "$(main_cmd sd)" = "sleep 4000" ]'
printf '[Service]\nExecStart=/bin/sleep 3333\n' > "$SDBOX_DIR/config/mh-sd.service"
inv=$(prop sd InvocationID)
decl 2 sd 4001; inside_apply "$T/state-sd" "$UNITS"
check "shadowed by the apply's own reload: not restarted onto the other file" \
  '[ "$(prop sd InvocationID)" = "$inv" ] && [ "$(main_cmd sd)" = "sleep 3333" ]'

check "shadowed by the apply's own reload: failed, named, nothing rolled back" \
  '[ $RC = 1 ] && grep -qF "failed sd (service): shadowed: after the daemon-reload systemd loads it from /etc/systemd/system/mh-sd.service" <<<"$OUT" && ! grep -q "rolled back" <<<"$OUT"'
inside_apply "$T/state-sd" "$UNITS"
check "then shadowed as found" '[ $RC = 1 ] && grep -q "^failed sd (service): shadowed: systemd loads" <<<"$OUT"'
inv=$(prop sd InvocationID)
printf '{"machine":"box","generation":3,"resources":[]}' > "$T/decl.json"
inside_apply "$T/state-sd" "$UNITS"
check "dropped while shadowed: the host's file goes, the operator's daemon runs on" \
  '[ $RC = 0 ] && grep -qF "left unit mh-sd.service as it is: systemd loads it from /etc/systemd/system/mh-sd.service, not from the host'"'"'s file" <<<"$OUT" && [ ! -e "$UNITS/mh-sd.service" ] && [ "$(prop sd InvocationID)" = "$inv" ] && [ "$(prop sd ActiveState)" = active ]'
inside systemctl stop mh-sd.service; rm "$SDBOX_DIR/config/mh-sd.service"; inside systemctl daemon-reload

# A drop-in of the name the host declares, in /etc/systemd/system: of each
# name systemd loads one, the earlier directory's.
mkdir -p "$SDBOX_DIR/config/mh-dw.service.d"
printf '[Service]\nEnvironment=X=etc\n' > "$SDBOX_DIR/config/mh-dw.service.d/10-x.conf"
inside systemctl daemon-reload
printf '{"machine":"box","generation":1,"resources":[{"id":"dw","kind":"service","unit":"mh-dw.service","state":"running","unit_text":"[Service]\\nExecStart=/bin/sleep 1000\\n","drop_ins":{"10-x.conf":"[Service]\\nEnvironment=X=host\\n"}}]}' > "$T/decl.json"
inside_apply "$T/state-dw" "$UNITS"
# A new unit: systemd tells its drop-ins only once it loads it, after the
# apply's own reload; the unit is then not started.
check "shadowed drop-in of a new unit: failed naming it, not started" \
  '[ $RC = 1 ] && grep -qF "failed dw (service): shadowed: after the daemon-reload systemd loads its drop-in 10-x.conf from /etc/systemd/system/mh-dw.service.d/10-x.conf, in a directory it reads before $UNITS (--unit-dir)" <<<"$OUT" && [ "$(prop dw ActiveState)" != active ]'
printf '{"machine":"box","generation":2,"resources":[{"id":"dw","kind":"service","unit":"mh-dw.service","state":"running","unit_text":"[Service]\\nExecStart=/bin/sleep 1000\\n","drop_ins":{"10-x.conf":"[Service]\\nEnvironment=X=two\\n"}}]}' > "$T/decl.json"
inside_apply "$T/state-dw" "$UNITS"
check "shadowed drop-in, known: failed before anything is written" \
  '[ $RC = 1 ] && grep -qF "failed dw (service): shadowed: systemd loads its drop-in 10-x.conf from /etc/systemd/system/mh-dw.service.d/10-x.conf" <<<"$OUT" && ! grep -q "X=two" "$UNITS/mh-dw.service.d/10-x.conf"'
rm -r "$SDBOX_DIR/config/mh-dw.service.d"; inside systemctl daemon-reload
inside_apply "$T/state-dw" "$UNITS"
check "moved away: the host's drop-in is written and read" \
  '[ $RC = 0 ] && grep -q "X=two" "$UNITS/mh-dw.service.d/10-x.conf" && inside systemctl show -p Environment --value mh-dw.service | grep -q "X=two" && [ "$(prop dw ActiveState)" = active ]'

# A vendor's file, in $UNITS (read after /etc/systemd/system), running.
printf '[Service]\nExecStart=/bin/sleep 5000\n' > "$UNITS/mh-vendor.service"
inside systemctl daemon-reload
inside systemctl start mh-vendor.service
decl 1 vendor 6000
inside_apply "$T/state-inside" /etc/systemd/system
check "vendor file read after --unit-dir: overridden, not shadowed" \
  '[ $RC = 0 ] && ! grep -q shadowed <<<"$OUT" && [ "$(prop vendor FragmentPath)" = /etc/systemd/system/mh-vendor.service ] && [ "$(main_cmd vendor)" = "sleep 6000" ] && [ "$(prop vendor ActiveState)" = active ]'
check "the override is in the box's own /etc/systemd/system" \
  '[ -f "$SDBOX_DIR/config/mh-vendor.service" ] && [ ! -e /etc/systemd/system/mh-vendor.service ]'
inside_apply "$T/state-inside" /etc/systemd/system
check "vendor file read after --unit-dir: the next apply is a no-op" \
  '[ $RC = 0 ] && grep -q "^unchanged vendor (service)" <<<"$OUT"'

# A --unit-dir systemd does not read at all: the host's file is written and
# reloaded, systemd still has no such unit, and the failure names the
# directory instead of StartUnit's bare "not found".
mkdir -p "$T/unread"
decl 1 nr 4000
set +e
OUT=$("$BIN" apply --declaration "$T/decl.json" --root "$T/root" --state-dir "$T/state-nr" \
      --artifacts "$T/art" --unit-dir "$T/unread" --machine box --settle 300ms 2>&1)
RC=$?
set -e
printf '%s\n(exit %s)\n' "$OUT" "$RC" | sed 's/^/    /'
check "unread --unit-dir: failed naming the directory, nothing started" \
  '[ $RC = 1 ] && grep -qF "failed nr (service): not found: after the daemon-reload systemd has no unit file for it, as it does not read $T/unread (--unit-dir)" <<<"$OUT" && [ -f "$T/unread/mh-nr.service" ] && [ "$(prop nr LoadState)" = not-found ]'

finish
