#include "host/reconcile/confirm.h"

#include <map>
#include <string>

namespace mesh::reconcile {
namespace {

// A unit being confirmed: where it sits in the plan, and what was seen.
struct Watch {
  size_t unit = 0;  // plan.units index
  std::string name;
  std::string job;
  core::Look first, second;
  std::optional<std::string> job_result;
};

std::vector<core::Look> LookAt(ports::ServiceManager& sm, const std::vector<Watch>& watches) {
  std::vector<std::string> names;
  for (const Watch& w : watches) names.push_back(w.name);
  std::vector<core::Look> looks;
  for (auto& status : sm.ReadUnits(names)) {
    looks.push_back({status ? std::move(*status) : core::UnitStatus{}, false});
  }
  return looks;
}

}  // namespace

std::vector<std::optional<Confirmation>> Confirm(const core::Declaration& decl, const Plan& plan,
                                                 const std::vector<Acted>& acts,
                                                 ports::ServiceManager* services,
                                                 ports::Clock& clock,
                                                 std::chrono::nanoseconds settle) {
  std::vector<std::optional<Confirmation>> out(plan.units.size());
  std::vector<Watch> watches;
  std::vector<std::string> jobs;
  for (size_t k = 0; k < plan.units.size(); ++k) {
    if (acts[k].state != Acted::State::kQueued) continue;
    watches.push_back({k, decl.resources[plan.units[k].index].unit, acts[k].job, {}, {}, {}});
    jobs.push_back(acts[k].job);
  }
  if (watches.empty()) return out;  // nothing queued: nothing to look at, no pause
  auto t0 = clock.Monotonic();
  // Wait for the jobs (bounded by one settle), look, pause once, look again.
  std::map<std::string, std::string> finished = services->WaitForJobs(jobs, settle);
  std::vector<core::Look> first = LookAt(*services, watches);
  std::vector<std::string> pending;
  for (size_t n = 0; n < watches.size(); ++n) {
    Watch& w = watches[n];
    w.first = std::move(first[n]);
    w.first.job_pending = !finished.contains(w.job);
    if (w.first.job_pending) {
      pending.push_back(w.job);
    } else {
      w.job_result = finished[w.job];
    }
  }
  clock.SleepFor(settle);
  auto late = pending.empty() ? std::map<std::string, std::string>{}
                              : services->WaitForJobs(pending, std::chrono::nanoseconds(0));
  auto elapsed = std::chrono::duration_cast<std::chrono::nanoseconds>(clock.Monotonic() - t0);
  std::vector<core::Look> second = LookAt(*services, watches);
  for (size_t n = 0; n < watches.size(); ++n) {
    Watch& w = watches[n];
    if (w.first.job_pending && late.contains(w.job)) w.job_result = late[w.job];
    w.second = std::move(second[n]);
    w.second.job_pending = w.first.job_pending && !late.contains(w.job);
    const UnitPlan& u = plan.units[w.unit];
    out[w.unit] = Confirmation{
        core::JudgeTwoLooks(*u.action, w.job_result, w.first, w.second, elapsed), w.second.unit};
  }
  return out;
}

}  // namespace mesh::reconcile
