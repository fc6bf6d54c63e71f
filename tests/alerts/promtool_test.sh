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

# The fleet example: Prometheus config (with the rule paths pointed at this
# tree) and the Alertmanager routing.
EX=$(cd "$DIR/../../examples/fleet" 2>/dev/null && pwd || true)
[ -n "$EX" ] || EX=$(cd "$(dirname "$0")/../../examples/fleet" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
sed -e "s|/etc/prometheus/rules/|$PWD/|" -e "s|/etc/prometheus/targets/mesh-host/|$EX/targets/|" \
  "$EX/prometheus.yml" > "$T/prometheus.yml"
promtool check config "$T/prometheus.yml"
if command -v amtool >/dev/null; then
  amtool check-config "$EX/alertmanager.yml"
else
  echo "amtool missing (Debian package prometheus-alertmanager)" >&2; exit 1
fi
