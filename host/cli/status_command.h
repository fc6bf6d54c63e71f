// `mesh-host status`: reads /status of a running host and prints a table.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "host/core/result.h"

namespace mesh::cli {

// Exit 0 healthy, 1 not healthy, 2 unreachable or not a mesh-host.
int RunStatus(const std::string& url, std::ostream& out, std::ostream& err);

// `mesh-host status` as invoked: one host's table (one --url, or none:
// `default_url`), or the fleet's lines (several --url, or --targets).
int RunStatusVerb(const std::vector<std::string>& urls, const std::string& targets,
                  const std::string& default_url, std::ostream& out, std::ostream& err);

// The table, for a /status document; fits 80 columns.
std::string FormatStatusTable(const nlohmann::json& status);

// A fleet (`--url` more than once, or `--targets`): the hosts asked in
// parallel, each within its timeouts; one line per machine — target,
// machine, generation, health, the first thing /healthz says is wrong —
// then a count. Exit 0 only when every machine is healthy, 1 otherwise
// (unreachable included), 2 for a URL that is not one.
int RunFleetStatus(const std::vector<std::string>& urls, std::ostream& out, std::ostream& err);

// The base URLs of a Prometheus file_sd file (`__scheme__` honoured, http
// by default). Errors name the file and what is wrong.
core::Result<std::vector<std::string>> ReadTargets(const std::string& path);

// One machine's line of the fleet table.
struct FleetRow {
  std::string machine, generation, health, what;
  bool healthy = false;
};
std::string FleetLine(const std::string& target, const FleetRow& row);

}  // namespace mesh::cli
