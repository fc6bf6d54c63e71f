// What prune does with the resources the record holds and the declaration
// no longer has: the planning half (plan.h's Removal), internal to the plan
// library. Only what the host itself created, and still as it wrote it, is
// deleted; a directory only when the apply removes everything in it; a
// unit stopped only when its unit file is the host's and untouched.
#pragma once

#include <vector>

#include "host/reconcile/plan.h"

namespace mesh::reconcile {

std::vector<Removal> PlanRemovals(const PlanInputs& in);

}  // namespace mesh::reconcile
