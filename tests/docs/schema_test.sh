#!/usr/bin/env bash
# Runs schema_test.py (see its docstring); bazel's sh_test entry point.
set -euo pipefail
exec python3 "$(dirname "$0")/schema_test.py" "$@"
