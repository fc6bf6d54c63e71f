// SdbusServiceManager: the ServiceManager port over systemd's D-Bus API.
//
// What to ask systemd for a port's call, and what its answers mean for the
// host's jobs and units: jobs queued pipelined and waited for through a
// JobLedger fed by JobRemoved (which keeps the host's own jobs only, so a
// job that finishes before its method reply is read is not missed), units
// read in pipelined rounds of properties, units held loaded while their
// runs are looked at. The bus itself — loading libsystemd, connecting
// lazily, bounding every call, decoding replies — is SystemdBus's, the one
// file that includes <systemd/sd-bus.h>. Every error is a value naming the
// method, the unit and the D-Bus error.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "host/adapters/job_ledger.h"
#include "host/adapters/systemd_bus.h"
#include "host/ports/service_manager.h"

namespace mesh::adapters {

class SdbusServiceManager : public ports::ServiceManager {
 public:
  SdbusServiceManager();
  ~SdbusServiceManager() override;
  SdbusServiceManager(const SdbusServiceManager&) = delete;
  SdbusServiceManager& operator=(const SdbusServiceManager&) = delete;

  core::Status ReloadDaemon() override;
  core::Status SetUnitFileEnabled(const std::string& unit, bool enabled) override;
  core::Status ResetFailed(const std::string& unit) override;
  core::Result<std::vector<std::string>> UnitSearchPath() override;
  core::Result<std::string> Enqueue(const std::string& unit, ports::JobKind kind) override;
  core::Result<std::map<std::string, std::string>> WaitForJobs(
      const std::vector<std::string>& jobs, std::chrono::nanoseconds timeout) override;
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
  // Queues jobs in one pipelined round (Enqueue is one of them, not a new
  // batch; EnqueueAll is).
  std::vector<core::Result<std::string>> EnqueueJobs(
      const std::vector<std::pair<std::string, ports::JobKind>>& jobs, bool new_batch);
  // Keeps the units of starts and restarts loaded for this connection,
  // and lets the units of stops go.
  void HoldLoaded(const std::vector<std::pair<std::string, ports::JobKind>>& jobs);

  JobLedger jobs_;                                    // the host's own jobs, fed by JobRemoved
  std::set<std::string> held_;                        // units this connection holds a reference to
  std::map<std::string, std::string> watched_paths_;  // object path -> unit
  std::vector<std::string> watched_units_;
  std::vector<std::string> changed_units_;
  // Which connection each job the host waits for was queued on (counted by
  // the connections lost before it): a job of a lost one is never heard of.
  uint64_t connection_ = 0;
  std::map<std::string, uint64_t> queued_on_;
  uint64_t watched_connection_ = 0;  // the connection the watch's last wait was on
  SystemdBus bus_;                   // last: its handlers reach the members above
};

}  // namespace mesh::adapters
