#include "host/reconcile/plan_run_read.h"

#include <chrono>
#include <functional>

#include "host/core/want.h"

namespace mesh::reconcile {
namespace {

bool RunsAProcess(const core::UnitStatus& s) {
  return s.Running() && !core::AwaitingAutoRestart(s);
}

// Whether a file found as `now` (its fingerprint) changed after the run
// that began at `started` (its ctime later).
bool AfterRun(std::chrono::microseconds started, const std::string& now) {
  auto stamp = core::ParseFingerprint(now);
  return stamp.has_value() && !core::RunBeganSince(started, stamp->ctime_ns);
}

// What last read a unit's files, when it is not what the host recorded:
// a run the host did not start (everything of the unit), a reload it did
// not ask for (what the daemon reads), or a reload systemd may have
// forgotten at a daemon-reload during the run. `since`: when it began,
// zero for "any change since the host recorded it".
struct UnknownRead {
  bool run = false;
  std::chrono::microseconds since{0};
  std::string_view words;
};
std::optional<UnknownRead> LastReadUnknown(const core::UnitStatus& s,
                                           const core::UnitRecord& recorded) {
  if (s.started_realtime.count() != recorded.run_began_us) {
    return UnknownRead{true, s.started_realtime,
                       " written again on the machine after its run began, a run the host did "
                       "not start: what it read is not known"};
  }
  if (!RunsAProcess(s)) return std::nullopt;
  if (s.reloaded_realtime.count() != 0 && s.reloaded_realtime.count() != recorded.reload_began_us) {
    return UnknownRead{false, s.reloaded_realtime,
                       " written again on the machine after its last reload began, a reload the "
                       "host did not ask for: what it read is not known"};
  }
  if (core::ReloadsForgotten(s)) {
    return UnknownRead{false, std::chrono::microseconds{0},
                       " written again on the machine since the host recorded it, and systemd "
                       "forgets reloads at a daemon-reload, one of which came during its run: "
                       "what it read is not known"};
  }
  return std::nullopt;
}

}  // namespace

bool ContentMoved(std::string_view recorded, const std::string& now) {
  auto was = core::ParseFingerprint(recorded);
  auto is = core::ParseFingerprint(now);
  return !was.has_value() || !is.has_value() || was->size != is->size ||
         was->mtime_ns != is->mtime_ns;
}

std::optional<std::string> AdoptedSinceItsRun(const PlanInputs& in, size_t i, const Step& step) {
  const core::Result<core::UnitStatus>* status = in.seen->UnitOf(i);
  for (const Step::AdoptedPart& part : step.adopted_definitions) {
    if (status == nullptr || !status->has_value() ||
        !core::RunBeganSince((*status)->started_realtime, part.changed_ns)) {
      return part.what + " found as declared, changed after its run began";
    }
    if (core::RunReadDefinition(**status, part.changed_ns)) continue;
    const auto loaded = (*status)->units_loaded_realtime;
    if (loaded.count() == 0) {
      return part.what + " found as declared; when systemd last loaded unit files is not known";
    }
    return part.what +
           (loaded > (*status)->started_realtime
                ? " found as declared, systemd last loaded unit files after its run began: what it "
                  "runs is not known"
                : " found as declared, not known to be loaded by systemd since it changed");
  }
  return std::nullopt;
}

std::optional<std::string> ChangedSinceItsRun(const PlanInputs& in, size_t i,
                                              const std::vector<Step>& steps, const UnitPlan& u) {
  const core::Resource& r = in.declaration->resources[i];
  const core::RecordEntry* old = steps[i].old;
  if (r.unit().state != core::UnitState::kRunning || old == nullptr ||
      (old->unit().state != "triggered" && old->unit().state != "stopped") ||
      !RunsAProcess(u.status)) {
    return std::nullopt;
  }
  auto after_run = [&](const std::string& fingerprint) {
    return AfterRun(u.status.started_realtime, fingerprint);
  };
  const UnitFileSeen& own = in.seen->UnitFileOf(i);
  if (r.unit().text.has_value() && after_run(own.fingerprint)) return "unit file " + r.unit().name;
  for (const auto& [name, d] : own.drop_ins) {
    if (r.unit().drop_ins.contains(name) && after_run(d.fingerprint)) {
      return "drop-in " + r.unit().name + ".d/" + name;
    }
  }
  // A reload_on file too: the reload it was owed was left to the trigger,
  // and a restart is all a reload is.
  for (const auto* list : {&r.unit().restart_on, &r.unit().reload_on}) {
    for (const std::string& ref : *list) {
      size_t j = in.declaration->index.find(ref)->second;
      const core::Resource& dep = in.declaration->resources[j];
      if (dep.IsFile() && j < in.seen->files.size() && after_run(in.seen->files[j].fingerprint)) {
        return dep.path;
      }
    }
  }
  for (size_t j = 0; j < steps.size() && j < in.seen->files.size(); ++j) {
    if (steps[j].unit_definition &&
        ReadAsDefinitionOf(steps[j].defines, in.declaration->resources[j].path, r.unit().name,
                           false) &&
        after_run(in.seen->files[j].fingerprint)) {
      return in.declaration->resources[j].path;
    }
  }
  return std::nullopt;
}

namespace {

// Which part of unit i's definition, found as declared, changed since
// the host recorded it, as `moved` judges: its unit file, a drop-in, or a
// unit definition declared as a file (its template, a drop-in).
std::optional<std::string> DefinitionRewritten(
    const PlanInputs& in, size_t i, const std::vector<Step>& steps,
    const std::function<bool(std::string_view, const std::string&)>& moved) {
  const core::Resource& r = in.declaration->resources[i];
  const core::RecordEntry* old = steps[i].old;
  const UnitFileSeen& own = in.seen->UnitFileOf(i);
  if (r.unit().text.has_value() && !steps[i].write_unit_file &&
      moved(old->unit().file_fingerprint, own.fingerprint)) {
    return "unit file " + r.unit().name;
  }
  for (const auto& [name, d] : own.drop_ins) {
    auto recorded = old->unit().drop_ins.find(name);
    if (r.unit().drop_ins.contains(name) && recorded != old->unit().drop_ins.end() &&
        moved(core::DropInFingerprint(recorded->second), d.fingerprint)) {
      return "drop-in " + r.unit().name + ".d/" + name;
    }
  }
  for (size_t j = 0; j < steps.size() && j < in.seen->files.size(); ++j) {
    const core::RecordEntry* was = steps[j].old;
    const std::string& path = in.declaration->resources[j].path;
    if (steps[j].unit_definition && !steps[j].changes() && was != nullptr &&
        was->written.size() == 1 &&
        ReadAsDefinitionOf(steps[j].defines, path, r.unit().name, false) &&
        moved(was->written[0].fingerprint, in.seen->files[j].fingerprint)) {
      return "unit definition " + path;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<Rewritten> RewrittenUnderItsRun(const PlanInputs& in, size_t i,
                                              const std::vector<Step>& steps, const UnitPlan& u) {
  const core::Resource& r = in.declaration->resources[i];
  const core::RecordEntry* old = steps[i].old;
  // Only against a run the host recorded (an older record says none): a
  // daemon's, or a oneshot's last (a job run by hand).
  if (r.unit().state != core::UnitState::kRunning || old == nullptr ||
      old->unit().run_began_us == 0 || !(RunsAProcess(u.status) || u.status.type == "oneshot") ||
      u.status.started_realtime.count() == 0) {
    return std::nullopt;
  }
  std::optional<UnknownRead> last = LastReadUnknown(u.status, old->unit());
  if (!last.has_value()) return std::nullopt;
  const bool run_foreign = last->run;
  const bool reloads_forgotten = last->since.count() == 0;
  const std::chrono::microseconds since = last->since;
  const std::string_view unknown = last->words;
  // Changed since the host recorded it, after the run (or reload) began:
  // its ctime, which a copy that keeps the old mtime (cp -p, a mv of a
  // backup) moves too. Under a run the host did not start, a chmod alone
  // is enough.
  auto moved = [&](std::string_view recorded, const std::string& now) {
    auto was = core::ParseFingerprint(recorded);
    auto is = core::ParseFingerprint(now);
    return was.has_value() && is.has_value() && was->ctime_ns != is->ctime_ns &&
           AfterRun(since, now);
  };
  auto rewritten = [&](std::string what, bool reload) {
    return Rewritten{std::move(what) + std::string(unknown), reload};
  };
  // The unit's definition only under a run the host did not start: a
  // reload runs what systemd loaded, which NeedDaemonReload tells of
  // (LoadingAgainIsEnough).
  if (auto what = run_foreign ? DefinitionRewritten(in, i, steps, moved) : std::nullopt) {
    Rewritten out = rewritten(std::move(*what), false);
    out.definition = true;
    return out;
  }
  for (const auto* list : {&r.unit().restart_on, &r.unit().reload_on}) {
    // A forgotten reload only may have read a file: reloaded onto it, a
    // restart_on file restarts nothing on so little. Under a reload by
    // hand, one only whose bytes may have moved (its size or mtime): a
    // daily `systemctl reload` (logrotate's) and a chmod or hard link
    // since (a backup's) would restart it every day.
    if (reloads_forgotten && list == &r.unit().restart_on) continue;
    const bool bytes_too = !run_foreign && list == &r.unit().restart_on;
    for (const std::string& ref : *list) {
      size_t j = in.declaration->index.find(ref)->second;
      const core::Resource& dep = in.declaration->resources[j];
      const core::RecordEntry* was = steps[j].old;
      if (!dep.IsFile() || j >= in.seen->files.size() || steps[j].changes() || was == nullptr ||
          was->written.size() != 1 || in.seen->files[j].found != Found::kAsDeclared) {
        continue;
      }
      if (moved(was->written[0].fingerprint, in.seen->files[j].fingerprint) &&
          (!bytes_too ||
           ContentMoved(was->written[0].fingerprint, in.seen->files[j].fingerprint))) {
        bool reload = list == &r.unit().reload_on;
        return rewritten(std::string(reload ? "reload_on " : "restart_on ") + dep.path, reload);
      }
    }
  }
  return std::nullopt;
}

bool LoadingAgainIsEnough(const Step& step, const UnitPlan& u) {
  const core::RecordEntry* old = step.old;
  // A reload the host did not ask for ran what systemd had loaded then.
  // (One systemd forgot at a daemon-reload is not seen: any daemon-reload
  // since the run began, the host's own among them, would count.)
  const int64_t reloaded = u.status.reloaded_realtime.count();
  return u.up && old != nullptr && !step.want_changed && old->unit().run_began_us != 0 &&
         u.status.started_realtime.count() == old->unit().run_began_us &&
         (reloaded == 0 || reloaded == old->unit().reload_began_us);
}

}  // namespace mesh::reconcile
