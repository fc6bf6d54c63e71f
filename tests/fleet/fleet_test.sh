#!/usr/bin/env bash
# Runs fleet_test.py (see its docstring); bazel's sh_test entry point.
set -euo pipefail
exec python3 "$(dirname "$0")/fleet_test.py" "$@"
