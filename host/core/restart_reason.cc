#include "host/core/restart_reason.h"

namespace mesh::core {

std::string_view RestartReasonName(RestartReason reason) {
  switch (reason) {
    case RestartReason::kDeclared:
      return "declared";
    case RestartReason::kRestartOn:
      return "restart_on";
    case RestartReason::kReloadOn:
      return "reload_on";
    case RestartReason::kWasDead:
      return "was_dead";
  }
  return "declared";
}

std::optional<RestartReason> ParseRestartReason(std::string_view name) {
  for (RestartReason r : {RestartReason::kDeclared, RestartReason::kRestartOn,
                          RestartReason::kReloadOn, RestartReason::kWasDead}) {
    if (RestartReasonName(r) == name) return r;
  }
  return std::nullopt;
}

}  // namespace mesh::core
