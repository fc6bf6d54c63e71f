// Confirm: ADR 184's two looks at every unit the apply started, restarted
// or reloaded — wait for the jobs (bounded), look once, one pause of the
// settle time shared by every unit, look again — and the verdict of each
// (host/core/two_look.h decides it from the looks alone).
#pragma once

#include <chrono>
#include <optional>
#include <vector>

#include "host/core/declaration.h"
#include "host/core/two_look.h"
#include "host/core/unit_status.h"
#include "host/ports/clock.h"
#include "host/ports/service_manager.h"
#include "host/reconcile/act.h"
#include "host/reconcile/plan.h"
#include "host/reconcile/progress.h"

namespace mesh::reconcile {

struct Confirmation {
  core::Verdict verdict;
  core::UnitStatus last;  // the second look
  // The run the first look saw (a crash loop's second look may see the
  // next one), or the run that died before the apply asked, or before its
  // last look at a unit it left alone: whose journal lines a failure shows
  // first.
  std::string first_invocation;
};

// One per plan.units entry: set where a job was queued, and for a unit
// left alone that went down while the apply ran (its bystanders, looked at
// after the settle, or at once when nothing was queued but the apply
// changed the machine).
std::vector<std::optional<Confirmation>> Confirm(const core::Declaration& declaration,
                                                 const Plan& plan, const std::vector<Acted>& acts,
                                                 ports::ServiceManager* services,
                                                 ports::Clock& clock,
                                                 std::chrono::nanoseconds settle,
                                                 Progress* progress = nullptr);

}  // namespace mesh::reconcile
