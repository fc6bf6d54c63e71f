// Keepalive: what the daemon tells systemd while an apply runs, one tick at
// a time. The main loop cannot pet the watchdog during an apply, and an
// apply may rightly outlast WatchdogSec (the first apply of 100,000 files,
// a restart's settle pause); the first apply also runs under the start
// timeout. So while the apply moves (StallWatch), each tick pets the
// watchdog and, while starting, pushes the start timeout out — for at most
// kExtendAtMost, after which systemd's own timeout acts rather than a boot
// blocking for ever. Once the apply has not moved for the stall allowance,
// the ticks stop petting (systemd then restarts the host and says why) and
// the board says so, once; a step taken again lifts it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "host/daemon/stall_watch.h"
#include "host/ports/notifier.h"

namespace mesh::daemon {

class Keepalive {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  // While the first apply runs, the start timeout is pushed this far out...
  static constexpr std::chrono::seconds kExtendBy{30};
  // ... at least this often ...
  static constexpr std::chrono::seconds kExtendEvery{10};
  // ... but not for ever.
  static constexpr std::chrono::minutes kExtendAtMost{30};

  // `stalled`: called with why when the apply stops moving, with nullopt
  // when it moves again (the status board).
  Keepalive(ports::Notifier& notifier, bool starting, std::chrono::nanoseconds stall_after,
            uint64_t steps, TimePoint now,
            std::function<void(const std::optional<std::string>&)> stalled);

  // Whether a tick is needed at all (a watchdog, or a start to extend).
  bool Needed() const { return pet_.count() > 0 || starting_; }
  // How often to tick.
  std::chrono::nanoseconds Every() const;
  // One tick at `now`, the apply having taken `steps` steps so far.
  void Tick(uint64_t steps, TimePoint now);

 private:
  ports::Notifier& notifier_;
  bool starting_;
  std::chrono::nanoseconds pet_;
  TimePoint extend_until_;
  StallWatch stall_;
  std::function<void(const std::optional<std::string>&)> stalled_;
  bool told_ = false;
};

}  // namespace mesh::daemon
