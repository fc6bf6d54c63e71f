#include "metrics/host_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "host/core/printable.h"

namespace mesh::metrics {
namespace {

// `family`'s series of `labels`, kept in `slot`: a series there of other
// labels (a unit renamed, a resource of another kind now) goes, or it
// would stay exposed, and counted by the alerts, for the daemon's life.
template <typename T>
T& Relabel(prometheus::Family<T>& family, T*& slot, const prometheus::Labels& labels) {
  T& now = family.Add(labels);
  if (slot != nullptr && slot != &now) family.Remove(slot);
  slot = &now;
  return now;
}

double Seconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

// Removes, with `remove`, every series of `series` whose key is not in `keep`.
template <typename Map, typename Remove>
void EraseUnlisted(Map& series, const std::set<std::string>& keep, Remove remove) {
  for (auto it = series.begin(); it != series.end();) {
    if (keep.contains(it->first)) {
      ++it;
      continue;
    }
    remove(it->second);
    it = series.erase(it);
  }
}

// The same for `keep` sorted: walked beside the map's own order, one
// comparison or two per key rather than a search.
template <typename Map, typename Remove>
void EraseUnlisted(Map& series, std::span<const std::string_view> keep, Remove remove) {
  auto k = keep.begin();
  for (auto it = series.begin(); it != series.end();) {
    std::string_view key = it->first;
    while (k != keep.end() && *k < key) ++k;
    if (k != keep.end() && *k == key) {
      ++it;
      continue;
    }
    remove(it->second);
    it = series.erase(it);
  }
}

constexpr const char* kOutcomesName = "mesh_host_resource_outcomes_total";
constexpr const char* kChangesName = "mesh_host_resource_changes_total";
constexpr const char* kChangesHelp =
    "Outcomes other than unchanged, by resource (with --metrics-resources failing: only failed "
    "and churning resources).";

// From a few milliseconds (a no-op apply) to minutes (large bundles).
const prometheus::Histogram::BucketBoundaries kDurationBuckets = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};

}  // namespace

HostMetrics::HostMetrics(const std::string& version, ResourceSeries series)
    : registry_(std::make_shared<prometheus::Registry>()), series_(series) {
  auto& r = *registry_;
  auto counters = [&r](const char* name, const char* help) {
    return &prometheus::BuildCounter().Name(name).Help(help).Register(r);
  };
  auto gauges = [&r](const char* name, const char* help) {
    return &prometheus::BuildGauge().Name(name).Help(help).Register(r);
  };
  // A family of one series without labels.
  auto gauge = [&gauges](const char* name, const char* help) {
    return &gauges(name, help)->Add({});
  };
  outcomes_ = counters(kOutcomesName, "Outcomes of resources, unchanged included, by kind.");
  resources_ = gauges("mesh_host_resources", "Declared resources, by kind.");
  failed_ = gauges("mesh_host_resource_failed",
                   "1 while the resource is failed (the series exists only then).");
  churn_ = gauges("mesh_host_resource_churn",
                  "Times the resource was created, updated or restarted again since the "
                  "declaration last changed (the series exists only while above 0).");
  // Every {kind, outcome} pair that can happen exists from the start, at
  // 0: a series born at 1 is one increase() cannot see. The rest never
  // exist (a credential is never reloaded: 20 series a host, never moving).
  for (core::Kind kind : core::kAllKinds) {
    resources_->Add({{"kind", std::string(core::KindName(kind))}});
    for (core::Outcome outcome : core::kAllOutcomes) {
      if (!core::OutcomeCanHappen(kind, outcome)) continue;
      outcomes_->Add({{"kind", std::string(core::KindName(kind))},
                      {"outcome", std::string(core::OutcomeName(outcome))}});
    }
  }
  unit_active_ = gauges("mesh_host_unit_active",
                        "1 when a unit declared running is running (active, activating or "
                        "reloading), followed live between applies.");
  unit_restarts_ = counters("mesh_host_unit_restarts_total",
                            "Starts and restarts the host asked systemd for, by reason.");
  systemd_restarts_ = counters("mesh_host_unit_systemd_restarts_total",
                               "systemd's own automatic restarts of the unit (NRestarts).");
  confirm_failures_ = counters("mesh_host_unit_confirm_failures_total",
                               "Second looks that found the unit not running as asked.");
  reconciles_ =
      counters("mesh_host_reconciles_total", "Reconciles, by result (ok, failed, refused).");
  refused_ = gauges("mesh_host_declaration_refused",
                    "1 while the declaration in place is refused, with the refusal as reason "
                    "(the series exists only then).");
  for (const char* result : {"ok", "failed", "refused"}) reconciles_->Add({{"result", result}});
  unseen_ = gauges("mesh_host_units_unseen",
                   "1 while the live unit watch has not seen the declared units for a refresh "
                   "period: mesh_host_unit_active shows their last look (the series exists "
                   "only then).");
  rollbacks_ = counters("mesh_host_rollbacks_total",
                        "Times the host put a unit declared on_failure: rollback back onto its "
                        "last good generation.");
  held_ = gauges("mesh_host_unit_held",
                 "The last good generation a unit declared on_failure: rollback is held at, "
                 "the daemon having refused a later one (the series exists only then).");
  duration_ = &prometheus::BuildHistogram()
                   .Name("mesh_host_reconcile_duration_seconds")
                   .Help("Time one reconcile took, the settle pause included.")
                   .Register(r)
                   .Add({}, kDurationBuckets);
  last_reconcile_ = gauge("mesh_host_last_reconcile_timestamp_seconds",
                          "When the last reconcile finished, in Unix seconds.");
  last_success_ = gauge("mesh_host_last_success_timestamp_seconds",
                        "When the last reconcile with result ok finished, in Unix seconds.");
  generation_ =
      gauge("mesh_host_declaration_generation", "Generation of the last applied declaration.");
  interval_ = gauge("mesh_host_reconcile_interval_seconds",
                    "The --interval between reconciles of mesh-host run.");
  start_time_ = gauge("mesh_host_start_time_seconds",
                      "When this mesh-host process started, in Unix seconds.");
  prometheus::BuildGauge()
      .Name("mesh_host_build_info")
      .Help("Always 1; the version of mesh-host.")
      .Register(r)
      .Add({{"version", version}})
      .Set(1);
}

