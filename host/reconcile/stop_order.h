// The one order of an apply's stops: the stops of units that start others
// (Triggers=: a timer, socket or path unit) are queued first and seen
// through, within kTriggerStopBound (systemd stops such a unit at once),
// before any other stop is queued — a service stopped while its trigger
// still ran was started again by it. Both kinds of stop keep it: a
// removal's (write.cc) and a unit declared stopped (act.cc).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "host/ports/service_manager.h"
#include "host/reconcile/plan.h"

namespace mesh::reconcile {

// Calls stop(k) for each k < n, those with starts_others(k) first; stop
// returns the id of the stop job it queued ("" when none). The triggers'
// jobs are waited for before the others are asked.
template <typename StartsOthers, typename Stop>
void StopTriggersFirst(size_t n, StartsOthers starts_others, Stop stop,
                       ports::ServiceManager* services) {
  std::vector<std::string> trigger_jobs;
  for (bool triggers : {true, false}) {
    if (!triggers && !trigger_jobs.empty() && services != nullptr) {
      (void)services->WaitForJobs(trigger_jobs, kTriggerStopBound);
    }
    for (size_t k = 0; k < n; ++k) {
      if (starts_others(k) != triggers) continue;
      std::string job = stop(k);
      if (triggers && !job.empty()) trigger_jobs.push_back(std::move(job));
    }
  }
}

}  // namespace mesh::reconcile
