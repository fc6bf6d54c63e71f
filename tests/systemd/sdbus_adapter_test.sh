#!/usr/bin/env bash
# Runs the sd-bus adapter's tests (sdbus_adapter_test.cc) inside the
# project's sandboxed systemd.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$PWD/tests/systemd/sdbus_adapter_test_bin
[ -x "$BIN" ] || BIN=$HERE/sdbus_adapter_test_bin
[ "$(id -u)" = 0 ] || { echo "SKIP (LOUD): needs root for namespaces; not run" >&2; exit 0; }
T=$(mktemp -d "${TEST_TMPDIR:-/tmp}/sdbus.XXXXXX")
export SDBOX_DIR=$T/sdbus-${T##*.}-box  # its cgroup is named for it
# A socket path must fit in 108 bytes: not under Bazel's TEST_TMPDIR.
E=$(mktemp -d /tmp/mh-bus.XXXXXX)
EMPTY_PID=
cleanup() {
  [ -z "$EMPTY_PID" ] || kill "$EMPTY_PID" 2>/dev/null || true
  # The buses the test binary starts of its own (OwnBus), should it die
  # before it kills them: each left its pid under $E.
  for f in "$E"/own.*/pid; do
    [ -f "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null || true
  done
  "$HERE/sdbox.sh" down >/dev/null 2>&1 || true
  rm -rf "$T" "$E"
}
trap cleanup EXIT
# A bus on which no systemd answers (and nothing is activated): every call
# the adapter makes there is refused.
cat > "$T/empty-bus.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=$E/bus</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
EOF
EMPTY_PID=$(dbus-daemon --config-file="$T/empty-bus.conf" --fork --print-pid)
export EMPTY_BUS_ADDRESS=unix:path=$E/bus
export OWN_BUS_DIR=$E
"$HERE/sdbox.sh" up
eval "$("$HERE/sdbox.sh" env)"
export DBUS_SYSTEM_BUS_ADDRESS
"$BIN"
