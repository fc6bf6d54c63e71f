// Schedule: when the daemon applies next and when it pets systemd's
// watchdog, decided from what it has seen and when — no clock of its own,
// so unit tests drive it with made-up times.
//
// An apply is due every `interval` after the last one ended, and `debounce`
// after the last of a burst of declaration changes (an atomic replace is
// several inotify events; a link rewriting the file twice is one apply).
// Any apply covers the changes seen before it began. After an apply whose
// removal waits for a unit to stop, the next comes sooner: 1 s on, then
// twice as long after each apply that still waits, up to `interval`, so
// the files of a unit that stops in seconds go in seconds, and one that
// drains for minutes costs a handful of full passes.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace mesh::daemon {

class Schedule {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  // The longest the daemon waits for an event without looking at the time.
  static constexpr std::chrono::seconds kMaxWait{60};

  // `pet_every` zero: no watchdog.
  Schedule(std::chrono::nanoseconds interval, std::chrono::nanoseconds debounce,
           std::chrono::nanoseconds pet_every, TimePoint now);

  // An apply ended at `now`, whatever started it; `removal_waits`: one of
  // its removals waits for a unit to stop; `asked`: an operator asked for
  // it (SIGHUP, the start). An apply asked for, or of a changed declaration
  // (ChangeSeen before it), may bring a new wait: looked at again from 1 s,
  // whatever an older wait had come to.
  void Applied(TimePoint now, bool removal_waits = false, bool asked = false);
  // The declaration changed at `now`.
  void ChangeSeen(TimePoint now);
  // Whether the watchdog is due at `now`; when it is, the next pet is
  // scheduled from `now`.
  bool PetDue(TimePoint now);
  // The apply due at `now` and why ("declaration changed" first), if any.
  std::optional<std::string_view> ApplyDue(TimePoint now) const;
  // How long the daemon may wait for an event from `now` (never negative).
  std::chrono::nanoseconds WaitFrom(TimePoint now) const;

 private:
  std::chrono::nanoseconds interval_;
  std::chrono::nanoseconds debounce_;
  std::chrono::nanoseconds pet_every_;
  static constexpr std::chrono::seconds kFirstRetry{1};
  TimePoint next_apply_;
  // The wait after an apply whose removal still waits; zero after one
  // whose removal does not (next_apply_ is then the interval's).
  std::chrono::nanoseconds retry_{0};
  TimePoint next_pet_;
  std::optional<TimePoint> change_seen_;
};

}  // namespace mesh::daemon
