#include "host/core/outcome.h"

#include "host/core/printable.h"

namespace mesh::core {

std::string_view OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kCreated:
      return "created";
    case Outcome::kUpdated:
      return "updated";
    case Outcome::kUnchanged:
      return "unchanged";
    case Outcome::kStarted:
      return "started";
    case Outcome::kRestarted:
      return "restarted";
    case Outcome::kReloaded:
      return "reloaded";
    case Outcome::kStopped:
      return "stopped";
    case Outcome::kRemoved:
      return "removed";
    case Outcome::kFailed:
      return "failed";
  }
  return "unknown";
}

std::string FormatOutcomeLine(const ResourceOutcome& o) {
  std::string line;
  line.reserve(32 + o.id.size() + o.detail.size());
  line.append(OutcomeName(o.outcome))
      .append(" ")
      .append(IsPrintable(o.id) ? o.id : Printable(o.id));
  line.append(" (").append(o.kind).append(")");
  if (!o.detail.empty())
    line.append(": ").append(IsPrintable(o.detail) ? o.detail : Printable(o.detail));
  return line;
}

std::vector<std::string> FormatJournalLines(const ResourceOutcome& o) {
  std::vector<std::string> out;
  if (!o.unit.has_value()) return out;
  for (const std::string& line : o.unit->journal) out.push_back("  journal: " + line);
  if (out.empty() && !o.unit->journal_note.empty()) {
    out.push_back("  journal: (" + o.unit->journal_note + ")");
  }
  return out;
}

}  // namespace mesh::core
