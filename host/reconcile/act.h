// Act: the phase that asks systemd for what the plan wants of each unit —
// starts, restarts and reloads queued at once (pipelined), stops queued and
// never waited on — unless what the action stands on failed in this apply:
// its own writes, a restart_on or reload_on resource, or the daemon-reload
// its new definition needed. An action held back, or one systemd refuses
// (a unit it cannot find, a reload the unit does not support), stays owed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "host/core/declaration.h"
#include "host/core/result.h"
#include "host/core/unit_status.h"
#include "host/ports/service_manager.h"
#include "host/reconcile/loaded_files.h"
#include "host/reconcile/plan.h"
#include "host/reconcile/systemd_answer.h"
#include "host/reconcile/write.h"

namespace mesh::reconcile {

struct Acted {
  enum class State {
    kIdle,        // nothing asked (nothing to do, or the resource failed before)
    kBlocked,     // held back: detail says why
    kQueued,      // a start, restart or reload: job
    kRefused,     // systemd refused the job: detail
    kStopQueued,  // a stop, not waited on
  };
  State state = State::kIdle;
  std::string detail;
  std::string job;
  // A queued or refused job's unit as read just before it was asked for:
  // what the first look tells its coming up from (core::FirstLookWait), or
  // whether systemd had loaded it. A unit that could not be read then was
  // not asked (kRefused, the read's error, no `before`).
  std::optional<core::UnitStatus> before;
  // Restarted in place of the plan's start (UnitPlan::start_loads_changes).
  bool restart_for_start = false;
};

// What the host asked of systemd for `u`: the plan's action, or the
// restart that stood in for its start.
core::UnitAction AskedOf(const UnitPlan& u, const Acted& a);

// One per plan.units entry. With `dry_run` nothing is asked of systemd: only
// what would be held back is said. With `dirs`, a unit the daemon-reload
// moved onto another file than the host's is not asked (LoadedFiles).
std::vector<Acted> Act(const core::Declaration& declaration, const Plan& plan, const Writes& writes,
                       const SystemdAnswer& reloaded, ports::ServiceManager* services, bool dry_run,
                       const HostDirs* dirs = nullptr);

}  // namespace mesh::reconcile