HostMetrics::~HostMetrics() = default;

void HostMetrics::SetReconcileInterval(std::chrono::nanoseconds interval) {
  interval_->Set(std::chrono::duration<double>(interval).count());
}

void HostMetrics::SetStartTime(std::chrono::system_clock::time_point start) {
  std::lock_guard<std::mutex> lock(mu_);
  start_time_->Set(Seconds(start));
  start_at_ = Stamped(start);
}

// `wall`, a moment just past, on the monotonic clock: as far before its
// now as it is before the wall clock's now.
HostMetrics::Stamp HostMetrics::Stamped(std::chrono::system_clock::time_point wall) const {
  if (clock_ == nullptr) return std::nullopt;
  auto ago = std::max<std::chrono::nanoseconds>(clock_->Now() - wall, {});
  return clock_->Monotonic() - ago;
}

void HostMetrics::ObserveApply(const core::ApplyReport& report) {
  std::lock_guard<std::mutex> lock(mu_);
  reconciles_->Add({{"result", std::string(core::ApplyResultName(report.result))}}).Increment();
  duration_->Observe(std::chrono::duration<double>(report.duration).count());
  last_reconcile_->Set(Seconds(report.finished_at));
  reconcile_at_ = Stamped(report.finished_at);
  if (report.result == core::ApplyResult::kOk) {
    last_success_->Set(Seconds(report.finished_at));
    success_at_ = reconcile_at_;
  }
  ObserveRefusal(report);
  if (report.result == core::ApplyResult::kRefused) {
    if (report.recorded.has_value() && !applied_shown_) ObserveRecorded(*report.recorded);
    return;
  }
  // What it would have done is no change, no restart, no generation
  // applied: counted, the churn alert would fire for restarts never made.
  if (report.changed_nothing) return;
  applied_shown_ = true;
  generation_->Set(static_cast<double>(report.generation));

  bool same_declaration = declaration_digest_ == report.declaration_digest;
  if (!same_declaration) NewDeclaration(report.declaration_digest);
  std::vector<std::string_view> resources;
  resources.reserve(report.outcomes.size());
  std::set<std::string> units, running;
  std::map<std::string, uint64_t> by_kind;
  // Counted here, added once per pair: a family lookup hashes its labels.
  std::map<std::pair<std::string_view, core::Outcome>, uint64_t> counts;
  for (const core::ResourceOutcome& o : report.outcomes) {
    ++counts[{o.kind, o.outcome}];
    if (o.outcome == core::Outcome::kRemoved) continue;
    resources.push_back(o.id);
    ++by_kind[o.kind];
    ObserveResource(o, same_declaration);
    if (o.declared_unit().empty()) continue;
    const std::string& unit = o.declared_unit();
    units.insert(unit);
    if (o.unit_should_run()) running.insert(unit);
    CountUnitActions(o);
    ObserveRollback(o);
  }
  for (const auto& [key, n] : counts) {
    outcomes_
        ->Add({{"kind", std::string(key.first)},
               {"outcome", std::string(core::OutcomeName(key.second))}})
        .Increment(static_cast<double>(n));
  }
  running_units_ = running;
  for (core::Kind kind : core::kAllKinds) {
    std::string name(core::KindName(kind));
    resources_->Add({{"kind", name}}).Set(static_cast<double>(by_kind[name]));
  }
  std::sort(resources.begin(), resources.end());
  ForgetExcept(resources, units);
  ObserveUnitsOf(report.outcomes);
}

