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
  // A reload's ExecReload= still ran when its bound ran out.
  bool reloading = false;
  // The look could not be taken (the bus lost): why. Nothing is accepted
  // on a look not taken.
  std::string error;
  // Under another InvocationID than when the host asked, running or not
  // (FirstLookWait::AnotherRun): something started since.
  bool another_run = false;

  // Not running, under another run than when the host asked: a run since
  // then ended, or is being stopped. Whatever job is still pending, the
  // unit is not on its way up.
  bool RanSinceAsked() const { return another_run && !unit.Running(); }
};

// When the first look at one unit is due (SPEC, Two looks). A restart's
// stop phase is not the unit coming up: a daemon that drains for seconds on
// SIGTERM reads "deactivating" under its old InvocationID, then "active"
// under a new one, and a first look taken in between would make the new
// invocation read as a death. The first look is due when the unit's job
// finished; or, while the job still runs, the settle time after the unit
// came up (activating or active under an InvocationID other than the one
// it ran under when asked), at a look that finds it running — ADR 184:
// never a wait for a unit to come up. Stopped while the job is pending is
// never an end: systemd still holds the job, and a restart's start follows
// its stop of whatever run it finds. Or, for a stop that outlasts what
// systemd gives it, when that bound and a settle have passed: each stop phase systemd
// enters (ExecStop=, SIGTERM, SIGKILL, ExecStopPost=, ...) gets the unit's
// stop timeout anew, at most five minutes each, and so does each command
// of ExecStop= and ExecStopPost= (StopPhaseBound). A start or restart of a
// unit that runs nothing is bounded by one settle. A reload has no coming
// up: it is due when its job finished, waited for while systemd runs
// ExecReload= (reloading: at most five minutes), else after one settle.
// Times run from when the jobs were queued.
class FirstLookWait {
 public:
  // `before`: the unit as the host saw it when it asked (its InvocationID,
  // whether a stop phase is ahead, its TimeoutStopUSec).
  FirstLookWait(UnitAction action, const UnitStatus& before, std::chrono::nanoseconds settle);

  // What was seen at `at`: true when the first look is due now.
  bool Due(std::chrono::nanoseconds at, bool job_done, const UnitStatus& now);
  // The first look came from the stop bound, with the stop phase not over.
  bool stopping() const { return stopping_; }
  // The first look came from a reload's bound, with ExecReload= still running.
  bool reloading() const { return reloading_; }
  // `now` is not running, under another InvocationID than `before`'s.
  bool RanSinceAsked(const UnitStatus& now) const;
  // `now` is under another InvocationID than `before`'s, running or not.
  bool AnotherRun(const UnitStatus& now) const;
  // How long the caller may wait before asking again, at most.
  std::chrono::nanoseconds Next(std::chrono::nanoseconds at) const;

  static constexpr std::chrono::minutes kLongestStop = kLongestStopPhase;

 private:
  UnitAction action_;
  std::string before_;
  std::chrono::nanoseconds settle_;
  bool stop_phase_;
  UnitStatus before_unit_;  // its stop timeout and commands (StopPhaseBound)
  std::string phase_;       // the stop phase last seen
  std::chrono::nanoseconds bound_;
  std::optional<std::chrono::nanoseconds> up_at_;
  bool stopping_ = false;
  bool reloading_ = false;
};

struct Verdict {
  bool accepted = false;
  // Why, in the words of the outcome line: "active (running)",
  // "failed (Result=exit-code) 1.0 s after restart", ...
  std::string detail;
  // Not accepted, and not run either: its job still queued behind another
  // unit's. Not a death on what the apply wrote (nothing to roll back);
  // the action stays owed.
  bool not_run = false;
};

// `job_result` is systemd's JobRemoved result when the job finished before
// the first look ("done", "failed", ...), nullopt when it had not.
// `elapsed` runs from the request to the second look.
Verdict JudgeTwoLooks(UnitAction action, const std::optional<std::string>& job_result,
                      const Look& first, const Look& second, std::chrono::nanoseconds elapsed);

// How much longer the pause runs for one unit before its second look
// stands: a unit that came up after its first look (its job still ran
// then, or it was not active yet) and at the second look has been active
// for less than `settle`. A daemon that refuses its configuration dies some
// hundred milliseconds after it says it is ready, not after the host's
// first look: a Type=notify daemon ready 1.8 s into a 1 s settle would
// otherwise be looked at 0.2 s after it came up (ADR 184). None when the
// second look stands: the unit was active at its first look, is not active
// now, is a oneshot, or how long it has been active is not known. Bounded
// by one settle: the second look taken again then stands, whatever it
// finds.
std::optional<std::chrono::nanoseconds> PauseLeft(const Look& first, const Look& second,
                                                  std::chrono::nanoseconds settle);

// A unit the apply did not act on, declared running and running when the
// plan looked (`before`), looked at (`last`) with the second looks at the
// units it acted on: systemd restarts or stops a unit along with one it
// requires, is part of or conflicts with. Nullopt when it is as it was
// (its run, up, NRestarts not grown) or the look could not be taken; else
// the verdict on what it came to: up under a run systemd did not restart on
// its own, or waiting in systemd's queue to start, is accepted.
// `apply_acted`: the apply asked systemd for a job (else what moved the
// unit was someone else, and the words say so).
std::optional<Verdict> JudgeBystander(const UnitStatus& before, const Look& last,
                                      bool apply_acted = true);

// A unit's state in the words of every verdict: "failed (Result=exit-code)",
// "inactive (dead)", "activating (auto-restart)".
std::string StateWords(const UnitStatus& unit);

}  // namespace mesh::core
