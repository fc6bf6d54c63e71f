// What one declared unit is asked for in an apply — start, restart,
// reload, stop, enable or disable, with the reason — from its own writes,
// what its restart_on and reload_on name, what is owed, and how systemd
// reported it: the units half of the plan (plan.h's UnitPlan), internal to
// the plan library.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/reconcile/plan.h"

namespace mesh::reconcile {

UnitPlan PlanUnit(const PlanInputs& in, size_t i, const std::vector<Step>& steps,
                  const std::vector<Removal>& removals);

// What a unit whose own step failed (it is masked, its unit file could not
// be written) is owed once this apply is under way: nothing is asked of it
// now, but what this apply's other changes ask of it (a restart_on or
// reload_on resource written, a unit definition declared as a file) stays
// owed beside what earlier applies owed, or it is lost once those
// resources are recorded as they now are.
std::optional<core::Owed> OwedPastItsFailure(const PlanInputs& in, size_t i,
                                             const std::vector<Step>& steps,
                                             const std::vector<Removal>& removals);

// A declared unit, declared running and running or about to be, that
// starts `unit` (systemd's Triggers=: a timer, socket or path unit): what
// keeps starting `unit` however often it is stopped. Empty when none.
std::string DeclaredTriggerOf(const PlanInputs& in, std::string_view unit);

// A declared unit, declared anything other than running, that runs now and
// starts `unit`: this apply stops it only after its removals (the unit
// phase comes after the writes). Empty when none.
std::string RunningTriggerNotKept(const PlanInputs& in, std::string_view unit);

}  // namespace mesh::reconcile
