#include "host/cli/apply_command.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "host/core/declaration.h"
#include "host/core/time_format.h"

namespace mesh::cli {

core::Result<std::string> ReadDeclarationFile(const std::string& path) {
  std::unique_ptr<FILE, decltype(&fclose)> f(std::fopen(path.c_str(), "rbe"), &fclose);
  if (!f) return core::Fail("declaration " + path + ": " + std::strerror(errno));
  std::string text;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f.get())) > 0) {
    text.append(buf, n);
    if (text.size() > core::kMaxDeclarationBytes) {
      return core::Fail("declaration " + path + ": larger than the limit of " +
                        std::to_string(core::kMaxDeclarationBytes) + " bytes");
    }
  }
  if (std::ferror(f.get())) return core::Fail("declaration " + path + ": read error");
  return text;
}

int PrintReport(const reconcile::ApplyReport& report, bool plan, std::ostream& out,
                std::ostream& err) {
  for (const std::string& w : report.warnings) err << "mesh-host: warning: " << w << "\n";
  if (report.result == reconcile::ApplyResult::kRefused) {
    err << "mesh-host: declaration refused: " << report.error << "\n"
        << "mesh-host: nothing was written; the last applied state stays in force\n";
    return kExitRefused;
  }
  for (const core::ResourceOutcome& o : report.outcomes) out << core::FormatOutcomeLine(o) << "\n";
  if (!report.error.empty()) err << "mesh-host: " << report.error << "\n";
  size_t failed = 0;
  for (const core::ResourceOutcome& o : report.outcomes)
    failed += o.outcome == core::Outcome::kFailed;
  err << "mesh-host: " << (plan ? "plan" : "apply") << " of generation " << report.generation
      << ": " << report.outcomes.size() << " resource(s), " << failed << " failed, "
      << core::FormatSeconds(report.duration) << "\n";
  return report.result == reconcile::ApplyResult::kOk ? kExitOk : kExitFailed;
}

}  // namespace mesh::cli
