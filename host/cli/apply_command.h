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

// Prints each outcome's line to `out` as the apply hands it over.
reconcile::OutcomeSink PrintOutcomes(std::ostream& out);

// Prints the outcome lines the report still holds to `out`, warnings, a
// refusal and the summary to `err`, and returns the exit code of SPEC
// "Command line".
int PrintReport(const reconcile::ApplyReport& report, bool plan, std::ostream& out,
                std::ostream& err);

}  // namespace mesh::cli
