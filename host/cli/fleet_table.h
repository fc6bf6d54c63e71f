// The fleet table of `mesh-host status`: one line per machine -- target,
// machine, generation, health, the first thing wrong -- then a count;
// the same whether each host was asked (--url, --targets) or Prometheus
// was (--prometheus).
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mesh::cli {

// One machine's line of the fleet table.
struct FleetRow {
  std::string machine, generation, health, what;
  bool healthy = false;
};

// The largest place at or before `at` that does not fall inside a UTF-8
// character of `s`: where a cut of `s` may fall.
size_t CharBoundary(std::string_view s, size_t at);

// `s` padded to `width` columns (characters), or cut there with a "~".
std::string Fit(const std::string& s, size_t width);

// The line, padded to its columns.
std::string FleetLine(const std::string& target, const FleetRow& row);

// The header, a line per row (trailing blanks trimmed) and the count, the
// count followed by `source` (" (as Prometheus sees them)", or empty).
// Returns 0 when every row is healthy, else 1.
int WriteFleetTable(const std::vector<std::pair<std::string, FleetRow>>& rows, std::ostream& out,
                    std::string_view source = "");

}  // namespace mesh::cli
