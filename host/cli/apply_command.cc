#include "host/cli/apply_command.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>

#include "host/adapters/unique_fd.h"
#include "host/core/declaration.h"
#include "host/core/time_format.h"

namespace mesh::cli {

core::Result<std::string> ReadDeclarationFile(const std::string& path) {
  auto fail = [&](std::string_view why) {
    return core::Fail("declaration " + path + ": " + std::string(why));
  };
  // O_NONBLOCK: a FIFO at the path is refused below, not waited on forever
  // (the daemon would hang there until its watchdog killed it).
  adapters::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) return fail(std::strerror(errno));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return fail(std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return fail("not a regular file");
  if (static_cast<uint64_t>(st.st_size) > core::kMaxDeclarationBytes) {
    return fail("larger than the limit of " + std::to_string(core::kMaxDeclarationBytes) +
                " bytes");
  }
  auto text = adapters::ReadUpTo(fd.get(), static_cast<size_t>(st.st_size));
  if (!text) return fail(std::string("read error: ") + std::strerror(text.error()));
  return std::move(*text);
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
