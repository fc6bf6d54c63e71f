#include "host/adapters/process_guard.h"

#include <sys/prctl.h>
#include <sys/resource.h>

namespace mesh::adapters {

void KeepSecretsOutOfCoreFiles() {
  // Best effort: on failure the process is as it was, and nothing the host
  // decides depends on it.
  (void)::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

uint64_t RaiseOpenFileLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return static_cast<uint64_t>(limit.rlim_cur);
}

}  // namespace mesh::adapters
