#include "metrics/host_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "tests/fakes/fake_clock.h"

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
    o.mutable_declared().unit = unit;
    o.mutable_declared().state = "running";
    o.unit = core::UnitSnapshot{unit, "active", "running", "success", 0, 0, /*up=*/true};
  }
  return o;
}

core::ApplyReport Report(std::vector<core::ResourceOutcome> outcomes,
                         core::ApplyResult result = core::ApplyResult::kOk,
                         std::string declaration = "decl-1") {
  core::ApplyReport r;
  r.result = result;
  r.declaration_digest = std::move(declaration);
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
  restarted.mutable_declared().restart_reason = core::RestartReason::kRestartOn;
  m.ObserveApply(Report({Out("jail.conf", "file", core::Outcome::kUpdated), restarted}));

  auto failed = Out("jail.service", "service", core::Outcome::kFailed, "fail2ban.service");
  failed.host_acted = true;
  failed.mutable_declared().restart_reason = core::RestartReason::kRestartOn;
  failed.confirm_failed = true;
  failed.unit->active_state = "failed";
  failed.unit->up = false;
  failed.unit->sub_state = "failed";
  m.ObserveApply(Report({Out("jail.conf", "file", core::Outcome::kUpdated), failed},
                        core::ApplyResult::kFailed));
  std::string text = m.Serialize();
  EXPECT_THAT(text,
              HasSubstr(R"(mesh_host_resource_outcomes_total{kind="file",outcome="updated"} 2)"));
  EXPECT_THAT(text,
              HasSubstr(R"(mesh_host_resource_outcomes_total{kind="service",outcome="failed"} 1)"));
  EXPECT_THAT(
      text, HasSubstr(R"(mesh_host_resource_outcomes_total{kind="archive",outcome="created"} 0)"));
  EXPECT_THAT(
      text,
      HasSubstr(
          R"(mesh_host_resource_changes_total{kind="file",outcome="updated",resource="jail.conf"} 2)"));
  EXPECT_THAT(
      text,
      HasSubstr(
          R"(mesh_host_resource_changes_total{kind="service",outcome="failed",resource="jail.service"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(mesh_host_resources{kind="file"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(mesh_host_resources{kind="service"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(mesh_host_resources{kind="process"} 0)"));
  EXPECT_THAT(text,
              HasSubstr(R"(mesh_host_resource_failed{kind="service",resource="jail.service"} 1)"));
  EXPECT_THAT(text, Not(HasSubstr(R"(mesh_host_resource_failed{kind="file")")))
      << "present only while failed";
  // The same declaration, jail.conf updated again: churn.
  EXPECT_THAT(text, HasSubstr(R"(mesh_host_resource_churn{kind="file",resource="jail.conf"} 1)"));
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
// A value of one series in the text, by its full name and labels.
double ValueOf(const std::string& text, const std::string& series) {
  auto at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + series.size() + 2));
}

// The wall clock stepped back a year after a success (NTP at boot on a
// board whose clock ran ahead): the timestamps move with it, so that
// time() - last success stays what really passed, and
// MeshHostReconcileStale is not held off for a year.
// An apply that became a plan (its intent could not be saved) said what it
// would have done: "restarted" four times over four SIGHUPs counted four
// restarts, the churn of a unit never touched, and set the generation it
// never applied. It counts as a failed reconcile, and nothing more.
TEST(HostMetricsTest, AnApplyThatChangedNothingCountsNoChange) {
  HostMetrics m("1.2.3");
  auto restarted = Out("web", "service", core::Outcome::kRestarted, "web.service");
  restarted.host_acted = true;
  restarted.mutable_declared().restart_reason = core::RestartReason::kRestartOn;
  m.ObserveApply(Report({Out("web.conf", "file", core::Outcome::kUnchanged), restarted}));
  std::string before = m.Serialize();
  core::ApplyReport would = Report({Out("web.conf", "file", core::Outcome::kUpdated), restarted},
                                   core::ApplyResult::kFailed, "decl-2");
  would.generation = 44;
  would.changed_nothing = true;
  would.error = "intent not saved: No space left on device; nothing was changed";
  for (int i = 0; i < 4; ++i) m.ObserveApply(would);
  std::string text = m.Serialize();
  EXPECT_THAT(text, HasSubstr("mesh_host_reconciles_total{result=\"failed\"} 4"));
  EXPECT_THAT(text, HasSubstr("mesh_host_declaration_generation 42"));
  EXPECT_THAT(text,
              HasSubstr("mesh_host_resource_changes_total{kind=\"service\",outcome=\"restarted\","
                        "resource=\"web\"} 1"));
  EXPECT_THAT(text, Not(HasSubstr("outcome=\"updated\",resource=\"web.conf\"} 1")));
}

