// SdbusServiceManager: the ServiceManager port over systemd's D-Bus API.
//
// The only file in mesh-host that includes <systemd/sd-bus.h>. It loads
// libsystemd and connects to the system bus lazily, on the first call
// (DBUS_SYSTEM_BUS_ADDRESS when set, as sd_bus_open_system would), every
// call bounded by a timeout from the first (Hello) on; it subscribes to the
// manager's signals and feeds JobRemoved to a JobLedger, which keeps the
// host's own jobs only, so a job that finishes before its method reply is
// read is not missed. A broken connection is
// dropped and re-opened on the next call. Every error is a value naming the
// method, the unit and the D-Bus error.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "host/adapters/job_ledger.h"
#include "host/ports/service_manager.h"

// sd-bus's message type, declared so this header need not include sd-bus.
struct sd_bus_message;

namespace mesh::adapters {

class SdbusServiceManager : public ports::ServiceManager {
 public:
  SdbusServiceManager();
  ~SdbusServiceManager() override;
  SdbusServiceManager(const SdbusServiceManager&) = delete;
  SdbusServiceManager& operator=(const SdbusServiceManager&) = delete;

  core::Status ReloadDaemon() override;
  core::Status SetUnitFileEnabled(const std::string& unit, bool enabled) override;
  core::Result<std::string> Enqueue(const std::string& unit, ports::JobKind kind) override;
  core::Result<std::map<std::string, std::string>> WaitForJobs(
      const std::vector<std::string>& jobs, std::chrono::nanoseconds timeout) override;
  core::Result<core::UnitStatus> ReadUnit(const std::string& unit) override;
  std::vector<core::Result<core::UnitStatus>> ReadUnits(
      const std::vector<std::string>& units) override;
  std::vector<core::Result<std::string>> EnqueueAll(
      const std::vector<std::pair<std::string, ports::JobKind>>& jobs) override;
  core::Result<std::vector<std::string>> WaitForUnitChanges(
      const std::vector<std::string>& units, std::chrono::nanoseconds timeout) override;

  // Job results held (tests): only the host's own jobs of the current apply,
  // however many jobs the rest of the machine runs.
  size_t jobs_held() const { return jobs_.held(); }

 private:
  struct Bus;  // sd-bus state, kept out of this header
  core::Status Connect();
  void Disconnect();
  // A call that failed (`r`), said in `what`; a lost connection is let go
  // of, so that the next call connects again.
  core::Status CallFailed(std::string what, int r);
  std::unique_ptr<Bus> bus_;
  // The unit's object path (computed, not asked for).
  core::Result<std::string> UnitPath(const std::string& unit);
  // Sends the calls (taking them), at most kCallsInFlight awaiting their
  // replies at once, and collects every reply, each bounded by
  // kCallTimeout; once one goes unanswered that long, the rest are not
  // sent. `what[i]` names call i in an error ("GetAll … u.service").
  struct Reply;
  std::vector<Reply> CallAll(std::vector<sd_bus_message*> calls,
                             const std::vector<std::string>& what);

  // Queues jobs in one pipelined round (Enqueue is one of them, not a new
  // batch; EnqueueAll is).
  std::vector<core::Result<std::string>> EnqueueJobs(
      const std::vector<std::pair<std::string, ports::JobKind>>& jobs, bool new_batch);
  // Keeps the units of starts and restarts loaded for this connection,
  // and lets the units of stops go.
  void HoldLoaded(const std::vector<std::pair<std::string, ports::JobKind>>& jobs);
  std::set<std::string> held_;  // units this connection holds a reference to
  // Processes what the bus delivers until `done()` or `deadline`: 0 when
  // done; a lost connection's negative errno at once; at the deadline, the
  // last error met on the way (0 if none).
  int ProcessUntil(const std::function<bool()>& done,
                   std::chrono::steady_clock::time_point deadline);

  JobLedger jobs_;                                    // the host's own jobs, fed by JobRemoved
  std::map<std::string, std::string> watched_paths_;  // object path -> unit
  std::vector<std::string> watched_units_;
  std::vector<std::string> changed_units_;
};

}  // namespace mesh::adapters
