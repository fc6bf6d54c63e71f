// `mesh-host status`: reads /status of a running host and prints a table.
#pragma once

#include <chrono>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "host/cli/fleet_table.h"
#include "host/cli/peer.h"
#include "host/core/result.h"

namespace mesh::cli {

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
// `prometheus`: ask that Prometheus instead (prometheus_status.h).
int RunStatusVerb(const std::vector<std::string>& urls, const std::vector<std::string>& targets,
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
// `default_scheme` for groups without one. A file still being written
// (a FIFO) is waited on until `deadline` at most.
core::Result<std::vector<std::string>> ReadTargets(
    const std::string& path, const std::string& default_scheme = "http",
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());

}  // namespace mesh::cli
