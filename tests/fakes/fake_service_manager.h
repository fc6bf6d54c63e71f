// FakeServiceManager: answers as systemd does, on a FakeClock.
//
// Each unit has a scripted behaviour after the host starts or restarts it
// (healthy, dies after a delay, crash-loops under Restart=always, slow to
// become ready, oneshot, job fails). States are computed from the fake time
// since the request, so the two looks see what a real systemd would show at
// those moments: "active" right after a restart, "failed" 221 ms later.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "host/ports/service_manager.h"
#include "tests/fakes/fake_clock.h"
#include "tests/fakes/kill_switch.h"

namespace mesh::fakes {

class FakeServiceManager : public ports::ServiceManager {
 public:
  enum class Behavior {
    kHealthy,
    kDiesAfter,
    kCrashLoop,
    kSlowStart,
    kOneshot,
    kSlowOneshot,  // runs for `delay` (activating), then finishes well
    kJobFails,
    // Type=notify that never says ready: activating for `delay`, then
    // failed (Result=timeout), its start job failed.
    kNeverReady,
    // Requires= and After= a unit that never comes up: the start job
    // waits `delay` while the unit stays inactive (dead), then ends
    // "dependency"; the unit never ran.
    kBlockedByDependency,
  };

  struct UnitScript {
    Behavior behavior = Behavior::kHealthy;
    std::chrono::nanoseconds delay{0};  // die after / restart period / ready after
    bool running_initially = false;
    // A restart (or a stop) first stops the running daemon, which takes
    // this long (deactivating, stop-sigterm, under its old InvocationID);
    // the behaviour then applies from the new start.
    std::chrono::nanoseconds stop_delay{0};
    std::chrono::nanoseconds timeout_stop = std::chrono::seconds(90);
    // systemd's UnitFileState until the host enables or disables it;
    // "static": no [Install] section, it cannot be enabled.
    std::string unit_file_state = "disabled";
    // A restart's turn from its stop to its start: systemd turns the
    // restart job into a start job once the stop is done, and the unit
    // reads inactive (dead), under the run it stopped, with the job still
    // pending, until the start runs (a loaded machine stretches it).
    std::chrono::nanoseconds start_gap{0};
    // Its ExecStop= commands and KillMode= (empty: systemd's default).
    uint32_t exec_stop = 0;
    std::string kill_mode;
    // kSlowStart: once ready, dies this long after (a Type=notify daemon
    // that says ready, then refuses its config); zero: it stays up.
    std::chrono::nanoseconds dies_after_ready{0};
  };

  struct Call {
    std::string unit;
    ports::JobKind kind;
    std::chrono::nanoseconds at;
  };

  explicit FakeServiceManager(FakeClock& clock) : clock_(clock) {}

