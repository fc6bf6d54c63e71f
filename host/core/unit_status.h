// What systemd says of a unit, in the words the two-look rule needs, and the
// one rule for whether a unit declared running is as declared ("up").
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mesh::core {

struct UnitStatus {
  std::string load_state;    // loaded, not-found, masked, bad-setting, ...
  std::string active_state;  // active, activating, reloading, inactive, failed, deactivating
  std::string sub_state;     // running, exited, dead, auto-restart, stop-sigterm, ...
  std::string result;        // success, exit-code, signal, ...
  std::string invocation_id;
  std::string type;  // Service Type=: simple, notify, oneshot, forking, ...
  uint32_t n_restarts = 0;
  // The unit's files changed since systemd last loaded them.
  bool need_daemon_reload = false;
  // How long systemd lets the unit's stop phase take (TimeoutStopUSec); zero
  // when unknown or infinite.
  std::chrono::nanoseconds timeout_stop{0};
  // TimeoutStopUSec was infinite (or past a day).
  bool timeout_stop_unbounded = false;
  // How many ExecStop= and ExecStopPost= commands it has: each gets
  // TimeoutStopUSec of its own.
  uint32_t exec_stop = 0;
  uint32_t exec_stop_post = 0;
  // Which of its processes a stop signals (KillMode): control-group,
  // mixed, process, none. Empty when unknown.
  std::string kill_mode;
  // systemd's UnitFileState: enabled, disabled, static, masked, ...; empty
  // when the unit is not loaded.
  std::string unit_file_state;
  // How long the unit had been in its ActiveState when read (systemd's
  // StateChangeTimestampMonotonic); zero when unknown.
  std::chrono::nanoseconds in_state_for{0};
  // When its current run began (InactiveExitTimestamp: it left inactive or
  // failed), since the epoch; zero when unknown or never started. Before
  // systemd 254 a restart by its Restart= does not move it (the relaunch
  // stays activating).
  std::chrono::microseconds started_realtime{0};
  // When systemd last loaded unit files (its last daemon-reload, else its
  // start: Manager UnitsLoadTimestamp, UnitsLoadStartTimestamp), since the
  // epoch; zero when unknown. A run that began since runs what its files
  // held then (or at the unit's own first load, later).
  std::chrono::microseconds units_loaded_realtime{0};
  // When its last reload began (its first ExecReload= command's start),
  // since the epoch; zero when not reloaded since its run began or since
  // systemd last loaded unit files (a start, and a daemon-reload, clear
  // every command's status), or unknown. A reload that runs no
  // ExecReload= (Type=notify-reload, a HUP sent by hand) is not seen.
  std::chrono::microseconds reloaded_realtime{0};
  // How many ExecReload= commands the definition systemd loaded has: none,
  // and no reload can run.
  uint32_t exec_reload = 0;
  // At its last start systemd found this condition false and skipped it
  // ("ConditionPathExists=/etc/x", from Conditions and ConditionResult);
  // empty when every condition held or none was checked.
  std::string failed_condition;
  // Of a run that exited badly (Result=exit-code) only: its exit status
  // (systemd's own 200-243 say which step of starting it failed) and the
  // first ExecStart= command's path.
  int32_t exec_main_status = 0;
  std::string exec_start;
  // Of a oneshot: RemainAfterExit=yes, it reads active (exited) after a
  // run that ended well, and inactive only once stopped.
  bool remain_after_exit = false;
  // The units it starts (Triggers=): a socket's service, a timer's. A
  // socket whose service runs cannot be restarted (systemd refuses to
  // start it again: "already active, refusing").
  std::vector<std::string> triggers;
  // The name systemd knows the unit by (Id): another unit's when the name
  // read is an alias of that unit. Empty when unknown.
  std::string id;
  // The unit file systemd loaded it from (FragmentPath): an instance's own
  // file comes before its template's. Empty when unknown.
  std::string fragment_path;
  // The drop-ins systemd loaded (DropInPaths): of each name, the one in the
  // directory it reads first.
  std::vector<std::string> drop_in_paths;
  // systemd holds a job for it, queued or running (Job): a unit stopped
  // with another and waiting to start behind it reads inactive meanwhile.
  bool job_queued = false;

  // SPEC: running means ActiveState active, activating or reloading.
  bool Running() const {
    return active_state == "active" || active_state == "activating" || active_state == "reloading";
  }
  // A Type=oneshot unit whose last run ended well and left nothing running
  // (one systemd skipped on a false condition never ran). Not one with
  // RemainAfterExit=yes: inactive, it was stopped.
  bool FinishedOneshot() const {
    return type == "oneshot" && !remain_after_exit && active_state == "inactive" &&
           result == "success" && failed_condition.empty();
  }
};

// Dead, and waiting for systemd's Restart= to start it again: SubState
// auto-restart, or (systemd 254 and later) auto-restart-queued once that
// start is queued. Either reads ActiveState activating.
inline bool AwaitingAutoRestart(const UnitStatus& s) {
  return s.sub_state.starts_with("auto-restart");
}

// A unit declared running is up when it runs and is not waiting to be
// restarted by systemd after a death (SubState auto-restart reads
// "activating"), or when it is a oneshot that finished well. This is the
// one rule for the verdicts, the record proof, /healthz and
// mesh_host_unit_active. What it cannot see from one look — NRestarts grown
// since the host last looked, a oneshot that never ran — the callers that
// hold a baseline add (see UpSince).
inline bool UnitUp(const UnitStatus& s) {
  if (AwaitingAutoRestart(s)) return false;
  return s.Running() || s.FinishedOneshot();
}

// A unit declared stopped is as declared when nothing of it runs: one still
// deactivating has its processes alive (a stop that hangs is not a stop).
inline bool StoppedAsDeclared(const UnitStatus& s) {
  return !s.Running() && s.active_state != "deactivating";
}

// Its last run ended badly: failed, or unloaded after a failure.
inline bool FoundFailed(const UnitStatus& s) {
  return s.active_state == "failed" ||
         (s.active_state == "inactive" && !s.result.empty() && s.result != "success");
}

// How long systemd lets the stop phase `phase` (a SubState: stop,
// stop-sigterm, stop-sigkill, stop-post, final-sigterm, ...) of the unit
// take. Each phase gets TimeoutStopUSec anew, and within stop (ExecStop=)
// and stop-post (ExecStopPost=) so does each command: service.c arms the
// timer at every spawn, so a phase of three commands may last three
// timeouts. A timeout is bounded here at five minutes; an unknown or
// infinite one counts as systemd's default of 90 s.
inline constexpr std::chrono::minutes kLongestStopPhase{5};
// systemd's stop timeout for a unit that sets none (DefaultTimeoutStopSec=).
inline constexpr std::chrono::seconds kDefaultStopTimeout{90};
inline std::chrono::nanoseconds StopPhaseBound(const UnitStatus& s, std::string_view phase) {
  std::chrono::nanoseconds t =
      s.timeout_stop.count() > 0 ? s.timeout_stop : std::chrono::nanoseconds(kDefaultStopTimeout);
  t = std::min<std::chrono::nanoseconds>(t, kLongestStopPhase);
  uint32_t commands = phase == "stop" ? s.exec_stop : phase == "stop-post" ? s.exec_stop_post : 1;
  // Bounded too: a unit of hundreds of ExecStop= lines is not waited on for
  // hours (nor the product allowed to overflow).
  constexpr uint32_t kMostCommands = 16;
  return t * std::clamp<uint32_t>(commands, 1, kMostCommands);
}
// Judged by its sub-state: systemd stamps each change of phase, so the time
// the unit has been in its state is this phase's.
inline std::chrono::nanoseconds StopPhaseBound(const UnitStatus& s) {
  return StopPhaseBound(s, s.sub_state);
}
// Whether stopping the unit reads its unit file for more than systemd
// gives a unit without one: ExecStop= or ExecStopPost= commands, a stop
// timeout other than the default 90 s, a KillMode= other than
// control-group. Its file deleted and systemd reloaded while it stops,
// the unit is read anew as not found, and its stop goes on without them.
inline bool StopReadsItsFile(const UnitStatus& s) {
  return s.exec_stop > 0 || s.exec_stop_post > 0 || s.timeout_stop_unbounded ||
         (s.timeout_stop.count() > 0 && s.timeout_stop != kDefaultStopTimeout) ||
         (!s.kill_mode.empty() && s.kill_mode != "control-group");
}
// Whether a run that began at `started_realtime` (UnitStatus's) began at or
// after `changed_ns` (a file's ctime, ns since the epoch): then it read
// what the file holds now. The
// one rule for a file changed without a restart: whether the host
// restarts the unit onto it (plan_units.cc), and whether it may be the
// unit's last good (rollback.cc). Unknown start: not.
inline bool RunBeganSince(std::chrono::microseconds started_realtime, int64_t changed_ns) {
  return started_realtime.count() > 0 &&
         changed_ns <=
             std::chrono::duration_cast<std::chrono::nanoseconds>(started_realtime).count();
}
// Whether the unit's run read a part of its definition (its unit file, a
// drop-in) that changed at `changed_ns`: systemd loaded units after that
// change, and the run began since. A run restarted before the
// daemon-reload that loaded the change runs the definition loaded before
// it, whenever it began. Unknown: not.
inline bool RunReadDefinition(const UnitStatus& s, int64_t changed_ns) {
  const int64_t loaded_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(s.units_loaded_realtime).count();
  return RunBeganSince(s.started_realtime, changed_ns) && loaded_ns > changed_ns &&
         s.units_loaded_realtime <= s.started_realtime;
}
// The phase a stop of a running unit begins with: its ExecStop= commands,
// or SIGTERM when it has none.
inline std::string_view FirstStopPhase(const UnitStatus& s) {
  return s.exec_stop > 0 ? "stop" : "stop-sigterm";
}

// Enabled as `enabled: true` means it: [Install] links that survive a
// reboot ("enabled-runtime" links in /run do not).
inline bool UnitFileEnabled(const UnitStatus& s) { return s.unit_file_state == "enabled"; }

// `dir` as one name: repeated slashes, "." components and a trailing
// slash dropped, as systemd simplifies the directories it searches, so that
// --unit-dir "/etc/systemd/system/" is the "/etc/systemd/system" systemd
// names. Links are not followed: names are compared as written.
inline std::string SimpleDir(std::string_view dir) {
  std::string out;
  for (size_t at = 0; at < dir.size();) {
    size_t end = dir.find('/', at);
    if (end == std::string_view::npos) end = dir.size();
    std::string_view part = dir.substr(at, end - at);
    if (!part.empty() && part != ".") out.append("/").append(part);
    at = end + 1;
  }
  return out.empty() ? "/" : out;
}

// Whether systemd says it loaded the unit from `file` in `unit_dir`
// (--unit-dir), or says nothing of where (no FragmentPath).
inline bool LoadedFrom(const UnitStatus& s, std::string_view unit_dir, std::string_view file) {
  if (s.fragment_path.empty()) return true;
  std::string_view f = s.fragment_path;
  size_t slash = f.rfind('/');
  return slash != std::string_view::npos && f.substr(slash + 1) == file &&
         SimpleDir(f.substr(0, slash)) == SimpleDir(unit_dir);
}

// The file systemd loaded `unit`'s drop-in `name` from when it is not the
// host's (--unit-dir's UNIT.d/NAME); "" when it is the host's, or none.
inline std::string DropInLoadedElsewhere(const UnitStatus& s, std::string_view unit_dir,
                                         std::string_view unit, std::string_view name) {
  std::string tail = "/" + std::string(unit) + ".d/" + std::string(name);
  for (const std::string& path : s.drop_in_paths) {
    if (!path.ends_with(tail)) continue;
    if (SimpleDir(std::string_view(path).substr(0, path.size() - tail.size())) ==
        SimpleDir(unit_dir)) {
      return "";
    }
    return path;
  }
  return "";
}

// Whether systemd loads unit `name` from `fragment` (its FragmentPath), a
// file of that name in a directory it reads before `unit_dir` (--unit-dir)
// in `search_path` (its Manager.UnitPath, in order): of two files of one
// name, the earlier directory's is loaded, so the host's file in
// `unit_dir` would not run. False for a file of another name (an
// instance's template: a file of the instance's own name wins wherever it
// is), and unless both directories are in the search path by these names
// (a link, another mount namespace's view is never taken for a shadow).
inline bool LoadedFromEarlierDirectory(std::string_view fragment, std::string_view name,
                                       std::string_view unit_dir,
                                       const std::vector<std::string>& search_path) {
  size_t slash = fragment.rfind('/');
  if (slash == std::string_view::npos || fragment.substr(slash + 1) != name) return false;
  std::string fragment_dir = SimpleDir(fragment.substr(0, slash));
  std::string host_dir = SimpleDir(unit_dir);
  if (fragment_dir == host_dir) return false;
  for (const std::string& dir : search_path) {
    std::string d = SimpleDir(dir);
    if (d == host_dir) return false;
    if (d == fragment_dir) {
      return std::any_of(search_path.begin(), search_path.end(),
                         [&](const std::string& later) { return SimpleDir(later) == host_dir; });
    }
  }
  return false;
}

// A unit without [Install] links to make: `enabled: true` cannot hold.
inline bool UnitFileCannotBeEnabled(const UnitStatus& s) {
  return s.unit_file_state == "static" || s.unit_file_state == "indirect" ||
         s.unit_file_state == "generated" || s.unit_file_state == "transient";
}

// Whether systemd restarted the unit on its own since it counted
// `baseline` restarts. A start or restart by anyone else zeroes the count
// (systemd's flush_n_restarts), so a lower count is a reset, not a
// restart; but a count above zero after one is the unit's own restarts
// since it: a crash would hide behind a manual restart otherwise.
inline bool RestartedSince(uint32_t n_restarts, uint32_t baseline) {
  return n_restarts > baseline || (n_restarts < baseline && n_restarts > 0);
}

// UnitUp, and systemd has not restarted it on its own since `baseline`
// (the NRestarts the host saw at its last look).
inline bool UpSince(const UnitStatus& s, uint32_t baseline) {
  return UnitUp(s) && !RestartedSince(s.n_restarts, baseline);
}

// What a service or process declares of its unit. kTriggered: run by its
// timer, socket or path unit; the host neither starts nor stops it, and
// loads its definition's changes for the next activation (a run in
// progress keeps the definition it started with).
enum class UnitState { kRunning, kStopped, kTriggered };

// Whether systemd has a definition of the unit it can run: none of
// LoadState not-found, bad-setting or error.
inline bool Loadable(const UnitStatus& s) {
  return s.load_state != "not-found" && s.load_state != "bad-setting" && s.load_state != "error";
}

// systemd forgot what reloaded the run: a daemon-reload came during it
// (which clears every ExecReload= status) and no reload is seen since,
// while the unit has an ExecReload= to run. Whether someone reloaded it
// meanwhile, and what that reload read, is not known.
inline bool ReloadsForgotten(const UnitStatus& s) {
  return s.exec_reload > 0 && s.reloaded_realtime.count() == 0 && s.started_realtime.count() > 0 &&
         s.units_loaded_realtime > s.started_realtime;
}

// What the host last recorded of a unit it found as declared (the record's
// n_restarts and finished).
struct UnitBaseline {
  std::optional<uint32_t> n_restarts;  // none: never looked (a lost record)
  bool finished = false;               // a oneshot whose run ended well
  bool starting = false;               // still activating: never yet seen up
  // When the run seen began (started_realtime, microseconds); 0 unknown. A
  // run begun since is someone else's start: what it read is not known.
  int64_t run_began_us = 0;
  // When the last reload then seen began (reloaded_realtime); 0 none seen
  // (none since the run began, or a daemon-reload since). A reload begun
  // since is someone else's: what it read is not known.
  int64_t reload_began_us = 0;
  bool operator==(const UnitBaseline&) const = default;
};

// What the host records of a look that found a unit as declared. A oneshot
// accepted then ran, or runs, under this want (one still running, such as a
// migration, finishes later; if it ends badly its Result says so).
inline UnitBaseline BaselineOf(const UnitStatus& s) {
  return {s.n_restarts, s.type == "oneshot", s.active_state == "activating",
          s.started_realtime.count(), s.reloaded_realtime.count()};
}

// Whether a unit declared running is as declared between actions, against
// what the host recorded: up, not restarted by systemd since, and — for a
// finished oneshot — known from the record to have run under this want. A
// oneshot that never ran reads exactly like one that ran (systemd unloads
// it after), so without the record's word it is run: once more after a
// lost record rather than never.
inline bool UpAsRecorded(const UnitStatus& s, const UnitBaseline& b) {
  if (!UnitUp(s)) return false;
  if (b.n_restarts.has_value() && RestartedSince(s.n_restarts, *b.n_restarts)) return false;
  return !s.FinishedOneshot() || b.finished;
}

// Whether a unit is as its declared state asks between actions, against
// its recorded baseline: up as recorded (running), stopped (stopped), in
// any state (triggered). The record proof and a refused push's recorded
// view judge by it; the plan's own branches say the same in more words.
inline bool AsDeclared(UnitState state, const UnitStatus& s, const UnitBaseline& baseline) {
  switch (state) {
    case UnitState::kRunning:
      return UpAsRecorded(s, baseline);
    case UnitState::kStopped:
      return StoppedAsDeclared(s);
    case UnitState::kTriggered:
      return true;
  }
  return false;
}

}  // namespace mesh::core
