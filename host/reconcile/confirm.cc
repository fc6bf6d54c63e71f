#include "host/reconcile/confirm.h"

#include <algorithm>
#include <map>
#include <string>

namespace mesh::reconcile {
namespace {

using std::chrono::nanoseconds;

// How often a unit still in the stop phase of its restart is looked at:
// its first look is taken within this much of the stop phase ending.
constexpr nanoseconds kPoll = std::chrono::milliseconds(50);

// A unit being confirmed: where it sits in the plan, and what was seen.
struct Watch {
  size_t unit = 0;  // plan.units index
  std::string name;
  std::string job;
  core::FirstLookWait wait;
  bool looked = false;
  core::Look first, second;
  std::optional<std::string> job_result;
};

// Takes each unit's first look when it is due (core::FirstLookWait): its
// job done, or the settle time after it came up, or its stop bound passed.
class FirstLooks {
 public:
  FirstLooks(ports::ServiceManager& sm, ports::Clock& clock, std::vector<Watch>& watches,
             Progress* progress)
      : sm_(sm), clock_(clock), watches_(watches), progress_(progress), t0_(clock.Monotonic()) {}

  void Take() {
    for (;;) {
      Look();
      if (progress_ != nullptr) progress_->Step();
      if (std::all_of(watches_.begin(), watches_.end(), [](const Watch& w) { return w.looked; })) {
        return;
      }
      Wait();
    }
  }
  nanoseconds Since() const { return clock_.Monotonic() - t0_; }
  const std::map<std::string, std::string>& finished() const { return finished_; }

 private:
  // For the open jobs, as long as the nearest first look allows and never
  // longer than one poll: a unit whose job is done is looked at promptly.
  void Wait() {
    std::vector<std::string> pending;
    nanoseconds wait = kPoll;
    for (const Watch& w : watches_) {
      if (w.looked || finished_.contains(w.job)) continue;
      pending.push_back(w.job);
      wait = std::min(wait, w.wait.Next(Since()));
    }
    if (pending.empty()) return;
    wait = std::max(wait, nanoseconds(1000000));
    auto began = clock_.Monotonic();
    auto got = sm_.WaitForJobs(pending, wait);
    if (!got) {
      // What the open jobs came to is lost with the connection: their
      // units are looked at now, and nothing is accepted on that look.
      lost_ = got.error().message;
      return;
    }
    bool all = got->size() == pending.size();
    for (auto& [job, result] : *got) finished_[job] = std::move(result);
    // A wait that came back early with jobs still open (a lost bus answers
    // at once) is made up: the loop never spins.
    nanoseconds spent = clock_.Monotonic() - began;
    if (!all && spent < wait) clock_.SleepFor(wait - spent);
  }
  void Look() {
    std::vector<Watch*> open;
    std::vector<std::string> names;
    for (Watch& w : watches_) {
      if (w.looked) continue;
      open.push_back(&w);
      names.push_back(w.name);
    }
    std::vector<core::Result<core::UnitStatus>> statuses = sm_.ReadUnits(names);
    nanoseconds at = Since();
    for (size_t k = 0; k < open.size(); ++k) {
      Watch& w = *open[k];
      core::UnitStatus seen = statuses[k] ? std::move(*statuses[k]) : core::UnitStatus{};
      auto done = finished_.find(w.job);
      bool lost = !lost_.empty() && done == finished_.end();
      // A unit that cannot be read, or whose job was lost, is looked at
      // now: waiting would not help.
      if (statuses[k] && !lost && !w.wait.Due(at, done != finished_.end(), seen)) continue;
      w.looked = true;
      bool another = w.wait.AnotherRun(seen);
      std::string error = !statuses[k] ? statuses[k].error().message : lost ? lost_ : "";
      w.first = {.unit = std::move(seen),
                 .job_pending = done == finished_.end(),
                 .stopping = w.wait.stopping(),
                 .reloading = w.wait.reloading(),
                 .error = std::move(error),
                 .another_run = another};
      if (done != finished_.end()) w.job_result = done->second;
    }
  }