// Each unit declared running, as the outcome's snapshot shows it.
void HostMetrics::ObserveUnitsOf(const std::vector<core::ResourceOutcome>& outcomes) {
  for (const core::ResourceOutcome& o : outcomes) {
    if (!o.unit.has_value() || !o.unit_should_run()) continue;
    core::UnitStatus s;
    s.active_state = o.unit->active_state;
    s.sub_state = o.unit->sub_state;
    s.result = o.unit->result;
    s.n_restarts = o.unit->n_restarts;
    ObserveUnitLocked(o.unit->name, s, o.unit->up);
  }
}

// One series while the declaration in place is refused, its reason the
// refusal's first line, printable and cut: what the alert names. A new
// refusal replaces it; an accepted apply (ok or failed) removes it.
void HostMetrics::ObserveRefusal(const core::ApplyReport& report) {
  std::string reason;
  if (report.result == core::ApplyResult::kRefused) {
    std::string_view first = report.error;
    first = first.substr(0, first.find('\n'));
    reason = core::Printable(first, kRefusalReasonBytes);
    if (reason.empty()) reason = "refused";
  }
  if (refused_series_ != nullptr && refused_reason_ == reason) return;
  if (refused_series_ != nullptr) refused_->Remove(refused_series_);
  refused_series_ = nullptr;
  refused_reason_ = reason;
  if (reason.empty()) return;
  refused_series_ = &refused_->Add({{"reason", reason}});
  refused_series_->Set(1);
}

void HostMetrics::SetUnitsUnseen(bool unseen) {
  std::lock_guard<std::mutex> lock(mu_);
  if (unseen == (unseen_series_ != nullptr)) return;
  if (unseen) {
    unseen_series_ = &unseen_->Add({});
    unseen_series_->Set(1);
  } else {
    unseen_->Remove(unseen_series_);
    unseen_series_ = nullptr;
  }
}

void HostMetrics::ObserveRecordedAtStart(const core::RecordedState& recorded) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!applied_shown_) ObserveRecorded(recorded);
}

// A daemon started on a refused declaration: the recorded generation, the
// failed resources and the units (their counters at 0), so that the alerts
// see the machine as recorded. Nothing is counted: no apply happened.
void HostMetrics::ObserveRecorded(const core::RecordedState& recorded) {
  generation_->Set(static_cast<double>(recorded.generation));
  // A view replaces the one before it (the start's, then a refusal's): a
  // resource failed in the first and not in the second loses its series.
  std::set<std::string_view> failed_now;
  for (const core::ResourceOutcome& o : recorded.resources) {
    if (o.outcome == core::Outcome::kFailed) failed_now.insert(o.id);
  }
  for (auto it = resource_failed_.begin(); it != resource_failed_.end();) {
    if (failed_now.contains(it->first)) {
      ++it;
      continue;
    }
    failed_->Remove(it->second);
    it = resource_failed_.erase(it);
  }
  std::map<std::string, uint64_t> by_kind;
  running_units_.clear();
  for (const core::ResourceOutcome& o : recorded.resources) {
    if (o.unit_should_run() && !o.declared_unit().empty()) running_units_.insert(o.declared_unit());
  }
  for (const core::ResourceOutcome& o : recorded.resources) {
    ++by_kind[o.kind];
    if (o.outcome == core::Outcome::kFailed) {
      Relabel(*failed_, resource_failed_[o.id], {{"resource", o.id}, {"kind", o.kind}}).Set(1);
    }
    if (o.declared_unit().empty()) continue;
    CountUnitActions(o);
    ObserveRollback(o);
  }
  ObserveUnitsOf(recorded.resources);
  for (core::Kind kind : core::kAllKinds) {
    std::string name(core::KindName(kind));
    resources_->Add({{"kind", name}}).Set(static_cast<double>(by_kind[name]));
  }
}

