// The two-look decision of ADR 184, as a pure function of what was seen.
//
// After the host asks systemd to start, restart or reload a unit it waits for
// the job (bounded), looks once, pauses once (shared by every unit of the
// apply), and looks again. JudgeTwoLooks decides from those two looks whether
// the unit is really running; it never sleeps and never talks to systemd, so
// every rule is tested with plain values.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "host/core/intent.h"
#include "host/core/unit_status.h"

namespace mesh::core {

struct Look {
  UnitStatus unit;
  // The job the host asked for had not been removed yet at this look.
  bool job_pending = false;
  // The unit was still in the stop phase of its restart when its stop
  // bound ran out (FirstLookWait::Due).
  bool stopping = false;
};

// When the first look at one unit is due (SPEC, Two looks). A restart's
// stop phase is not the unit coming up: a daemon that drains for seconds on
// SIGTERM reads "deactivating" under its old InvocationID, then "active"
// under a new one, and a first look taken in between would make the new
// invocation read as a death. The first look is due when the unit's job
// finished; or, while the job still runs, the settle time after the unit
// came up (activating or active under an InvocationID other than the one
// it ran under when asked) — ADR 184: never a wait for a unit to come up;
// or, a stop that outlasts the unit's own stop timeout, when that bound has
// passed. Times run from the request. A reload has no stop phase.
class FirstLookWait {
 public:
  // `invocation_before`: the unit's InvocationID when the host asked.
  // `stop_timeout`: its TimeoutStopUSec (zero: unknown, systemd's default).
  FirstLookWait(UnitAction action, std::string invocation_before, std::chrono::nanoseconds settle,
                std::chrono::nanoseconds stop_timeout);

  // What was seen at `at`: true when the first look is due now.
  bool Due(std::chrono::nanoseconds at, bool job_done, const UnitStatus& now);
  // The first look came from the stop bound, with the stop phase not over.
  bool stopping() const { return stopping_; }
  // How long the caller may wait before asking again, at most.
  std::chrono::nanoseconds Next(std::chrono::nanoseconds at) const;

  static constexpr std::chrono::seconds kDefaultStopTimeout{90};

 private:
  UnitAction action_;
  std::string before_;
  std::chrono::nanoseconds settle_;
  std::chrono::nanoseconds stop_bound_;
  std::optional<std::chrono::nanoseconds> up_at_;
  bool stopping_ = false;
};

struct Verdict {
  bool accepted = false;
  // Why, in the words of the outcome line: "active (running)",
  // "failed (Result=exit-code) 1.0 s after restart", ...
  std::string detail;
};

// `job_result` is systemd's JobRemoved result when the job finished before
// the first look ("done", "failed", ...), nullopt when it had not.
// `elapsed` runs from the request to the second look.
Verdict JudgeTwoLooks(UnitAction action, const std::optional<std::string>& job_result,
                      const Look& first, const Look& second, std::chrono::nanoseconds elapsed);

}  // namespace mesh::core
