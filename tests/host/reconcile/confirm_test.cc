// The confirm phase on a fake clock: one shared pause, from the last first
// look; a restart's stop phase is not the unit coming up (issue 14); a stop
// that outlasts its own timeout is named.
#include "host/reconcile/confirm.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/fakes/fake_clock.h"
#include "tests/fakes/fake_service_manager.h"

namespace mesh::reconcile {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;
using namespace std::chrono_literals;
using Behavior = fakes::FakeServiceManager::Behavior;

class ConfirmTest : public ::testing::Test {
 protected:
  // Restarts every unit named, as the act phase would, and confirms.
  std::vector<std::optional<Confirmation>> Restart(const std::vector<std::string>& names,
                                                   std::chrono::nanoseconds settle = 1s) {
    json resources = json::array();
    for (const std::string& n : names) {
      resources.push_back(
          {{"id", n}, {"kind", "service"}, {"unit", n + ".service"}, {"state", "running"}});
    }
    decl_ = *core::ParseDeclaration(
        json{{"machine", "m"}, {"generation", 1}, {"resources", resources}}.dump());
    plan_ = Plan{};
    acts_.clear();
    for (size_t i = 0; i < names.size(); ++i) {
      UnitPlan u;
      u.index = i;
      u.action = core::UnitAction::kRestart;
      u.status = *services_.ReadUnit(names[i] + ".service");
      plan_.units.push_back(u);
      acts_.push_back({Acted::State::kQueued, "",
                       *services_.Enqueue(names[i] + ".service", ports::JobKind::kRestart)});
    }
    t0_ = clock_.elapsed();
    return Confirm(decl_, plan_, acts_, &services_, clock_, settle);
  }
  std::chrono::nanoseconds Took() const { return clock_.elapsed() - t0_; }

