#!/bin/sh
# sdbox.sh up|down|env|run CMD...  -- mesh-host's test harness: a real systemd as PID 1 of
# private pid/mount/uts/cgroup namespaces (on the host filesystem) that loads ONLY the unit
# files in $SDBOX_DIR/units. Clients on the host: DBUS_SYSTEM_BUS_ADDRESS from `sdbox.sh env`,
# then sd_bus_open_system(), busctl, or inside: nsenter -t $SDBOX_PID -m -p systemctl ...
# Needs root. Safety, kept on purpose:
#  - SYSTEMD_UNIT_PATH is only the box's own /etc/systemd/system (a private $SDBOX_DIR/config
#    bound over it in the box's mount namespace: systemctl enable/mask inside the box write
#    there, never to the machine's) and $SDBOX_DIR/units: the machine's sysinit.target
#    (tmpfiles wiping /tmp, sysctl, udev, remount-fs) is never pulled in;
#  - container= set (no read-only remount at shutdown), /sys and /proc/sys read-only inside,
#    generators off, a valid /etc/machine-id required (no first-boot presets);
#  - its own dbus-daemon with a root-only policy; teardown stops every unit, then SIGKILLs the
#    namespace's init after 10 s and removes its cgroup, so no process is left behind;
#  - with SDBOX_JOURNAL=1, its own journald too, volatile only (Storage=volatile in the box's
#    private /run): the journal is the box's /run/log/journal, read from outside as
#    /proc/$SDBOX_PID/root/run/log/journal, never the machine's /var/log/journal. Units log to
#    it when they say StandardOutput=journal (the default stays the console log).
# Derived from the reference script the project was given.
set -eu
D=${SDBOX_DIR:-/tmp/sdbox}
CG2=$(findmnt -rn -t cgroup2 -o TARGET | head -n1)
CG=$CG2/sdbox-$(basename "$D")
sdpid() { head -n1 "$CG/init.scope/cgroup.procs" 2>/dev/null || true; }
addr() { echo "unix:path=/proc/$(sdpid)/root/run/dbus/system_bus_socket"; }

