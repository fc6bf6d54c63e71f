// The act phase: what is queued, what is held back and why, what systemd
// refuses — and the daemon-reload phase before it.
#include "host/reconcile/act.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "host/reconcile/daemon_reload.h"
#include "tests/fakes/fake_clock.h"
#include "tests/fakes/fake_service_manager.h"

namespace mesh::reconcile {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;
using State = Acted::State;

class ActTest : public ::testing::Test {
 protected:
  void SetUp() override {
    json resources = json::array();
    resources.push_back({{"id", "conf"}, {"kind", "file"}, {"path", "/etc/c"}, {"content", "x"}});
    for (const char* id : {"a", "b"}) {
      resources.push_back({{"id", id},
                           {"kind", "service"},
                           {"unit", std::string(id) + ".service"},
                           {"state", "running"},
                           {"restart_on", {"conf"}}});
      services_.AddUnit(std::string(id) + ".service",
                        {fakes::FakeServiceManager::Behavior::kHealthy, {}, true});
    }
    decl_ = *core::ParseDeclaration(
        json{{"machine", "m"}, {"generation", 1}, {"resources", resources}}.dump());
    plan_.steps.resize(3);
    for (size_t i : {1u, 2u}) {
      UnitPlan u;
      u.index = i;
      u.action = core::UnitAction::kRestart;
      plan_.units.push_back(u);
    }
    writes_ = NoWrites(plan_);
  }
  std::vector<Acted> Run(const SystemdAnswer& reloaded = {}, bool dry_run = false) {
    return Act(decl_, plan_, writes_, reloaded, &services_, dry_run);
  }

  core::Declaration decl_;
  Plan plan_;
  Writes writes_;
  fakes::FakeClock clock_;
  fakes::FakeServiceManager services_{clock_};
};

TEST_F(ActTest, EveryJobIsQueued) {
  std::vector<Acted> acts = Run();
  ASSERT_EQ(acts.size(), 2u);
  for (const Acted& a : acts) {
    EXPECT_EQ(a.state, State::kQueued);
    EXPECT_FALSE(a.job.empty());
  }
  EXPECT_EQ(services_.calls().size(), 2u);
}

// restart_on and reload_on alike: nothing is done onto a write that failed.
TEST_F(ActTest, AFailedWriteHoldsBackEveryUnitThatDependsOnIt) {
  writes_.steps[0].status = core::Fail("write /etc/c: No space left on device");
  std::vector<Acted> acts = Run();
  for (const Acted& a : acts) {
    EXPECT_EQ(a.state, State::kBlocked);
    EXPECT_THAT(a.detail, HasSubstr("not restarted: restart_on resource conf failed; "));
  }
  EXPECT_TRUE(services_.calls().empty());
}

TEST_F(ActTest, AFailedDaemonReloadHoldsBackTheUnitsThatNeededIt) {
  plan_.units[0].daemon_reload = true;
  std::vector<Acted> acts = Run(SystemdAnswer::Of(core::Fail("Reload: refused")));
  EXPECT_EQ(acts[0].state, State::kBlocked);
  EXPECT_EQ(acts[0].detail,
            "not restarted: daemon-reload failed (Reload: refused); a.service keeps its previous "
            "definition");
  EXPECT_EQ(acts[1].state, State::kQueued) << "b's definition did not change";
}

// A unit declared stopped whose new definition systemd would not load: it
// is stopped all the same, and the words say both.
TEST_F(ActTest, AStopStandsWhenTheDaemonReloadFails) {
  plan_.units[0].action.reset();
  plan_.units[0].stop = true;
  plan_.units[0].daemon_reload = true;
  decl_.resources[1].mutable_unit().state = core::UnitState::kStopped;
  std::vector<Acted> acts = Run(SystemdAnswer::Of(core::Fail("Reload: refused")));
  EXPECT_EQ(acts[0].state, State::kBlocked);
  EXPECT_EQ(acts[0].detail,
            "stopped a.service (not waited on); not loaded: daemon-reload failed (Reload: "
            "refused); a.service keeps its previous definition");
  EXPECT_EQ(services_.calls()[0].unit, "a.service");
  EXPECT_EQ(services_.calls()[0].kind, ports::JobKind::kStop);
}

TEST_F(ActTest, AJobSystemdRefusesIsNamed) {
  plan_.units[1].action = core::UnitAction::kReload;
  services_.RefuseReload("b.service");
  std::vector<Acted> acts = Run();
  EXPECT_EQ(acts[0].state, State::kQueued);
  EXPECT_EQ(acts[1].state, State::kRefused);
  EXPECT_THAT(acts[1].detail, HasSubstr("JobTypeNotApplicable"));
}

TEST_F(ActTest, StopsAreQueuedAndAPlanAsksNothing) {
  plan_.units[0].action.reset();
  plan_.units[0].stop = true;
  decl_.resources[1].mutable_unit().state = core::UnitState::kStopped;
  EXPECT_EQ(Run()[0].state, State::kStopQueued);
  size_t calls = services_.calls().size();
  std::vector<Acted> plan = Run({}, /*dry_run=*/true);
  EXPECT_EQ(plan[0].state, State::kIdle);
  EXPECT_EQ(plan[1].state, State::kIdle);
  EXPECT_EQ(services_.calls().size(), calls);
}

TEST(DaemonReloadTest, OnlyWhenAUnitDefinitionChangedOrOneIsOwed) {
  fakes::FakeClock clock;
  fakes::FakeServiceManager services(clock);
  Plan plan;
  plan.steps.resize(1);
  plan.units.push_back(UnitPlan{});
  Writes writes = NoWrites(plan);
  EXPECT_FALSE(DaemonReload(plan, writes, &services).asked());
  plan.units[0].daemon_reload = true;
  EXPECT_TRUE(DaemonReload(plan, writes, &services).done());
  EXPECT_EQ(services.daemon_reloads(), 1);
  services.refuse_daemon_reload = "Refusing to reload";
  SystemdAnswer refused = DaemonReload(plan, writes, &services);
  EXPECT_TRUE(refused.refused());
  EXPECT_THAT(refused.error, HasSubstr("Refusing to reload"));
  EXPECT_EQ(DaemonReload(plan, writes, nullptr).error, "no service manager");
  plan.units[0].daemon_reload = false;
  writes.unit_files_changed = true;
  EXPECT_TRUE(DaemonReloadNeeded(plan, writes));
}

}  // namespace
}  // namespace mesh::reconcile
