// ServiceManager: systemd as the reconciler needs it, in domain words.
//
// Asking is separated from waiting: the reconciler enqueues every job of an
// apply first, then waits for all of them under one bound, so twelve restarts
// cost one settle time, not twelve. Job results come from systemd's
// JobRemoved signal, never from the method's return, which only says the job
// was queued.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "host/core/result.h"
#include "host/core/unit_status.h"

namespace mesh::ports {

enum class JobKind { kStart, kRestart, kReload, kStop };

class ServiceManager {
 public:
  virtual ~ServiceManager() = default;

  // systemd's daemon-reload: re-reads unit files; returns once done.
  virtual core::Status ReloadDaemon() = 0;

  // Makes or removes the unit's [Install] links through systemd itself
  // (EnableUnitFiles / DisableUnitFiles), never by hand. A daemon-reload
  // must follow. Enabling a unit without an [Install] section is an error.
  virtual core::Status SetUnitFileEnabled(const std::string& unit, bool enabled) = 0;

  // Forgets the unit's failed state (ResetFailedUnit): a unit the host
  // dropped is not left listed failed, with no file, until a reboot. A unit
  // systemd holds no more is forgotten already: not an error.
  virtual core::Status ResetFailed(const std::string& unit) = 0;

  // Queues a job and returns its id. A stop is queued and never waited on.
  virtual core::Result<std::string> Enqueue(const std::string& unit, JobKind kind) = 0;

  // Waits until every listed job has finished or `timeout` has passed.
  // Returns the result ("done", "failed", "canceled", "timeout",
  // "dependency", "skipped") of each job that finished; a job missing from
  // the map was still pending. An error when systemd cannot be reached or
  // the connection was lost while waiting: what the jobs came to is then
  // unknown, never "still pending".
  virtual core::Result<std::map<std::string, std::string>> WaitForJobs(
      const std::vector<std::string>& jobs, std::chrono::nanoseconds timeout) = 0;

  // The units' current states, in the order asked. A unit systemd does not
  // know reads as load_state "not-found", active_state "inactive". Many
  // units or many jobs at once: an adapter may pipeline the calls, so
  // looking at twelve units costs about one round trip to systemd rather
  // than twelve (the restarts of one apply share one settle, and the looks
  // should not eat it). Results come back in the order asked.
  virtual std::vector<core::Result<core::UnitStatus>> ReadUnits(
      const std::vector<std::string>& units) = 0;
  virtual std::vector<core::Result<std::string>> EnqueueAll(
      const std::vector<std::pair<std::string, JobKind>>& jobs) = 0;

  // systemd's unit search path (Manager.UnitPath), in the order it reads
  // it: of two unit files of one name, the earlier directory's is loaded.
  virtual core::Result<std::vector<std::string>> UnitSearchPath() = 0;

  // The live watch: blocks until systemd reports a property change of one
  // of `units` or `timeout` passes, and returns the units that changed
  // (empty on timeout). Fails at once when it cannot watch (no bus, the
  // connection lost, the subscription refused): the caller says so and
  // waits before it tries again. Used from the watch thread with its own
  // instance.
  virtual core::Result<std::vector<std::string>> WaitForUnitChanges(
      const std::vector<std::string>& units, std::chrono::nanoseconds timeout) = 0;
};

}  // namespace mesh::ports
