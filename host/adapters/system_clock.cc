#include "host/adapters/system_clock.h"

#include <thread>

namespace mesh::adapters {

std::chrono::system_clock::time_point SystemClock::Now() {
  return std::chrono::system_clock::now();
}

std::chrono::steady_clock::time_point SystemClock::Monotonic() {
  return std::chrono::steady_clock::now();
}

void SystemClock::SleepFor(std::chrono::nanoseconds duration) {
  std::this_thread::sleep_for(duration);
}

}  // namespace mesh::adapters
