#!/usr/bin/env bash
set -euo pipefail
exec python3 "$(dirname "$0")/exit_codes_test.py" "$PWD/host/mesh-host"
