#include "host/reconcile/daemon_reload.h"

namespace mesh::reconcile {

bool DaemonReloadNeeded(const Plan& plan, const Writes& writes) {
  if (writes.unit_files_changed) return true;
  for (const UnitPlan& u : plan.units) {
    if (u.daemon_reload && !plan.steps[u.index].failed()) return true;
  }
  return false;
}

std::optional<core::Status> DaemonReload(const Plan& plan, const Writes& writes,
                                         ports::ServiceManager* services) {
  if (!DaemonReloadNeeded(plan, writes)) return std::nullopt;
  if (services == nullptr) return core::Fail("no service manager");
  return services->ReloadDaemon();
}

}  // namespace mesh::reconcile
