// What systemd says of a unit, in the words the two-look rule needs.
#pragma once

#include <cstdint>
#include <string>

namespace mesh::core {

struct UnitStatus {
  std::string load_state;    // loaded, not-found, ...
  std::string active_state;  // active, activating, reloading, inactive, failed, deactivating
  std::string sub_state;     // running, exited, dead, auto-restart, ...
  std::string result;        // success, exit-code, signal, ...
  std::string invocation_id;
  std::string type;  // Service Type=: simple, notify, oneshot, forking, ...
  uint32_t n_restarts = 0;

  // SPEC: running means ActiveState active, activating or reloading.
  bool Running() const {
    return active_state == "active" || active_state == "activating" || active_state == "reloading";
  }
};

}  // namespace mesh::core
