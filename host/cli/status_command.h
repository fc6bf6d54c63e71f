// `mesh-host status`: reads /status of a running host and prints a table.
#pragma once

#include <chrono>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "host/core/result.h"

namespace mesh::cli {

// How `status` reaches a host behind its --web-config.
struct ClientOptions {
  std::string ca;    // PEM of the CA that signed the host's certificate
  std::string cert;  // client certificate and key (client_auth_type)
  std::string key;
  std::string user;  // basic auth
  std::string password;
  // Every answer is whole by then or cut off, whatever the peer does
  // (a byte every few seconds never trips a read timeout); none: no
  // deadline of the command's own.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  // An answer larger than this is cut off: /status of 10,000 resources is
  // about 3 MiB.
  size_t max_bytes = size_t{16} << 20;
};

// The default of `status --timeout`: a person at a terminal waits that long.
inline constexpr std::chrono::seconds kDefaultStatusTimeout{10};

// Exit 0 healthy, 1 not healthy, 2 unreachable or not a mesh-host.
int RunStatus(const std::string& url, std::ostream& out, std::ostream& err,
              const ClientOptions& client = {});

// `mesh-host status` as invoked: one host's table (one --url, or none:
// `default_url`), or the fleet's lines (several --url, or --targets).
// `password_file` (or, without one, MESH_HOST_PASSWORD) holds the password
// of `client.user`.
// `timeout` bounds the whole command (ClientOptions::deadline).
// `prometheus`: ask that Prometheus instead (RunPrometheusStatus).
int RunStatusVerb(const std::vector<std::string>& urls, const std::string& targets,
                  const std::string& default_url, std::ostream& out, std::ostream& err,
                  ClientOptions client = {}, const std::string& password_file = "",
                  std::chrono::nanoseconds timeout = kDefaultStatusTimeout,
                  const std::string& prometheus = "");

// The table, for a /status document; fits 80 columns.
std::string FormatStatusTable(const nlohmann::json& status);

// A fleet (`--url` more than once, or `--targets`): the hosts asked in
// parallel, each within its timeouts; one line per machine — target,
// machine, generation, health, the first thing /healthz says is wrong —
// then a count. Exit 0 only when every machine is healthy, 1 otherwise
// (unreachable included), 2 for a URL that is not one.
int RunFleetStatus(const std::vector<std::string>& urls, std::ostream& out, std::ostream& err,
                   const ClientOptions& client = {});

// The base URLs of a Prometheus file_sd file (`__scheme__` honoured, http
// by default). Errors name the file and what is wrong.
// `default_scheme` for groups without one.
core::Result<std::vector<std::string>> ReadTargets(const std::string& path,
                                                   const std::string& default_scheme = "http");

// `status --prometheus URL`: the fleet's state as that Prometheus holds it
// (its HTTP API, /api/v1/query: Thanos, Mimir and other compatible stores
// too), in the fleet table's shape, one line per instance of a job matching
// mesh-host.*: UNREACHABLE when its up is 0, NOT HEALTHY with the first of
// a refused declaration, its failed resources, its units declared running
// that are not up, its units flapping (the alerts' rules), else healthy.
// Prometheus knows no machine names: that column is "-". Exit 0 only when
// every instance is healthy, 1 otherwise, 2 when Prometheus cannot be asked
// or answers what is not its API. TLS and basic auth as for the hosts.
int RunPrometheusStatus(const std::string& prometheus_url, std::ostream& out, std::ostream& err,
                        const ClientOptions& client = {});

// One machine's line of the fleet table.
struct FleetRow {
  std::string machine, generation, health, what;
  bool healthy = false;
};
std::string FleetLine(const std::string& target, const FleetRow& row);

}  // namespace mesh::cli