  ports::ServiceManager& sm_;
  ports::Clock& clock_;
  std::vector<Watch>& watches_;
  Progress* progress_;
  std::chrono::steady_clock::time_point t0_;
  std::map<std::string, std::string> finished_;
  std::string lost_;  // the wait for jobs lost the bus: why
};

// The run whose lines say why a unit died between `before` and `now`: the
// earlier one when systemd's own Restart= began the later (NRestarts
// counted on from it); else the later, which began after `before` (a
// start since zeroed the count) and is the one that ended.
const std::string& DeadRun(const core::UnitStatus& before, const core::UnitStatus& now) {
  if (!before.invocation_id.empty() && now.invocation_id != before.invocation_id &&
      now.n_restarts > before.n_restarts) {
    return before.invocation_id;
  }
  return now.invocation_id;
}

core::Look LookOf(core::Result<core::UnitStatus>& seen) {
  core::Look taken;
  if (seen) {
    taken.unit = std::move(*seen);
  } else {
    taken.error = seen.error().message;
  }
  return taken;
}

// The units declared running that the plan found running and asked
// nothing of: looked at with the others' second look, and judged by what
// they came to (core::JudgeBystander): systemd stops and starts a unit
// with one it requires, is part of or conflicts with.
class Bystanders {
 public:
  Bystanders(const core::Declaration& decl, const Plan& plan, const std::vector<Acted>& acts) {
    for (size_t k = 0; k < plan.units.size(); ++k) {
      const UnitPlan& u = plan.units[k];
      const core::Resource& r = decl.resources[u.index];
      if (acts[k].state != Acted::State::kIdle || u.action.has_value() || !u.failed.empty() ||
          r.unit().state != core::UnitState::kRunning || !u.up || !u.status.Running()) {
        continue;
      }
      units_.push_back(k);
      names_.push_back(r.unit().name);
    }
  }
  const std::vector<std::string>& names() const { return names_; }
  // `last`: their look taken with the acted units' second. One still
  // stopping then (PartOf= without After=: it stops beside the one acted
  // on, and may drain for seconds) is looked at again until that stop
  // phase ends or outlasts what systemd gives it.
  // `apply_acted`: the apply queued a job (JudgeBystander's words).
  void Judge(const Plan& plan, std::vector<core::Result<core::UnitStatus>> last,
             ports::ServiceManager& sm, ports::Clock& clock, nanoseconds settle, Progress* progress,
             bool apply_acted, std::vector<std::optional<Confirmation>>& out) {
    const auto began = clock.Monotonic();
    for (;;) {
      std::vector<size_t> again;
      std::vector<std::string> again_names;
      for (size_t b = 0; b < units_.size(); ++b) {
        if (last[b] && last[b]->active_state == "deactivating" &&
            clock.Monotonic() - began < core::StopPhaseBound(*last[b]) + settle) {
          again.push_back(b);
          again_names.push_back(names_[b]);
        }
      }
      if (again.empty()) break;
      clock.SleepFor(kPoll);
      if (progress != nullptr) progress->Step();
      std::vector<core::Result<core::UnitStatus>> seen = sm.ReadUnits(again_names);
      if (progress != nullptr) progress->Looked(again_names);
      for (size_t n = 0; n < again.size(); ++n) last[again[n]] = std::move(seen[n]);
    }
    for (size_t b = 0; b < units_.size(); ++b) {
      core::Look now = LookOf(last[b]);
      const core::UnitStatus& before = plan.units[units_[b]].status;
      if (auto verdict = core::JudgeBystander(before, now, apply_acted)) {
        // A death's lines are the dead run's, not those of the one
        // systemd started since.
        std::string run = verdict->accepted ? now.unit.invocation_id : DeadRun(before, now.unit);
        out[units_[b]] = Confirmation{std::move(*verdict), std::move(now.unit), std::move(run)};
      }
    }
  }

