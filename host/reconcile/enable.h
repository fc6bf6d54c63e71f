// Enable: the phase between the writes and the daemon-reload that makes
// each unit's [Install] links what its `enabled` declares — through
// systemd's EnableUnitFiles / DisableUnitFiles, never by hand — so that
// the one daemon-reload of the apply loads the links with the unit files.
//
// Nothing here is owed: whether a unit is enabled is read from systemd at
// every apply, so an apply cut short between the two is simply seen again.
#pragma once

#include <optional>
#include <vector>

#include "host/core/result.h"
#include "host/ports/service_manager.h"
#include "host/reconcile/plan.h"
#include "host/reconcile/systemd_answer.h"
#include "host/reconcile/write.h"

namespace mesh::reconcile {

// One per plan.units entry: not asked when there was nothing to change (or
// a plan, or the resource or its unit file failed), else systemd's answer.
std::vector<SystemdAnswer> Enable(const core::Declaration& declaration, const Plan& plan,
                                  const Writes& writes, ports::ServiceManager* services,
                                  bool dry_run);

// Whether any links changed (the daemon-reload must then run).
bool LinksChanged(const std::vector<SystemdAnswer>& enabled);

}  // namespace mesh::reconcile
