// Clock: the only way mesh-host reads or waits on time.
//
// Injected everywhere time matters (the two-look pause, applied_at, the
// daemon's interval) so tests advance a fake clock instead of sleeping.
#pragma once

#include <chrono>

namespace mesh::ports {

class Clock {
 public:
  virtual ~Clock() = default;
  // Wall time, for timestamps people read (applied_at, last_reconcile).
  virtual std::chrono::system_clock::time_point Now() = 0;
  // Monotonic time, for measuring and bounding waits.
  virtual std::chrono::steady_clock::time_point Monotonic() = 0;
  virtual void SleepFor(std::chrono::nanoseconds duration) = 0;
};

}  // namespace mesh::ports
