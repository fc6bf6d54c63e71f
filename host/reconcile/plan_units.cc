#include "host/reconcile/plan_units.h"

#include <algorithm>

#include "host/core/printable.h"
#include "host/core/two_look.h"
#include "host/core/unit_name.h"
#include "host/core/want.h"
#include "host/reconcile/plan_run_read.h"
#include "host/reconcile/words.h"

namespace mesh::reconcile {
namespace {

using core::RecordEntry;
using core::Resource;
using core::UnitAction;

// Why a unit declared running is not as declared, in the outcome's words.
std::string WasDown(const core::UnitStatus& s, const RecordEntry* old) {
  if (core::UnitUp(s) && old != nullptr && old->unit().n_restarts.has_value()) {
    uint32_t before = *old->unit().n_restarts;
    return "was restarted by systemd since the host last looked (NRestarts " +
           std::to_string(before) + " -> " +
           (s.n_restarts < before ? "0 by a manual start, then " : "") +
           std::to_string(s.n_restarts) + ")";
  }
  if (core::AwaitingAutoRestart(s)) return "was " + core::StateWords(s);
  if (!s.failed_condition.empty()) return "was skipped (" + s.failed_condition + " is false)";
  return "was " + s.active_state;
}

// Whether a unit runs a process: a start of it is a job systemd finishes at
// once without touching the daemon.
bool Runs(const core::UnitStatus& s) { return s.Running() && !core::AwaitingAutoRestart(s); }

// Whether resource j's change reaches the unit of resource i: written by
// this apply, or found already as declared (Step::adopted_change) while the
// unit's run began before that file last changed (its ctime), so that it
// read the old content. A run begun since (restarted by hand, or by an
// apply cut short after its write) read this one: not restarted again.
// Whether unit i's run began before the file, as `fingerprint` found it,
// last changed (its ctime): that run read what was there before. None when
// either is not known.
std::optional<bool> RunBeganBefore(const PlanInputs& in, size_t i, std::string_view fingerprint) {
  const core::Result<core::UnitStatus>* status = in.seen->UnitOf(i);
  auto stamp = core::ParseFingerprint(fingerprint);
  if (status == nullptr || !status->has_value() || !stamp.has_value() ||
      (*status)->started_realtime.count() == 0) {
    return std::nullopt;
  }
  return !core::RunBeganSince((*status)->started_realtime, stamp->ctime_ns);
}

bool ChangeReaches(const PlanInputs& in, const std::vector<Step>& steps, size_t i, size_t j) {
  if (steps[j].changes()) return true;
  if (!steps[j].adopted_change) return false;
  // Not known to have read it: restarted.
  return j >= in.seen->files.size() ||
         RunBeganBefore(in, i, in.seen->files[j].fingerprint).value_or(true);
}

// The declared files that define `r`'s unit (its unit file or a drop-in,
// declared as files) and change in this apply. An instance systemd loads
// from a unit file of its own (foo@c.service) reads its template's drop-ins,
// never the template's file: that file is not part of its definition. A
// masked one's FragmentPath is its mask, at its own name: once unmasked it
// loads from the template again.
std::vector<size_t> DefinedBy(const PlanInputs& in, const Resource& r,
                              const std::vector<Step>& steps) {
  const core::Result<core::UnitStatus>* status =
      in.seen->UnitOf(in.declaration->index.find(r.id)->second);
  bool own_file = status != nullptr && status->has_value() &&
                  r.unit().name.find('@') != std::string::npos &&
                  (*status)->fragment_path.ends_with("/" + r.unit().name) &&
                  (*status)->load_state != "masked" &&
                  !(*status)->need_daemon_reload;  // that file may be gone since
  std::vector<size_t> out;
  for (size_t j = 0; j < steps.size(); ++j) {
    if (steps[j].unit_definition &&
        ChangeReaches(in, steps, in.declaration->index.find(r.id)->second, j) &&
        ReadAsDefinitionOf(steps[j].defines, in.declaration->resources[j].path, r.unit().name,
                           own_file)) {
      out.push_back(j);
    }
  }
  return out;
}

// Why loading unit i's definition again is enough, when this apply writes
// it only to put back an edit by hand made under the run the host recorded
// (LoadingAgainIsEnough), after that run began: its own unit file, or
// every file that defines it (the record holds each as declared now).
// "" otherwise.
std::string PutBackWords(const PlanInputs& in, size_t i, const std::vector<Step>& steps,
                         const std::vector<size_t>& defined_by, const UnitPlan& u) {
  const Step& step = steps[i];
  if (!LoadingAgainIsEnough(step, u)) return "";
  const bool own = step.unit_file_put_back && !step.write_files && !step.changes_drop_ins() &&
                   RunBeganBefore(in, i, in.seen->UnitFileOf(i).fingerprint).value_or(false);
  if ((step.changes() && !own) || (!own && defined_by.empty())) return "";
  bool files = std::all_of(defined_by.begin(), defined_by.end(), [&](size_t j) {
    const Step& s = steps[j];
    return s.write_files && s.old != nullptr && !s.want_changed &&
           s.old->digest == (*in.wants)[j] && j < in.seen->files.size() &&
           RunBeganBefore(in, i, in.seen->files[j].fingerprint).value_or(false);
  });
  if (!files) return "";
  std::string paths;
  for (size_t j : defined_by) {
    paths += (paths.empty() ? "" : ", ") + in.declaration->resources[j].path;
  }
  const std::string began = "its run, the one the host recorded, began on the declared ";
  if (!own) return began + "unit definition " + paths;
  return began + "unit file" + (paths.empty() ? "" : " and unit definition " + paths);
}

// A unit definition of `r`'s unit that this apply deletes (a drop-in no
// longer declared).
std::optional<std::string> RemovedDefinition(const PlanInputs& in, const Resource& r,
                                             const std::vector<Removal>& removals) {
  if (in.dirs == nullptr) return std::nullopt;
  for (const Removal& rm : removals) {
    if (!rm.deletes_unit_definition) continue;
    for (const std::string& path : rm.delete_paths) {
      auto defines = UnitDefinitionAt(*in.dirs, path);
      if (defines.has_value() && core::PartOfDefinition(*defines, r.unit().name)) return path;
    }
  }
  return std::nullopt;
}

// Whether a change this apply makes to a unit definition (declared as a
// file) concerns `r`: one of its own, or one its restart_on or reload_on
// names. Then systemd must load it before `r` is acted on.
bool DefinitionChangesFor(const PlanInputs& in, const Resource& r, const std::vector<Step>& steps,
                          const std::vector<Removal>& removals) {
  if (!DefinedBy(in, r, steps).empty() || RemovedDefinition(in, r, removals)) return true;
  for (const auto* list : {&r.unit().restart_on, &r.unit().reload_on}) {
    for (const std::string& ref : *list) {
      const Step& dep = steps[in.declaration->index.find(ref)->second];
      if (dep.unit_definition && dep.changed_for_units()) return true;
    }
  }
  return false;
}

// What this apply's own changes ask of a unit declared running: a restart
// for its own files, a restart_on resource or a definition not loaded; a
// reload for a reload_on resource.
void AskForChanges(const PlanInputs& in, size_t i, const std::vector<Step>& steps,
                   const std::vector<Removal>& removals, UnitPlan& u) {
  const Resource& r = in.declaration->resources[i];
  const Step& step = steps[i];
  std::vector<size_t> restart_deps, reload_deps;
  for (const auto* list : {&r.unit().restart_on, &r.unit().reload_on}) {
    for (const std::string& ref : *list) {
      size_t j = in.declaration->index.find(ref)->second;
      if (ChangeReaches(in, steps, i, j))
        (list == &r.unit().restart_on ? restart_deps : reload_deps).push_back(j);
    }
  }
  std::vector<size_t> defined_by = DefinedBy(in, r, steps);
  auto ask = [&](UnitAction action, core::RestartReason reason, std::string why,
                 std::vector<size_t> causes) {
    u.action = action;
    u.reason = reason;
    u.why = std::move(why);
    u.causes = std::move(causes);
  };
  // An edit by hand put back stands in for the restart its write would
  // ask, no other: whatever else asks an action still does.
  std::string put_back = PutBackWords(in, i, steps, defined_by, u);
  if (put_back.empty() && step.changes()) {
    // The outcome's words are the step's; these are for an owed restart.
    ask(UnitAction::kRestart, core::RestartReason::kDeclared,
        step.write_unit_file && step.write_files ? "its files and unit file changed"
        : step.write_unit_file                   ? "unit file " + r.unit().name + " changed"
        : step.write_files                       ? "its files changed"
                                                 : "its drop-ins changed",
        {i});
  } else if (auto unread = AdoptedSinceItsRun(in, i, step)) {
    ask(UnitAction::kRestart, core::RestartReason::kDeclared, std::move(*unread), {i});
    // systemd flags only a file newer than its last load: one copied in
    // with its mtime kept (cp -p, rsync -a) is not, and a restart alone
    // would run the definition it has loaded.
    u.daemon_reload = true;
  } else if (put_back.empty() && !defined_by.empty()) {
    ask(UnitAction::kRestart, core::RestartReason::kDeclared,
        "unit definition " + in.declaration->resources[defined_by[0]].path + " changed",
        defined_by);
  } else if (auto removed = RemovedDefinition(in, r, removals)) {
    ask(UnitAction::kRestart, core::RestartReason::kDeclared,
        "unit definition " + *removed + " removed", {});
  } else if (!restart_deps.empty()) {
    ask(UnitAction::kRestart, core::RestartReason::kRestartOn,
        "restart_on " + in.declaration->resources[restart_deps[0]].id + " changed", restart_deps);
  } else if (auto changed = ChangedSinceItsRun(in, i, steps, u)) {
    ask(UnitAction::kRestart, core::RestartReason::kDeclared,
        "declared running, was " + step.old->unit().state + ": its run began before " + *changed +
            " last changed",
        {i});
  } else if (auto rewritten = RewrittenUnderItsRun(in, i, steps, u)) {
    ask(rewritten->reload ? UnitAction::kReload : UnitAction::kRestart,
        rewritten->reload       ? core::RestartReason::kReloadOn
        : rewritten->definition ? core::RestartReason::kDeclared
                                : core::RestartReason::kRestartOn,
        std::move(rewritten->what), {i});
    u.daemon_reload = u.daemon_reload || rewritten->definition;
  } else if (!reload_deps.empty()) {
    ask(UnitAction::kReload, core::RestartReason::kReloadOn,
        "reload_on " + in.declaration->resources[reload_deps[0]].id + " changed", reload_deps);
  } else if (!put_back.empty()) {
    u.why = std::move(put_back);
    u.daemon_reload = u.daemon_reload || !defined_by.empty();
  } else if (u.daemon_reload && LoadingAgainIsEnough(step, u)) {
    u.why = "systemd loaded " + r.unit().name +
            " before its files last changed (NeedDaemonReload); its unit file is as declared, "
            "under the run the host recorded";
  } else if (u.daemon_reload) {
    // Its unit file changed before this apply and systemd has not loaded it.
    ask(UnitAction::kRestart, core::RestartReason::kDeclared,
        "unit file " + r.unit().name + " is newer than what systemd loaded (NeedDaemonReload)", {});
  }
}

// What a unit declared running is asked for: what the changes ask; and when
// it is not up, a start if it runs no process (the start loads every
// change too), else — a start would do nothing to a running daemon — what
// the changes ask, or a start that only has it looked at twice.
void PlanAction(const PlanInputs& in, size_t i, const std::vector<Step>& steps,
                const std::vector<Removal>& removals, bool up, UnitPlan& u) {
  AskForChanges(in, i, steps, removals, u);
  if (up) return;
  if (Runs(u.status) && u.action.has_value()) {
    // Up, with NRestarts grown since the record: said beside what the
    // changes ask, as a start's outcome says it.
    if (core::UnitUp(u.status)) u.also_seen = WasDown(u.status, steps[i].old);
    return;
  }
  const Step& step = steps[i];
  bool asked = step.changes() || step.want_changed;
  // A change to load, not a want alone (its state or `enabled` declared
  // otherwise), on a unit the plan found not running.
  u.start_loads_changes = !Runs(u.status) && (step.changes() || u.action.has_value());
  u.action = UnitAction::kStart;
  u.reason = asked ? core::RestartReason::kDeclared : core::RestartReason::kWasDead;
  u.why = asked ? "declared running" : WasDown(u.status, step.old);
  // A start accepted while still starting, and never seen up since, that
  // is found failed — or restarted by systemd (Restart=) and on its way up
  // again: it died on the way up, and its new run merges with this start —
  // failed. One found up since is a daemon systemd restarted, as any.
  core::UnitBaseline base = core::BaselineOfRecord(step.old);
  if (!asked && base.starting) {
    const Resource& r = in.declaration->resources[i];
    if (core::FoundFailed(u.status)) {
      u.start_failed = StartFoundFailed(r.unit().name, u.status);
    } else if (u.status.active_state != "active" &&
               u.status.n_restarts > base.n_restarts.value_or(u.status.n_restarts)) {
      u.start_failed = StartDiedOnItsWayUp(r.unit().name, *base.n_restarts, u.status);
    }
  }
}

// An action owed from before and one this apply asks for, as one: a restart
// is all of them; a unit that runs no process is started (which loads
// everything); a running one is reloaded if either asks for it (a start
// would not touch it), else started.
UnitAction Merge(UnitAction owed, std::optional<UnitAction> now, bool runs) {
  if (!now.has_value() || owed == *now) return owed;
  if (owed == UnitAction::kRestart || *now == UnitAction::kRestart) return UnitAction::kRestart;
  if (!runs) return UnitAction::kStart;
  return owed == UnitAction::kReload || *now == UnitAction::kReload ? UnitAction::kReload
                                                                    : UnitAction::kStart;
}

// Whether the unit's whole definition is what the declaration says of it:
// no drop-in systemd loads that is not the resource's own (a vendor's, a
// `file` declared in UNIT.d/), not an instance of a template. Only then
// may the plan say that systemd would find nothing to enable.
bool DefinedHereAlone(const PlanInputs& in, const Resource& r, const core::UnitStatus& s) {
  const std::string& name = r.unit().name;
  if (name.find('@') != std::string::npos) return false;
  for (const std::string& path : s.drop_in_paths) {
    size_t slash = path.rfind('/');
    std::string_view dir = std::string_view(path).substr(0, slash == std::string::npos ? 0 : slash);
    if (slash == std::string::npos || !dir.ends_with("/" + name + ".d") ||
        !r.unit().drop_ins.contains(path.substr(slash + 1))) {
      return false;
    }
  }
  const std::string in_dir = "/" + name + ".d/";
  return std::none_of(
      in.declaration->resources.begin(), in.declaration->resources.end(),
      [&](const Resource& d) { return d.HasFiles() && d.path.find(in_dir) != std::string::npos; });
}

// `enabled`, judged by systemd's own UnitFileState as read before this
// apply wrote anything. A unit file written now is not loaded yet: its
// state is unknown, so `enabled: true` enables it (idempotent) and
// `enabled: false` needs nothing (a new unit file has no links).
void PlanEnablement(const PlanInputs& in, const Resource& r, const RecordEntry* old,
                    const Step& step, UnitPlan& u) {
  if (!r.unit().enabled.has_value()) return;
  if (*r.unit().enabled && r.unit().text.has_value() && !core::UnitFileEnabled(u.status) &&
      !DeclaresInstall(r) && DefinedHereAlone(in, r, u.status)) {
    // What systemd would answer the enable, said by the plan too.
    u.enable_impossible = "cannot enable " + r.unit().name +
                          ": its unit_text has no [Install] section with WantedBy=, "
                          "RequiredBy=, UpheldBy= or Alias=: there is nothing to enable";
    return;
  }
  // Unknown: the unit file is new (a rewritten one keeps its links, and
  // its state as read before the write is the truth).
  bool unknown = u.status.unit_file_state.empty() || u.status.load_state == "not-found";
  if (unknown) {
    if (*r.unit().enabled) u.set_enabled = true;
    return;
  }
  if (*r.unit().enabled && step.write_unit_file && !core::UnitFileEnabled(u.status)) {
    u.set_enabled = true;  // a new [Install] section may make it possible
    u.enabled_drifted = old != nullptr && old->unit().enabled == r.unit().enabled;
    return;
  }
  if (core::UnitFileEnabled(u.status) == *r.unit().enabled) return;
  if (*r.unit().enabled && core::UnitFileCannotBeEnabled(u.status)) {
    u.enable_impossible = r.unit().name + " is " + u.status.unit_file_state +
                          " (no [Install] section): it cannot be enabled";
    return;
  }
  u.set_enabled = *r.unit().enabled;
  u.enabled_drifted = old != nullptr && old->unit().enabled == r.unit().enabled;
}

// Why systemd cannot load a unit declared triggered; empty when it can.
std::string NotLoadable(const Resource& r, const UnitPlan& u) {
  if (core::Loadable(u.status)) return "";
  const std::string& name = r.unit().name;
  if (u.status.load_state == "not-found") {
    return name + " not found: systemd has no unit of that name (LoadState=not-found), so no " +
           "timer, socket or path unit can start it; declare its unit_text, or install it";
  }
  return name + " cannot be loaded (LoadState=" + u.status.load_state +
         "): its trigger would fail to start it; systemd-analyze verify " + name + " says why";
}

// A unit left to its trigger: neither started nor stopped, never restarted
// (that would start a run, or kill one); a changed definition is loaded
// (the daemon-reload) for its next activation. What its restart_on or
// reload_on would ask is said, not done: a daemon its socket started runs
// on what it read.
void LeaveToTheTrigger(const PlanInputs& in, size_t i, const std::vector<Step>& steps,
                       const std::vector<Removal>& removals, UnitPlan& u) {
  AskForChanges(in, i, steps, removals, u);
  bool said = u.action.has_value() && (u.reason == core::RestartReason::kRestartOn ||
                                       u.reason == core::RestartReason::kReloadOn);
  u.why = said ? u.why + (*u.action == UnitAction::kReload ? ": not reloaded" : ": not restarted") +
                     " (left to its trigger: a run in progress keeps what it started with, "
                     "its next activation reads the change)"
               : "";
  u.action.reset();
  u.reason.reset();
  u.causes.clear();
}

// systemd answered for another unit (`other`, the name its alias): the
// host's is as good as new to it until the reload reads the host's file
// (Act judges it then, asked anything or not).
void AsNewToSystemd(const Resource& r, const std::string& other, UnitPlan& u) {
  u.status =
      core::UnitStatus{.load_state = "not-found", .active_state = "inactive", .sub_state = "dead"};
  u.daemon_reload = true;
  u.alias_unjudged = true;
  if (r.unit().enabled == true) {
    u.enable_impossible = "not enabled yet: systemd read " + r.unit().name + " as an alias of " +
                          core::Printable(other) +
                          " before it read the host's file; the next apply enables it once "
                          "that file is read";
  }
}

}  // namespace

namespace {

// The first declared unit other than `unit` that lists it in Triggers=,
// among those `pick` takes (given its declared state and its status).
template <typename Pick>
std::string TriggerOf(const PlanInputs& in, std::string_view unit, Pick pick) {
  for (size_t j = 0; j < in.declaration->resources.size(); ++j) {
    const Resource& t = in.declaration->resources[j];
    if (!t.HasUnit() || t.unit().name == unit) continue;
    const core::Result<core::UnitStatus>* status = in.seen->UnitOf(j);
    if (status == nullptr || !status->has_value() || !pick(t.unit().state, **status)) continue;
    const std::vector<std::string>& triggers = (*status)->triggers;
    if (std::find(triggers.begin(), triggers.end(), unit) != triggers.end()) return t.unit().name;
  }
  return "";
}

}  // namespace

std::string DeclaredTriggerOf(const PlanInputs& in, std::string_view unit) {
  return TriggerOf(in, unit, [](core::UnitState state, const core::UnitStatus&) {
    return state == core::UnitState::kRunning;
  });
}

std::string RunningTriggerNotKept(const PlanInputs& in, std::string_view unit) {
  return TriggerOf(in, unit, [](core::UnitState state, const core::UnitStatus& status) {
    return state != core::UnitState::kRunning && status.Running();
  });
}

namespace {

// A unit declared stopped: stopped when it runs (whatever start or
// restart was owed is moot) — unless a trigger declared running started
// it: that trigger would start it again, at once for a path unit whose
// path is there, and every apply would stop it and say so. Found not
// running, it is stopped as declared until its trigger next fires
// (`triggered` says that better, but a timer's job declared stopped
// between its runs is as declared).
void PlanStop(const PlanInputs& in, const Resource& r, UnitPlan& u) {
  if (!u.failed.empty()) return;
  if (std::string trigger = u.status.Running() ? DeclaredTriggerOf(in, r.unit().name) : "";
      !trigger.empty()) {
    u.failed = r.unit().name + " is started again by " + trigger +
               ", declared running: declare it \"triggered\" to leave it to " + trigger +
               ", or declare " + trigger + " stopped";
    return;
  }
  u.stop = u.status.Running();
  u.stopping = !u.stop && !core::StoppedAsDeclared(u.status);
}

}  // namespace

UnitPlan PlanUnit(const PlanInputs& in, size_t i, const std::vector<Step>& steps,
                  const std::vector<Removal>& removals) {
  const Resource& r = in.declaration->resources[i];
  UnitPlan u;
  u.index = i;
  if (steps[i].failed()) return u;  // the step's failure is the outcome
  auto carried = in.owed->owed.find(r.id);
  const core::Owed* owed = carried != in.owed->owed.end() ? &carried->second : nullptr;
  u.daemon_reload = (owed != nullptr && owed->daemon_reload) || steps[i].write_unit_file ||
                    steps[i].changes_drop_ins() || DefinitionChangesFor(in, r, steps, removals);
  // This apply (or one cut short) changes its definition; not systemd's
  // own NeedDaemonReload, which a unit it cannot load keeps set.
  const bool new_definition = u.daemon_reload;
  const core::Result<core::UnitStatus>* status = in.seen->UnitOf(i);
  if (!in.services || status == nullptr) {
    u.failed = "no service manager: cannot manage " + r.unit().name;
  } else if (!*status) {
    u.failed = status->error().message;
  } else if (AliasOfName(in, i) == AliasView::kUnjudged) {
    AsNewToSystemd(r, (*status)->id, u);
  } else {
    u.status = **status;
    // systemd's own NeedDaemonReload is a cross-check on what the intent says.
    u.daemon_reload |= u.status.need_daemon_reload && r.unit().text.has_value();
    const RecordEntry* old = steps[i].old;
    u.up = r.unit().state == core::UnitState::kRunning &&
           core::UpAsRecorded(u.status, core::BaselineOfRecord(old));
    PlanEnablement(in, r, old, steps[i], u);
  }
  if (r.unit().state == core::UnitState::kStopped) {
    PlanStop(in, r, u);
    return u;
  }
  if (r.unit().state == core::UnitState::kTriggered) {
    // Nothing this apply writes would make systemd load it: no trigger can
    // start it either, and "left to its trigger" would read healthy.
    // systemd's NeedDaemonReload set alone: this apply's reload may mend
    // it, and the unit is judged after it (act.cc).
    if (u.failed.empty() && !new_definition && !steps[i].changes() &&
        !u.status.need_daemon_reload) {
      u.failed = NotLoadable(r, u);
    }
    if (!u.failed.empty()) return u;
    LeaveToTheTrigger(in, i, steps, removals, u);
    return u;
  }
  // A unit that cannot be read is owed what this apply's writes ask of it.
  PlanAction(in, i, steps, removals, /*up=*/!u.failed.empty() || u.up, u);
  if (owed != nullptr && owed->action.has_value()) {
    // A reload owed to a unit that no longer reloads on anything (its
    // dependency moved to restart_on, say, after systemd refused the
    // reload): the change it was for is now paid with a restart.
    UnitAction carried = *owed->action == UnitAction::kReload && r.unit().reload_on.empty()
                             ? UnitAction::kRestart
                             : *owed->action;
    UnitAction merged = Merge(carried, u.action, u.failed.empty() && Runs(u.status));
    std::optional<core::RestartReason> own = u.reason;
    // The words are this apply's when its own writes ask for the action.
    if (!u.action.has_value() || *u.action != merged || u.causes.empty()) {
      u.reason = owed->reason;
      u.why = owed->why;
      u.causes.clear();
    }
    u.action = merged;
    // A reload's reason never counts a start or restart: the change it was
    // for is paid by the restart (restart_on), or by the start of a unit
    // found down (was_dead).
    if (merged != UnitAction::kReload && u.reason == core::RestartReason::kReloadOn) {
      u.reason = own.has_value() && *own != core::RestartReason::kReloadOn ? *own
                 : merged == UnitAction::kStart ? core::RestartReason::kWasDead
                                                : core::RestartReason::kRestartOn;
    }
    u.owed_since = owed->since;
    // A start owed since one that failed, and not seen through yet: the
    // unit is on its way up again, as it was before it failed.
    if (u.start_failed.empty() && carried == UnitAction::kStart &&
        core::BaselineOfRecord(steps[i].old).starting && u.status.active_state == "activating") {
      u.start_failed = StartNotSeenThrough(r.unit().name, u.status);
    }
  }
  return u;
}

std::optional<core::Owed> OwedPastItsFailure(const PlanInputs& in, size_t i,
                                             const std::vector<Step>& steps,
                                             const std::vector<Removal>& removals) {
  const Resource& r = in.declaration->resources[i];
  std::optional<core::Owed> owed;
  if (auto carried = in.owed->owed.find(r.id); carried != in.owed->owed.end()) {
    owed = carried->second;
  }
  if (r.unit().state != core::UnitState::kRunning) return owed;
  UnitPlan asked;
  asked.daemon_reload = DefinitionChangesFor(in, r, steps, removals);
  AskForChanges(in, i, steps, removals, asked);
  if (!asked.action.has_value() && !asked.daemon_reload) return owed;
  if (!owed.has_value()) {
    return core::Owed{asked.action, asked.daemon_reload, asked.reason, asked.why,
                      in.declaration->generation};
  }
  owed->daemon_reload |= asked.daemon_reload;
  if (!owed->action.has_value()) {
    owed->action = asked.action;
    owed->reason = asked.reason;
    owed->why = asked.why;
  } else if (asked.action.has_value()) {
    owed->action = Merge(*owed->action, asked.action, /*runs=*/true);
  }
  return owed;
}

std::optional<std::string> AliasWords(std::string_view unit, const core::UnitStatus& status,
                                      bool after_reload) {
  if (status.id.empty() || status.id == unit) return std::nullopt;
  std::string name(unit);
  std::string from =
      status.fragment_path.empty() ? "" : ", from " + core::Printable(status.fragment_path);
  // systemd's view holds until its next daemon-reload, the link gone or not.
  std::string mend = "(remove the link that makes " + name +
                     " an alias and run `systemctl daemon-reload`, or declare " +
                     core::Printable(status.id) + " itself)";
  if (after_reload) {
    return "shadowed: after the daemon-reload systemd reads " + name + " as an alias of " +
           core::Printable(status.id) + from + ", not the host's file " + mend;
  }
  return "shadowed: systemd reads " + name + " as an alias of " + core::Printable(status.id) +
         from + ": the unit file the host writes would not run " + mend;
}

AliasView AliasOfName(const PlanInputs& in, size_t i) {
  const core::Resource& r = in.declaration->resources[i];
  const core::Result<core::UnitStatus>* status = in.seen->UnitOf(i);
  if (!r.unit().text.has_value() || status == nullptr || !*status ||
      !AliasWords(r.unit().name, **status, false)) {
    return AliasView::kNone;
  }
  const UnitFileSeen& file = in.seen->UnitFileOf(i);
  auto owed = in.owed->owed.find(r.id);
  bool in_place =
      (file.found == Found::kAsRecorded || file.found == Found::kAsDeclared) && !file.missing;
  bool read_since = !(*status)->need_daemon_reload &&
                    (owed == in.owed->owed.end() || !owed->second.daemon_reload);
  return in_place && read_since ? AliasView::kJudged : AliasView::kUnjudged;
}

}  // namespace mesh::reconcile
