#!/usr/bin/env bash
# The package's maintainer scripts against a real systemd (sdbox.sh): an
# upgrade restarts the running daemon on the new binary, a first install
# starts nothing, an upgrade leaves a stopped daemon stopped, a removal stops
# it. The unit is the one the package ships (flags and paths pointed at the
# test's directory); the scripts run in the box, in a mount namespace of
# their own where /var/lib is the test's.
. "$(dirname "$0")/box_suite.sh" debscripts
DEB=$PWD/packaging/mesh-host.deb
mkdir -p "$T/x" "$T/varlib" "$T/root"
dpkg-deb -x "$DEB" "$T/x"
dpkg-deb -e "$DEB" "$T/x/DEBIAN"
printf '{"machine":"box","generation":1,"resources":[]}' > "$T/decl.json"
# The box's /etc/systemd/system is private to it: the unit goes where the
# package puts it on a machine, minus the state dir on the machine's /var.
sed -e "s|^ExecStart=.*|ExecStart=$T/x/usr/bin/mesh-host run --declaration $T/decl.json --root $T/root --state-dir $T/state --unit-dir $T/units --machine box --listen 127.0.0.1:0|" \
    -e '/^StateDirectory/d' -e '/^EnvironmentFile/d' \
    "$T/x/lib/systemd/system/mesh-host.service" > "$SDBOX_DIR/units/mesh-host.service"
inside systemctl daemon-reload
script() { inside unshare -m sh -c 'mount --bind "$1" /var/lib && shift && exec sh "$@"' - "$T/varlib" "$T/x/DEBIAN/$1" "${@:2}"; }
show() { inside systemctl show mesh-host -p "$1" --value; }

check "the box runs systemd (the scripts' guard)" 'inside test -d /run/systemd/system'
check "the packaged unit starts" 'timeout 20 nsenter -t "$SDBOX_PID" -m -p systemctl start mesh-host'
pid1=$(show MainPID)
check "first install (configure, no old version): the daemon is not restarted" \
  'out=$(script postinst configure) && [ "$(show MainPID)" = "$pid1" ]'
check "... and it says what to do next" 'grep -q "systemctl enable --now mesh-host" <<<"$out"'
check "... state dir made in /var/lib, 0700" '[ "$(stat -c %a "$T/varlib/mesh-host")" = 700 ]'
check "upgrade (configure 0.0.9): the daemon is restarted" \
  'script postinst configure 0.0.9 && [ "$(show ActiveState)" = active ] && [ "$(show MainPID)" != "$pid1" ] && [ "$(show MainPID)" != 0 ]'
check "remove: prerm stops it" 'script prerm remove && [ "$(show ActiveState)" = inactive ]'
check "upgrade of a stopped daemon leaves it stopped" \
  'script postinst configure 0.0.9 && [ "$(show ActiveState)" = inactive ]'
check "an upgrade's prerm does not stop it" \
  'inside systemctl start mesh-host && script prerm upgrade 0.1.0 && [ "$(show ActiveState)" = active ]'
inside systemctl stop mesh-host
finish
