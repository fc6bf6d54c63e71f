// FakeClock: time that moves only when a test (or a sleep) moves it.
//
// SleepFor advances the clock instead of blocking, so a test of the settle
// pause runs in microseconds and can assert exactly how long was waited.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>

#include "host/ports/clock.h"

namespace mesh::fakes {

class FakeClock : public ports::Clock {
 public:
  std::chrono::system_clock::time_point Now() override {
    return std::chrono::system_clock::time_point(wall_.load()) + elapsed_.load();
  }
  std::chrono::steady_clock::time_point Monotonic() override {
    return std::chrono::steady_clock::time_point(elapsed_.load());
  }
  void SleepFor(std::chrono::nanoseconds d) override {
    slept_ += d;
    Advance(d);
  }

  void Advance(std::chrono::nanoseconds d) {
    auto before = elapsed_.load();
    while (!elapsed_.compare_exchange_weak(before, before + d)) {
    }
    if (on_advance_) on_advance_(before + d);
  }
  // Called after every advance with the total elapsed time; the fake service
  // manager uses it to let units die or come up "during" the pause.
  void OnAdvance(std::function<void(std::chrono::nanoseconds)> f) { on_advance_ = std::move(f); }

  // The wall clock set by `d` (NTP stepping it): monotonic time does not move.
  void StepWall(std::chrono::nanoseconds d) { wall_.store(wall_.load() + d); }

  std::chrono::nanoseconds elapsed() const { return elapsed_.load(); }
  std::chrono::nanoseconds slept() const { return slept_; }

 private:
  std::atomic<std::chrono::nanoseconds> wall_{std::chrono::seconds(1796000000)};
  // Read by other threads (the daemon's keepalive); moved by one.
  std::atomic<std::chrono::nanoseconds> elapsed_{std::chrono::nanoseconds(0)};
  std::chrono::nanoseconds slept_{0};
  std::function<void(std::chrono::nanoseconds)> on_advance_;
};

}  // namespace mesh::fakes