  void AddUnit(const std::string& name, UnitScript script);
  // Kills a running unit now (as SIGKILL would), leaving it failed.
  void Kill(const std::string& name);
  // The unit has no ExecReload: ReloadUnit is refused as systemd refuses it.
  void RefuseReload(const std::string& name) { no_reload_.insert(name); }
  // systemd restarted the unit on its own `n` more times (Restart=): as
  // systemd gives each run, the last one has an InvocationID of its own.
  void RestartedBySystemd(const std::string& name, uint32_t n) {
    units_[name].base_restarts += n;
    units_[name].invocation = next_invocation_++;
  }
  // Masked as `systemctl mask` and a daemon-reload leave it: it keeps
  // running, and systemd refuses to start, restart or reload it.
  void Mask(const std::string& name, bool masked = true) { units_[name].masked = masked; }
  // The units it starts (systemd's Triggers): a socket's service.
  void SetTriggers(const std::string& name, std::vector<std::string> triggers) {
    units_[name].triggers = std::move(triggers);
  }
  // Units whose every read fails (the bus drops the answer), until erased.
  std::set<std::string> unreadable;
  // The unit file systemd says it loaded the unit from (FragmentPath).
  void SetFragmentPath(const std::string& name, std::string path) {
    units_[name].fragment_path = std::move(path);
  }
  // `name` an alias of unit `id`, loaded from `fragment_path`: read, it
  // says so (Id, FragmentPath).
  void SetAliasOf(const std::string& name, std::string id, std::string fragment_path) {
    units_[name].id = std::move(id);
    units_[name].fragment_path = std::move(fragment_path);
  }
  // The drop-ins systemd says it loaded (DropInPaths).
  void SetDropInPaths(const std::string& name, std::vector<std::string> paths) {
    units_[name].drop_in_paths = std::move(paths);
  }
  // A unit file systemd will not load (LoadState bad-setting): every job but
  // a stop is refused with BadUnitSetting, as systemd refuses it.
  void BadSetting(const std::string& name, bool bad = true) { units_[name].bad_setting = bad; }
  // Its unit file changed on disk since the last daemon-reload.
  void SetNeedDaemonReload(const std::string& name) { units_[name].need_daemon_reload = true; }
  // Someone else restarted the unit now (an operator's `systemctl
  // restart`, or the job of an apply that was killed): it runs under a new
  // InvocationID.
  void RestartedByOther(const std::string& name);
  // Someone else reloaded the unit now (an operator's `systemctl reload`):
  // its run goes on, and its last reload began now.
  void ReloadedByOther(const std::string& name) { units_[name].reloaded_real = RealNow(); }
  // Its last reload began `ago` earlier than the fake says.
  void ReloadedSince(const std::string& name, std::chrono::seconds ago) {
    units_[name].reloaded_real -= ago;
  }
  // Its run began `ago` earlier than the fake says: files written since
  // are newer than it, whatever the file system's clock granularity.
  void RanSince(const std::string& name, std::chrono::seconds ago) {
    units_[name].started_real -= ago;
  }
  // Called at each daemon-reload, before it is done.
  std::function<void()> on_daemon_reload;
  // Called with the unit of each job asked for, before systemd takes it.
  std::function<void(const std::string& unit)> on_enqueue;
  // Called with the units of each ReadUnits, before they are read.
  std::function<void(const std::vector<std::string>& units)> on_read_units;
  // Called at each enable or disable of a unit's files, before it is done.
  std::function<void(const std::string& unit, bool enabled)> on_set_enabled;
  // The next this many reads of a unit fail as a lost connection does;
  // job requests still go through (sd-bus connects anew).
  int failing_reads = 0;

  core::Status ReloadDaemon() override;
  core::Status SetUnitFileEnabled(const std::string& unit, bool enabled) override;
  // An operator's `systemctl enable` or `disable`.
  void SetUnitFileState(const std::string& unit, std::string state) {
    units_[unit].script.unit_file_state = std::move(state);
  }
  int enablements() const { return enablements_; }
  // Kept, in order, for the test to read: the fake's units keep their
  // state (none is read again once the host dropped it).
  core::Status ResetFailed(const std::string& unit) override;
  const std::vector<std::string>& reset_failed() const { return reset_failed_; }
  // systemd's unit search path, as a test sets it (none by default), and
  // why reading it fails, when it does.
  std::vector<std::string> search_path;
  std::string refuse_search_path;
  core::Result<std::vector<std::string>> UnitSearchPath() override {
    if (kill != nullptr && !kill->Alive()) return core::Fail("killed");
    if (bus_gone) return core::Fail("Get UnitPath: Transport endpoint is not connected");
    if (!refuse_search_path.empty()) return core::Fail("Get UnitPath: " + refuse_search_path);
    return search_path;
  }
  core::Result<std::string> Enqueue(const std::string& unit, ports::JobKind kind) override;
  core::Result<std::map<std::string, std::string>> WaitForJobs(
      const std::vector<std::string>& jobs, std::chrono::nanoseconds timeout) override;
  core::Result<core::UnitStatus> ReadUnit(const std::string& unit);
  std::vector<core::Result<core::UnitStatus>> ReadUnits(
      const std::vector<std::string>& units) override {
    if (on_read_units) on_read_units(units);
    std::vector<core::Result<core::UnitStatus>> out;
    out.reserve(units.size());
    for (const std::string& u : units) out.push_back(ReadUnit(u));
    return out;
  }
  std::vector<core::Result<std::string>> EnqueueAll(
      const std::vector<std::pair<std::string, ports::JobKind>>& jobs) override {
    std::vector<core::Result<std::string>> out;
    out.reserve(jobs.size());
    for (const auto& [unit, kind] : jobs) out.push_back(Enqueue(unit, kind));
    return out;
  }
  // Advances the clock by `timeout` and reports every watched unit as
  // changed: the fake has no signals, so the watcher re-reads all of them.
  core::Result<std::vector<std::string>> WaitForUnitChanges(
      const std::vector<std::string>& units, std::chrono::nanoseconds timeout) override {
    clock_.Advance(timeout);
    return units;
  }

