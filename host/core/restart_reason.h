// Why the host asked systemd to start or restart a unit: the `reason` label
// of mesh_host_unit_restarts_total (SPEC "Metrics"), kept in the intent
// while the action is owed. One enum, so that a reason is never a string
// that a typo could make up.
#pragma once

#include <optional>
#include <string_view>

namespace mesh::core {

enum class RestartReason {
  kDeclared,   // its own resource, definition or unit file changed, or it was declared running
  kRestartOn,  // a restart_on resource changed
  kReloadOn,   // a reload_on resource changed (a reload: never counted as a restart)
  kWasDead,    // declared running, found down with nothing changed
};

// "declared", "restart_on", "reload_on", "was_dead".
std::string_view RestartReasonName(RestartReason reason);
std::optional<RestartReason> ParseRestartReason(std::string_view name);

// The reasons mesh_host_unit_restarts_total counts (a reload is no restart).
inline constexpr RestartReason kCountedRestartReasons[] = {
    RestartReason::kDeclared, RestartReason::kRestartOn, RestartReason::kWasDead};

}  // namespace mesh::core
