#include "host/reconcile/daemon_reload.h"

namespace mesh::reconcile {

bool DaemonReloadNeeded(const Plan& plan, const Writes& writes, bool links_changed) {
  if (writes.unit_files_changed || links_changed) return true;
  for (const UnitPlan& u : plan.units) {
    if (u.daemon_reload && !plan.steps[u.index].failed()) return true;
  }
  return false;
}

std::optional<core::Status> DaemonReload(const Plan& plan, const Writes& writes,
                                         ports::ServiceManager* services, bool links_changed) {
  if (!DaemonReloadNeeded(plan, writes, links_changed)) return std::nullopt;
  if (services == nullptr) return core::Fail("no service manager");
  return services->ReloadDaemon();
}

}  // namespace mesh::reconcile
