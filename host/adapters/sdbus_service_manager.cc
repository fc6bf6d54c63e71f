#include "host/adapters/sdbus_service_manager.h"

#include <algorithm>
#include <chrono>
#include <limits>

#include "host/adapters/unit_properties.h"

namespace mesh::adapters {
namespace {

// A daemon-reload returns once systemd has re-read every unit: it is
// allowed this long, where any other call is bounded by the bus's timeout.
constexpr std::chrono::seconds kReloadTimeout{90};

}  // namespace

SdbusServiceManager::SdbusServiceManager()
    : bus_({
          .job_removed = [this](const char* job,
                                const char* result) { jobs_.Finished(job, result); },
          .properties_changed =
              [this](const char* path) {
                auto it = watched_paths_.find(path);
                if (it != watched_paths_.end()) changed_units_.push_back(it->second);
              },
          .disconnected =
              [this] {
                ++connection_;
                held_.clear();           // the references went with the connection
                watched_paths_.clear();  // object paths are resolved again on the next
              },
      }) {}

SdbusServiceManager::~SdbusServiceManager() = default;

core::Status SdbusServiceManager::ReloadDaemon() {
  auto reply = bus_.CallOne(
      {.path = kSystemdPath, .iface = kManagerIface, .member = "Reload", .what = "Reload"},
      kReloadTimeout);
  return reply.ok() ? core::Ok() : core::Fail(reply.error);
}

core::Status SdbusServiceManager::SetUnitFileEnabled(const std::string& unit, bool enabled) {
  // runtime=false: links in /etc that survive a reboot; force=false: a
  // link an operator made to another file is not replaced.
  const char* method = enabled ? "EnableUnitFiles" : "DisableUnitFiles";
  auto reply = bus_.CallOne(
      {.path = kSystemdPath,
       .iface = kManagerIface,
       .member = method,
       .args = enabled ? SystemdBus::Args::kEnableFile : SystemdBus::Args::kDisableFile,
       .first = unit,
       .what = std::string(method) + " " + unit});
  if (!reply.ok()) return core::Fail(reply.error);
  if (!enabled) return core::Ok();
  auto carries_install_info = reply.Flag();
  if (!carries_install_info) return std::unexpected(carries_install_info.error());
  if (!*carries_install_info) {
    return core::Fail(unit +
                      " has no [Install] section (WantedBy=, RequiredBy=, ...): "
                      "there is nothing to enable");
  }
  return core::Ok();
}

core::Status SdbusServiceManager::ResetFailed(const std::string& unit) {
  auto reply = bus_.CallOne({.path = kSystemdPath,
                             .iface = kManagerIface,
                             .member = "ResetFailedUnit",
                             .args = SystemdBus::Args::kString,
                             .first = unit,
                             .what = "ResetFailedUnit " + unit});
  if (reply.ok() || reply.error_name == "org.freedesktop.systemd1.NoSuchUnit") return core::Ok();
  return core::Fail(reply.error);
}

core::Result<std::vector<std::string>> SdbusServiceManager::UnitSearchPath() {
  auto reply = bus_.CallOne({.path = kSystemdPath,
                             .iface = kPropertiesIface,
                             .member = "Get",
                             .args = SystemdBus::Args::kTwoStrings,
                             .first = kManagerIface,
                             .second = "UnitPath",
                             .what = "Get UnitPath"});
  if (!reply.ok()) return core::Fail(reply.error);
  return reply.Strings();
}

core::Result<std::string> SdbusServiceManager::Enqueue(const std::string& unit,
                                                       ports::JobKind kind) {
  // One job on its own (a removal's stop) does not start a new batch: the
  // act phase's jobs may still be waited for.
  return EnqueueJobs({{unit, kind}}, /*new_batch=*/false)[0];
}

std::vector<core::Result<std::string>> SdbusServiceManager::EnqueueAll(
    const std::vector<std::pair<std::string, ports::JobKind>>& jobs) {
  return EnqueueJobs(jobs, /*new_batch=*/true);
}

core::Result<std::map<std::string, std::string>> SdbusServiceManager::WaitForJobs(
    const std::vector<std::string>& jobs, std::chrono::nanoseconds timeout) {
  if (jobs.empty()) return std::map<std::string, std::string>();
  // First: a connection found closed here is made again, and the jobs
  // queued on it are then known unheard.
  if (auto st = bus_.Connect(); !st) {
    (void)jobs_.Take(jobs);
    for (const std::string& job : jobs) queued_on_.erase(job);
    return std::unexpected(st.error());
  }
  bool unheard = std::any_of(jobs.begin(), jobs.end(), [&](const std::string& job) {
    auto it = queued_on_.find(job);
    return it != queued_on_.end() && it->second != connection_;
  });
  auto forget = [&] {
    (void)jobs_.Take(jobs);
    for (const std::string& job : jobs) queued_on_.erase(job);
  };
  if (unheard) {
    // Queued on a connection since lost: their JobRemoved went with it, and
    // a new connection never hears of them.
    forget();
    return core::Fail("waiting for jobs: the bus connection was lost after they were queued");
  }
  auto st = bus_.ProcessUntil([&] { return jobs_.AllFinished(jobs); },
                              std::chrono::steady_clock::now() + timeout);
  if (!st && !bus_.connected()) {
    // The jobs' JobRemoved went with the connection: a new one never hears
    // of them. Forgotten here, and said.
    forget();
    return core::Fail("waiting for jobs: " + st.error().message);
  }
  // A job still pending keeps the connection it was queued on: waited for
  // again after that connection is lost (the confirm phase asks until its
  // first look), it is unheard, not pending for ever.
  std::map<std::string, std::string> finished = jobs_.Take(jobs);
  for (const auto& [job, result] : finished) queued_on_.erase(job);
  return finished;
}

core::Result<std::vector<std::string>> SdbusServiceManager::WaitForUnitChanges(
    const std::vector<std::string>& units, std::chrono::nanoseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  // Property changes are subscribed to only here, by the watch's own
  // connection: an apply's connection would otherwise receive every
  // PropertiesChanged of every unit systemd touches while it restarts.
  if (auto st = bus_.WatchPropertiesChanged(); !st) return std::unexpected(st.error());
  if (watched_connection_ != connection_) {
    // Made again since the last wait (found closed while it lay idle):
    // what changed in between sent no signal this connection heard.
    watched_connection_ = connection_;
    return units;
  }
  // The watch calls this every second: resolve object paths only when the
  // set of units changed (or the connection was made again), not per call.
  if (units != watched_units_ || watched_paths_.empty()) {
    std::map<std::string, std::string> paths;
    for (const std::string& u : units) {
      auto path = bus_.UnitPath(u);
      if (!path) return std::unexpected(path.error());
      paths[*path] = u;
    }
    watched_paths_ = std::move(paths);
    watched_units_ = units;
  }
  if (auto st = bus_.ProcessUntil([&] { return !changed_units_.empty(); }, deadline); !st) {
    // Whatever it is, the next call starts from a fresh connection: an
    // error that returned at once would otherwise be met again at once.
    bus_.Disconnect();
    return std::unexpected(st.error());
  }
  std::vector<std::string> out;
  out.swap(changed_units_);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

namespace {

// In a round's index: a property of the Manager, not of a unit.
constexpr size_t kManager = std::numeric_limits<size_t>::max();

// One round of ReadUnits' calls, and of each the unit (kManager: the
// Manager) and property (null: GetAll) its reply is read into.
struct Round {
  std::vector<SystemdBus::Call> calls;
  std::vector<std::pair<size_t, const char*>> index;

  void Get(std::string path, const char* iface, const char* property, size_t i,
           const std::string& what) {
    calls.push_back({.path = std::move(path),
                     .iface = kPropertiesIface,
                     .member = "Get",
                     .args = SystemdBus::Args::kTwoStrings,
                     .first = iface,
                     .second = property,
                     .what = std::string("Get ") + iface + "." + property + what});
    index.emplace_back(i, property);
  }
};

Round CallsOfRound(int round, const std::vector<std::string>& units,
                   const std::vector<std::string>& paths,
                   const std::vector<core::Result<core::UnitStatus>>& out) {
  Round r;
  for (size_t i = 0; i < units.size(); ++i) {
    if (!out[i]) continue;
    if (round == 0) {
      r.calls.push_back({.path = paths[i],
                         .iface = kPropertiesIface,
                         .member = "GetAll",
                         .args = SystemdBus::Args::kString,
                         .first = kUnitIface,
                         .what = std::string("GetAll ") + kUnitIface + " " + units[i]});
      r.index.emplace_back(i, nullptr);
      continue;
    }
    if (!ReadInRound(round, units[i], *out[i])) continue;
    std::vector<const char*> late;
    if (round == 2) late = LateProperties(*out[i]);
    for (const char* property :
         round == 1 ? ServiceProperties() : std::span<const char* const>(late)) {
      r.Get(paths[i], kServiceIface, property, i, " " + units[i]);
    }
  }
  if (round == 0 && !r.calls.empty()) {
    // When systemd last loaded unit files, in the same round trip: what a
    // unit's run read of its definition (core::RunReadDefinition).
    for (const char* property : {"UnitsLoadStartTimestamp", "UnitsLoadTimestamp"}) {
      r.Get(kSystemdPath, kManagerIface, property, kManager, "");
    }
  }
  return r;
}

// A round's replies, into the units' statuses.
void ReadReplies(const Round& r, const std::vector<SystemdBus::Reply>& replies,
                 std::vector<core::Result<core::UnitStatus>>& out) {
  core::UnitStatus manager;
  bool of_manager = false;
  for (size_t k = 0; k < r.index.size(); ++k) {
    auto [i, property] = r.index[k];
    const SystemdBus::Reply& reply = replies[k];
    if (i == kManager) {
      // Not known (an older systemd, an error): zero, which proves no run
      // read anything.
      of_manager = true;
      if (reply.ok()) (void)reply.Property(property, manager);
      continue;
    }
    if (!out[i]) continue;  // an earlier property of this unit failed
    if (!reply.ok()) {
      // A property this systemd does not have (NRestarts came with 235)
      // stays unset, as the interface's GetAll would leave it.
      if (property != nullptr && reply.error_name == kUnknownProperty) continue;
      out[i] = core::Fail(reply.error);
    } else if (auto st = property == nullptr ? reply.Properties(*out[i])
                                             : reply.Property(property, *out[i]);
               !st) {
      out[i] = std::unexpected(st.error());
    }
  }
  if (!of_manager) return;
  for (auto& o : out) {
    if (o) o->units_loaded_realtime = manager.units_loaded_realtime;
  }
}

}  // namespace

// Pipelined rounds, whatever the number of units: one GetAll of the Unit
// interface each (and when systemd last loaded unit files), then the
// service properties of loaded services, then, of the services whose run
// exited badly, its exit status and command (no cost while everything
// runs).
std::vector<core::Result<core::UnitStatus>> SdbusServiceManager::ReadUnits(
    const std::vector<std::string>& units) {
  std::vector<core::Result<core::UnitStatus>> out(units.size());
  if (units.empty()) return out;
  // One connection (and one load of libsystemd) for all of them, or one
  // error said for each.
  if (auto st = bus_.Connect(); !st) {
    for (auto& o : out) o = std::unexpected(st.error());
    return out;
  }
  std::vector<std::string> paths(units.size());
  for (size_t i = 0; i < units.size(); ++i) {
    auto path = bus_.UnitPath(units[i]);
    if (!path) {
      out[i] = std::unexpected(path.error());
      continue;
    }
    paths[i] = std::move(*path);
    out[i] = core::UnitStatus{};
  }
  for (int round : {0, 1, 2}) {
    if (round > 0 && !bus_.connected()) {
      // The connection was lost: a unit read in part is not read.
      for (size_t i = 0; i < units.size(); ++i) {
        if (!out[i] || !ReadInRound(round, units[i], *out[i])) continue;
        out[i] = core::Fail(std::string("Get ") + kServiceIface + " " + units[i] +
                            ": not sent: the connection was lost");
      }
      continue;
    }
    Round r = CallsOfRound(round, units, paths, out);
    if (r.calls.empty()) continue;
    ReadReplies(r, bus_.CallAll(r.calls), out);
  }
  return out;
}

// systemd unloads a unit that ended and that nothing references (a
// oneshot that ran, a start skipped on a false condition) at once: read
// again, it is loaded afresh and says nothing of that run. A reference of
// this connection's (Unit.Ref, systemd 235 and later) keeps it loaded for
// the looks, and goes with the connection. A stop lets it go (Unit.Unref):
// a stopped unit reads the same loaded or not, and the daemon's one
// connection must not pin every unit it ever started. Best effort: a unit
// not held reads as before, and one whose Ref failed is asked again.
void SdbusServiceManager::HoldLoaded(
    const std::vector<std::pair<std::string, ports::JobKind>>& jobs) {
  std::vector<SystemdBus::Call> calls;
  std::vector<std::string> refs;
  for (const auto& [unit, kind] : jobs) {
    bool stop = kind == ports::JobKind::kStop;
    if (stop != held_.contains(unit)) continue;
    auto path = bus_.UnitPath(unit);
    if (!path) continue;
    const char* method = stop ? "Unref" : "Ref";
    calls.push_back({.path = std::move(*path),
                     .iface = kUnitIface,
                     .member = method,
                     .what = std::string(method) + " " + unit});
    refs.push_back(stop ? "" : unit);
    if (stop) held_.erase(unit);
  }
  if (calls.empty()) return;
  std::vector<SystemdBus::Reply> replies = bus_.CallAll(calls);
  if (!bus_.connected()) return;  // the references went with the connection
  for (size_t i = 0; i < replies.size(); ++i) {
    if (!refs[i].empty() && replies[i].ok()) held_.insert(refs[i]);
  }
}

std::vector<core::Result<std::string>> SdbusServiceManager::EnqueueJobs(
    const std::vector<std::pair<std::string, ports::JobKind>>& jobs, bool new_batch) {
  std::vector<core::Result<std::string>> out(jobs.size());
  if (jobs.empty()) return out;
  if (auto st = bus_.Connect(); !st) {
    for (auto& o : out) o = std::unexpected(st.error());
    return out;
  }
  size_t waited = std::count_if(jobs.begin(), jobs.end(),
                                [](const auto& j) { return j.second != ports::JobKind::kStop; });
  HoldLoaded(jobs);
  if (!bus_.connected()) {  // the connection was lost while holding the units
    for (size_t i = 0; i < jobs.size(); ++i) {
      out[i] = core::Fail(std::string(JobMethod(jobs[i].second)) + " " + jobs[i].first +
                          ": not sent: the connection was lost");
    }
    return out;
  }
  // The connection the jobs go out on (Connect makes a closed one again).
  if (auto st = bus_.Connect(); !st) {
    for (auto& o : out) o = std::unexpected(st.error());
    return out;
  }
  const uint64_t connection = connection_;
  if (waited > 0) jobs_.ExpectCalls(waited, new_batch);
  if (new_batch) queued_on_.clear();  // no one waits for earlier jobs any more
  std::vector<SystemdBus::Call> calls;
  for (const auto& [unit, kind] : jobs) {
    const char* method = JobMethod(kind);
    calls.push_back({.path = kSystemdPath,
                     .iface = kManagerIface,
                     .member = method,
                     .args = SystemdBus::Args::kTwoStrings,
                     .first = unit,
                     .second = "replace",
                     .what = std::string(method) + " " + unit});
  }
  std::vector<SystemdBus::Reply> replies = bus_.CallAll(calls);
  std::vector<std::string> kept;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (!replies[i].ok()) {
      out[i] = core::Fail(replies[i].error);
    } else if (auto job = replies[i].ObjectPath(); !job) {
      out[i] = std::unexpected(job.error());
    } else {
      out[i] = *job;
      if (jobs[i].second == ports::JobKind::kStop) continue;
      kept.push_back(*job);
      queued_on_[*job] = connection;
    }
  }
  if (waited > 0) jobs_.KeepJobs(waited, kept);
  return out;
}

}  // namespace mesh::adapters
