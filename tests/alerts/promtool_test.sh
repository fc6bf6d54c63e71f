#!/usr/bin/env bash
# The shipped alert rules: promtool's syntax check and the rule unit tests.
set -euo pipefail
command -v promtool >/dev/null || { echo "promtool missing (Debian package prometheus)" >&2; exit 1; }
DIR=metrics/alerts
[ -f "$DIR/mesh-host.rules.yml" ] || DIR=$(cd "$(dirname "$0")/../../metrics/alerts" && pwd)
promtool check rules "$DIR/mesh-host.rules.yml"
promtool check rules "$DIR/fleet.rules.yml"
cd "$DIR"
promtool test rules mesh-host.rules.test.yml mesh-host.rules.timing.test.yml fleet.rules.test.yml

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

# One host's Prometheus (docs/alerts.md): the example's two additions merged
# into Debian's own configuration, as an operator pastes them, the rule path
# the package's (here: this tree's copy of that file).
ONE=$(cd "$EX/../prometheus" && pwd)/one-host.yml
BASE=/usr/share/doc/prometheus/examples/prometheus.yml
[ -f "$BASE" ] || BASE=/etc/prometheus/prometheus.yml
T=$(mktemp -d "${TEST_TMPDIR:-/tmp}/one-host.XXXXXX")
trap 'rm -rf "$T"' EXIT
python3 - "$BASE" "$ONE" "$PWD/mesh-host.rules.yml" "$T/prometheus.yml" <<'PY'
import sys, yaml
base, one, rules, out = sys.argv[1:]
config = yaml.safe_load(open(base))
add = yaml.safe_load(open(one))
assert add["rule_files"] == ["/usr/share/mesh-host/alerts/mesh-host.rules.yml"], add["rule_files"]
config["rule_files"] = (config.get("rule_files") or []) + [rules]
config["scrape_configs"] = (config.get("scrape_configs") or []) + add["scrape_configs"]
jobs = [j["job_name"] for j in config["scrape_configs"]]
assert jobs.count("mesh-host") == 1 and len(jobs) > 1, jobs  # added to, not replaced
yaml.safe_dump(config, open(out, "w"))
PY
promtool check config "$T/prometheus.yml"