TEST(HostMetricsTest, TimestampsFollowAWallClockStepped) {
  fakes::FakeClock clock;
  HostMetrics metrics("v");
  metrics.SetClock(&clock);
  metrics.SetStartTime(clock.Now());
  clock.Advance(std::chrono::seconds(10));
  core::ApplyReport ok = Report({});
  ok.finished_at = clock.Now();
  metrics.ObserveApply(ok);
  clock.Advance(std::chrono::seconds(60));
  auto seconds = [&] {
    return std::chrono::duration<double>(clock.Now().time_since_epoch()).count();
  };
  std::string before = metrics.Serialize();
  EXPECT_DOUBLE_EQ(seconds() - ValueOf(before, "mesh_host_last_success_timestamp_seconds"), 60);
  EXPECT_DOUBLE_EQ(seconds() - ValueOf(before, "mesh_host_start_time_seconds"), 70);

  clock.StepWall(-std::chrono::hours(24 * 365));
  std::string after = metrics.Serialize();
  EXPECT_DOUBLE_EQ(seconds() - ValueOf(after, "mesh_host_last_success_timestamp_seconds"), 60);
  EXPECT_DOUBLE_EQ(seconds() - ValueOf(after, "mesh_host_last_reconcile_timestamp_seconds"), 60);
  EXPECT_DOUBLE_EQ(seconds() - ValueOf(after, "mesh_host_start_time_seconds"), 70);
}

// The timestamps are now less the monotonic time since, read from two
// clocks a varying few nanoseconds or microseconds apart: the start time
// printed a new value at every scrape, and MeshHostRestarting
// (changes(mesh_host_start_time_seconds[1h]) > 2) fired on hosts that
// never restarted. A step of the wall clock is still followed.
TEST(HostMetricsTest, TheStartTimeDoesNotMoveWithTheReadingsJitter) {
  fakes::FakeClock clock;
  HostMetrics metrics("v");
  metrics.SetClock(&clock);
  metrics.SetStartTime(clock.Now());
  auto line = [&] {
    std::istringstream text(metrics.Serialize());
    for (std::string l; std::getline(text, l);) {
      if (l.starts_with("mesh_host_start_time_seconds ")) return l;
    }
    return std::string("(none)");
  };
  std::string first = line();
  clock.StepWall(std::chrono::microseconds(3));
  EXPECT_EQ(line(), first);
  clock.StepWall(-std::chrono::microseconds(5));
  EXPECT_EQ(line(), first);
  clock.StepWall(-std::chrono::hours(1));
  EXPECT_NE(line(), first) << "a step of the wall clock is followed";
}

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

