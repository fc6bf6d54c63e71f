#include "host/reconcile/enable.h"

#include <algorithm>

namespace mesh::reconcile {

std::vector<SystemdAnswer> Enable(const core::Declaration& declaration, const Plan& plan,
                                  const Writes& writes, ports::ServiceManager* services,
                                  bool dry_run) {
  std::vector<SystemdAnswer> out(plan.units.size());
  if (dry_run || services == nullptr) return out;
  for (size_t k = 0; k < plan.units.size(); ++k) {
    const UnitPlan& u = plan.units[k];
    if (!u.set_enabled.has_value() || plan.steps[u.index].failed() || !writes.Ok(u.index)) {
      continue;
    }
    out[k] = SystemdAnswer::Of(
        services->SetUnitFileEnabled(declaration.resources[u.index].unit().name, *u.set_enabled));
  }
  return out;
}

bool LinksChanged(const std::vector<SystemdAnswer>& enabled) {
  return std::any_of(enabled.begin(), enabled.end(),
                     [](const SystemdAnswer& e) { return e.done(); });
}

}  // namespace mesh::reconcile
