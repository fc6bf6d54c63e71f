// What one declared unit is asked for in an apply — start, restart,
// reload, stop, enable or disable, with the reason — from its own writes,
// what its restart_on and reload_on name, what is owed, and how systemd
// reported it: the units half of the plan (plan.h's UnitPlan), internal to
// the plan library.
#pragma once

#include <cstddef>
#include <vector>

#include "host/reconcile/plan.h"

namespace mesh::reconcile {

UnitPlan PlanUnit(const PlanInputs& in, size_t i, const std::vector<Step>& steps,
                  const std::vector<Removal>& removals);

}  // namespace mesh::reconcile
