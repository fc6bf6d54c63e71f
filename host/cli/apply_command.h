// `mesh-host apply` and `mesh-host plan`: one reconcile, printed.
#pragma once

#include <ostream>
#include <string>

#include "host/core/result.h"
#include "host/reconcile/reconciler.h"

namespace mesh::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitRefused = 2;

// Prints one outcome line per resource to `out`, warnings and a refusal to
// `err`, and returns the exit code of SPEC "Command line".
int PrintReport(const reconcile::ApplyReport& report, bool plan, std::ostream& out,
                std::ostream& err);

}  // namespace mesh::cli