up() {
  [ -n "$CG2" ] || { echo "sdbox: no cgroup2 mount" >&2; exit 1; }
  [ ! -e "$CG" ] || { echo "sdbox: $CG exists; run '$0 down' first" >&2; exit 1; }
  grep -Eqx '[0-9a-f]{32}' /etc/machine-id || { echo "sdbox: /etc/machine-id invalid (run systemd-machine-id-setup)" >&2; exit 1; }
  mkdir -p "$D/units" "$D/empty" "$D/config"
  for t in sysinit basic shutdown sockets timers paths; do
    printf '[Unit]\nDefaultDependencies=no\n' > "$D/units/$t.target"; done
  wants=dbus.service journal= target=console
  if [ "${SDBOX_JOURNAL:-}" = 1 ]; then
    wants="$wants systemd-journald.service"
    # systemd's own messages go to the box's journal once journald is up (to
    # the console before), as on a booted machine: what it says of a unit it
    # will not load is read there.
    target=journal
    journal='mkdir -p /run/systemd/journald.conf.d && printf "[Journal]\nStorage=volatile\n" > /run/systemd/journald.conf.d/sdbox.conf'
    printf '[Unit]\nDefaultDependencies=no\n[Socket]\nListenDatagram=/run/systemd/journal/socket\nListenStream=/run/systemd/journal/stdout\nPassCredentials=yes\nPassSecurity=yes\nService=systemd-journald.service\nSocketMode=0666\n' > "$D/units/systemd-journald.socket"
    printf '[Unit]\nDefaultDependencies=no\nRequires=systemd-journald.socket\nAfter=systemd-journald.socket\n[Service]\nType=notify\nSockets=systemd-journald.socket\nExecStart=/lib/systemd/systemd-journald\nRuntimeDirectory=systemd/journal\nRuntimeDirectoryPreserve=yes\nStandardOutput=null\n' > "$D/units/systemd-journald.service"
  fi
  printf '[Unit]\nWants=%s\nAllowIsolate=yes\n' "$wants" > "$D/units/ci.target"
  printf '[Unit]\nDefaultDependencies=no\nRequires=systemd-exit.service\nAfter=systemd-exit.service\n' > "$D/units/exit.target"
  printf '[Unit]\nDefaultDependencies=no\nRequires=shutdown.target\nAfter=shutdown.target\nSuccessAction=exit-force\n' > "$D/units/systemd-exit.service"
  printf '[Socket]\nListenStream=/run/dbus/system_bus_socket\n' > "$D/units/dbus.socket"
  printf '[Unit]\nRequires=dbus.socket\n[Service]\nType=notify\nExecStart=/usr/bin/dbus-daemon --config-file=%s --address=systemd: --nofork --nopidfile --systemd-activation --syslog-only\n' "$D/dbus.conf" > "$D/units/dbus.service"
  cat > "$D/dbus.conf" <<'EOF'
<busconfig><type>system</type><listen>unix:path=/run/dbus/system_bus_socket</listen><auth>EXTERNAL</auth>
<policy context="default"><allow user="root"/><allow own="*"/><allow send_destination="*"/><allow receive_sender="*"/></policy></busconfig>
EOF
  cat > "$D/init" <<EOF
set -e   # runs as PID 1 of the new namespaces, on script's pty
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /run
mount -o remount,bind,ro /sys
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount --bind /proc/sys /proc/sys && mount -o remount,bind,ro /proc/sys
mount --bind "\$(tty)" /dev/console
mount --bind $D/config /etc/systemd/system   # enable links and masks land in the box, not the machine
$journal
exec env -i container=sdbox SYSTEMD_UNIT_PATH=/etc/systemd/system:$D/units SYSTEMD_GENERATOR_PATH=$D/empty \
  SYSTEMD_ENVIRONMENT_GENERATOR_PATH=$D/empty /lib/systemd/systemd --unit=ci.target --log-target=$target --show-status=no --default-standard-output=tty
EOF
  mkdir "$CG"
  t0=$(date +%s%N)
  setsid script -qfec "sh -c 'echo \$\$ > $CG/cgroup.procs && exec unshare --pid --fork --mount --uts --cgroup --mount-proc --propagation=private sh $D/init'" \
    "$D/console.log" </dev/null >/dev/null 2>&1 &
  i=0; until [ -n "$(sdpid)" ] && DBUS_SYSTEM_BUS_ADDRESS=$(addr) busctl get-property org.freedesktop.systemd1 \
        /org/freedesktop/systemd1 org.freedesktop.systemd1.Manager SystemState 2>/dev/null | grep -q running; do
    i=$((i+1)); [ $i -lt 200 ] || { echo "sdbox: systemd did not come up, see $D/console.log" >&2; down; exit 1; }
    sleep 0.05; done
  echo "sdbox: up in $(( ($(date +%s%N)-t0)/1000000 )) ms, PID $(sdpid)" >&2
}

down() {
  t0=$(date +%s%N); P=$(sdpid)
  if [ -n "$P" ]; then   # stop all units (Conflicts=shutdown.target), then exit; SIGKILL after 10 s
    DBUS_SYSTEM_BUS_ADDRESS=$(addr) timeout 5 busctl call org.freedesktop.systemd1 /org/freedesktop/systemd1 \
      org.freedesktop.systemd1.Manager StartUnit ss exit.target replace-irreversibly >/dev/null 2>&1 || true
    i=0; while [ -d /proc/$P ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
    [ ! -d /proc/$P ] || kill -KILL "$P"   # SIGKILL to a pid-ns init kills the whole namespace
  fi
  if [ -d "$CG" ]; then   # remaining members are our script/unshare wrappers; they exit with their child
    i=0; while [ -n "$(find "$CG" -name cgroup.procs -exec cat {} + 2>/dev/null)" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
    for p in $(find "$CG" -name cgroup.procs -exec cat {} + 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
    sleep 0.1; find "$CG" -depth -type d -exec rmdir {} +
  fi
  echo "sdbox: down in $(( ($(date +%s%N)-t0)/1000000 )) ms" >&2
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  env) echo "DBUS_SYSTEM_BUS_ADDRESS=$(addr)"; echo "SDBOX_PID=$(sdpid)" ;;
  run) shift; up; trap down EXIT; trap 'exit 130' INT TERM
       rc=0; DBUS_SYSTEM_BUS_ADDRESS=$(addr) SDBOX_PID=$(sdpid) "$@" || rc=$?; exit $rc ;;
  *) echo "usage: $0 up|down|env|run CMD..." >&2; exit 2 ;;
esac