// on_failure: rollback: the counter at 0 from the first apply, 1 after a
// rollback; the held gauge is the last good generation, present only while
// held; dropping the opt-in drops the counter.
TEST(HostMetricsTest, RollbacksAndHolds) {
  HostMetrics m("1.2.3");
  auto jail = [](bool rolled_back, bool held, bool rollback = true) {
    core::ResourceOutcome o =
        Out("jaild", "service", held ? core::Outcome::kFailed : core::Outcome::kUnchanged,
            "jaild.service");
    o.mutable_declared().rollback = rollback;
    o.mutable_declared().rolled_back = rolled_back;
    if (held) o.mutable_declared().held = core::HeldAt{14, 15, "2026-12-03T18:00:00Z"};
    return o;
  };
  m.ObserveApply(Report({jail(false, false)}));
  EXPECT_THAT(m.Serialize(),
              HasSubstr(R"(mesh_host_rollbacks_total{resource="jaild",unit="jaild.service"} 0)"));
  EXPECT_THAT(m.Serialize(), Not(HasSubstr("mesh_host_unit_held{")));
  m.ObserveApply(Report({jail(true, true)}, core::ApplyResult::kFailed, "decl-2"));
  EXPECT_THAT(m.Serialize(),
              HasSubstr(R"(mesh_host_rollbacks_total{resource="jaild",unit="jaild.service"} 1)"));
  EXPECT_THAT(m.Serialize(),
              HasSubstr(R"(mesh_host_unit_held{resource="jaild",unit="jaild.service"} 14)"));
  m.ObserveApply(Report({jail(false, true)}, core::ApplyResult::kFailed, "decl-2"));
  EXPECT_THAT(m.Serialize(),
              HasSubstr(R"(mesh_host_rollbacks_total{resource="jaild",unit="jaild.service"} 1)"))
      << "held: no second rollback counted";
  m.ObserveApply(Report({jail(false, false)}, core::ApplyResult::kOk, "decl-3"));
  EXPECT_THAT(m.Serialize(), Not(HasSubstr("mesh_host_unit_held{")));
  m.ObserveApply(Report({jail(false, false, false)}, core::ApplyResult::kOk, "decl-4"));
  EXPECT_THAT(m.Serialize(), Not(HasSubstr("mesh_host_rollbacks_total{")));
}

// A resource's series whose labels change with it (its unit renamed at each
// release, a failed resource of another kind now) went on beside the new
// one: one more series left per release, for the daemon's life.
TEST(HostMetricsTest, ASeriesWhoseLabelsChangeIsReplaced) {
  HostMetrics m("1.2.3");
  auto app = [](const std::string& unit) {
    core::ResourceOutcome o = Out("app", "process", core::Outcome::kFailed, unit);
    o.mutable_declared().rollback = true;
    o.mutable_declared().held = core::HeldAt{14, 15, "2026-12-03T18:00:00Z"};
    return o;
  };
  m.ObserveApply(Report({app("app-v7.service")}, core::ApplyResult::kFailed, "decl-1"));
  m.ObserveApply(Report({app("app-v8.service")}, core::ApplyResult::kFailed, "decl-2"));
  std::string text = m.Serialize();
  EXPECT_THAT(text,
              HasSubstr(R"(mesh_host_rollbacks_total{resource="app",unit="app-v8.service"})"));
  EXPECT_THAT(text, HasSubstr(R"(mesh_host_unit_held{resource="app",unit="app-v8.service"} 14)"));
  EXPECT_THAT(text, Not(HasSubstr("app-v7.service"))) << text;
  core::ResourceOutcome file = Out("app", "file", core::Outcome::kFailed);
  m.ObserveApply(Report({file}, core::ApplyResult::kFailed, "decl-3"));
  text = m.Serialize();
  EXPECT_THAT(text, HasSubstr(R"(mesh_host_resource_failed{kind="file",resource="app"} 1)"));
  EXPECT_THAT(text, Not(HasSubstr(R"(mesh_host_resource_failed{kind="process")"))) << text;
}