 private:
  std::vector<size_t> units_;  // plan.units indices
  std::vector<std::string> names_;
};

// A unit's second look: what was read, and what became of its job
// (`late_or_lost`: the jobs that ended since the first look, or why that
// could not be known).
// `pending`: its job had not ended at the look before (systemd hands a
// job's result over once).
void TakeSecondLook(Watch& w, core::Result<core::UnitStatus>& seen,
                    const core::Result<std::map<std::string, std::string>>& late_or_lost,
                    bool pending) {
  bool ended = pending && late_or_lost && late_or_lost->contains(w.job);
  if (ended) w.job_result = late_or_lost->at(w.job);
  w.second = {};
  w.second.unit = seen ? std::move(*seen) : core::UnitStatus{};
  if (!seen) {
    w.second.error = seen.error().message;
  } else if (!late_or_lost && pending) {
    w.second.error = late_or_lost.error().message;
  }
  w.second.job_pending = pending && !ended;
  w.second.another_run = w.wait.AnotherRun(w.second.unit);
}

// The units that came up after their first look and have not been up for a
// settle at their second (core::PauseLeft): one more pause, as long as the
// longest of them needs, then their second look again, which stands.
void LookAgainAtTheLate(ports::ServiceManager& sm, ports::Clock& clock, nanoseconds settle,
                        const FirstLooks& firsts, std::vector<Watch>& watches,
                        std::vector<nanoseconds>& elapsed) {
  nanoseconds more{0};
  std::vector<size_t> late;
  for (size_t n = 0; n < watches.size(); ++n) {
    const Watch& w = watches[n];
    if (w.job_result.has_value() && *w.job_result != "done") continue;  // failed already
    if (auto left = core::PauseLeft(w.first, w.second, settle)) {
      more = std::max(more, *left);
      late.push_back(n);
    }
  }
  if (late.empty()) return;
  clock.SleepFor(more);
  std::vector<std::string> names, pending;
  std::vector<bool> was_pending;
  for (size_t n : late) {
    names.push_back(watches[n].name);
    was_pending.push_back(watches[n].second.job_pending);
    if (watches[n].second.job_pending) pending.push_back(watches[n].job);
  }
  core::Result<std::map<std::string, std::string>> ended =
      pending.empty() ? std::map<std::string, std::string>{}
                      : sm.WaitForJobs(pending, nanoseconds(0));
  std::vector<core::Result<core::UnitStatus>> again = sm.ReadUnits(names);
  for (size_t k = 0; k < late.size(); ++k) {
    TakeSecondLook(watches[late[k]], again[k], ended, was_pending[k]);
    elapsed[late[k]] = firsts.Since();
  }
}

// A reload keeps the run it finds, and so does a start of a unit that
// runs (a start that only has it looked at twice). The run the plan saw
// may have died between the plan's look and the read as the job was asked
// (after the apply wrote what the daemon reads), and been restarted by
// systemd: both looks then start from the new run and see it up. Judged as
// a bystander from the plan's look to that read. A restart is not: it ends
// the run it finds itself, and its looks judge the new one.
std::optional<core::Verdict> DiedBeforeItWasAsked(const core::Declaration& decl, const UnitPlan& u,
                                                  const Acted& act) {
  core::UnitAction asked = AskedOf(u, act);
  if (asked == core::UnitAction::kRestart || !act.before.has_value() || !core::UnitUp(u.status) ||
      !u.status.Running() || decl.resources[u.index].unit().state != core::UnitState::kRunning) {
    return std::nullopt;
  }
  core::Look at_ask;
  at_ask.unit = *act.before;
  std::optional<core::Verdict> v = core::JudgeBystander(u.status, at_ask);
  if (!v.has_value() || v->accepted) return std::nullopt;
  v->detail += " (read as its " + std::string(core::UnitActionVerb(asked)) + " was asked)";
  return v;
}

bool WritesFilesAndStopsNothing(const Plan& plan) {
  bool writes =
      std::any_of(plan.steps.begin(), plan.steps.end(), [](const Step& s) { return s.changes(); });
  for (const Removal& rm : plan.removals) {
    if (rm.stop) return false;
    writes = writes || rm.DeletesFiles();
  }
  return writes && std::none_of(plan.units.begin(), plan.units.end(),
                                [](const UnitPlan& u) { return u.stop; });
}

}  // namespace

std::vector<std::optional<Confirmation>> Confirm(const core::Declaration& decl, const Plan& plan,
                                                 const std::vector<Acted>& acts,
                                                 ports::ServiceManager* services,
                                                 ports::Clock& clock,
                                                 std::chrono::nanoseconds settle,
                                                 Progress* progress) {
  std::vector<std::optional<Confirmation>> out(plan.units.size());
  std::vector<Watch> watches;
  for (size_t k = 0; k < plan.units.size(); ++k) {
    if (acts[k].state != Acted::State::kQueued) continue;
    const UnitPlan& u = plan.units[k];
    watches.push_back(
        {k,
         decl.resources[u.index].unit().name,
         acts[k].job,
         // Act reads each unit it queues a job for; an Acted made
         // otherwise (a test's) starts from the plan's look.
         core::FirstLookWait(AskedOf(u, acts[k]), acts[k].before.value_or(u.status), settle),
         false,
         {},
         {},
         {}});
  }
  if (watches.empty()) {
    // Nothing queued, so no pause. When the apply wrote files (one a
    // daemon reads) and stopped no unit, the units it left alone are looked
    // at once more as it ends: one that died while it ran fails it, as when
    // it restarted another unit. A stop is not waited on: what it carries
    // to others (BindsTo=) would be judged half done.
    if (plan.units.empty() || !WritesFilesAndStopsNothing(plan)) return out;
    Bystanders bystanders(decl, plan, acts);
    if (bystanders.names().empty()) return out;
    std::vector<core::Result<core::UnitStatus>> last = services->ReadUnits(bystanders.names());
    if (progress != nullptr) progress->Looked(bystanders.names());
    bystanders.Judge(plan, std::move(last), *services, clock, settle, progress,
                     /*apply_acted=*/false, out);
    return out;
  }
  Bystanders bystanders(decl, plan, acts);
  FirstLooks firsts(*services, clock, watches, progress);
  firsts.Take();
  // The one pause, shared by every unit, from the last first look.
  clock.SleepFor(settle);
  std::vector<std::string> pending;
  std::vector<std::string> names;
  for (const Watch& w : watches) {
    if (w.first.job_pending) pending.push_back(w.job);
    names.push_back(w.name);
  }
  core::Result<std::map<std::string, std::string>> late_or_lost =
      pending.empty() ? std::map<std::string, std::string>{}
                      : services->WaitForJobs(pending, nanoseconds(0));
  nanoseconds at_second = firsts.Since();
  names.insert(names.end(), bystanders.names().begin(), bystanders.names().end());
  std::vector<core::Result<core::UnitStatus>> second = services->ReadUnits(names);
  if (progress != nullptr) progress->Looked(bystanders.names());
  bystanders.Judge(
      plan,
      {std::make_move_iterator(second.begin() + static_cast<std::ptrdiff_t>(watches.size())),
       std::make_move_iterator(second.end())},
      *services, clock, settle, progress, /*apply_acted=*/true, out);
  for (size_t n = 0; n < watches.size(); ++n) {
    TakeSecondLook(watches[n], second[n], late_or_lost, watches[n].first.job_pending);
  }
  std::vector<nanoseconds> elapsed(watches.size(), at_second);
  LookAgainAtTheLate(*services, clock, settle, firsts, watches, elapsed);
  for (size_t n = 0; n < watches.size(); ++n) {
    Watch& w = watches[n];
    const UnitPlan& u = plan.units[w.unit];
    core::Verdict v =
        core::JudgeTwoLooks(AskedOf(u, acts[w.unit]), w.job_result, w.first, w.second, elapsed[n]);
    // The run whose lines the outcome shows: the one that died.
    std::string run = w.first.unit.invocation_id;
    if (v.accepted) {
      if (auto died = DiedBeforeItWasAsked(decl, u, acts[w.unit])) {
        v = std::move(*died);
        run = DeadRun(u.status, *acts[w.unit].before);
      }
    }
    out[w.unit] = Confirmation{std::move(v), w.second.unit, std::move(run)};
  }
  return out;
}

}  // namespace mesh::reconcile
