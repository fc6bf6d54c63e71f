#!/usr/bin/env bash
# Issue 38's classes of truth_integration_test.sh, each apply made by one
# `mesh-host run` (SIGHUP, or its file watch) rather than `mesh-host apply`:
# the same verdicts, and /healthz, /status and /metrics agreeing with them.
TRUTH_MODE=run exec "$(dirname "$0")/truth_integration_test.sh"
