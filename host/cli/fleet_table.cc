#include "host/cli/fleet_table.h"

#include "host/core/printable.h"

namespace mesh::cli {

size_t CharBoundary(std::string_view s, size_t at) {
  while (at > 0 && at < s.size() && (static_cast<unsigned char>(s[at]) & 0xC0) == 0x80) --at;
  return at;
}

// Columns are counted in characters (UTF-8 code points), not bytes, so that
// a name of many-byte characters keeps the columns after it in line.
std::string Fit(const std::string& s, size_t width) {
  size_t chars = 0, cut = s.size();
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) continue;  // inside a character
    if (chars == width - 1) cut = i;
    ++chars;
  }
  if (chars <= width) return s + std::string(width - chars, ' ');
  return s.substr(0, cut) + "~";
}

std::string FleetLine(const std::string& target, const FleetRow& row) {
  return Fit(core::Printable(target), 22) + " " + Fit(row.machine, 14) + " " +
         Fit(row.generation, 6) + " " + Fit(row.health, 12) + " " + row.what;
}

int WriteFleetTable(const std::vector<std::pair<std::string, FleetRow>>& rows, std::ostream& out,
                    std::string_view source) {
  out << Fit("TARGET", 22) << " " << Fit("MACHINE", 14) << " " << Fit("GEN", 6) << " "
      << Fit("HEALTH", 12) << " WHAT FAILS\n";
  size_t healthy = 0, unreachable = 0;
  for (const auto& [target, row] : rows) {
    std::string line = FleetLine(target, row);
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << "\n";
    if (row.healthy) ++healthy;
    if (row.health == "UNREACHABLE") ++unreachable;
  }
  out << rows.size() << " machine(s): " << healthy << " healthy, "
      << rows.size() - healthy - unreachable << " not healthy, " << unreachable << " unreachable"
      << source << "\n";
  return healthy == rows.size() ? 0 : 1;
}

}  // namespace mesh::cli
