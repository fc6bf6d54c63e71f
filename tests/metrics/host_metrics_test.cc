#include "metrics/host_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace mesh::metrics {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

core::ResourceOutcome Out(std::string id, std::string kind, core::Outcome outcome,
                          std::string unit = "") {
  core::ResourceOutcome o;
  o.id = std::move(id);
  o.kind = std::move(kind);
  o.outcome = outcome;
  if (!unit.empty()) {
    o.declared_unit = unit;
    o.unit_should_run = true;
    o.unit = core::UnitSnapshot{unit, "active", "running", "success", 0, 0, /*up=*/true};
  }
  return o;
}

reconcile::ApplyReport Report(std::vector<core::ResourceOutcome> outcomes,
                              reconcile::ApplyResult result = reconcile::ApplyResult::kOk) {
  reconcile::ApplyReport r;
  r.result = result;
  r.generation = 42;
  r.outcomes = std::move(outcomes);
  r.duration = std::chrono::milliseconds(1200);
  r.finished_at = std::chrono::system_clock::time_point(std::chrono::seconds(1796000000));
  return r;
}

TEST(HostMetricsTest, EveryMetricOfTheSpecAfterAScriptedSequence) {
  HostMetrics m("1.2.3");
  auto restarted = Out("jail.service", "service", core::Outcome::kRestarted, "fail2ban.service");
  restarted.host_acted = true;
  restarted.restart_reason = "restart_on";
  m.ObserveApply(Report({Out("jail.conf", "file", core::Outcome::kUpdated), restarted}));

  auto failed = Out("jail.service", "service", core::Outcome::kFailed, "fail2ban.service");
  failed.host_acted = true;
  failed.restart_reason = "restart_on";
  failed.confirm_failed = true;
  failed.unit->active_state = "failed";
  failed.unit->up = false;
  failed.unit->sub_state = "failed";
  m.ObserveApply(Report({Out("jail.conf", "file", core::Outcome::kUpdated), failed},
                        reconcile::ApplyResult::kFailed));
  std::string text = m.Serialize();
  EXPECT_THAT(
      text,
      HasSubstr(
          R"(mesh_host_resource_outcomes_total{kind="file",outcome="updated",resource="jail.conf"} 2)"));
  EXPECT_THAT(
      text,
      HasSubstr(
          R"(mesh_host_resource_outcomes_total{kind="service",outcome="failed",resource="jail.service"} 1)"));
  EXPECT_THAT(text,
              HasSubstr(R"(mesh_host_resource_failed{kind="service",resource="jail.service"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(mesh_host_resource_failed{kind="file",resource="jail.conf"} 0)"));
  EXPECT_THAT(text, HasSubstr(R"(mesh_host_unit_active{unit="fail2ban.service"} 0)"));
  EXPECT_THAT(
      text,
      HasSubstr(R"(mesh_host_unit_restarts_total{reason="restart_on",unit="fail2ban.service"} 2)"));
  EXPECT_THAT(text,
              HasSubstr(R"(mesh_host_unit_confirm_failures_total{unit="fail2ban.service"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(mesh_host_reconciles_total{result="ok"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(mesh_host_reconciles_total{result="failed"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(mesh_host_reconciles_total{result="refused"} 0)"));
  EXPECT_THAT(text, HasSubstr("mesh_host_reconcile_duration_seconds_count 2"));
  EXPECT_THAT(text, HasSubstr(R"(mesh_host_reconcile_duration_seconds_bucket{le="2.5"} 2)"));
  EXPECT_THAT(text, HasSubstr("mesh_host_last_reconcile_timestamp_seconds 1796000000"));
  EXPECT_THAT(text, HasSubstr("mesh_host_declaration_generation 42"));
  EXPECT_THAT(text, HasSubstr(R"(mesh_host_build_info{version="1.2.3"} 1)"));
  EXPECT_THAT(text,
              HasSubstr(R"(mesh_host_unit_systemd_restarts_total{unit="fail2ban.service"} 0)"));
}

