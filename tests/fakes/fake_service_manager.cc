#include "tests/fakes/fake_service_manager.h"

#include <algorithm>

namespace mesh::fakes {

void FakeServiceManager::AddUnit(const std::string& name, UnitScript script) {
  Unit u;
  u.script = script;
  u.invocation = next_invocation_++;
  if (script.running_initially) {
    // Up and healthy since before this test; the scripted behaviour applies
    // from the host's first start or restart on.
    u.started = true;
    u.started_at = clock_.elapsed();
    u.started_real = RealNow();
    u.script.behavior = Behavior::kHealthy;
    pending_behavior_[name] = script.behavior;
  }
  units_[name] = u;
}

void FakeServiceManager::Kill(const std::string& name) {
  units_[name].killed = true;
  units_[name].held_running = false;
}

void FakeServiceManager::RestartedByOther(const std::string& name) {
  Unit& u = units_[name];
  u.started = true;
  u.stopped = false;
  u.killed = false;
  u.started_at = clock_.elapsed();
  u.started_real = RealNow();
  u.reloaded_real = {};
  u.invocation = next_invocation_++;
  u.base_restarts = 0;  // as systemd's flush_n_restarts at a start
}

core::Status FakeServiceManager::ResetFailed(const std::string& unit) {
  if (kill != nullptr && !kill->Alive()) return core::Fail("killed");
  if (bus_gone) return core::Fail("ResetFailedUnit: Transport endpoint is not connected");
  reset_failed_.push_back(unit);
  return core::Ok();
}

core::Status FakeServiceManager::ReloadDaemon() {
  if (kill != nullptr && !kill->Alive()) return core::Fail("killed");
  if (bus_gone) return core::Fail("Reload: Transport endpoint is not connected");
  if (!refuse_daemon_reload.empty()) {
    return core::Fail("Reload: org.freedesktop.DBus.Error.Failed: " + refuse_daemon_reload);
  }
  if (on_daemon_reload) on_daemon_reload();
  ++daemon_reloads_;
  units_loaded_ = RealNow();
  links_unloaded_ = false;
  // As systemd: every ExecReload= status goes with it.
  for (auto& [name, u] : units_) {
    u.need_daemon_reload = false;
    u.reloaded_real = {};
  }
  return core::Ok();
}

core::Status FakeServiceManager::SetUnitFileEnabled(const std::string& unit, bool enabled) {
  if (kill != nullptr && !kill->Alive()) return core::Fail("killed");
  if (on_set_enabled) on_set_enabled(unit, enabled);
  if (!refuse_unit_files.empty()) return core::Fail(refuse_unit_files);
  if (bus_gone) return core::Fail("EnableUnitFiles: Transport endpoint is not connected");
  auto it = units_.find(unit);
  if (it == units_.end()) {
    return core::Fail("EnableUnitFiles " + unit +
                      ": org.freedesktop.systemd1.NoSuchUnit: Unit file " + unit +
                      " does not exist.");
  }
  std::string& state = it->second.script.unit_file_state;
  if (enabled && state == "static") {
    return core::Fail(unit +
                      " has no [Install] section (WantedBy=, RequiredBy=, ...): there is "
                      "nothing to enable");
  }
  if (state != "static") state = enabled ? "enabled" : "disabled";
  ++enablements_;
  links_unloaded_ = true;
  return core::Ok();
}

core::Result<std::string> FakeServiceManager::Enqueue(const std::string& unit,
                                                      ports::JobKind kind) {
  if (kill != nullptr && !kill->Alive()) return core::Fail("killed");
  if (bus_gone) return core::Fail("RestartUnit " + unit + ": Transport endpoint is not connected");
  if (on_enqueue) on_enqueue(unit);
  calls_.push_back({unit, kind, clock_.elapsed()});
  auto it = units_.find(unit);
  if (it == units_.end()) {
    return core::Fail("StartUnit " + unit + ": org.freedesktop.systemd1.NoSuchUnit: Unit " + unit +
                      " not found.");
  }
  Unit& u = it->second;
  if (u.bad_setting && kind != ports::JobKind::kStop) {
    return core::Fail("StartUnit " + unit + ": org.freedesktop.systemd1.BadUnitSetting: Unit " +
                      unit + " has a bad unit file setting.");
  }
  if (u.masked && kind != ports::JobKind::kStop) {
    return core::Fail("StartUnit " + unit + ": org.freedesktop.systemd1.UnitMasked: Unit " + unit +
                      " is masked.");
  }
  std::string id = "/org/freedesktop/systemd1/job/" + std::to_string(next_job_++);
  auto now = clock_.elapsed();
  if (kind == ports::JobKind::kStop && !refuse_stop.empty()) {
    return core::Fail("StopUnit " + unit + ": " + refuse_stop);
  }
  if (kind == ports::JobKind::kStop) {
    if (u.started && !u.stopped && !u.killed && u.script.stop_delay.count() > 0 &&
        now >= u.stopping_until) {
      u.stopping_until = now + u.script.stop_delay;
      u.stopping_invocation = u.invocation;
    }
    u.stopped = true;
    u.started = false;
    u.held_running = false;
    jobs_[id] = {unit, now, "done"};
    return id;
  }
  if (kind == ports::JobKind::kReload && no_reload_.contains(unit)) {
    return core::Fail("ReloadUnit " + unit +
                      ": org.freedesktop.systemd1.JobTypeNotApplicable: Job type reload is not "
                      "applicable for unit " +
                      unit + ".");
  }
  // As systemd: a start of a unit that runs is a job done at once that
  // changes nothing (no new invocation, nothing re-read).
  if (kind == ports::JobKind::kStart) {
    auto before = ReadUnit(unit);
    if (before && before->Running()) {
      jobs_[id] = {unit, now, "done"};
      return id;
    }
  }
  if (auto p = pending_behavior_.find(unit); p != pending_behavior_.end()) {
    u.script.behavior = p->second;
    pending_behavior_.erase(p);
  }
  if (behavior_on_start) {
    if (auto b = behavior_on_start(unit)) u.script.behavior = *b;
  }
  bool was_running = u.started && !u.stopped && !u.killed;
  auto start = now;
  if (kind == ports::JobKind::kRestart && was_running &&
      (u.script.stop_delay.count() > 0 || u.script.start_gap.count() > 0)) {
    u.stopping_until = now + u.script.stop_delay;
    u.stopping_invocation = u.invocation;
    u.dead_until = u.stopping_until + u.script.start_gap;
    start = u.dead_until;
  }
  u.held_running = kind == ports::JobKind::kRestart && was_running &&
                   u.script.behavior == Behavior::kBlockedByDependency;
  if (u.held_running) {
    jobs_[id] = Job{unit, now + u.script.delay, "dependency"};
    return id;
  }
  // As systemd: a socket whose service runs is not started again
  // ("already active, refusing"); a restart has stopped it by then.
  if (kind != ports::JobKind::kReload && unit.ends_with(".socket") && ServiceRuns(u.triggers)) {
    u.stopped = true;
    u.started = false;
    jobs_[id] = Job{unit, now, "failed"};
    return id;
  }
  if (kind != ports::JobKind::kReload || !u.started) {
    u.started = true;
    u.stopped = false;
    u.killed = false;
    u.started_at = start;
    u.started_real = RealNow();
    u.reloaded_real = {};
    u.invocation = next_invocation_++;
    u.base_restarts = 0;  // as systemd's flush_n_restarts at a start
  } else {
    u.reloaded_real = RealNow();
  }
  Job job{unit, start, "done"};
  switch (u.script.behavior) {
    case Behavior::kSlowStart:
    case Behavior::kSlowOneshot:
      job.done_at = start + u.script.delay;
      break;
    case Behavior::kJobFails:
      job.result = "failed";
      break;
    case Behavior::kNeverReady:
      job.done_at = start + u.script.delay;
      job.result = "failed";
      break;
    case Behavior::kBlockedByDependency:
      job.done_at = start + u.script.delay;
      job.result = "dependency";
      break;
    default:
      break;
  }
  jobs_[id] = job;
  if (on_load) on_load(unit);
  return id;
}

core::Result<std::map<std::string, std::string>> FakeServiceManager::WaitForJobs(
    const std::vector<std::string>& ids, std::chrono::nanoseconds timeout) {
  if (bus_gone || lose_job_waits) {
    return core::Fail("waiting for jobs: the bus connection was lost (fake)");
  }
  // As systemd's JobRemoved through the adapter's ledger: each result is
  // handed over once; a job asked about again is not known any more.
  auto now = clock_.elapsed();
  auto last = now;
  for (const std::string& id : ids) {
    if (!jobs_[id].handed_over) last = std::max(last, jobs_[id].done_at);
  }
  clock_.Advance(std::min(last, now + timeout) - now);
  std::map<std::string, std::string> done;
  for (const std::string& id : ids) {
    Job& job = jobs_[id];
    if (job.handed_over || job.done_at > clock_.elapsed()) continue;
    done[id] = job.result;
    job.handed_over = true;
  }
  return done;
}

core::Result<core::UnitStatus> FakeServiceManager::ReadUnit(const std::string& unit) {
  if (bus_gone) return core::Fail("LoadUnit " + unit + ": Transport endpoint is not connected");
  if (failing_reads > 0 || unreadable.contains(unit)) {
    if (failing_reads > 0) --failing_reads;
    return core::Fail("GetAll " + unit + ": Connection reset by peer");
  }
  core::UnitStatus s;
  s.units_loaded_realtime =
      std::chrono::duration_cast<std::chrono::microseconds>(units_loaded_.time_since_epoch());
  auto it = units_.find(unit);
  if (it == units_.end()) {
    s.load_state = "not-found";
    s.active_state = "inactive";
    s.sub_state = "dead";
    return s;
  }
  const Unit& u = it->second;
  s.load_state = u.masked ? "masked" : u.bad_setting ? "bad-setting" : "loaded";
  s.type = u.script.behavior == Behavior::kOneshot || u.script.behavior == Behavior::kSlowOneshot
               ? "oneshot"
               : "simple";
  s.result = "success";
  s.invocation_id = "inv-" + std::to_string(u.invocation);
  s.n_restarts = u.base_restarts;
  s.need_daemon_reload = u.need_daemon_reload;
  s.timeout_stop = u.script.timeout_stop;
  s.exec_stop = u.script.exec_stop;
  s.exec_reload = no_reload_.contains(unit) ? 0 : 1;
  s.kill_mode = u.script.kill_mode;
  s.unit_file_state = u.masked ? "masked" : u.script.unit_file_state;
  s.triggers = u.triggers;
  s.id = u.id.empty() ? unit : u.id;
  s.fragment_path = u.fragment_path;
  s.drop_in_paths = u.drop_in_paths;
  if (clock_.elapsed() < u.stopping_until) {
    s.active_state = "deactivating";
    s.sub_state = "stop-sigterm";
    s.invocation_id = "inv-" + std::to_string(u.stopping_invocation);
    return s;
  }
  if (clock_.elapsed() < u.dead_until) {
    s.active_state = "inactive";
    s.sub_state = "dead";
    s.invocation_id = "inv-" + std::to_string(u.stopping_invocation);
    return s;
  }
  auto since = clock_.elapsed() - u.started_at;
  if (u.started && !u.stopped) {
    s.started_realtime =
        std::chrono::duration_cast<std::chrono::microseconds>(u.started_real.time_since_epoch());
    s.reloaded_realtime =
        std::chrono::duration_cast<std::chrono::microseconds>(u.reloaded_real.time_since_epoch());
  }
  auto set = [&](const char* active, const char* sub) {
    s.active_state = active;
    s.sub_state = sub;
  };
  if (u.held_running) {
    set("active", "running");
    return s;
  }
  if (!u.started || u.stopped) {
    set("inactive", "dead");
    s.invocation_id.clear();
    return s;
  }
  if (u.killed) {
    set("failed", "failed");
    s.result = "signal";
    return s;
  }
  switch (u.script.behavior) {
    case Behavior::kHealthy:
      set("active", "running");
      break;
    case Behavior::kDiesAfter:
      if (since < u.script.delay) {
        set("active", "running");
      } else {
        set("failed", "failed");
        s.result = "exit-code";
      }
      break;
    case Behavior::kCrashLoop: {
      // Restart=always: reads active at every look, but dies every period.
      auto n = static_cast<uint32_t>(since / u.script.delay);
      set("active", "running");
      s.n_restarts = u.base_restarts + n;
      s.invocation_id = "inv-" + std::to_string(u.invocation) + "." + std::to_string(n);
      break;
    }
    case Behavior::kSlowStart:
      if (since < u.script.delay) {
        set("activating", "start");
      } else if (u.script.dies_after_ready > std::chrono::nanoseconds(0) &&
                 since >= u.script.delay + u.script.dies_after_ready) {
        set("failed", "failed");
        s.result = "exit-code";
      } else {
        set("active", "running");
        s.in_state_for = since - u.script.delay;
      }
      break;
    case Behavior::kNeverReady:
      if (since < u.script.delay) {
        set("activating", "start");
      } else {
        set("failed", "failed");
        s.result = "timeout";
        s.in_state_for = since - u.script.delay;
      }
      break;
    case Behavior::kOneshot:
      set("inactive", "dead");
      break;
    case Behavior::kSlowOneshot:
      if (since < u.script.delay) {
        set("activating", "start");
      } else {
        set("inactive", "dead");
      }
      break;
    case Behavior::kJobFails:
      set("failed", "failed");
      s.result = "exit-code";
      break;
    case Behavior::kBlockedByDependency:
      set("inactive", "dead");
      s.invocation_id.clear();
      break;
  }
  return s;
}

bool FakeServiceManager::ServiceRuns(const std::vector<std::string>& triggers) {
  return std::any_of(triggers.begin(), triggers.end(), [&](const std::string& t) {
    auto seen = ReadUnit(t);
    return seen && seen->Running();
  });
}

int FakeServiceManager::StartsOf(const std::string& unit) const {
  return static_cast<int>(std::count_if(calls_.begin(), calls_.end(), [&](const Call& c) {
    return c.unit == unit &&
           (c.kind == ports::JobKind::kStart || c.kind == ports::JobKind::kRestart);
  }));
}

int FakeServiceManager::StopsOf(const std::string& unit) const {
  return static_cast<int>(std::count_if(calls_.begin(), calls_.end(), [&](const Call& c) {
    return c.unit == unit && c.kind == ports::JobKind::kStop;
  }));
}

int FakeServiceManager::ReloadsOf(const std::string& unit) const {
  return static_cast<int>(std::count_if(calls_.begin(), calls_.end(), [&](const Call& c) {
    return c.unit == unit && c.kind == ports::JobKind::kReload;
  }));
}

}  // namespace mesh::fakes
