#include "host/cli/apply_command.h"

#include <string>
#include <string_view>

#include "host/core/printable.h"
#include "host/core/time_format.h"

namespace mesh::cli {

reconcile::OutcomeSink PrintOutcomes(std::ostream& out) {
  return [&out](const core::ResourceOutcome& o) { out << core::FormatOutcomeLine(o) << "\n"; };
}

int PrintReport(const reconcile::ApplyReport& report, bool plan, std::ostream& out,
                std::ostream& err) {
  for (const std::string& w : report.warnings)
    err << "mesh-host: warning: " << core::Printable(w) << "\n";
  if (report.result == reconcile::ApplyResult::kRefused) {
    if (report.refusals.empty()) {
      err << "mesh-host: declaration refused: " << core::Printable(report.error) << "\n";
    } else {
      // "N problems: the first; the second; …": the count, then one per line.
      err << "mesh-host: declaration refused: " << report.error.substr(0, report.error.find(':'))
          << ":\n";
      for (const std::string& r : report.refusals)
        err << "mesh-host:   " << core::Printable(r) << "\n";
    }
    err << (plan ? "mesh-host: apply would refuse it too; a plan writes nothing\n"
                 : "mesh-host: nothing was written; the last applied state stays in force\n");
    return kExitRefused;
  }
  for (const core::ResourceOutcome& o : report.outcomes) out << core::FormatOutcomeLine(o) << "\n";
  if (!report.error.empty()) err << "mesh-host: " << core::Printable(report.error) << "\n";
  err << "mesh-host: " << (plan ? "plan" : "apply") << " of generation " << report.generation
      << ": " << report.resources << " resource(s), " << report.failed << " failed, "
      << core::FormatSeconds(report.duration) << "\n";
  return report.result == reconcile::ApplyResult::kOk ? kExitOk : kExitFailed;
}

}  // namespace mesh::cli
