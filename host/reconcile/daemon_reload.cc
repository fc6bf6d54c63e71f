#include "host/reconcile/daemon_reload.h"

namespace mesh::reconcile {

bool DaemonReloadNeeded(const Plan& plan, const Writes& writes, bool links_changed) {
  if (writes.unit_files_changed || links_changed) return true;
  for (const UnitPlan& u : plan.units) {
    if (u.daemon_reload && !plan.steps[u.index].failed()) return true;
  }
  return false;
}

SystemdAnswer DaemonReload(const Plan& plan, const Writes& writes, ports::ServiceManager* services,
                           bool links_changed) {
  if (!DaemonReloadNeeded(plan, writes, links_changed)) return {};
  if (services == nullptr) return SystemdAnswer::Of(core::Fail("no service manager"));
  return SystemdAnswer::Of(services->ReloadDaemon());
}

}  // namespace mesh::reconcile
