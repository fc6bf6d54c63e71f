// What systemd answered to a call a phase of the apply made of it (the one
// daemon-reload, a unit's enable or disable), or that none was made. Not
// asked is a state of its own, never an error: the unit phase and the
// commit tell "failed before it could be asked" from "asked and refused".
#pragma once

#include <string>

#include "host/core/result.h"

namespace mesh::reconcile {

struct SystemdAnswer {
  enum class Kind { kNotAsked, kDone, kRefused };
  Kind kind = Kind::kNotAsked;
  std::string error;  // kRefused: systemd's words, or why it could not be asked

  static SystemdAnswer Of(const core::Status& st) {
    return st ? SystemdAnswer{Kind::kDone, ""} : SystemdAnswer{Kind::kRefused, st.error().message};
  }
  bool asked() const { return kind != Kind::kNotAsked; }
  bool done() const { return kind == Kind::kDone; }
  bool refused() const { return kind == Kind::kRefused; }
};

}  // namespace mesh::reconcile
