#include "host/daemon/log.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "host/core/printable.h"

namespace mesh::daemon {
namespace {

// JOURNAL_STREAM is "DEVICE:INODE" of the journal's stream; it only counts
// when it is still what stderr is (a child may inherit a stale value).
bool StderrIsJournal() {
  const char* env = std::getenv("JOURNAL_STREAM");
  if (env == nullptr) return false;
  struct stat st;
  if (fstat(2, &st) != 0) return false;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(env, "%llu:%llu", &dev, &ino) != 2) return false;
  return dev == static_cast<unsigned long long>(st.st_dev) &&
         ino == static_cast<unsigned long long>(st.st_ino);
}

}  // namespace

Log::Log() : journal_(StderrIsJournal()) {}

void Log::Line(Priority priority, const std::string& text) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string line;
  if (journal_) line = "<" + std::to_string(static_cast<int>(priority)) + ">";
  line += core::IsPrintable(text) ? text : core::Printable(text);
  line += "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace mesh::daemon
