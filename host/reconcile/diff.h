// What `mesh-host plan --diff` shows of a plan: for each resource it would
// write, what changes on the machine — a unified diff of a file's content
// (machine → declaration, paths as a/PATH and b/PATH), a mode or owner
// change, a credential's digests only, a bundle's members added, removed
// and changed, a unit file's text — and what prune would delete.
//
// Runs only for a plan, after it was made: it reads what the plan would
// replace, and nothing it finds changes the plan.
#pragma once

#include <string>
#include <vector>

#include "host/core/declaration.h"
#include "host/ports/file_system.h"
#include "host/reconcile/apply_ports.h"
#include "host/reconcile/plan.h"

namespace mesh::reconcile {

struct DiffInputs {
  const core::Declaration* declaration = nullptr;
  // What the host recorded (null: nothing): where it wrote credentials.
  const core::Record* record = nullptr;
  const Plan* plan = nullptr;
  const Seen* seen = nullptr;
  const BundlesById* bundles = nullptr;
  const std::vector<std::string>* wants = nullptr;
  const HostDirs* dirs = nullptr;
};

// One block of lines per resource with something to show, each starting
// "diff ID (KIND)", in declaration order, then the removals.
std::vector<std::string> Diffs(const DiffInputs& in, const ReconcilerPorts& ports);

}  // namespace mesh::reconcile
