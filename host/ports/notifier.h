// Notifier: how the daemon tells its service manager it is ready, what it is
// doing, and that it is alive (sd_notify's READY=1, STATUS=, WATCHDOG=1,
// EXTEND_TIMEOUT_USEC=).
#pragma once

#include <chrono>
#include <string>

namespace mesh::ports {

class Notifier {
 public:
  virtual ~Notifier() = default;
  virtual void Ready() = 0;
  virtual void Status(const std::string& line) = 0;
  virtual void Watchdog() = 0;
  virtual void Stopping() = 0;
  // Still starting, or stopping: the start or stop timeout is pushed out to
  // `by` from now (the first apply may rightly take longer than
  // TimeoutStartSec, and the apply a stop waits for than TimeoutStopSec).
  virtual void ExtendTimeout(std::chrono::nanoseconds by) = 0;
  // How often to pet the watchdog (half of WATCHDOG_USEC); zero when none.
  virtual std::chrono::nanoseconds WatchdogInterval() = 0;
  // Why the service manager that started the daemon cannot be told
  // anything (every call above then does nothing); empty when it can, or
  // when none is listening. The daemon logs it: systemd would otherwise
  // only see no READY=1.
  virtual std::string Unavailable() { return ""; }
};

}  // namespace mesh::ports