  const std::vector<Call>& calls() const { return calls_; }
  void ClearCalls() { calls_.clear(); }
  int daemon_reloads() const { return daemon_reloads_; }
  // Units whose enablement changed since the last daemon-reload.
  bool links_changed_unloaded() const { return links_unloaded_; }
  // Start and restart requests for one unit.
  int StartsOf(const std::string& unit) const;
  // Stops asked of `unit`.
  int StopsOf(const std::string& unit) const;
  // Reloads asked of `unit`.
  int ReloadsOf(const std::string& unit) const;
  // The bus went away: every call fails as sd-bus reports a closed connection.
  bool bus_gone = false;
  // Waits for jobs lose the connection (JobRemoved gone with it), while
  // reads still answer on a new one.
  bool lose_job_waits = false;
  // systemd refuses the daemon-reload with this message (empty: it does not).
  std::string refuse_daemon_reload;
  // systemd refuses every enable and disable with this message (empty: it
  // does not).
  std::string refuse_unit_files;
  // systemd refuses every stop with this message (RefuseManualStop=, a
  // policy; empty: it does not).
  std::string refuse_stop;
  // Called whenever a unit (re)starts or reloads, i.e. (re)reads its
  // configuration: a test records what the daemon loaded.
  std::function<void(const std::string& unit)> on_load;
  // Asked at each start, restart or reload of a unit: the behaviour it has
  // from then on (none: as scripted). A daemon that dies on one config and
  // runs on another reads its config here.
  std::function<std::optional<Behavior>(const std::string& unit)> behavior_on_start;
  KillSwitch* kill = nullptr;

 private:
  struct Unit {
    UnitScript script;
    bool started = false;  // by the host, at started_at
    bool stopped = false;
    bool killed = false;
    std::chrono::nanoseconds started_at{0};
    // The real wall clock then, as systemd stamps InactiveExitTimestamp:
    // what files' real ctimes are compared with.
    std::chrono::system_clock::time_point started_real{};
    // When its last reload began (its ExecReload=): none since its start.
    std::chrono::system_clock::time_point reloaded_real{};
    uint32_t base_restarts = 0;
    int invocation = 0;
    bool need_daemon_reload = false;
    bool masked = false;
    bool bad_setting = false;
    std::chrono::nanoseconds stopping_until{0};
    int stopping_invocation = 0;
    std::chrono::nanoseconds dead_until{0};  // a restart's turn (start_gap)
    // A restart of its run held behind a dependency (kBlockedByDependency):
    // the old run goes on, untouched, as systemd leaves it.
    bool held_running = false;
    std::vector<std::string> triggers;
    std::string id;  // empty: its own name
    std::string fragment_path;
    std::vector<std::string> drop_in_paths;
  };
  bool ServiceRuns(const std::vector<std::string>& triggers);
  // The wall clock, as systemd stamps its timestamps (in microseconds),
  // each later than the last: a start and the daemon-reload after it are
  // never the same instant, however fast the test runs.
  std::chrono::system_clock::time_point RealNow() {
    last_real_ =
        std::max(std::chrono::system_clock::now(), last_real_ + std::chrono::microseconds(1));
    return last_real_;
  }
  struct Job {
    std::string unit;
    std::chrono::nanoseconds done_at;
    std::string result;
    bool handed_over = false;  // WaitForJobs said how it ended
  };

  FakeClock& clock_;
  std::map<std::string, Unit> units_;
  std::map<std::string, Job> jobs_;
  std::map<std::string, Behavior> pending_behavior_;
  std::vector<Call> calls_;
  std::set<std::string> no_reload_;
  int daemon_reloads_ = 0;
  // When it last loaded unit files (UnitsLoadTimestamp): at its making,
  // as at boot, then at each daemon-reload.
  std::chrono::system_clock::time_point last_real_{};
  std::chrono::system_clock::time_point units_loaded_ = RealNow();
  int enablements_ = 0;
  std::vector<std::string> reset_failed_;
  bool links_unloaded_ = false;
  int next_job_ = 1;
  int next_invocation_ = 1;
};

}  // namespace mesh::fakes
