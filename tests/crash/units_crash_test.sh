#!/usr/bin/env bash
# The bounded units campaign of ./tools/test: a kill at every renameat,
# sendmsg and fsync of an apply that changes configs and unit texts, and a
# few at random moments (tools/crash runs the long one).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$PWD/host/mesh-host
[ "$(id -u)" = 0 ] || { echo "SKIP (LOUD): needs root for namespaces; not run" >&2; exit 0; }
exec python3 "$HERE/units_campaign.py" "$BIN" "$PWD/tests/systemd/sdbox.sh" --points --kills 6
