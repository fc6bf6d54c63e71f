#include "host/reconcile/journal_lines.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/printable.h"
#include "host/core/redact.h"
#include "host/core/unit_status.h"

namespace mesh::reconcile {

namespace {

// A unit systemd would not load (a setting it refuses; a unit file it
// could not read), as Act read it before asking for its job.
bool NotLoadable(const std::vector<Acted>& acts, size_t k) {
  return k < acts.size() && acts[k].state == Acted::State::kRefused && acts[k].before.has_value() &&
         (acts[k].before->load_state == "bad-setting" || acts[k].before->load_state == "error");
}

}  // namespace

void AddJournalLines(ports::UnitJournal* journal, const Secrets& secrets, const Plan& plan,
                     const std::vector<Acted>& acts,
                     const std::vector<std::optional<Confirmation>>& confirmed,
                     std::vector<core::ResourceOutcome>& outcomes) {
  if (journal == nullptr) return;
  // Made at the first line to show: most applies have none.
  std::optional<core::Redactor> redactor;
  auto redact = [&](std::string_view line) {
    if (!redactor) redactor.emplace(secrets);
    return (*redactor)(line);
  };
  for (size_t k = 0; k < plan.units.size(); ++k) {
    const UnitPlan& u = plan.units[k];
    if (u.index >= outcomes.size()) continue;
    core::ResourceOutcome& o = outcomes[u.index];
    if (o.outcome != core::Outcome::kFailed || !o.unit.has_value()) continue;
    const std::optional<Confirmation>* c = k < confirmed.size() ? &confirmed[k] : nullptr;
    // The runs that failed, the one that died first: the looks' when the
    // two looks failed the host's own action; else the run the plan found
    // failed. Not a healthy run's chatter beside a failure that is not its
    // own (a restart held back, a job systemd refused, an enable).
    std::vector<std::string> runs;
    if (NotLoadable(acts, k)) {
      auto got = journal->ManagerLines(o.unit->name, kJournalLines);
      core::UnitSnapshot& snap = *o.unit;
      if (!got) {
        snap.journal_note = "journal not readable: " + got.error().message;
      } else if (got->empty()) {
        snap.journal_note = "the journal holds no line of systemd's about this unit";
      }
      for (const std::string& line : got.value_or(std::vector<std::string>())) {
        snap.journal.push_back(core::Printable(redact(line), kJournalLineBytes));
      }
      continue;
    }
    if (c != nullptr && c->has_value()) {
      if ((*c)->verdict.accepted) continue;
      runs.push_back((*c)->first_invocation);
      if ((*c)->last.invocation_id != (*c)->first_invocation) {
        runs.push_back((*c)->last.invocation_id);
      }
    } else if (core::FoundFailed(u.status) || !u.start_failed.empty()) {
      runs.push_back(u.status.invocation_id);
    } else {
      continue;
    }
    std::vector<std::string> lines;
    std::string error;
    bool read = false;
    for (const std::string& run : runs) {
      if (run.empty()) continue;
      read = true;
      auto got = journal->LastLines(run, kJournalLines);
      if (!got) {
        error = got.error().message;
        break;
      }
      for (std::string& line : *got) {
        lines.push_back(core::Printable(redact(line), kJournalLineBytes));
      }
      if (!lines.empty()) break;  // the run that died first said why
    }
    if (!read) continue;  // no run known: nothing looked up, nothing said
    core::UnitSnapshot& snap = *o.unit;
    snap.journal = std::move(lines);
    if (!error.empty()) {
      snap.journal_note = "journal not readable: " + error;
    } else if (snap.journal.empty()) {
      snap.journal_note = "the journal holds no line of this run";
    }
  }
}

}  // namespace mesh::reconcile
