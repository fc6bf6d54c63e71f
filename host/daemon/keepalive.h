// Keepalive: what the daemon tells systemd while an apply runs, one tick at
// a time. The main loop cannot pet the watchdog during an apply, and an
// apply may rightly outlast WatchdogSec (the first apply of 100,000 files,
// a restart's settle pause); the first apply also runs under the start
// timeout. So while the apply moves (StallWatch), each tick pets the
// watchdog and, while starting, pushes the start timeout out — or, once a
// stop is pending (it waits for the apply to finish), the stop timeout —
// for at most kExtendAtMost, after which systemd's own timeout acts rather
// than a boot or a shutdown blocking for ever. Once the apply has not
// moved for the stall allowance, the ticks stop petting (systemd then
// restarts the host and says why) and the board says so, once; a step
// taken again lifts it. The ticks run for every apply, watchdog or not:
// without one, /healthz saying 503 is the only sign that an apply is frozen.
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
            std::function<void(const std::optional<std::string>&)> stalled,
            std::function<bool()> stop_pending = nullptr);

  // How often to tick: often enough to pet the watchdog, to extend the
  // start, and to tell a stall within half its allowance of its coming.
  std::chrono::nanoseconds Every() const;
  // One tick at `now`, the apply having taken `steps` steps so far.
  void Tick(uint64_t steps, TimePoint now);

 private:
  ports::Notifier& notifier_;
  bool starting_;
  std::function<bool()> stop_pending_;  // null: never stopping
  std::chrono::nanoseconds pet_;
  TimePoint extend_until_;
  StallWatch stall_;
  std::function<void(const std::optional<std::string>&)> stalled_;
  bool told_ = false;
};

}  // namespace mesh::daemon
