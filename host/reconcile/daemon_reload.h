// Daemon-reload: the phase between the writes and the unit actions — one
// daemon-reload when a unit file was written or deleted, or when an earlier
// apply owes one (its unit file changed and systemd never loaded it).
//
// A unit is never started or restarted onto a definition systemd has not
// loaded: when the daemon-reload fails, the units that needed it fail, and
// it stays owed (commit.h) for the next apply to try again.
#pragma once

#include "host/core/result.h"
#include "host/ports/service_manager.h"
#include "host/reconcile/plan.h"
#include "host/reconcile/systemd_answer.h"
#include "host/reconcile/write.h"

namespace mesh::reconcile {

// Whether the plan and its writes call for a daemon-reload; `links_changed`:
// the enable phase made or removed [Install] links.
bool DaemonReloadNeeded(const Plan& plan, const Writes& writes, bool links_changed = false);

// Not asked when none was needed; else systemd's answer.
SystemdAnswer DaemonReload(const Plan& plan, const Writes& writes, ports::ServiceManager* services,
                           bool links_changed = false);

}  // namespace mesh::reconcile
