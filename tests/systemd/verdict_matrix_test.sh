#!/usr/bin/env bash
# The verdict matrix (verdict_matrix.py, docs/two-looks.md) against the
# sandboxed systemd.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$PWD/host/mesh-host
[ -x "$BIN" ] || BIN=$(cd "$HERE/../.." && pwd)/host/mesh-host
[ "$(id -u)" = 0 ] || { echo "SKIP (LOUD): needs root for namespaces; not run" >&2; exit 0; }
exec python3 "$HERE/verdict_matrix.py" "$BIN" "$HERE/sdbox.sh"
