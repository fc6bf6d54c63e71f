// `mesh-host status`: reads /status of a running host and prints a table.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

namespace mesh::cli {

// Exit 0 healthy, 1 not healthy, 2 unreachable or not a mesh-host.
int RunStatus(const std::string& url, std::ostream& out, std::ostream& err);

// The table, for a /status document; fits 80 columns.
std::string FormatStatusTable(const nlohmann::json& status);

}  // namespace mesh::cli
