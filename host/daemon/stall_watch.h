// StallWatch: tells a long apply from a stuck one, for the keepalive that
// answers systemd's watchdog while an apply runs.
//
// An apply may rightly take minutes (a first apply of 100,000 files, a slow
// stop) and the main loop cannot pet the watchdog meanwhile, so a keepalive
// does; but one that pets regardless keeps an apply frozen in one call
// (a FIFO, a hung mount, a bus that never answers) alive and "healthy" for
// ever. So the keepalive asks this, with the apply's step count, whether
// the apply has moved within `allowance`; once it has not, it stops petting
// (systemd then restarts the host, and says so) and /healthz says why.
#pragma once

#include <chrono>
#include <cstdint>

namespace mesh::daemon {

class StallWatch {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  StallWatch(std::chrono::nanoseconds allowance, uint64_t steps, TimePoint now)
      : allowance_(allowance), steps_(steps), moved_at_(now) {}

  // True while the apply has taken a step within the allowance.
  bool Progressing(uint64_t steps, TimePoint now) {
    if (steps != steps_) {
      steps_ = steps;
      moved_at_ = now;
    }
    return now - moved_at_ < allowance_;
  }
  std::chrono::nanoseconds allowance() const { return allowance_; }
  // How long since the last step.
  std::chrono::nanoseconds Still(TimePoint now) const { return now - moved_at_; }

 private:
  std::chrono::nanoseconds allowance_;
  uint64_t steps_;
  TimePoint moved_at_;
};

}  // namespace mesh::daemon