// Churn is counted per declaration: a new one starts every resource at 0.
void HostMetrics::NewDeclaration(const std::string& digest) {
  for (auto& [id, churn] : resource_churn_) {
    if (churn.second != nullptr) churn_->Remove(churn.second);
  }
  resource_churn_.clear();
  declaration_digest_ = digest;
}

// Every counter a declared unit can have exists from its first apply, at 0
// (the Prometheus convention): a series born at 1 on the first restart is
// one increase() cannot see.
void HostMetrics::CountUnitActions(const core::ResourceOutcome& o) {
  const std::string& unit = o.declared_unit();
  for (core::RestartReason reason : core::kCountedRestartReasons) {
    unit_restart_counters_[unit].insert(&unit_restarts_->Add(
        {{"unit", unit}, {"reason", std::string(core::RestartReasonName(reason))}}));
  }
  const core::DeclaredUnit& d = o.declared.value_or_empty();
  // The apply's restart, then the rollback's onto the last good.
  for (std::optional<core::RestartReason> reason :
       {o.host_acted ? d.restart_reason : std::nullopt, d.rollback_restart}) {
    if (!reason.has_value()) continue;
    auto& rc = unit_restarts_->Add(
        {{"unit", unit}, {"reason", std::string(core::RestartReasonName(*reason))}});
    rc.Increment();
    unit_restart_counters_[unit].insert(&rc);
  }
  auto& cf = confirm_failures_->Add({{"unit", unit}});
  if (o.confirm_failed) cf.Increment();
  if (d.rollback_confirm_failed) cf.Increment();
  unit_confirm_counters_[unit] = &cf;
}

// The counter exists at 0 from the unit's first apply under on_failure:
// rollback; the gauge only while the unit is held.
void HostMetrics::ObserveRollback(const core::ResourceOutcome& o) {
  const core::DeclaredUnit& d = o.declared.value_or_empty();
  if (d.rollback || d.rolled_back) {
    auto& c =
        Relabel(*rollbacks_, rollback_counters_[o.id], {{"resource", o.id}, {"unit", d.unit}});
    if (d.rolled_back) c.Increment();
  } else if (auto c = rollback_counters_.find(o.id); c != rollback_counters_.end()) {
    rollbacks_->Remove(c->second);  // the opt-in was dropped
    rollback_counters_.erase(c);
  }
  auto held = held_gauges_.find(o.id);
  if (d.held.has_value()) {
    Relabel(*held_, held_gauges_[o.id], {{"resource", o.id}, {"unit", d.unit}})
        .Set(static_cast<double>(d.held->generation));
  } else if (held != held_gauges_.end()) {
    held_->Remove(held->second);
    held_gauges_.erase(held);
  }
}

void HostMetrics::ObserveResource(const core::ResourceOutcome& o, bool same_declaration) {
  const std::string& id = o.id;
  bool changed = o.outcome != core::Outcome::kUnchanged;
  bool failed = o.outcome == core::Outcome::kFailed;
  if (same_declaration &&
      (o.outcome == core::Outcome::kCreated || o.outcome == core::Outcome::kUpdated ||
       o.outcome == core::Outcome::kRestarted)) {
    auto& [count, gauge] = resource_churn_[id];
    ++count;
    Relabel(*churn_, gauge, {{"resource", id}, {"kind", o.kind}}).Set(static_cast<double>(count));
  }
  auto churning = resource_churn_.find(id);
  bool churns = churning != resource_churn_.end() && churning->second.first > 0;

  auto failed_it = resource_failed_.find(id);
  if (failed) {
    Relabel(*failed_, resource_failed_[id], {{"resource", id}, {"kind", o.kind}}).Set(1);
  } else if (failed_it != resource_failed_.end()) {
    failed_->Remove(failed_it->second);
    resource_failed_.erase(failed_it);
  }

  bool keeps_series = series_ == ResourceSeries::kAll || failed || churns;
  if (!keeps_series) {
    resource_changes_.erase(id);
    return;
  }
  if (!changed) return;
  std::vector<ChangeCount>& counts = resource_changes_[id];
  auto it = std::find_if(counts.begin(), counts.end(), [&](const ChangeCount& c) {
    return c.outcome == o.outcome && c.kind == o.kind;
  });
  if (it == counts.end()) it = counts.insert(counts.end(), {o.kind, o.outcome, 0});
  ++it->count;
}

void HostMetrics::ObserveUnit(const std::string& unit, const core::UnitStatus& status, bool up) {
  std::lock_guard<std::mutex> lock(mu_);
  ObserveUnitLocked(unit, status, up);
}

