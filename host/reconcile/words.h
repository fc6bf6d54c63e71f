// The few phrases the full pass and the record proof both put in a detail,
// kept in one place so the two reports stay word for word the same.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "host/core/outcome.h"
#include "host/core/unit_status.h"

namespace mesh::reconcile {

inline std::string Plural(uint64_t n, std::string_view word) {
  return std::to_string(n) + " " + std::string(word) + "(s)";
}

inline core::UnitSnapshot Snapshot(const std::string& unit, const core::UnitStatus& s) {
  core::UnitSnapshot snap;
  snap.name = unit;
  snap.active_state = s.active_state;
  snap.sub_state = s.sub_state;
  snap.result = s.result;
  snap.n_restarts = s.n_restarts;
  return snap;
}

}  // namespace mesh::reconcile
