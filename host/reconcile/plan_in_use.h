// Whether a path the apply would delete is still used by a declared unit:
// named by what it runs or needs to start (core::PathsUsed), itself or
// through a declared symlink. Internal to the plan library
// (plan_removals.cc asks).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "host/reconcile/plan.h"

namespace mesh::reconcile {

// What the declared units run from or need to start, gathered once per
// plan: the paths their unit_text, drop-ins and unit-defining `file`s
// name (as declared: under --root, as the machine sees them, less the
// root), and the declared symlinks that lead to paths. A unit declared
// stopped and not enabled starts from nothing the host knows of.
class UnitUses {
 public:
  UnitUses(const PlanInputs& in, const std::vector<Step>& steps);

  // The first of `paths` a declared unit names, itself or a path under it,
  // directly or through a declared symlink to it, into it or above it: a
  // process moved while its ExecStart= stays on the old tree, a config
  // moved while --config names the old path. Deleted, the run would go on
  // from deleted files and the next start fail. Its words ("kept: ..."),
  // or nothing.
  std::optional<std::string> Keeps(const std::vector<std::string>& paths) const;

 private:
  std::optional<std::string> UserOf(const std::string& name) const;

  const core::Declaration& declaration_;
  std::vector<std::pair<std::string, size_t>> used_;        // path, resource: sorted
  std::vector<std::pair<std::string, std::string>> links_;  // link, its target
};

}  // namespace mesh::reconcile