  fakes::FakeClock clock_;
  fakes::FakeServiceManager services_{clock_};
  core::Declaration decl_;
  Plan plan_;
  std::vector<Acted> acts_;
  std::chrono::nanoseconds t0_{0};
};

TEST_F(ConfirmTest, TwelveUnitsShareOnePause) {
  std::vector<std::string> names;
  for (int i = 0; i < 12; ++i) {
    names.push_back("u" + std::to_string(i));
    services_.AddUnit(names.back() + ".service", {Behavior::kHealthy, 0s, true});
  }
  auto confirmed = Restart(names);
  for (const auto& c : confirmed) EXPECT_TRUE(c->verdict.accepted) << c->verdict.detail;
  EXPECT_EQ(clock_.slept(), 1s);
  EXPECT_EQ(Took(), 1s);
}

// Issue 14: a daemon that drains for 1.5 s on SIGTERM reads "deactivating"
// under its old InvocationID, then "active" under a new one. Its first look
// waits for the stop phase to end; it is not "died and was restarted".
TEST_F(ConfirmTest, ASlowStopIsNotADeath) {
  for (auto drain : {1500ms, 3000ms}) {
    services_.AddUnit("slow.service", {Behavior::kHealthy, 0s, true, drain});
    auto confirmed = Restart({"slow"});
    ASSERT_TRUE(confirmed[0].has_value());
    EXPECT_TRUE(confirmed[0]->verdict.accepted) << confirmed[0]->verdict.detail;
    EXPECT_EQ(confirmed[0]->verdict.detail, "active (running)");
    EXPECT_EQ(Took(), drain + 1s) << "the stop, then one settle";
  }
}

// ... and the same slow stop onto a configuration the daemon refuses is
// still caught.
TEST_F(ConfirmTest, ASlowStopOntoARefusedConfigIsStillCaught) {
  services_.AddUnit("slow.service", {Behavior::kDiesAfter, 221ms, true, 1500ms});
  auto confirmed = Restart({"slow"});
  EXPECT_FALSE(confirmed[0]->verdict.accepted);
  EXPECT_THAT(confirmed[0]->verdict.detail, HasSubstr("failed (Result=exit-code)"));
}

// The pause starts at the last first look: a fast unit waits for a slow
// one's stop, and both share the one settle after it.
TEST_F(ConfirmTest, ThePauseStartsAtTheLastFirstLook) {
  services_.AddUnit("fast.service", {Behavior::kDiesAfter, 1200ms, true});
  services_.AddUnit("slow.service", {Behavior::kHealthy, 0s, true, 1500ms});
  auto confirmed = Restart({"fast", "slow"});
  EXPECT_FALSE(confirmed[0]->verdict.accepted)
      << "fast died 1.2 s in, after its first look and before its second";
  EXPECT_TRUE(confirmed[1]->verdict.accepted) << confirmed[1]->verdict.detail;
  EXPECT_EQ(clock_.slept(), 1s);
}

// A stop phase that outlasts the unit's own stop timeout (and the settle
// after it) is not waited on forever: named, and failed.
TEST_F(ConfirmTest, AStopPastItsTimeoutIsNamed) {
  services_.AddUnit("stuck.service", {Behavior::kHealthy, 0s, true, 30s, 5s});
  auto confirmed = Restart({"stuck"});
  EXPECT_FALSE(confirmed[0]->verdict.accepted);
  EXPECT_THAT(confirmed[0]->verdict.detail,
              HasSubstr("still stopping, deactivating (stop-sigterm), past its stop timeout"));
  EXPECT_LT(Took(), 8s) << "the unit's 5 s timeout and the settle bound it, not its 30 s stop";
}

TEST_F(ConfirmTest, NothingQueuedNothingWaited) {
  Plan plan;
  plan.units.push_back(UnitPlan{});
  std::vector<Acted> acts(1);
  auto confirmed = Confirm(core::Declaration{}, plan, acts, &services_, clock_, 1s);
  EXPECT_FALSE(confirmed[0].has_value());
  EXPECT_EQ(clock_.elapsed(), 0s);
}

TEST(FirstLookWaitTest, DueWhenTheJobIsDoneOrASettleAfterTheUnitCameUp) {
  core::UnitStatus running;
  running.active_state = "active";
  running.sub_state = "running";
  running.invocation_id = "a";
  running.timeout_stop = 10s;
  core::UnitStatus old = running;
  old.active_state = "deactivating";
  old.sub_state = "stop-sigterm";
  core::UnitStatus up = running;
  up.invocation_id = "b";
  core::FirstLookWait w(core::UnitAction::kRestart, running, 1s);
  EXPECT_FALSE(w.Due(0s, false, old));
  EXPECT_FALSE(w.Due(2s, false, old)) << "stopping: not up";
  EXPECT_FALSE(w.Due(2500ms, false, up));
  EXPECT_EQ(w.Next(2500ms), 1s);
  EXPECT_TRUE(w.Due(3500ms, false, up)) << "a settle after it came up";
  EXPECT_FALSE(w.stopping());
  core::FirstLookWait job(core::UnitAction::kRestart, running, 1s);
  EXPECT_TRUE(job.Due(0s, true, old));
  core::FirstLookWait stuck(core::UnitAction::kRestart, running, 1s);
  EXPECT_FALSE(stuck.Due(10900ms, false, old));
  EXPECT_TRUE(stuck.Due(11s, false, old));
  EXPECT_TRUE(stuck.stopping());
  core::UnitStatus loop = up;
  loop.active_state = "activating";
  loop.sub_state = "auto-restart";
  core::FirstLookWait restarting(core::UnitAction::kRestart, running, 1s);
  EXPECT_FALSE(restarting.Due(0s, false, loop));
  EXPECT_FALSE(restarting.Due(1500ms, false, loop)) << "auto-restart is not coming up";
  // A run the host never saw (someone else restarted the unit just before
  // the host's job ran), stopped by the host's restart: a stop phase, not
  // a run that ended.
  core::UnitStatus other = old;
  other.invocation_id = "c";
  core::FirstLookWait unseen(core::UnitAction::kRestart, running, 1s);
  EXPECT_TRUE(unseen.RanSinceAsked(other));
  EXPECT_FALSE(unseen.Due(10ms, false, other));
  EXPECT_FALSE(unseen.Due(2s, false, other));
  EXPECT_FALSE(unseen.RanSinceAsked(old)) << "its own run, stopping";
  EXPECT_FALSE(unseen.RanSinceAsked(up)) << "running";
}

// A run someone else began just before the host's restart ran, seen up,
// then stopped by that restart: inactive (dead) under it while systemd
// turns the job into its start. The first look waits for a look that finds
// the unit running.
TEST(FirstLookWaitTest, ARunSeenUpThenDownIsNotTheUnitUp) {
  core::UnitStatus running;
  running.active_state = "active";
  running.sub_state = "running";
  running.invocation_id = "a";
  running.timeout_stop = 10s;
  core::UnitStatus other = running;
  other.invocation_id = "b";
  core::UnitStatus turned = other;
  turned.active_state = "inactive";
  turned.sub_state = "dead";
  core::UnitStatus up = running;
  up.invocation_id = "c";
  core::FirstLookWait w(core::UnitAction::kRestart, running, 1s);
  EXPECT_FALSE(w.Due(0s, false, other));
  EXPECT_FALSE(w.Due(50ms, false, turned)) << "the restart between its stop and its start";
  EXPECT_FALSE(w.Due(1500ms, false, turned));
  EXPECT_EQ(w.Next(1500ms), 9500ms) << "no settle left to wait out: polled up to the bound";
  EXPECT_TRUE(w.Due(1600ms, false, up));
  EXPECT_FALSE(w.stopping());
  // A start that dies and that systemd restarts on its own (the job held
  // through its auto-restarts): a settle after it first came up, at a look
  // in any of its runs; a new run each time does not push the look away.
  core::UnitStatus loop = up;
  loop.active_state = "activating";
  loop.sub_state = "auto-restart";
  core::UnitStatus again = up;
  again.invocation_id = "d";
  again.active_state = "activating";
  again.sub_state = "start";
  core::FirstLookWait crash(core::UnitAction::kRestart, running, 1s);
  EXPECT_FALSE(crash.Due(50ms, false, again));
  EXPECT_FALSE(crash.Due(600ms, false, loop));
  EXPECT_TRUE(crash.Due(1100ms, false, loop));
  // Never seen up, only in systemd's restarts: at the bound, and neither
  // still stopping nor still queued (that would spare it the rollback).
  core::FirstLookWait unseen(core::UnitAction::kRestart, running, 1s);
  EXPECT_FALSE(unseen.Due(10900ms, false, loop));
  EXPECT_TRUE(unseen.Due(11s, false, loop));
  EXPECT_FALSE(unseen.stopping());
  // Down under the other run past the stop bound: looked at, and not a
  // stop that outlasted its timeout.
  core::FirstLookWait gone(core::UnitAction::kRestart, running, 1s);
  EXPECT_FALSE(gone.Due(10900ms, false, turned));
  EXPECT_TRUE(gone.Due(11s, false, turned));
  EXPECT_FALSE(gone.stopping());
}

TEST(FirstLookWaitTest, NoStopPhaseNoStopBound) {
  core::UnitStatus dead;
  dead.active_state = "failed";
  dead.sub_state = "failed";
  dead.invocation_id = "a";
  // A start held behind an ordering dependency: one settle, and no word of
  // a stop that never was.
  core::FirstLookWait start(core::UnitAction::kStart, dead, 1s);
  EXPECT_FALSE(start.Due(900ms, false, dead));
  EXPECT_TRUE(start.Due(1s, false, dead));
  EXPECT_FALSE(start.stopping());
  // Ended under a new invocation, the job pending: systemd still holds the
  // job, whose end or the bound is waited for.
  core::UnitStatus ended = dead;
  ended.invocation_id = "b";
  core::FirstLookWait pending(core::UnitAction::kStart, dead, 1s);
  EXPECT_FALSE(pending.Due(10ms, false, ended));
  EXPECT_TRUE(pending.Due(60ms, true, ended));
  // A stop timeout of a day is bounded at five minutes.
  core::UnitStatus slow;
  slow.active_state = "active";
  slow.invocation_id = "a";
  slow.timeout_stop = 24h;
  core::FirstLookWait capped(core::UnitAction::kRestart, slow, 1s);
  EXPECT_TRUE(capped.Due(5min + 1s, false, slow));
}

// A bus that answers every wait at once (it is gone) does not make the wait
// for the first looks spin: every unit is looked at, and time passes.
TEST_F(ConfirmTest, ALostBusEndsTheWaitWithoutSpinning) {
  services_.AddUnit("slow.service", {Behavior::kHealthy, 0s, true, 30s});
  json resources = {
      {{"id", "slow"}, {"kind", "service"}, {"unit", "slow.service"}, {"state", "running"}}};
  decl_ = *core::ParseDeclaration(
      json{{"machine", "m"}, {"generation", 1}, {"resources", resources}}.dump());
  UnitPlan u;
  u.action = core::UnitAction::kRestart;
  u.status = *services_.ReadUnit("slow.service");
  plan_.units = {u};
  acts_ = {
      {Acted::State::kQueued, "", *services_.Enqueue("slow.service", ports::JobKind::kRestart)}};
  services_.bus_gone = true;
  auto confirmed = Confirm(decl_, plan_, acts_, &services_, clock_, 1s);
  ASSERT_TRUE(confirmed[0].has_value());
  EXPECT_FALSE(confirmed[0]->verdict.accepted) << "nothing is accepted on looks not taken";
  EXPECT_THAT(confirmed[0]->verdict.detail,
              HasSubstr("not looked at (LoadUnit slow.service: Transport endpoint is not "
                        "connected)"));
  EXPECT_LT(clock_.elapsed(), 3s) << "an unreadable unit is looked at, not waited on";
}

// Issue 44: a wait for jobs that lost the bus returned no results, which
// read as "still pending": a unit slow to come up was then accepted as
// "still starting" on a job whose end nobody would hear of. Its units are
// looked at at once and nothing is accepted.
TEST_F(ConfirmTest, AWaitThatLostTheBusAcceptsNothing) {
  services_.AddUnit("slow.service", {Behavior::kHealthy, 0s, true, 30s});
  services_.lose_job_waits = true;
  auto confirmed = Restart({"slow"});
  ASSERT_TRUE(confirmed[0].has_value());
  EXPECT_FALSE(confirmed[0]->verdict.accepted) << confirmed[0]->verdict.detail;
  EXPECT_THAT(confirmed[0]->verdict.detail,
              HasSubstr("not looked at (waiting for jobs: the bus connection was lost (fake))"));
  EXPECT_LT(Took(), 3s) << "a lost wait is not waited out";
}

}  // namespace
}  // namespace mesh::reconcile
