// FakeEventSource: the daemon's events at made-up times on a FakeClock.
//
// Wait returns the earliest event due within its timeout, moving the clock
// to it; with none, it moves the clock by the whole timeout and returns
// kTimeout — the daemon's loop runs hours of intervals in microseconds.
// Push queues an event for the next Wait, as a signal sent during an apply
// waits in the signalfd.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <string>

#include "host/ports/event_source.h"
#include "tests/fakes/fake_clock.h"

namespace mesh::fakes {

class FakeEventSource : public ports::EventSource {
 public:
  using Kind = ports::Event::Kind;
  // A runaway loop (a daemon that never stops) ends the test, not the run.
  static constexpr int kMaxWaits = 100000;

  explicit FakeEventSource(FakeClock& clock) : clock_(clock) {}

  // `kind` happens `at` after the clock's start.
  void At(std::chrono::nanoseconds at, Kind kind, std::string detail = "") {
    scheduled_.emplace(at, ports::Event{kind, std::move(detail)});
  }
  // `kind` is waiting for the next Wait.
  void Push(Kind kind, std::string detail = "") {
    pending_.push_back(ports::Event{kind, std::move(detail)});
  }

  // Set by a test for the keepalive to see while an apply runs.
  std::atomic<bool> stop_pending{false};
  bool StopPending() const override { return stop_pending.load(); }

  ports::Event Wait(std::chrono::nanoseconds timeout) override {
    waits_.push_back(timeout);
    if (static_cast<int>(waits_.size()) > kMaxWaits) return {Kind::kStop, "fake: too many waits"};
    if (!pending_.empty()) {
      ports::Event e = std::move(pending_.front());
      pending_.pop_front();
      return e;
    }
    auto deadline = clock_.elapsed() + timeout;
    auto next = scheduled_.begin();
    if (next != scheduled_.end() && next->first <= deadline) {
      if (next->first > clock_.elapsed()) clock_.Advance(next->first - clock_.elapsed());
      ports::Event e = std::move(next->second);
      scheduled_.erase(next);
      return e;
    }
    clock_.Advance(timeout);
    return {};
  }

  // Every timeout the daemon waited with, in order.
  const std::deque<std::chrono::nanoseconds>& waits() const { return waits_; }

 private:
  FakeClock& clock_;
  std::multimap<std::chrono::nanoseconds, ports::Event> scheduled_;
  std::deque<ports::Event> pending_;
  std::deque<std::chrono::nanoseconds> waits_;
};

}  // namespace mesh::fakes
