// FakeNotifier: records what the daemon tells its service manager, with the
// fake time of each call.
#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "host/ports/notifier.h"
#include "tests/fakes/fake_clock.h"

namespace mesh::fakes {

class FakeNotifier : public ports::Notifier {
 public:
  FakeNotifier(FakeClock& clock, std::chrono::nanoseconds watchdog = {})
      : clock_(clock), watchdog_(watchdog) {}

  void Ready() override { Add("READY"); }
  void Status(const std::string& line) override { Add("STATUS " + line); }
  void Watchdog() override { Add("WATCHDOG"); }
  void Stopping() override { Add("STOPPING"); }
  void ExtendTimeout(std::chrono::nanoseconds) override { Add("EXTEND"); }
  std::chrono::nanoseconds WatchdogInterval() override { return watchdog_; }
  std::string Unavailable() override { return unavailable; }
  std::string unavailable;  // what Unavailable() says

  struct Call {
    std::chrono::nanoseconds at;
    std::string what;
  };
  std::vector<Call> calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }
  // How many calls were exactly `what`.
  int Count(const std::string& what) {
    std::lock_guard lock(mu_);
    int n = 0;
    for (const Call& c : calls_) n += c.what == what;
    return n;
  }

 private:
  void Add(std::string what) {
    std::lock_guard lock(mu_);
    calls_.push_back({clock_.elapsed(), std::move(what)});
  }
  FakeClock& clock_;
  std::chrono::nanoseconds watchdog_;
  std::mutex mu_;
  std::vector<Call> calls_;
};

}  // namespace mesh::fakes
