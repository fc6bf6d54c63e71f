// The phrases of outcome details that more than one phase or path writes —
// the full pass and the record proof must say the same words for the same
// machine (tests/host/reconcile/noop_test.cc holds them to it).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "host/core/intent.h"
#include "host/core/outcome.h"
#include "host/core/time_format.h"
#include "host/core/two_look.h"
#include "host/core/unit_status.h"

namespace mesh::reconcile {

inline std::string Plural(uint64_t n, std::string_view word) {
  return std::to_string(n) + " " + std::string(word) + "(s)";
}

inline constexpr std::string_view kAsDeclared = "as declared";

// "wrote 22 byte(s)" in an apply, "would write 22 byte(s)" in a plan.
inline std::string DidOrWould(bool dry_run, std::string_view past, std::string_view verb,
                              std::string_view rest) {
  return (dry_run ? "would " + std::string(verb) : std::string(past)) + " " + std::string(rest);
}

// A stop is queued and never waited on (ADR 184 §2).
inline std::string StoppedNotWaited(bool dry_run, std::string_view unit) {
  return DidOrWould(dry_run, "stopped", "stop", unit) + " (not waited on)";
}

// A tree whose files hold.
inline std::string FilesAsDeclared(uint64_t files) {
  return Plural(files, "file") + " " + std::string(kAsDeclared);
}

// "web.service deactivating (stop-sigterm)", with how long when known.
inline std::string InStateFor(std::string_view unit, const core::UnitStatus& s) {
  std::string words = std::string(unit) + " " + core::StateWords(s);
  if (s.in_state_for.count() > 0) words += " for " + core::FormatSeconds(s.in_state_for);
  return words;
}

// A unit declared stopped whose stop has not finished: not stopped.
inline std::string StillStopping(std::string_view unit, const core::UnitStatus& s) {
  return "still stopping: " + InStateFor(unit, s) + " (not waited on)";
}
inline std::string StopPastBudget(std::string_view unit, const core::UnitStatus& s) {
  return "still stopping: " + InStateFor(unit, s) + ", past the " +
         core::FormatSeconds(core::StopPhaseBound(s)) + " systemd gives this stop phase";
}

// A start the host made that was last seen on its way up, found failed.
inline std::string StartFoundFailed(std::string_view unit, const core::UnitStatus& s) {
  return "start failed: " + InStateFor(unit, s) + ", never seen running since the host started it";
}

inline std::string StartDiedOnItsWayUp(std::string_view unit, uint32_t seen,
                                       const core::UnitStatus& s) {
  return "start failed: " + std::string(unit) +
         " died before it was ever seen running and was restarted by systemd (NRestarts " +
         std::to_string(seen) + " -> " + std::to_string(s.n_restarts) + "), " + InStateFor(unit, s);
}

inline std::string StartNotSeenThrough(std::string_view unit, const core::UnitStatus& s) {
  return "start not seen through: " + InStateFor(unit, s) + ", after a start that failed";
}

// A unit declared triggered, as its timer or socket left it.
inline std::string LeftToTrigger(std::string_view unit, const core::UnitStatus& s) {
  return std::string(unit) + " left to its trigger (" + s.active_state + " (" + s.sub_state + "))";
}

inline std::string StoppedAsDeclared(std::string_view unit) {
  return std::string(unit) + " stopped " + std::string(kAsDeclared);
}

// "web.service active (running)": a unit as the host last saw it.
inline std::string UnitStatePhrase(std::string_view unit, const core::UnitStatus& s) {
  return std::string(unit) + " " + s.active_state + " (" + s.sub_state + ")";
}

// "a, b" — or whichever of the two is not empty.
inline std::string Then(std::string_view first, std::string_view second) {
  if (first.empty()) return std::string(second);
  if (second.empty()) return std::string(first);
  return std::string(first) + ", " + std::string(second);
}

// An action an earlier apply asked for and could not confirm.
inline std::string OwedSince(uint64_t generation) {
  return "pending since generation " + std::to_string(generation);
}

// "restarted", "started", "reloaded".
inline core::Outcome OutcomeOf(core::UnitAction action) {
  switch (action) {
    case core::UnitAction::kStart:
      return core::Outcome::kStarted;
    case core::UnitAction::kRestart:
      return core::Outcome::kRestarted;
    case core::UnitAction::kReload:
      return core::Outcome::kReloaded;
  }
  return core::Outcome::kFailed;
}

// "not restarted: restart_on resource app.conf failed; web.service keeps
// its previous configuration": an action the host held back, and why.
inline std::string NotActed(std::string_view past, std::string_view cause, std::string_view unit,
                            std::string_view what) {
  return "not " + std::string(past) + ": " + std::string(cause) + "; " + std::string(unit) +
         " keeps its previous " + std::string(what);
}

inline core::UnitSnapshot UnitSnapshotOf(const std::string& unit, const core::UnitStatus& s,
                                         bool up) {
  core::UnitSnapshot snap;
  snap.up = up;
  snap.name = unit;
  snap.active_state = s.active_state;
  snap.sub_state = s.sub_state;
  snap.result = s.result;
  snap.n_restarts = s.n_restarts;
  snap.started_realtime = s.started_realtime;
  return snap;
}

}  // namespace mesh::reconcile
