// HostMetrics: mesh-host's Prometheus metrics (SPEC "Metrics"), fed by apply
// reports and by the live unit watch.
//
// Metrics are fed, they never reach out. Series are bounded: outcomes are
// counted per kind; a resource has its own series only once it changed
// (and, with ResourceSeries::kFailing, only while it is failed or
// churning); one that is pruned loses them, so a host that runs for months
// with 10,000 resources does not expose 30,000 series. Thread-safe: the
// apply loop, the unit watch and /metrics scrapes may call it concurrently.
#pragma once

#include <array>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/apply_report.h"
#include "host/core/unit_status.h"
#include "host/ports/clock.h"

namespace prometheus {
class Registry;
class Counter;
class Gauge;
class Histogram;
template <typename T>
class Family;
}  // namespace prometheus

namespace mesh::metrics {

// --metrics-resources: which resources keep per-resource change counters.
enum class ResourceSeries {
  kAll,      // every resource that ever changed
  kFailing,  // only resources failed or churning now (fleets of large declarations)
};

// A refusal's words in mesh_host_declaration_refused's reason label: enough
// to name the field and the problem, short enough for an alert.
inline constexpr size_t kRefusalReasonBytes = 200;

class HostMetrics {
 public:
  explicit HostMetrics(const std::string& version, ResourceSeries series = ResourceSeries::kAll);

  // Not in the SPEC's table but what MeshHostReconcileStale needs to be right
  // for any --interval, and to tell "never succeeded" from "just started".
  void SetReconcileInterval(std::chrono::nanoseconds interval);
  void SetStartTime(std::chrono::system_clock::time_point start);
  // Time read through `clock` from here on (before SetStartTime). The
  // timestamps (start, last reconcile, last success) are then shown at
  // each scrape as now less the monotonic time since: a wall clock stepped
  // since (NTP at boot on a board without a battery-backed clock) does not
  // shift them by the step. Stamped once, a success before a step back of
  // a year would hide MeshHostReconcileStale for that year. Time suspended
  // is not counted (the monotonic clock stops). Without a clock, each is
  // shown as stamped.
  void SetClock(ports::Clock* clock) { clock_ = clock; }
  ~HostMetrics();

  // One apply (or a refusal). Afterwards only the resources and units of the
  // last accepted declaration keep series.
  void ObserveApply(const core::ApplyReport& report);

  // What the record says, from the daemon's start until its first apply
  // (reconcile::Reconciler::Recorded): the units' series exist from the first
  // scrape, as the record baseline judges them. Nothing is counted.
  void ObserveRecordedAtStart(const core::RecordedState& recorded);

  // What the live watch saw of a unit declared running.
  // `up`: the unit is as declared (status::StatusBoard::PublishUnit says).
  void ObserveUnit(const std::string& unit, const core::UnitStatus& status, bool up);

  // Whether the live unit watch has lost sight of systemd for longer than
  // its bound (daemon::WatchSight): while it has, every unit series shows
  // the last look, and MeshHostUnitsUnseen says that no DaemonDead alert
  // can be trusted to fire.
  void SetUnitsUnseen(bool unseen);

  // Prometheus text exposition format.
  std::string Serialize() const;

 private:
  void ObserveRecorded(const core::RecordedState& recorded);
  void ObserveUnitsOf(const std::vector<core::ResourceOutcome>& outcomes);
  // `resources`: sorted; a view of each id, not a copy (one per resource,
  // at every apply).
  void ForgetExcept(std::span<const std::string_view> resources,
                    const std::set<std::string>& units);
  // Issue 210's shape, judged here: the churn of each resource under one
  // declaration, and its per-resource series.
  void ObserveResource(const core::ResourceOutcome& o, bool same_declaration);
  void ObserveRefusal(const core::ApplyReport& report);
  // With mu_ held, as the two above.
  void NewDeclaration(const std::string& digest);
  void CountUnitActions(const core::ResourceOutcome& o);
  void ObserveRollback(const core::ResourceOutcome& o);
  void ObserveUnitLocked(const std::string& unit, const core::UnitStatus& status, bool up);

