#include "host/reconcile/enable.h"

namespace mesh::reconcile {

std::vector<std::optional<core::Status>> Enable(const core::Declaration& declaration,
                                                const Plan& plan, const Writes& writes,
                                                ports::ServiceManager* services, bool dry_run) {
  std::vector<std::optional<core::Status>> out(plan.units.size());
  if (dry_run || services == nullptr) return out;
  for (size_t k = 0; k < plan.units.size(); ++k) {
    const UnitPlan& u = plan.units[k];
    if (!u.set_enabled.has_value() || plan.steps[u.index].failed() || !writes.Ok(u.index)) {
      continue;
    }
    out[k] =
        services->SetUnitFileEnabled(declaration.resources[u.index].unit().name, *u.set_enabled);
  }
  return out;
}

bool LinksChanged(const std::vector<std::optional<core::Status>>& enabled) {
  for (const auto& e : enabled) {
    if (e.has_value() && e->has_value()) return true;
  }
  return false;
}

}  // namespace mesh::reconcile
