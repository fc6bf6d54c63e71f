// SystemClock: the Clock port on the real clocks.
#pragma once

#include "host/ports/clock.h"

namespace mesh::adapters {

class SystemClock : public ports::Clock {
 public:
  std::chrono::system_clock::time_point Now() override;
  std::chrono::steady_clock::time_point Monotonic() override;
  void SleepFor(std::chrono::nanoseconds duration) override;
};

}  // namespace mesh::adapters
