// EventSource: what wakes the daemon between applies — a signal, or the
// declaration file (or its signature) replaced — or nothing before a
// timeout.
//
// Signals that arrive during an apply wait here until it is done: an apply
// in progress always finishes before a stop is seen (SIGTERM mid-apply
// leaves every file whole and the record saved).
#pragma once

#include <chrono>
#include <string>

namespace mesh::ports {

struct Event {
  enum class Kind {
    kTimeout,             // nothing happened within the wait
    kReload,              // SIGHUP: apply now, re-read the web config
    kStop,                // SIGTERM or SIGINT: stop once idle
    kDeclarationChanged,  // the declaration or its .minisig was replaced
    kError,               // the source failed; the daemon cannot go on
  };
  Kind kind = Kind::kTimeout;
  std::string detail;  // kStop: the signal's name; kError: what failed
};

class EventSource {
 public:
  virtual ~EventSource() = default;
  // The next event, or kTimeout once `timeout` has passed without one.
  virtual Event Wait(std::chrono::nanoseconds timeout) = 0;
  // Whether a stop has been asked for that Wait has not yet returned.
  // Callable from any thread: an apply's keepalive asks it, so that the
  // stop timeout is pushed out while the apply the stop waits for moves.
  virtual bool StopPending() const = 0;
};

}  // namespace mesh::ports
