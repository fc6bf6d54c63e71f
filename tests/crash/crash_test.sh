#!/usr/bin/env bash
# The bounded crash-consistency run of ./tools/test: 12 kills (tools/crash runs the long one).
set -euo pipefail
BIN=$PWD/host/mesh-host
exec python3 "$(dirname "$0")/crash_consistency.py" "$BIN" --kills 12 --files 200 --size 65536
