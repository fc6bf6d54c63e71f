# A real Prometheus (Debian's) on loopback, for the shell suites that judge
# what the shipped rules make of a running mesh-host. Sourced by a suite
# that has T (its scratch directory), PIDS (what its cleanup stops) and
# until_true.
#
# start_prometheus RULES TARGET: scrapes TARGET (host:port) and evaluates
# RULES every second, its data under $T; sets API to its query API. Fails,
# with Prometheus's log, unless it scrapes TARGET within 30 s.
start_prometheus() {
  local rules=$1 target=$2 port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  cat > "$T/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: ["$rules"]
scrape_configs:
  - job_name: mesh-host
    static_configs:
      - targets: ["$target"]
YML
  prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/tsdb" \
    --web.listen-address="127.0.0.1:$port" --log.level=warn 2> "$T/prometheus.log" &
  PIDS+=($!)
  API=http://127.0.0.1:$port/api/v1
  # A here-string, not a pipe: under pipefail, grep -q leaving early fails curl.
  until_true 30 'grep -q "\"value\":\[[0-9.]*,\"1\"\]" <<<"$(curl -sf "$API/query?query=up")"' ||
    { tail "$T/prometheus.log" >&2; return 1; }
}