TEST(HostMetricsTest, SystemdRestartsCountedAcrossResets) {
  HostMetrics m("v");
  core::ResourceOutcome first = Out("d", "service", core::Outcome::kUnchanged, "d.service");
  first.unit->n_restarts = 3;
  m.ObserveApply(Report({first}));
  core::UnitStatus s;
  s.active_state = "active";
  s.sub_state = "running";
  // SPEC: a unit's counter starts at 0. Born at NRestarts, a host that
  // restarts itself turned 5 into 3: a reset and three new restarts to
  // increase(), and MeshHostUnitFlapping for a unit quiet for weeks.
  EXPECT_THAT(m.Serialize(),
              HasSubstr(R"(mesh_host_unit_systemd_restarts_total{unit="d.service"} 0)"))
      << "restarts before the first sight are not new";
  for (uint32_t n : {5u, 1u, 2u}) {  // 5 -> 1: reset-failed in between
    s.n_restarts = n;
    m.ObserveUnit("d.service", s, true);
  }
  // 0 (first sight) + 2 + 1 (after the reset) + 1 = 4
  EXPECT_THAT(m.Serialize(),
              HasSubstr(R"(mesh_host_unit_systemd_restarts_total{unit="d.service"} 4)"));
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

// A watch that cannot see systemd leaves unit_active at its last look, so
// it must say so in a series of its own: only while it is so, once.
TEST(HostMetricsTest, UnitsUnseenIsOneSeriesOnlyWhileTheWatchIsBlind) {
  HostMetrics m("v");
  m.ObserveApply(Report({Out("d", "service", core::Outcome::kUnchanged, "d.service")}));
  EXPECT_THAT(m.Serialize(), Not(HasSubstr("mesh_host_units_unseen 1")));
  m.SetUnitsUnseen(true);
  m.SetUnitsUnseen(true);
  std::string blind = m.Serialize();
  EXPECT_THAT(blind, HasSubstr("\nmesh_host_units_unseen 1\n"));
  EXPECT_THAT(blind, HasSubstr(R"(mesh_host_unit_active{unit="d.service"} 1)"));
  m.ObserveApply(Report({Out("d", "service", core::Outcome::kUnchanged, "d.service")}));
  EXPECT_THAT(m.Serialize(), HasSubstr("\nmesh_host_units_unseen 1\n"))
      << "an apply's own looks are not the watch's: only the watch clears it";
  m.SetUnitsUnseen(false);
  EXPECT_THAT(m.Serialize(), Not(HasSubstr("mesh_host_units_unseen 1")));
  m.SetUnitsUnseen(false);
  EXPECT_THAT(m.Serialize(), Not(HasSubstr("mesh_host_units_unseen 1")));
}

TEST(HostMetricsTest, PrunedResourcesAndUnitsLoseTheirSeries) {
  HostMetrics m("v");
  auto svc = Out("old", "service", core::Outcome::kStarted, "old.service");
  svc.host_acted = true;
  svc.mutable_declared().restart_reason = core::RestartReason::kWasDead;
  m.ObserveApply(Report({Out("keep", "file", core::Outcome::kCreated), svc}));
  EXPECT_THAT(m.Serialize(), HasSubstr("old.service"));
  m.ObserveApply(Report({Out("keep", "file", core::Outcome::kUnchanged),
                         Out("old", "service", core::Outcome::kRemoved)}));
  std::string text = m.Serialize();
  EXPECT_THAT(text, Not(HasSubstr("old.service")));
  EXPECT_THAT(text, Not(HasSubstr(R"(resource="old")")));
  EXPECT_THAT(text, HasSubstr(R"(resource="keep")"));
  EXPECT_THAT(
      text, HasSubstr(R"(mesh_host_resource_outcomes_total{kind="service",outcome="removed"} 1)"));
}

TEST(HostMetricsTest, RefusalCountsButKeepsTheState) {
  HostMetrics m("v");
  m.ObserveApply(Report({Out("keep", "file", core::Outcome::kCreated)}));
  auto refused = Report({}, core::ApplyResult::kRefused);
  refused.generation = 1;
  m.ObserveApply(refused);
  std::string text = m.Serialize();
  EXPECT_THAT(text, HasSubstr(R"(mesh_host_reconciles_total{result="refused"} 1)"));
  EXPECT_THAT(text, HasSubstr("mesh_host_declaration_generation 42"));
  EXPECT_THAT(text, HasSubstr(R"(resource="keep")"));
}

// A refused push alerts on its own: one series naming the refusal while it
// stands, replaced by the next refusal, gone at the next accepted apply.
TEST(HostMetricsTest, ARefusedDeclarationIsOneSeriesNamingTheRefusal) {
  HostMetrics m("v");
  m.ObserveApply(Report({Out("keep", "file", core::Outcome::kCreated)}));
  EXPECT_THAT(m.Serialize(), Not(HasSubstr("mesh_host_declaration_refused{")));
  auto refused = Report({}, core::ApplyResult::kRefused);
  refused.error = "declaration, resource \"x\": field \"mode\": must be 3 or 4 octal digits\nmore";
  m.ObserveApply(refused);
  m.ObserveApply(refused);
  std::string text = m.Serialize();
  EXPECT_THAT(text,
              HasSubstr(R"(mesh_host_declaration_refused{reason="declaration, resource \"x\": )"
                        R"(field \"mode\": must be 3 or 4 octal digits"} 1)"));
  refused.error = std::string("bad \x1b[31m") + std::string(500, 'y');
  m.ObserveApply(refused);
  text = m.Serialize();
  size_t series = 0;
  for (size_t at = text.find("mesh_host_declaration_refused{"); at != std::string::npos;
       at = text.find("mesh_host_declaration_refused{", at + 1)) {
    ++series;
  }
  EXPECT_EQ(series, 1u) << "one refusal at a time";
  EXPECT_THAT(text, HasSubstr(R"(reason="bad \\x1b[31myyy)"));
  EXPECT_THAT(text, Not(HasSubstr(std::string(300, 'y'))));
  m.ObserveApply(
      Report({Out("keep", "file", core::Outcome::kUnchanged)}, core::ApplyResult::kFailed));
  EXPECT_THAT(m.Serialize(), Not(HasSubstr("mesh_host_declaration_refused{")));
}

// Issue 38 (9): the record at the daemon's start gives the units' series
// from the first scrape. A refusal then shows its own recorded view, which
// replaces the start's: a resource failed at the start and not now loses
// its failed series (it kept alerting for as long as the refusal lasted).
TEST(HostMetricsTest, TheStartsRecordIsReplacedByARefusalsAndByAnApply) {
  HostMetrics m("v");
  core::RecordedState start{"edge-1", 41, "d", {}};
  start.resources.push_back(Out("web", "service", core::Outcome::kFailed, "web.service"));
  start.resources.back().unit->up = false;
  m.ObserveRecordedAtStart(start);
  std::string text = m.Serialize();
  EXPECT_THAT(text, HasSubstr(R"(mesh_host_unit_active{unit="web.service"} 0)"));
  EXPECT_THAT(text, HasSubstr(R"(mesh_host_resource_failed{kind="service",resource="web"} 1)"));
  EXPECT_THAT(text, HasSubstr("mesh_host_declaration_generation 41"));

  auto refused = Report({}, core::ApplyResult::kRefused);
  refused.error = "declaration: invalid JSON";
  refused.recorded = core::RecordedState{
      "edge-1", 41, "d", {Out("web", "service", core::Outcome::kUnchanged, "web.service")}};
  m.ObserveApply(refused);
  text = m.Serialize();
  EXPECT_THAT(text, Not(HasSubstr(R"(mesh_host_resource_failed{kind="service",resource="web"})")));
  EXPECT_THAT(text, HasSubstr(R"(mesh_host_unit_active{unit="web.service"} 1)"));

  m.ObserveApply(Report({Out("web", "service", core::Outcome::kUnchanged, "web.service")}));
  start.generation = 7;
  m.ObserveRecordedAtStart(start);
  m.ObserveApply(refused);
  EXPECT_THAT(m.Serialize(), HasSubstr("mesh_host_declaration_generation 42"))
      << "once an apply is shown, no recorded view replaces it";
}

// A rollback is two restarts the host asked for in one apply (onto the new
// generation, then back onto the last good), and up to two failed second
// looks: each counted, or MeshHostUnitFlapping undercounts.
TEST(HostMetricsTest, ARollbacksOwnRestartIsCounted) {
  HostMetrics m("v");
  core::ResourceOutcome o = Out("jaild", "service", core::Outcome::kFailed, "jaild.service");
  o.host_acted = true;
  o.confirm_failed = true;
  o.mutable_declared().restart_reason = core::RestartReason::kRestartOn;
  o.mutable_declared().rollback = true;
  o.mutable_declared().rolled_back = true;
  o.mutable_declared().rollback_restart = core::RestartReason::kRestartOn;
  o.mutable_declared().rollback_confirm_failed = true;
  m.ObserveApply(Report({o}, core::ApplyResult::kFailed));
  std::string text = m.Serialize();
  EXPECT_THAT(
      text,
      HasSubstr(R"(mesh_host_unit_restarts_total{reason="restart_on",unit="jaild.service"} 2)"));
  EXPECT_THAT(text, HasSubstr(R"(mesh_host_unit_confirm_failures_total{unit="jaild.service"} 2)"));
}

// A held unit in the recorded view (a restart, then a refused push): its
// held gauge and its opt-in's counter are there, as after the apply that
// held it; MeshHostRolledBack does not resolve while it is held.
TEST(HostMetricsTest, ARecordedHoldKeepsItsSeries) {
  HostMetrics m("v");
  core::ResourceOutcome jail = Out("jaild", "service", core::Outcome::kFailed, "jaild.service");
  jail.mutable_declared().rollback = true;
  jail.mutable_declared().held = core::HeldAt{14, 15, "2026-12-03T18:00:00Z"};
  core::RecordedState start{"edge-1", 15, "d", {jail}};
  m.ObserveRecordedAtStart(start);
  std::string text = m.Serialize();
  EXPECT_THAT(text, HasSubstr(R"(mesh_host_unit_held{resource="jaild",unit="jaild.service"} 14)"));
  EXPECT_THAT(text,
              HasSubstr(R"(mesh_host_rollbacks_total{resource="jaild",unit="jaild.service"} 0)"));
}

// Counters exist from 0 for what can happen, and only that: 43 series of
// kind and outcome, not 63, of which 20 could never move.
TEST(HostMetricsTest, OutcomeCountersOnlyForWhatCanHappen) {
  std::string text = HostMetrics("v").Serialize();
  size_t pairs = 0;
  for (size_t at = text.find("\nmesh_host_resource_outcomes_total{"); at != std::string::npos;
       at = text.find("\nmesh_host_resource_outcomes_total{", at + 1)) {
    ++pairs;
  }
  EXPECT_EQ(pairs, 5u * 5 + 2u * 9);
  EXPECT_THAT(
      text, HasSubstr(R"(mesh_host_resource_outcomes_total{kind="service",outcome="reloaded"} 0)"));
  EXPECT_THAT(
      text,
      HasSubstr(R"(mesh_host_resource_outcomes_total{kind="credential",outcome="removed"} 0)"));
  EXPECT_THAT(text, Not(HasSubstr(R"(kind="credential",outcome="reloaded")")));
  EXPECT_THAT(text, Not(HasSubstr(R"(kind="file",outcome="restarted")")));
  for (core::Kind kind : core::kAllKinds) {
    for (core::Outcome o :
         {core::Outcome::kCreated, core::Outcome::kUpdated, core::Outcome::kUnchanged,
          core::Outcome::kRemoved, core::Outcome::kFailed}) {
      EXPECT_TRUE(core::OutcomeCanHappen(kind, o)) << core::KindName(kind);
    }
  }
}

// Counts the sample lines of the exposition (not # HELP / # TYPE).
size_t Series(const std::string& text) {
  size_t n = 0;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    if (end > at && text[at] != '#') ++n;
    at = end + 1;
  }
  return n;
}

std::vector<core::ResourceOutcome> Files(size_t n, core::Outcome outcome) {
  std::vector<core::ResourceOutcome> out;
  for (size_t i = 0; i < n; ++i) out.push_back(Out("f" + std::to_string(i), "file", outcome));
  return out;
}

// Issue 21: 10,000 healthy files after any number of unchanged applies
// were 30,027 series (one per resource and outcome it ever had, one failed
// gauge each). Now about one per resource, and a few hundred with
// --metrics-resources failing.
TEST(HostMetricsTest, SeriesStayBoundedByResourcesNotByApplies) {
  HostMetrics all("v");
  HostMetrics failing("v", ResourceSeries::kFailing);
  for (HostMetrics* m : {&all, &failing}) {
    m->ObserveApply(Report(Files(10000, core::Outcome::kCreated)));
    for (int i = 0; i < 5; ++i) m->ObserveApply(Report(Files(10000, core::Outcome::kUnchanged)));
  }
  size_t fixed = Series(HostMetrics("v").Serialize());
  EXPECT_EQ(Series(all.Serialize()), fixed + 10000) << "one series per resource that changed";
  EXPECT_EQ(Series(failing.Serialize()), fixed);
  EXPECT_LT(fixed, 150u);
  EXPECT_THAT(
      all.Serialize(),
      HasSubstr(R"(mesh_host_resource_outcomes_total{kind="file",outcome="unchanged"} 50000)"));

  // A failing resource keeps (or gains) its own series in either mode.
  auto files = Files(10000, core::Outcome::kUnchanged);
  files[7].outcome = core::Outcome::kFailed;
  failing.ObserveApply(Report(files));
  std::string text = failing.Serialize();
  EXPECT_THAT(text, HasSubstr(R"(mesh_host_resource_failed{kind="file",resource="f7"} 1)"));
  EXPECT_THAT(
      text,
      HasSubstr(
          R"(mesh_host_resource_changes_total{kind="file",outcome="failed",resource="f7"} 1)"));
  EXPECT_EQ(Series(text), fixed + 2);
  // Mended: gone again.
  failing.ObserveApply(
      Report(Files(10000, core::Outcome::kUpdated), core::ApplyResult::kOk, "decl-2"));
  EXPECT_EQ(Series(failing.Serialize()), fixed);
}

// Issue 210's shape, judged by the host: changed again and again under one
// declaration. A new declaration explains its changes and starts over.
TEST(HostMetricsTest, ChurnCountsChangesAgainUnderOneDeclaration) {
  HostMetrics m("v", ResourceSeries::kFailing);
  auto runtime = [](core::Outcome outcome) {
    return std::vector<core::ResourceOutcome>{Out("conf", "file", core::Outcome::kUnchanged),
                                              Out("node-tools.runtime", "process", outcome)};
  };
  m.ObserveApply(Report(runtime(core::Outcome::kCreated)));  // the baseline
  EXPECT_THAT(m.Serialize(), Not(HasSubstr("mesh_host_resource_churn{")));
  m.ObserveApply(Report(runtime(core::Outcome::kUnchanged)));
  for (int again = 1; again <= 3; ++again) {
    m.ObserveApply(
        Report(runtime(again == 2 ? core::Outcome::kRestarted : core::Outcome::kCreated)));
    std::string text = m.Serialize();
    EXPECT_THAT(
        text,
        HasSubstr(R"(mesh_host_resource_churn{kind="process",resource="node-tools.runtime"} )" +
                  std::to_string(again) + "\n"));
    EXPECT_THAT(
        text,
        HasSubstr(
            R"(mesh_host_resource_changes_total{kind="process",outcome="created",resource="node-tools.runtime"})"))
        << "a churning resource keeps its series under --metrics-resources failing";
    EXPECT_THAT(text, Not(HasSubstr(R"(resource="conf")")));
  }
  m.ObserveApply(Report(runtime(core::Outcome::kUpdated), core::ApplyResult::kOk, "decl-2"));
  EXPECT_THAT(m.Serialize(), Not(HasSubstr("mesh_host_resource_churn{")));
}

TEST(HostMetricsTest, ADeclarationThatChangesEveryApplyNeverChurns) {
  HostMetrics m("v");
  for (int i = 0; i < 10; ++i) {
    m.ObserveApply(Report({Out("app.conf", "file", core::Outcome::kUpdated)},
                          core::ApplyResult::kOk, "decl-" + std::to_string(i)));
  }
  std::string text = m.Serialize();
  EXPECT_THAT(text, Not(HasSubstr("mesh_host_resource_churn{")));
  EXPECT_THAT(
      text,
      HasSubstr(
          R"(mesh_host_resource_changes_total{kind="file",outcome="updated",resource="app.conf"} 10)"));
}

// The per-resource change counters are rendered by the host, not by a
// prometheus-cpp family: they must still read as one counter family, with
// its HELP and TYPE once, present only while it has series, and a series
// per {kind, outcome} a resource has had.
size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(HostMetricsTest, ChangeCountersAreOneFamilyWhileTheyHaveSeries) {
  HostMetrics m("v");
  EXPECT_THAT(m.Serialize(), Not(HasSubstr("mesh_host_resource_changes_total")));
  m.ObserveApply(Report(
      {Out("a", "file", core::Outcome::kCreated), Out("b", "file", core::Outcome::kUnchanged)}));
  m.ObserveApply(
      Report({Out("a", "file", core::Outcome::kUpdated), Out("b", "file", core::Outcome::kUpdated)},
             core::ApplyResult::kOk, "decl-2"));
  // The same id declared as another kind is another series, as before.
  m.ObserveApply(Report(
      {Out("a", "directory", core::Outcome::kUpdated), Out("b", "file", core::Outcome::kUpdated)},
      core::ApplyResult::kOk, "decl-3"));
  std::string text = m.Serialize();
  EXPECT_EQ(Count(text, "# HELP mesh_host_resource_changes_total "), 1u);
  EXPECT_EQ(Count(text, "# TYPE mesh_host_resource_changes_total counter\n"), 1u);
  EXPECT_EQ(Count(text, "mesh_host_resource_changes_total{"), 4u) << text;
  for (const char* series :
       {R"(mesh_host_resource_changes_total{kind="file",outcome="created",resource="a"} 1)",
        R"(mesh_host_resource_changes_total{kind="file",outcome="updated",resource="a"} 1)",
        R"(mesh_host_resource_changes_total{kind="directory",outcome="updated",resource="a"} 1)",
        R"(mesh_host_resource_changes_total{kind="file",outcome="updated",resource="b"} 2)"}) {
    EXPECT_THAT(text, HasSubstr(series));
  }
  // Every series of the family sits under its one TYPE line.
  size_t type = text.find("# TYPE mesh_host_resource_changes_total");
  size_t next_type = text.find("# TYPE", type + 1);
  EXPECT_EQ(Count(text.substr(type, next_type - type), "mesh_host_resource_changes_total{"), 4u);

  // A resource no longer declared loses its series; the last one gone takes
  // the family with it.
  m.ObserveApply(
      Report({Out("b", "file", core::Outcome::kUnchanged)}, core::ApplyResult::kOk, "decl-3"));
  text = m.Serialize();
  EXPECT_THAT(text, Not(HasSubstr(R"(resource="a")")));
  EXPECT_EQ(Count(text, "mesh_host_resource_changes_total{"), 1u);
  m.ObserveApply(Report({}, core::ApplyResult::kOk, "decl-4"));
  EXPECT_THAT(m.Serialize(), Not(HasSubstr("mesh_host_resource_changes_total")));
}

}  // namespace
}  // namespace mesh::metrics