  mutable std::mutex mu_;
  std::shared_ptr<prometheus::Registry> registry_;
  ResourceSeries series_;
  prometheus::Family<prometheus::Counter>* outcomes_;
  prometheus::Family<prometheus::Gauge>* resources_;
  prometheus::Family<prometheus::Gauge>* failed_;
  prometheus::Family<prometheus::Gauge>* churn_;
  prometheus::Family<prometheus::Gauge>* unit_active_;
  prometheus::Family<prometheus::Counter>* unit_restarts_;
  prometheus::Family<prometheus::Counter>* systemd_restarts_;
  prometheus::Family<prometheus::Counter>* confirm_failures_;
  prometheus::Family<prometheus::Counter>* reconciles_;
  prometheus::Family<prometheus::Gauge>* refused_;
  prometheus::Family<prometheus::Counter>* rollbacks_;
  prometheus::Family<prometheus::Gauge>* held_;
  prometheus::Gauge* refused_series_ = nullptr;  // while the declaration in place is refused
  prometheus::Family<prometheus::Gauge>* unseen_;
  prometheus::Gauge* unseen_series_ = nullptr;  // while the watch cannot see the units
  std::string refused_reason_;
  prometheus::Histogram* duration_;
  prometheus::Gauge* last_reconcile_;
  prometheus::Gauge* last_success_;
  prometheus::Gauge* generation_;
  prometheus::Gauge* interval_;
  prometheus::Gauge* start_time_;
  // When each timestamp above was stamped, on the monotonic clock (with a
  // clock only; none: not stamped yet).
  ports::Clock* clock_ = nullptr;
  using Stamp = std::optional<std::chrono::steady_clock::time_point>;
  Stamp Stamped(std::chrono::system_clock::time_point wall) const;
  Stamp start_at_, reconcile_at_, success_at_;
  // Each stamp's value as last shown (start, last reconcile, last success).
  struct Shown {
    Stamp at;
    double seconds = 0;
  };
  mutable std::array<Shown, 3> shown_{};

  // mesh_host_resource_changes_total is kept here and rendered at each
  // scrape, not held as a prometheus::Family: a Family keeps each series as
  // a label map, a hash node and a counter object (about 600 bytes with
  // its index here), and under the default --metrics-resources all every
  // resource that ever changed has one, for the life of the daemon.
  struct ChangeCount {
    std::string kind;
    core::Outcome outcome;
    uint64_t count = 0;
  };
  std::map<std::string, std::vector<ChangeCount>> resource_changes_;
  // Series handed out, by resource or unit, so they can be removed.
  std::map<std::string, prometheus::Gauge*> resource_failed_;
  // on_failure: rollback units, by resource id.
  std::map<std::string, prometheus::Counter*> rollback_counters_;
  std::map<std::string, prometheus::Gauge*> held_gauges_;
  std::map<std::string, std::pair<uint64_t, prometheus::Gauge*>> resource_churn_;
  // The declaration the churn counts under (none before the first apply
  // of this process: that one is the baseline).
  std::optional<std::string> declaration_digest_;
  std::map<std::string, std::set<prometheus::Counter*>> unit_restart_counters_;
  std::map<std::string, prometheus::Counter*> unit_confirm_counters_;
  std::map<std::string, prometheus::Gauge*> unit_active_gauges_;
  std::map<std::string, prometheus::Counter*> unit_systemd_restarts_;
  std::map<std::string, uint32_t> last_n_restarts_;
  std::set<std::string> running_units_;  // declared running, from the last accepted apply
  // An accepted apply has been shown: a recorded view (the start's, a
  // refusal's) then changes nothing.
  bool applied_shown_ = false;
};

}  // namespace mesh::metrics