void HostMetrics::ObserveUnitLocked(const std::string& unit, const core::UnitStatus& status,
                                    bool up) {
  if (!running_units_.contains(unit)) return;  // only units declared running
  auto& g = unit_active_->Add({{"unit", unit}});
  g.Set(up ? 1 : 0);
  unit_active_gauges_[unit] = &g;
  auto& sr = systemd_restarts_->Add({{"unit", unit}});
  unit_systemd_restarts_[unit] = &sr;
  // A counter of systemd's NRestarts, at 0 at first sight (SPEC): those
  // restarts happened before this process looked, and a series born at
  // NRestarts would read, after the host itself restarts, as a reset
  // followed by that many new restarts. Growth adds the difference; a drop
  // (reset-failed, a restart by hand, reboot) means the new value counts
  // restarts since the reset.
  uint32_t n = status.n_restarts;
  auto last = last_n_restarts_.find(unit);
  if (last == last_n_restarts_.end()) {
    // baseline only
  } else if (n < last->second) {
    sr.Increment(n);
  } else {
    sr.Increment(n - last->second);
  }
  last_n_restarts_[unit] = n;
}

void HostMetrics::ForgetExcept(std::span<const std::string_view> resources,
                               const std::set<std::string>& units) {
  EraseUnlisted(resource_changes_, resources, [](auto&) {});
  EraseUnlisted(resource_failed_, resources, [&](auto* g) { failed_->Remove(g); });
  EraseUnlisted(rollback_counters_, resources, [&](auto* c) { rollbacks_->Remove(c); });
  EraseUnlisted(held_gauges_, resources, [&](auto* g) { held_->Remove(g); });
  EraseUnlisted(resource_churn_, resources, [&](auto& churn) {
    if (churn.second != nullptr) churn_->Remove(churn.second);
  });
  EraseUnlisted(unit_restart_counters_, units, [&](auto& counters) {
    for (auto* c : counters) unit_restarts_->Remove(c);
  });
  EraseUnlisted(unit_confirm_counters_, units, [&](auto* c) { confirm_failures_->Remove(c); });
  EraseUnlisted(unit_active_gauges_, running_units_, [&](auto* g) { unit_active_->Remove(g); });
  EraseUnlisted(unit_systemd_restarts_, running_units_,
                [&](auto* c) { systemd_restarts_->Remove(c); });
  for (auto it = last_n_restarts_.begin(); it != last_n_restarts_.end();) {
    it = running_units_.contains(it->first) ? std::next(it) : last_n_restarts_.erase(it);
  }
}

std::string HostMetrics::Serialize() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (clock_ != nullptr) {
    auto wall = clock_->Now();
    auto mono = clock_->Monotonic();
    const std::array<std::pair<prometheus::Gauge*, const Stamp*>, 3> stamps = {
        {{start_time_, &start_at_},
         {last_reconcile_, &reconcile_at_},
         {last_success_, &success_at_}}};
    for (size_t k = 0; k < stamps.size(); ++k) {
      const auto& [gauge, at] = stamps[k];
      if (!at->has_value()) continue;
      // The two clocks are read apart by a varying few nanoseconds (more
      // where reading one is a system call): a value moved by that alone
      // is a new value each scrape, and `changes()` of the start time
      // (MeshHostRestarting) counted a restart at every one. A stamp's
      // value moves only when the wall clock stepped by a second or more.
      double now = Seconds(wall - (mono - **at));
      Shown& shown = shown_[k];
      if (shown.at != *at || std::abs(now - shown.seconds) >= 1.0) shown = {*at, now};
      gauge->Set(shown.seconds);
    }
  }
  std::vector<prometheus::MetricFamily> families = registry_->Collect();
  // As a Family would render it: absent while it has no series; labels in
  // name order; placed after the outcomes it breaks down.
  if (!resource_changes_.empty()) {
    prometheus::MetricFamily changes{
        kChangesName, kChangesHelp, prometheus::MetricType::Counter, {}};
    for (const auto& [id, counts] : resource_changes_) {
      for (const ChangeCount& c : counts) {
        prometheus::ClientMetric& m = changes.metric.emplace_back();
        m.label = {{"kind", c.kind},
                   {"outcome", std::string(core::OutcomeName(c.outcome))},
                   {"resource", id}};
        m.counter.value = static_cast<double>(c.count);
      }
    }
    auto after = std::find_if(families.begin(), families.end(),
                              [](const auto& f) { return f.name == kOutcomesName; });
    families.insert(after == families.end() ? after : after + 1, std::move(changes));
  }
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace mesh::metrics
