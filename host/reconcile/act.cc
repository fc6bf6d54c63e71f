#include "host/reconcile/act.h"

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "host/reconcile/stop_order.h"
#include "host/reconcile/words.h"

namespace mesh::reconcile {
namespace {

// systemd's refusal of a job, and how to mend it where the words alone do
// not say: a reload of a unit with no ExecReload= (reload_on) is refused
// as "not applicable", at every apply until the declaration changes.
std::string RefusalWords(const std::pair<std::string, ports::JobKind>& job,
                         const std::string& refused) {
  if (job.second != ports::JobKind::kReload ||
      refused.find("JobTypeNotApplicable") == std::string::npos) {
    return refused;
  }
  return refused + " (" + job.first +
         " has no ExecReload=, so systemd cannot reload it: give it one, or name what it "
         "reads in restart_on instead of reload_on)";
}

using core::Resource;
using State = Acted::State;

ports::JobKind JobOf(core::UnitAction action) {
  switch (action) {
    case core::UnitAction::kStart:
      return ports::JobKind::kStart;
    case core::UnitAction::kRestart:
      return ports::JobKind::kRestart;
    case core::UnitAction::kReload:
      return ports::JobKind::kReload;
  }
  return ports::JobKind::kStart;
}

// A restart_on or reload_on resource that failed in this apply: the unit is
// not acted on, so it never runs a half-applied change.
std::optional<std::string> FailedDependency(const core::Declaration& decl, const Plan& plan,
                                            const Writes& writes, const Resource& r) {
  for (const auto* list : {&r.unit().restart_on, &r.unit().reload_on}) {
    for (const std::string& ref : *list) {
      size_t j = decl.index.find(ref)->second;
      if (!plan.steps[j].failed() && writes.Ok(j)) continue;
      bool restart = list == &r.unit().restart_on;
      return NotActed(
          restart ? "restarted" : "reloaded",
          std::string(restart ? "restart_on" : "reload_on") + " resource " + ref + " failed",
          r.unit().name, "configuration");
    }
  }
  return std::nullopt;
}

// A unit is acted on only when its resource, its writes and its plan went
// through: nothing is started onto half of a change.
bool Actionable(const Plan& plan, const Writes& writes, const UnitPlan& u) {
  return !plan.steps[u.index].failed() && writes.Ok(u.index) && u.failed.empty();
}

// The stop of a unit declared stopped, queued on its own: its end is not
// waited for (confirm.h looks at it).
Acted QueueStop(const Resource& r, ports::ServiceManager* services) {
  auto job = services->Enqueue(r.unit().name, ports::JobKind::kStop);
  return job ? Acted{.state = State::kStopQueued, .detail = "", .job = *job, .before = {}}
             : Acted{.state = State::kRefused,
                     .detail = job.error().message,
                     .job = "",
                     .before = {}};
}

// The stops of the actionable units declared stopped, queued in the order
// stop_order.h keeps (triggers first, seen through); a stop is never
// waited for otherwise (confirm.h looks at it). By plan.units index.
std::map<size_t, Acted> QueueStops(const core::Declaration& decl, const Plan& plan,
                                   const Writes& writes, ports::ServiceManager* services,
                                   bool dry_run) {
  std::map<size_t, Acted> stopped;
  if (dry_run) return stopped;
  auto stops = [&](size_t k) {
    return plan.units[k].stop && Actionable(plan, writes, plan.units[k]);
  };
  StopTriggersFirst(
      plan.units.size(),
      [&](size_t k) { return stops(k) && !plan.units[k].status.triggers.empty(); },
      [&](size_t k) {
        if (!stops(k)) return std::string();
        Acted a = QueueStop(decl.resources[plan.units[k].index], services);
        std::string job = a.state == State::kStopQueued ? a.job : "";
        stopped.emplace(k, std::move(a));
        return job;
      },
      services);
  return stopped;
}

// What holds back an actionable unit's start, restart or reload (a failed
// dependency, a refused daemon-reload), or keeps it idle (nothing asked, a
// plan); nullopt: its job is to be queued. `acted` is what was done to it
// already (its stop), which the words carry on.
std::optional<Acted> HeldBack(const core::Declaration& decl, const Plan& plan, const Writes& writes,
                              const SystemdAnswer& reloaded, const UnitPlan& u, Acted acted,
                              bool dry_run) {
  const Resource& r = decl.resources[u.index];
  if (r.unit().state == core::UnitState::kRunning) {
    if (auto failed = FailedDependency(decl, plan, writes, r)) {
      return Acted{.state = State::kBlocked, .detail = *failed, .job = "", .before = {}};
    }
  }
  if (u.daemon_reload && reloaded.refused()) {
    std::string past = u.action ? std::string(core::OutcomeName(OutcomeOf(*u.action))) : "loaded";
    // A stop queued already stands: the words say it too.
    std::string stopped =
        acted.state == State::kStopQueued ? StoppedNotWaited(false, r.unit().name) + "; " : "";
    std::string cause = "daemon-reload failed (" + reloaded.error + ")";
    return Acted{.state = State::kBlocked,
                 .detail = stopped + NotActed(past, cause, r.unit().name, "definition"),
                 .job = "",
                 .before = {}};
  }
  if (!u.action.has_value() || dry_run) return acted;
  return std::nullopt;
}

bool SocketRestart(const std::pair<std::string, ports::JobKind>& ask) {
  return ask.second == ports::JobKind::kRestart && ask.first.ends_with(".socket");
}

// The service of `socket` whose run holds back its start: not an Accept=yes
// socket's per-connection instance (NAME@CONNECTION.service), which holds
// nothing back.
bool ServiceOfSocket(std::string_view socket, std::string_view unit) {
  std::string_view stem = socket.substr(0, socket.size() - std::string_view(".socket").size());
  return unit.ends_with(".service") &&
         !(unit.starts_with(stem) && unit.size() > stem.size() && unit[stem.size()] == '@');
}

// The service a socket starts, when it runs: systemd refuses to start the
// socket again unless that service is dead, failed or waiting to be
// restarted ("already active, refusing"), so a restart would stop the
// socket and leave it dead, nothing listening.
// `services_seen`: each service a socket being restarted triggers, as read.
std::optional<std::string> SocketHeldByItsService(
    const std::string& socket, const core::UnitStatus& before,
    const std::map<std::string, core::Result<core::UnitStatus>>& services_seen) {
  for (const std::string& service : before.triggers) {
    auto seen = services_seen.find(service);
    if (seen == services_seen.end() || !seen->second) continue;
    const core::UnitStatus& s = *seen->second;
    if (s.active_state == "inactive" || s.active_state == "failed" ||
        core::AwaitingAutoRestart(s)) {
      continue;
    }
    return "not restarted: its service " + InStateFor(service, s) +
           ", and systemd refuses to start " + socket +
           " again while it runs (a restart would leave nothing listening); its new "
           "definition is loaded, and the restart waits until " +
           service + " stops";
  }
  return std::nullopt;
}

// What a socket's restart would find, read at once for every such socket.
std::map<std::string, core::Result<core::UnitStatus>> ServicesOfSockets(
    const std::vector<std::pair<std::string, ports::JobKind>>& asks,
    const std::vector<core::Result<core::UnitStatus>>& before, ports::ServiceManager* services) {
  std::vector<std::string> names;
  for (size_t n = 0; n < asks.size() && n < before.size(); ++n) {
    if (!SocketRestart(asks[n]) || !before[n]) continue;
    for (const std::string& t : before[n]->triggers) {
      if (ServiceOfSocket(asks[n].first, t)) names.push_back(t);
    }
  }
  std::map<std::string, core::Result<core::UnitStatus>> seen;
  if (names.empty()) return seen;
  std::vector<core::Result<core::UnitStatus>> read = services->ReadUnits(names);
  for (size_t k = 0; k < names.size() && k < read.size(); ++k) seen.emplace(names[k], read[k]);
  return seen;
}

// Why a unit read after the daemon-reload is not asked now: a socket whose
// service runs, or a file not the host's that the reload moved it onto (the
// restart would run it).
std::optional<std::string> HeldNow(
    const std::pair<std::string, ports::JobKind>& ask, const core::UnitStatus& now,
    const core::Resource& r,
    const std::map<std::string, core::Result<core::UnitStatus>>& services_of_sockets,
    LoadedFiles& loaded) {
  if (SocketRestart(ask)) {
    if (auto held = SocketHeldByItsService(ask.first, now, services_of_sockets)) return held;
  }
  auto why = loaded.NotTheHosts(r.unit().name, now, r.unit().text.has_value(), r.unit().drop_ins,
                                /*after_reload=*/true);
  if (!why.has_value()) return std::nullopt;
  return std::move(why->words);
}

}  // namespace

namespace {

// What this apply's daemon-reload shows of the units nothing is asked of,
// read again in one round:
// - a unit whose name systemd read as another's alias before the host's
//   file was read (declared stopped, left to its trigger): still the other
//   unit's, it fails as one asked something would (HeldNow), not a success
//   that reports the other unit; one that cannot be read then fails with
//   the read's error (the plan's view of it was a new unit's, not
//   systemd's word);
// - a unit declared triggered whose new definition the reload loaded:
//   nothing else would find a definition systemd cannot load until the
//   next apply (its trigger would fail to start it meanwhile); such a one
//   fails.
void JudgeAfterTheReload(const core::Declaration& decl, const Plan& plan,
                         const SystemdAnswer& reloaded, ports::ServiceManager* services,
                         std::vector<Acted>& acts) {
  auto refused = [](std::string detail) {
    return Acted{.state = State::kRefused, .detail = std::move(detail), .job = "", .before = {}};
  };
  std::vector<size_t> judged;
  std::vector<bool> alias, triggered;
  std::vector<std::string> names;
  for (size_t k = 0; k < plan.units.size() && k < acts.size(); ++k) {
    const UnitPlan& u = plan.units[k];
    if (acts[k].state != State::kIdle) continue;
    const bool a = u.alias_unjudged && !u.action.has_value();
    const bool t = reloaded.done() && u.daemon_reload && u.failed.empty() &&
                   decl.resources[u.index].unit().state == core::UnitState::kTriggered;
    if (!a && !t) continue;
    judged.push_back(k);
    alias.push_back(a);
    triggered.push_back(t);
    names.push_back(decl.resources[u.index].unit().name);
  }
  if (names.empty()) return;
  std::vector<core::Result<core::UnitStatus>> now = services->ReadUnits(names);
  for (size_t n = 0; n < judged.size() && n < now.size(); ++n) {
    Acted& act = acts[judged[n]];
    if (!now[n]) {
      if (alias[n]) act = refused("not read after the daemon-reload: " + now[n].error().message);
      continue;
    }
    if (alias[n] && !now[n]->need_daemon_reload) {
      if (auto words = AliasWords(names[n], *now[n], /*after_reload=*/true)) {
        act = refused(*words);
        continue;
      }
    }
    if (triggered[n] && !core::Loadable(*now[n])) {
      act = refused(names[n] + " cannot be loaded after the daemon-reload (LoadState=" +
                    now[n]->load_state + "): its trigger would fail to start it; " +
                    "systemd-analyze verify " + names[n] + " says why");
    }
  }
}

}  // namespace

core::UnitAction AskedOf(const UnitPlan& u, const Acted& a) {
  return a.restart_for_start ? core::UnitAction::kRestart : *u.action;
}

namespace {

// Starts of units started by someone else since the plan found them down
// turned into restarts: a start would be a job done at once, the unit left
// on what it started with. Which asks became so.
std::vector<bool> RestartsForStarts(const Plan& plan, const std::vector<size_t>& asked,
                                    const std::vector<core::Result<core::UnitStatus>>& before,
                                    std::vector<std::pair<std::string, ports::JobKind>>& asks) {
  std::vector<bool> restart_for_start(asks.size(), false);
  for (size_t n = 0; n < asks.size() && n < before.size(); ++n) {
    if (asks[n].second == ports::JobKind::kStart && before[n] &&
        plan.units[asked[n]].start_loads_changes && before[n]->Running() &&
        !core::AwaitingAutoRestart(*before[n])) {
      asks[n].second = ports::JobKind::kRestart;
      restart_for_start[n] = true;
    }
  }
  return restart_for_start;
}

}  // namespace

std::vector<Acted> Act(const core::Declaration& decl, const Plan& plan, const Writes& writes,
                       const SystemdAnswer& reloaded, ports::ServiceManager* services, bool dry_run,
                       const HostDirs* dirs) {
  std::vector<Acted> acts;
  std::vector<std::pair<std::string, ports::JobKind>> asks;
  std::vector<size_t> asked;
  std::map<size_t, Acted> stopped = QueueStops(decl, plan, writes, services, dry_run);
  for (size_t k = 0; k < plan.units.size(); ++k) {
    const UnitPlan& u = plan.units[k];
    std::optional<Acted> held = Acted{};
    if (Actionable(plan, writes, u)) {
      auto it = stopped.find(k);
      held = HeldBack(decl, plan, writes, reloaded, u,
                      it != stopped.end() ? std::move(it->second) : Acted{}, dry_run);
    }
    acts.push_back(held.value_or(Acted{}));
    if (held.has_value()) continue;
    asks.emplace_back(decl.resources[u.index].unit().name, JobOf(*u.action));
    asked.push_back(k);
  }
  if (!dry_run) JudgeAfterTheReload(decl, plan, reloaded, services, acts);
  if (asks.empty()) return acts;
  // Each unit as it is now, not as the plan saw it: since then a
  // daemon-reload ran, and someone else may have restarted it (an
  // operator, or the job of an apply that was killed). Its coming up is
  // told from the InvocationID it runs under when the host asks.
  // A unit that cannot be read now (the bus lost) is not asked either:
  // there would be nothing to tell its coming up from, and what it owes
  // stays owed for the next apply.
  std::vector<std::string> names;
  names.reserve(asks.size());
  for (const auto& ask : asks) names.push_back(ask.first);
  std::vector<core::Result<core::UnitStatus>> before = services->ReadUnits(names);
  std::vector<bool> restart_for_start = RestartsForStarts(plan, asked, before, asks);
  // After the restarts that stand for starts: a socket's too is held.
  auto services_of_sockets = ServicesOfSockets(asks, before, services);
  std::vector<std::pair<std::string, ports::JobKind>> readable;
  std::vector<size_t> sent;  // into asks
  LoadedFiles loaded(dirs, services);
  for (size_t n = 0; n < asks.size(); ++n) {
    std::optional<std::string> held =
        n < before.size() && before[n]
            ? HeldNow(asks[n], *before[n], decl.resources[plan.units[asked[n]].index],
                      services_of_sockets, loaded)
            : std::nullopt;
    if (held.has_value()) {
      acts[asked[n]] = Acted{.state = State::kRefused, .detail = *held, .job = "", .before = {}};
    } else if (n < before.size() && before[n]) {
      readable.push_back(asks[n]);
      sent.push_back(n);
    } else {
      acts[asked[n]] = Acted{.state = State::kRefused,
                             .detail = n < before.size() ? before[n].error().message : "not read",
                             .job = "",
                             .before = {}};
    }
  }
  if (readable.empty()) return acts;
  // Every job of the apply is sent at once; each answer is only "queued".
  std::vector<core::Result<std::string>> queued = services->EnqueueAll(readable);
  for (size_t m = 0; m < sent.size(); ++m) {
    size_t n = sent[m];
    Acted& a = acts[asked[n]];
    a = queued[m] ? Acted{.state = State::kQueued, .detail = "", .job = *queued[m], .before = {}}
                  : Acted{.state = State::kRefused,
                          .detail = RefusalWords(readable[m], queued[m].error().message),
                          .job = "",
                          .before = {}};
    a.before = std::move(*before[n]);  // a refusal's too: it says whether systemd loaded it
    a.restart_for_start = restart_for_start[n];
  }
  return acts;
}

}  // namespace mesh::reconcile
