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
