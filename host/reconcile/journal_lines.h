// The daemon's own words beside a failed verdict: the last lines the failed
// run of a unit logged, read from the journal by its InvocationID after the
// apply has settled (a read, never a wait: lines not yet in the journal are
// not there).
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "host/core/outcome.h"
#include "host/core/redact.h"
#include "host/ports/unit_journal.h"
#include "host/reconcile/act.h"
#include "host/reconcile/confirm.h"
#include "host/reconcile/plan.h"

namespace mesh::reconcile {

using core::kJournalLineBytes;
using core::kJournalLines;

// For each unit of `plan` whose own run failed this apply's two looks (a
// failed reload's too: its daemon runs, and ExecReload's words are its
// run's), or which the plan found failed, the last lines of that run (the
// first look's; the second look's run if the first logged none) into its
// UnitSnapshot; `journal_note` when there are none or the journal cannot
// be read. A unit systemd refused to start because it will not load it
// (LoadState bad-setting or error, as read just before its job was asked)
// never ran: the lines are what systemd itself logged of it at its last
// load, which name the setting.
// `journal` may be null: nothing is read.
// `secrets`: each credential's id and content. Each line is redacted
// (core::Redactor) before it is cut.
using Secrets = core::Secrets;
void AddJournalLines(ports::UnitJournal* journal, const Secrets& secrets, const Plan& plan,
                     const std::vector<Acted>& acts,
                     const std::vector<std::optional<Confirmation>>& confirmed,
                     std::vector<core::ResourceOutcome>& outcomes);

}  // namespace mesh::reconcile
