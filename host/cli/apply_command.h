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

// How outcomes reach stdout: the `OUTCOME ID (KIND): DETAIL` lines, or
// (`--output json`, for CI pipelines and fleet tooling) one JSON object per
// outcome — id, kind, outcome, detail, digest, and unit where there is one —
// then one summary object {"summary": {...}}.
enum class Output { kText, kJson };

// Prints each outcome to `out` as the apply hands it over.
reconcile::OutcomeSink PrintOutcomes(std::ostream& out, Output format = Output::kText);

// Prints the outcomes the report still holds to `out`; warnings, a refusal
// and the summary to `err` (and, as JSON, the summary to `out` too); returns
// the exit code of SPEC "Command line".
int PrintReport(const core::ApplyReport& report, bool plan, std::ostream& out, std::ostream& err,
                Output format = Output::kText);

// One outcome as the JSON object `--output json` prints.
std::string OutcomeJson(const core::ResourceOutcome& o);

}  // namespace mesh::cli
