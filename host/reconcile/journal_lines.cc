#include "host/reconcile/journal_lines.h"

#include <string>

#include "host/core/printable.h"

namespace mesh::reconcile {

void AddJournalLines(ports::UnitJournal* journal, const Plan& plan,
                     const std::vector<std::optional<Confirmation>>& confirmed,
                     std::vector<core::ResourceOutcome>& outcomes) {
  if (journal == nullptr) return;
  for (size_t k = 0; k < plan.units.size(); ++k) {
    const UnitPlan& u = plan.units[k];
    if (u.index >= outcomes.size()) continue;
    core::ResourceOutcome& o = outcomes[u.index];
    if (o.outcome != core::Outcome::kFailed || !o.unit.has_value()) continue;
    const std::optional<Confirmation>* c = k < confirmed.size() ? &confirmed[k] : nullptr;
    // The runs to read: the looks' when the host acted, else the one the
    // plan saw (a start that failed since the last apply).
    std::vector<std::string> runs;
    if (c != nullptr && c->has_value()) {
      runs.push_back((*c)->first_invocation);
      if ((*c)->last.invocation_id != (*c)->first_invocation) {
        runs.push_back((*c)->last.invocation_id);
      }
    } else {
      runs.push_back(u.status.invocation_id);
    }
    std::vector<std::string> lines;
    std::string error;
    for (const std::string& run : runs) {
      if (run.empty()) continue;
      auto read = journal->LastLines(run, kJournalLines);
      if (!read) {
        error = read.error().message;
        break;
      }
      for (std::string& line : *read) lines.push_back(core::Printable(line, kJournalLineBytes));
    }
    core::UnitSnapshot& snap = *o.unit;
    if (lines.size() > kJournalLines) {
      lines.erase(lines.begin(), lines.end() - static_cast<std::ptrdiff_t>(kJournalLines));
    }
    snap.journal = std::move(lines);
    if (!error.empty()) {
      snap.journal_note = "journal not readable: " + error;
    } else if (snap.journal.empty()) {
      snap.journal_note = "the journal holds no line of this run";
    }
  }
}

}  // namespace mesh::reconcile
