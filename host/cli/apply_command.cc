#include "host/cli/apply_command.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "host/adapters/unique_fd.h"
#include "host/core/declaration.h"
#include "host/core/time_format.h"

namespace mesh::cli {

core::Result<std::string> ReadDeclarationFile(const std::string& path) {
  adapters::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return core::Fail("declaration " + path + ": " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) {
    return core::Fail("declaration " + path + ": " + std::strerror(errno));
  }
  auto too_large = [&] {
    return core::Fail("declaration " + path + ": larger than the limit of " +
                      std::to_string(core::kMaxDeclarationBytes) + " bytes");
  };
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > core::kMaxDeclarationBytes) {
    return too_large();
  }
  // One allocation of the file's size, read straight into (a pipe has no
  // size and is read in chunks, to the limit).
  std::string text;
  int error = 0;
  if (S_ISREG(st.st_mode)) {
    text.resize_and_overwrite(static_cast<size_t>(st.st_size), [&](char* p, size_t size) {
      size_t got = 0;
      while (got < size) {
        ssize_t n = ::read(fd.get(), p + got, size - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) error = errno;
        if (n <= 0) break;
        got += static_cast<size_t>(n);
      }
      return got;
    });
  }
  char buf[65536];
  while (error == 0) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) error = errno;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > core::kMaxDeclarationBytes) return too_large();
  }
  if (error != 0) {
    return core::Fail("declaration " + path + ": read error: " + std::strerror(error));
  }
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
