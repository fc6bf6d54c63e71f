#!/usr/bin/env bash
# ensure_packages (tools/lib/packages.sh) keeps services from starting while
# it installs with a policy-rc.d of its own. It overwrote the machine's own
# (a container image's) and, with the install failing, deleted it. Run in a
# mount namespace of its own, /usr/sbin a tmpfs and apt-get a stand-in that
# fails: the machine's own files are never touched.
set -euo pipefail
LIB=$PWD/tools/lib/packages.sh
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/bin"
printf '#!/bin/sh\n[ "$1" = update ] && exit 0\necho "apt-get: install fails (stand-in)" >&2\nexit 100\n' \
  > "$T/bin/apt-get"
chmod +x "$T/bin/apt-get"
fails=0
check() {  # check NAME POLICY-BEFORE EXPECTED-AFTER
  local out
  out=$(unshare -m bash -c '
    mount -t tmpfs none /usr/sbin
    [ -n "$2" ] && printf "%s" "$2" > /usr/sbin/policy-rc.d
    export PATH=$1:$PATH
    . "$3"
    MESH_HOST_PACKAGES=(mesh-host-no-such-package)
    rc=0; ensure_packages 2>/dev/null || rc=$?
    echo "rc=$rc"
    cat /usr/sbin/policy-rc.d 2>/dev/null || echo "(none)"' - "$T/bin" "$2" "$LIB")
  if [ "$out" = "$3" ]; then echo "ok   - $1"; else echo "FAIL - $1: $out"; fails=$((fails + 1)); fi
}
check "a failed install fails, and the machine's policy-rc.d is put back" \
  $'#!/bin/sh\nexit 7\n' $'rc=100\n#!/bin/sh\nexit 7'
check "a failed install leaves no policy-rc.d where there was none" "" $'rc=100\n(none)'
[ "$fails" = 0 ]
