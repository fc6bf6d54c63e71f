// Whether a path the apply would delete is still used by a declared unit:
// named by what it runs or needs to start (core::RunsFrom), itself or
// through a declared symlink. Internal to the plan library
// (plan_removals.cc asks).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "host/reconcile/plan.h"

namespace mesh::reconcile {

// The first of `paths` that a declared unit's text names (its unit_text,
// a drop-in, a `file` that defines a unit), itself or through a declared
// symlink to it or into it, and under --root as the machine sees it: a
// process moved while its ExecStart= stays on the old tree, a config moved
// while --config names the old path. Deleted, the run would go on from
// deleted files and the next start fail. Its words ("kept: ..."), or
// nothing.
std::optional<std::string> UsedByADeclaredUnit(const PlanInputs& in, const std::vector<Step>& steps,
                                               const std::vector<std::string>& paths);

}  // namespace mesh::reconcile
