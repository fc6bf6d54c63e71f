#include "host/core/two_look.h"

#include <algorithm>

#include "host/core/time_format.h"

namespace mesh::core {
namespace {

// Running, or still on its way: the job not done yet, or activating. Not
// a unit that ran and stopped since the host asked, job pending or not.
bool RunningOrStarting(const Look& look) {
  if (AwaitingAutoRestart(look.unit)) return false;
  return look.unit.Running() || (look.job_pending && !look.RanSinceAsked());
}

// systemd's own exit statuses (200-243, systemd.exec(5)) of a start that
// failed before the daemon ran, in plain words; "" for the daemon's own.
std::string StartStepWords(const UnitStatus& u) {
  switch (u.exec_main_status) {
    case 200:
      return "its WorkingDirectory= could not be entered (status 200/CHDIR)";
    case 203:
      return "its ExecStart= command " +
             (u.exec_start.empty() ? std::string() : u.exec_start + " ") +
             "could not be run: missing, or not executable (status 203/EXEC)";
    case 209:
      return "its standard output could not be set up (status 209/STDOUT)";
    case 216:
      return "its Group= does not exist (status 216/GROUP)";
    case 217:
      return "its User= does not exist (status 217/USER)";
    case 226:
      return "its sandbox could not be set up (status 226/NAMESPACE)";
    default:
      return "";
  }
}

}  // namespace

std::string StateWords(const UnitStatus& u) {
  std::string s = u.active_state.empty() ? "unknown" : u.active_state;
  if (u.active_state == "failed" || u.active_state == "inactive") {
    if (!u.result.empty() && u.result != "success") {
      s += " (Result=" + u.result + ")";
    } else if (!u.sub_state.empty()) {
      s += " (" + u.sub_state + ")";
    }
  } else if (AwaitingAutoRestart(u)) {
    s += " (" + u.sub_state + ": it died, and systemd starts it again after RestartSec=)";
  } else if (!u.sub_state.empty()) {
    s += " (" + u.sub_state + ")";
  }
  return s;
}

FirstLookWait::FirstLookWait(UnitAction action, const UnitStatus& before,
                             std::chrono::nanoseconds settle)
    : action_(action),
      before_(before.invocation_id),
      settle_(settle),
      stop_phase_(action != UnitAction::kReload &&
                  (before.active_state == "deactivating" ||
                   (action == UnitAction::kRestart && before.Running()))),
      before_unit_(before),
      phase_(before.active_state == "deactivating" ? before.sub_state : "") {
  std::string_view first = phase_.empty() ? FirstStopPhase(before) : std::string_view(phase_);
  bound_ = stop_phase_ ? StopPhaseBound(before, first) + settle : settle;
}

bool FirstLookWait::Due(std::chrono::nanoseconds at, bool job_done, const UnitStatus& now) {
  if (job_done) return true;
  if (action_ == UnitAction::kReload) {
    // A reload has no coming up: its verdict is its job's. While systemd
    // runs ExecReload= (ActiveState reloading, which systemd bounds by the
    // unit's own timeout) it is waited for; a job not running by the
    // settle (queued behind another) is looked at then.
    if (now.active_state != "reloading") return at >= settle_;
    if (at < kLongestStop + settle_) return false;
    reloading_ = true;
    return true;
  }
  bool fresh = !now.invocation_id.empty() && now.invocation_id != before_;
  if (stop_phase_ && now.active_state == "deactivating" && now.sub_state != phase_) {
    // Each stop phase systemd enters (ExecStop=, SIGTERM, SIGKILL,
    // ExecStopPost=, ...) gets the unit's stop timeout anew: the wait
    // follows what systemd will do. The first one seen runs from when the
    // host asked.
    if (!phase_.empty()) {
      bound_ = std::max(bound_, at + StopPhaseBound(before_unit_, now.sub_state) + settle_);
    }
    phase_ = now.sub_state;
  }
  if (!up_at_.has_value() && now.Running() && !AwaitingAutoRestart(now) && fresh) up_at_ = at;
  // Never at a look that finds it stopped while the job is pending: the
  // host's restart may be stopping a run someone else began just before
  // its job ran, and systemd turns the restart into its start only once
  // that stop is done (the unit inactive in between, the job still held).
  if (up_at_.has_value() && at - *up_at_ >= settle_ && now.Running()) return true;
  if (at < bound_) return false;
  // Not "still stopping" (nor "still queued") once another run than the
  // one asked about began: it ran, or runs in systemd's restarts.
  stopping_ = stop_phase_ && (now.active_state == "deactivating" || !AnotherRun(now));
  return true;
}

bool FirstLookWait::AnotherRun(const UnitStatus& now) const {
  return !now.invocation_id.empty() && now.invocation_id != before_;
}

bool FirstLookWait::RanSinceAsked(const UnitStatus& now) const {
  return AnotherRun(now) && !now.Running();
}

std::chrono::nanoseconds FirstLookWait::Next(std::chrono::nanoseconds at) const {
  if (action_ == UnitAction::kReload) {
    return std::max(std::chrono::nanoseconds(0), kLongestStop + settle_ - at);
  }
  if (up_at_.has_value() && *up_at_ + settle_ > at) return *up_at_ + settle_ - at;
  return std::max(std::chrono::nanoseconds(0), bound_ - at);
}

// A job that did not end "done" with no run since the host asked never ran
// what the apply wrote: nothing to roll back, and it stays owed. systemd
// starts every run under a new InvocationID (an ExecStartPre= that fails
// included), and a start its rate limit refuses leaves the Result of the
// run before (start-limit-hit only over a success). A reload has no run:
// its job's failure is the daemon refusing what was written. Nor is an
// AssertXxx= that failed (job "assert"), checked before any run: the
// definition refusing itself, as a daemon refusing its config would.
namespace {
bool NeverRan(UnitAction action, const std::string& job_result, const Look& first,
              const Look& second) {
  if (first.another_run || second.another_run) return false;
  if (second.unit.result == "start-limit-hit" || job_result == "dependency") return true;
  return action != UnitAction::kReload && job_result != "assert" &&
         !second.unit.invocation_id.empty();
}

// Running at both looks, under another InvocationID at the second: the run
// looked at ended inside the pause. Not always a death that systemd's
// Restart= answered: that counts in NRestarts, and any other start (an
// operator's, a unit's that requires it) zeroes it. Either way the run now
// has not been looked at for a settle.
std::optional<Verdict> AnotherRunInThePause(const Look& first, const Look& second,
                                            const std::string& when) {
  if (!first.unit.Running() || first.unit.invocation_id.empty() ||
      second.unit.invocation_id.empty() || first.unit.invocation_id == second.unit.invocation_id) {
    return std::nullopt;
  }
  if (second.unit.n_restarts > first.unit.n_restarts) {
    return Verdict{false, "died and was restarted by systemd (new InvocationID, NRestarts " +
                              std::to_string(first.unit.n_restarts) + " -> " +
                              std::to_string(second.unit.n_restarts) + "), " +
                              StateWords(second.unit) + " " + when};
  }
  return Verdict{false,
                 "its run ended inside the pause and another began (new InvocationID; NRestarts "
                 "did not grow: started again by someone else, not by its Restart=), " +
                     StateWords(second.unit) + " " + when};
}

// A job that failed, and the unit as the second look found it. Started
// again by its Restart= (activating, running) the state hides why the run
// ended: its Result and the restart are said.
std::string JobFailedWords(UnitAction action, const std::string& job_result, const Look& first,
                           const Look& second) {
  const UnitStatus& u = second.unit;
  std::string words =
      "job " + std::string(UnitActionVerb(action)) + " ended \"" + job_result + "\"";
  bool state_says_result = u.active_state == "failed" || u.active_state == "inactive";
  if (!state_says_result && !u.result.empty() && u.result != "success") {
    words += " (Result=" + u.result + ")";
  }
  words += ", unit " + StateWords(u);
  if (u.n_restarts > first.unit.n_restarts) {
    words += ", started again by its Restart= (NRestarts " + std::to_string(first.unit.n_restarts) +
             " -> " + std::to_string(u.n_restarts) + ")";
  }
  return words;
}

}  // namespace

Verdict JudgeTwoLooks(UnitAction action, const std::optional<std::string>& job_result,
                      const Look& first, const Look& second, std::chrono::nanoseconds elapsed) {
  std::string when = FormatSeconds(elapsed) + " after " + std::string(UnitActionVerb(action));
  for (const Look* look : {&first, &second}) {
    if (!look->error.empty()) return {false, "not looked at (" + look->error + ") " + when};
  }
  if (first.stopping) {
    // A restart's job runs its stop at once (deactivating): a unit still
    // up under the run it had, its job pending, was never stopped. The job
    // waits behind a unit it is ordered after; nothing of the apply ran.
    if (first.job_pending && first.unit.Running()) {
      return {false,
              "its " + std::string(UnitActionVerb(action)) +
                  " job is still queued (behind a unit it is ordered after), " +
                  StateWords(first.unit) + ", past its stop timeout " + when,
              /*not_run=*/true};
    }
    return {false, "still stopping, " + StateWords(first.unit) + ", past its stop timeout " + when};
  }
  if (first.reloading) {
    return {false, "still reloading, " + StateWords(first.unit) + ", " + when};
  }
  if (job_result.has_value() && *job_result != "done") {
    bool never_ran = NeverRan(action, *job_result, first, second);
    return {false,
            JobFailedWords(action, *job_result, first, second) + " " + when +
                (never_ran ? "; no run began (its InvocationID is the one before)" : ""),
            never_ran};
  }
  // systemd skipped the start: not running, and not a run that ended well
  // (a skipped oneshot reads Result=success too).
  for (const Look* look : {&first, &second}) {
    if (!look->unit.failed_condition.empty() && !look->unit.Running() && !look->job_pending) {
      return {false, "skipped by systemd: " + look->unit.failed_condition + " is false (" +
                         StateWords(look->unit) + ") " + when};
    }
  }
  // A oneshot that ran to completion is what was asked for (Chef's lesson).
  if (second.unit.type == "oneshot" && !second.job_pending && second.unit.result == "success" &&
      (second.unit.active_state == "inactive" || second.unit.active_state == "active")) {
    return {true, "finished (Result=success)"};
  }
  if (!RunningOrStarting(first) || !RunningOrStarting(second)) {
    const UnitStatus& seen = RunningOrStarting(first) ? second.unit : first.unit;
    std::string step = seen.result == "exit-code" ? StartStepWords(seen) : "";
    return {false, StateWords(seen) + " " + when + (step.empty() ? "" : ": " + step)};
  }
  // SPEC: accepted on the way up is activating, nothing else. A job still
  // queued (held behind a unit it is ordered after) has not started the
  // unit: if that unit never comes up, the job ends "dependency" and this
  // one never runs.
  if (second.job_pending && !second.unit.Running()) {
    return {false,
            "its " + std::string(UnitActionVerb(action)) +
                " job is still queued (behind a unit it is ordered after), " +
                StateWords(second.unit) + " " + when,
            /*not_run=*/true};
  }
  // A first look taken while the job was still queued saw the run before
  // the host's: the new InvocationID at the second is the one it asked for.
  if (auto v = AnotherRunInThePause(first, second, when)) return *v;
  if (second.unit.n_restarts > first.unit.n_restarts) {
    return {false, "died and was restarted by systemd (NRestarts " +
                       std::to_string(first.unit.n_restarts) + " -> " +
                       std::to_string(second.unit.n_restarts) + "), " + StateWords(second.unit) +
                       " " + when};
  }
  if (action == UnitAction::kReload && second.job_pending) {
    // Nothing of a reload is accepted before its job says how it ended.
    return {false, "job reload still pending, unit " + StateWords(second.unit) + " " + when};
  }
  if (second.unit.active_state == "activating") {
    return {true, "still starting (" + StateWords(second.unit) + ")"};
  }
  return {true, StateWords(second.unit)};
}

std::optional<std::chrono::nanoseconds> PauseLeft(const Look& first, const Look& second,
                                                  std::chrono::nanoseconds settle) {
  // The first look decides these, whatever comes after.
  if (!first.error.empty() || !second.error.empty() || first.stopping || first.reloading) {
    return std::nullopt;
  }
  bool up_at_first = !first.job_pending && first.unit.active_state == "active";
  const UnitStatus& now = second.unit;
  if (up_at_first || now.active_state != "active" || now.type == "oneshot") return std::nullopt;
  if (now.in_state_for <= std::chrono::nanoseconds(0) || now.in_state_for >= settle) {
    return std::nullopt;
  }
  return settle - now.in_state_for;
}

std::optional<Verdict> JudgeBystander(const UnitStatus& before, const Look& last,
                                      bool apply_acted) {
  if (!last.error.empty()) return std::nullopt;
  const UnitStatus& now = last.unit;
  // A start by anyone zeroes NRestarts (systemd's flush_n_restarts): a new
  // run counts its own from 0, the same run on from the plan's look.
  const bool same_run = now.invocation_id == before.invocation_id;
  const bool own_restarts =
      same_run ? RestartedSince(now.n_restarts, before.n_restarts) : now.n_restarts != 0;
  if (same_run && !own_restarts && UnitUp(now)) return std::nullopt;  // as it was
  Verdict v;
  if (!own_restarts && UnitUp(now)) {
    v.accepted = true;
    v.detail = StateWords(now) + ", started anew during this apply " +
               (apply_acted ? "(with a unit it acted on)"
                            : "(by someone else: this apply asked systemd for nothing)");
  } else if (!own_restarts && now.job_queued && !FoundFailed(now)) {
    // Stopped with a unit it requires and ordered after, which has not come
    // up yet: its start waits in systemd's queue, as a start's would.
    v.accepted = true;
    v.detail = StateWords(now) +
               (apply_acted ? ", stopped with a unit this apply acted on"
                            : ", stopped during this apply by someone else") +
               "; its start is queued behind one it is ordered after";
  } else if (own_restarts) {
    v.detail = "died during this apply and was restarted by systemd (NRestarts " +
               (same_run ? std::to_string(before.n_restarts) + " -> " : std::string("now ")) +
               std::to_string(now.n_restarts) + "): " + StateWords(now);
  } else {
    v.detail = "went down during this apply: " + StateWords(now) + ", declared running";
  }
  return v;
}

}  // namespace mesh::core
