#!/usr/bin/env bash
# The bounded rollback campaign of ./tools/test (issue 43): a kill at every
# renameat, fsync and syncfs of an apply that rolls a refused config back,
# and a few at random moments; after each, the next two applies fail (never
# a success), say held or rolled back, and leave the daemon on the config
# it was confirmed on, restarting nothing the second time. tools/crash runs
# the long one, sendmsg included.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$PWD/host/mesh-host
[ "$(id -u)" = 0 ] || { echo "SKIP (LOUD): needs root for namespaces; not run" >&2; exit 0; }
exec python3 "$HERE/rollback_campaign.py" "$BIN" "$PWD/tests/systemd/sdbox.sh" \
  --points renameat,fsync,syncfs --kills 4
