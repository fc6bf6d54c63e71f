// WatchSight: whether the live unit watch still sees systemd, and what to
// say when it stops and starts seeing it again.
//
// Between applies, /status, /healthz and the unit metrics show what the
// watch last read. A watch that cannot reach systemd (the bus gone, systemd
// not answering its reads) would leave them showing a daemon "active" that
// may have died since: the host would vouch for a machine it cannot see.
// So a failure is logged when it starts; once the watch has seen nothing
// for `bound` (a refresh period: a healthy watch reads every unit that
// often), the board is told that the units are unseen, which /healthz
// reports, and the log says so once more; the first look that works again
// clears it.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "host/core/time_format.h"

namespace mesh::daemon {

class WatchSight {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  explicit WatchSight(std::chrono::nanoseconds bound) : bound_(bound) {}

  // What the watch should do after a step.
  struct Say {
    std::optional<std::string> log;  // a line for the log, once per change
    // For the board: set (the units are unseen, and why), or cleared
    // (an empty string); nothing when the board already says so.
    std::optional<std::string> unseen;
  };

  // A wait or a read that began at `began` failed at `now`, saying `why`.
  // Sight is lost from when the step began, not from when it gave up (a
  // read of a systemd that does not answer fails only at its own bound,
  // seconds later).
  Say Failed(const std::string& why, TimePoint now, TimePoint began) {
    Say say;
    if (!failing_) {
      failing_ = true;
      since_ = began;
      say.log =
          "the live unit watch cannot follow systemd (" + why + "); trying again every second";
    }
    if (!told_ && now - since_ >= bound_) {
      told_ = true;
      say.unseen = "the units have not been seen for " + core::FormatSeconds(now - since_) +
                   ": the live unit watch cannot follow systemd (" + why +
                   "); their states shown are the last seen";
      // The moment /healthz turns 503 is in the log too: one line when it
      // is also the moment the failure began (a read that hung past the
      // bound).
      say.log = *say.unseen + "; /healthz says so";
    }
    return say;
  }

  // A look at every watched unit worked.
  Say Saw() {
    Say say;
    if (failing_) say.log = "the live unit watch follows systemd again";
    if (told_) say.unseen = "";
    failing_ = false;
    told_ = false;
    return say;
  }

  // Nothing left to watch (a declaration without units): there is nothing
  // the host could vouch for wrongly, so what was said is cleared, quietly.
  Say NothingToWatch() {
    Say say;
    if (told_) say.unseen = "";
    failing_ = false;
    told_ = false;
    return say;
  }

  // Whether the last step failed: the next look must read every unit, for
  // what changed while the watch was blind sent no signal it heard.
  bool failing() const { return failing_; }

 private:
  std::chrono::nanoseconds bound_;
  bool failing_ = false;
  bool told_ = false;
  TimePoint since_{};
};

}  // namespace mesh::daemon
