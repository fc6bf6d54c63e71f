#!/usr/bin/env bash
# The shipped alert rules: promtool's syntax check and the rule unit tests.
set -euo pipefail
command -v promtool >/dev/null || { echo "promtool missing (Debian package prometheus)" >&2; exit 1; }
DIR=metrics/alerts
[ -f "$DIR/mesh-host.rules.yml" ] || DIR=$(cd "$(dirname "$0")/../../metrics/alerts" && pwd)
promtool check rules "$DIR/mesh-host.rules.yml"
promtool check rules "$DIR/fleet.rules.yml"
cd "$DIR"
promtool test rules mesh-host.rules.test.yml

# The fleet example as shipped: the Prometheus config (its paths are
# relative to it) and the Alertmanager routing.
EX=$(cd "$DIR/../../examples/fleet" 2>/dev/null && pwd || true)
[ -n "$EX" ] || EX=$(cd "$(dirname "$0")/../../examples/fleet" && pwd)
promtool check config "$EX/prometheus.yml"
# The shard and global configurations tools/fleet-sim measured (issue 42).
promtool check config "$EX/prometheus-shard.yml"
promtool check config "$EX/prometheus-global.yml"
if command -v amtool >/dev/null; then
  amtool check-config "$EX/alertmanager.yml"
else
  echo "amtool missing (Debian package prometheus-alertmanager)" >&2; exit 1
fi
