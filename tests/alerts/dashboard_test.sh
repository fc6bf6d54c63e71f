#!/usr/bin/env bash
# The shipped Grafana dashboard: its JSON, and every query against a real
# Prometheus scraping real daemons (dashboard_test.py says how).
set -euo pipefail
exec python3 "$(dirname "$0")/dashboard_test.py"
