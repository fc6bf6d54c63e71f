// What prune does with the resources the record holds and the declaration
// no longer has: the planning half (plan.h's Removal), internal to the plan
// library. Only what the host itself created, and still as it wrote it, is
// deleted; a directory only when the apply removes everything in it; a
// unit stopped only when its unit file is the host's and untouched.
#pragma once

#include <vector>

#include "host/reconcile/plan.h"

namespace mesh::reconcile {

std::vector<Removal> PlanRemovals(const PlanInputs& in, const std::vector<Step>& steps);

// Once the units are planned: a dropped process whose unit another
// resource declares now, and stops or restarts in this apply, keeps its
// tree until then — the unit runs from it until the action (SPEC 8).
void WaitForTheRestartOnTheNewTree(const core::Declaration& decl,
                                   const std::vector<UnitPlan>& units,
                                   std::vector<Removal>& removals);

}  // namespace mesh::reconcile
