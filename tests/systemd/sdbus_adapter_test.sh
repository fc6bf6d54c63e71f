#!/usr/bin/env bash
# Runs the sd-bus adapter's tests (sdbus_adapter_test.cc) inside the
# project's sandboxed systemd.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$PWD/tests/systemd/sdbus_adapter_test_bin
[ -x "$BIN" ] || BIN=$HERE/sdbus_adapter_test_bin
[ "$(id -u)" = 0 ] || { echo "SKIP (LOUD): needs root for namespaces; not run" >&2; exit 0; }
T=$(mktemp -d "${TEST_TMPDIR:-/tmp}/sdbus.XXXXXX")
export SDBOX_DIR=$T/box
cleanup() { "$HERE/sdbox.sh" down >/dev/null 2>&1 || true; rm -rf "$T"; }
trap cleanup EXIT
"$HERE/sdbox.sh" up
eval "$("$HERE/sdbox.sh" env)"
export DBUS_SYSTEM_BUS_ADDRESS
"$BIN"
