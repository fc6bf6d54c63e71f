#!/usr/bin/env bash
# The bounded run of ./tools/test: 6 kills of a chunked first apply (tools/crash runs the long one).
set -euo pipefail
BIN=$PWD/host/mesh-host
exec python3 "$(dirname "$0")/chunked_campaign.py" "$BIN" --kills 6
