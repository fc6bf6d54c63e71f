#!/usr/bin/env bash
set -euo pipefail
exec python3 "$(dirname "$0")/mistakes_test.py" "$PWD/host/mesh-host"
