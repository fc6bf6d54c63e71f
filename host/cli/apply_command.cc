#include "host/cli/apply_command.h"

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "host/core/printable.h"
#include "host/core/time_format.h"

namespace mesh::cli {

namespace {

std::string Dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void PrintOutcome(std::ostream& out, const core::ResourceOutcome& o, Output format) {
  if (format == Output::kJson) {
    out << OutcomeJson(o) << "\n";
    return;
  }
  out << core::FormatOutcomeLine(o) << "\n";
  for (const std::string& line : core::FormatJournalLines(o)) out << line << "\n";
}

}  // namespace

std::string OutcomeJson(const core::ResourceOutcome& o) {
  nlohmann::json j = {{"id", o.id},
                      {"kind", o.kind},
                      {"outcome", core::OutcomeName(o.outcome)},
                      {"detail", o.detail},
                      {"digest", o.digest}};
  std::string unit = !o.declared_unit().empty() ? o.declared_unit()
                     : o.unit.has_value()       ? o.unit->name
                                                : "";
  if (!unit.empty()) j["unit"] = unit;
  if (o.unit.has_value() && (!o.unit->journal.empty() || !o.unit->journal_note.empty())) {
    // As /status has it (unit.journal).
    j["journal"] = {{"lines", o.unit->journal},
                    {"note", o.unit->journal_note.empty() ? nlohmann::json(nullptr)
                                                          : nlohmann::json(o.unit->journal_note)}};
  }
  return Dump(j);
}

reconcile::OutcomeSink PrintOutcomes(std::ostream& out, Output format) {
  return [&out, format](const core::ResourceOutcome& o) { PrintOutcome(out, o, format); };
}

int PrintReport(const core::ApplyReport& report, bool plan, std::ostream& out, std::ostream& err,
                Output format) {
  if (format == Output::kJson) {
    for (const core::ResourceOutcome& o : report.outcomes) PrintOutcome(out, o, format);
    for (const std::string& d : report.diffs) out << Dump({{"diff", d}}) << "\n";
    nlohmann::json summary = {
        {"verb", plan ? "plan" : "apply"},
        {"result", core::ApplyResultName(report.result)},
        {"generation", report.generation},
        {"resources", report.resources},
        {"failed", report.failed},
        {"duration_seconds", std::chrono::duration<double>(report.duration).count()},
        {"error", report.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(report.error)},
        {"refusals", report.refusals},
        {"warnings", report.warnings}};
    out << Dump({{"summary", std::move(summary)}}) << "\n";
  }
  for (const std::string& w : report.warnings)
    err << "mesh-host: warning: " << core::Printable(w) << "\n";
  if (report.result == core::ApplyResult::kRefused) {
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
  if (format == Output::kText) {
    for (const core::ResourceOutcome& o : report.outcomes) PrintOutcome(out, o, format);
    for (const std::string& d : report.diffs) out << "\n" << d;
  }
  if (!report.error.empty()) err << "mesh-host: " << core::Printable(report.error) << "\n";
  err << "mesh-host: " << (plan ? "plan" : "apply") << " of generation " << report.generation
      << ": " << report.resources << " resource(s), " << report.failed << " failed, "
      << core::FormatSeconds(report.duration) << "\n";
  return report.result == core::ApplyResult::kOk ? kExitOk : kExitFailed;
}

}  // namespace mesh::cli