// Issue 20: a counter born at 1 on the first restart is invisible to
// increase(): every counter a declared unit can have starts at 0.
TEST(HostMetricsTest, AUnitsCountersExistAtZeroFromItsFirstApply) {
  HostMetrics m("1.2.3");
  m.ObserveApply(Report({Out("web", "service", core::Outcome::kUnchanged, "web.service")}));
  std::string text = m.Serialize();
  for (const char* reason : {"declared", "restart_on", "was_dead"}) {
    EXPECT_THAT(text, HasSubstr("mesh_host_unit_restarts_total{reason=\"" + std::string(reason) +
                                "\",unit=\"web.service\"} 0"))
        << reason;
  }
  EXPECT_THAT(text, HasSubstr(R"(mesh_host_unit_confirm_failures_total{unit="web.service"} 0)"));
  EXPECT_THAT(text, HasSubstr(R"(mesh_host_unit_systemd_restarts_total{unit="web.service"} 0)"));
  EXPECT_THAT(text, HasSubstr(R"(mesh_host_reconciles_total{result="refused"} 0)"));
}

TEST(HostMetricsTest, SystemdRestartsCountedAcrossResets) {
  HostMetrics m("v");
  m.ObserveApply(Report({Out("d", "service", core::Outcome::kUnchanged, "d.service")}));
  core::UnitStatus s;
  s.active_state = "active";
  s.sub_state = "running";
  for (uint32_t n : {3u, 5u, 1u, 2u}) {  // 5 -> 1: reset-failed in between
    s.n_restarts = n;
    m.ObserveUnit("d.service", s, true);
  }
  // 3 (first sight) + 2 + 1 (after the reset) + 1 = 7
  EXPECT_THAT(m.Serialize(),
              HasSubstr(R"(mesh_host_unit_systemd_restarts_total{unit="d.service"} 7)"));
}

TEST(HostMetricsTest, LiveWatchMovesUnitActive) {
  HostMetrics m("v");
  m.ObserveApply(Report({Out("d", "service", core::Outcome::kUnchanged, "d.service")}));
  EXPECT_THAT(m.Serialize(), HasSubstr(R"(mesh_host_unit_active{unit="d.service"} 1)"));
  core::UnitStatus dead;
  dead.active_state = "failed";
  dead.sub_state = "failed";
  m.ObserveUnit("d.service", dead, false);
  EXPECT_THAT(m.Serialize(), HasSubstr(R"(mesh_host_unit_active{unit="d.service"} 0)"));
  m.ObserveUnit("undeclared.service", dead, false);
  EXPECT_THAT(m.Serialize(), Not(HasSubstr("undeclared.service")));
}

TEST(HostMetricsTest, PrunedResourcesAndUnitsLoseTheirSeries) {
  HostMetrics m("v");
  auto svc = Out("old", "service", core::Outcome::kStarted, "old.service");
  svc.host_acted = true;
  svc.restart_reason = "was_dead";
  m.ObserveApply(Report({Out("keep", "file", core::Outcome::kCreated), svc}));
  EXPECT_THAT(m.Serialize(), HasSubstr("old.service"));
  m.ObserveApply(Report({Out("keep", "file", core::Outcome::kUnchanged),
                         Out("old", "service", core::Outcome::kRemoved)}));
  std::string text = m.Serialize();
  EXPECT_THAT(text, Not(HasSubstr("old.service")));
  EXPECT_THAT(text, Not(HasSubstr(R"(resource="old")")));
  EXPECT_THAT(text, HasSubstr(R"(resource="keep")"));
}

TEST(HostMetricsTest, RefusalCountsButKeepsTheState) {
  HostMetrics m("v");
  m.ObserveApply(Report({Out("keep", "file", core::Outcome::kCreated)}));
  auto refused = Report({}, reconcile::ApplyResult::kRefused);
  refused.generation = 1;
  m.ObserveApply(refused);
  std::string text = m.Serialize();
  EXPECT_THAT(text, HasSubstr(R"(mesh_host_reconciles_total{result="refused"} 1)"));
  EXPECT_THAT(text, HasSubstr("mesh_host_declaration_generation 42"));
  EXPECT_THAT(text, HasSubstr(R"(resource="keep")"));
}

}  // namespace
}  // namespace mesh::metrics
