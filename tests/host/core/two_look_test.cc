#include "host/core/two_look.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace mesh::core {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

Look L(std::string active, std::string sub, std::string inv = "a", uint32_t restarts = 0,
       bool pending = false, std::string result = "success", std::string type = "simple") {
  Look l;
  l.unit.active_state = std::move(active);
  l.unit.sub_state = std::move(sub);
  l.unit.invocation_id = std::move(inv);
  l.unit.n_restarts = restarts;
  l.unit.result = std::move(result);
  l.unit.type = std::move(type);
  l.job_pending = pending;
  return l;
}

TEST(TwoLookTest, RunningAtBothLooksWithTheSameInvocationIsAccepted) {
  Verdict v = JudgeTwoLooks(UnitAction::kRestart, "done", L("active", "running"),
                            L("active", "running"), 1s);
  EXPECT_TRUE(v.accepted);
  EXPECT_EQ(v.detail, "active (running)");
}

// ADR 184: running at the first look, dead at the second.
TEST(TwoLookTest, DeadAtTheSecondLookFailsNamingTheState) {
  Verdict v = JudgeTwoLooks(UnitAction::kRestart, "done", L("active", "running"),
                            L("failed", "failed", "a", 0, false, "exit-code"), 1s);
  EXPECT_FALSE(v.accepted);
  EXPECT_EQ(v.detail, "failed (Result=exit-code) 1.0 s after restart");
}

TEST(TwoLookTest, StillStartingAtBothLooksIsAccepted) {
  Verdict v =
      JudgeTwoLooks(UnitAction::kStart, std::nullopt, L("activating", "start", "a", 0, true),
                    L("activating", "start", "a", 0, true), 2s);
  EXPECT_TRUE(v.accepted);
  EXPECT_THAT(v.detail, HasSubstr("still starting"));
}

// A job still pending is not the unit on its way up when the unit ran
// and stopped since the host asked: a stop of someone else's run, or a run
// that already ended.
TEST(TwoLookTest, APendingJobOfAUnitThatRanAndStoppedIsNotStarting) {
  Look stopping = L("deactivating", "stop-sigterm", "b", 0, true);
  stopping.ran_since_asked = true;
  Verdict v = JudgeTwoLooks(UnitAction::kRestart, std::nullopt, stopping, stopping, 1s);
  EXPECT_FALSE(v.accepted);
  EXPECT_EQ(v.detail, "deactivating (stop-sigterm) 1.0 s after restart");
  Look ended = L("failed", "failed", "b", 0, true, "exit-code");
  ended.ran_since_asked = true;
  Look up = L("active", "running", "b", 0, true);
  EXPECT_FALSE(JudgeTwoLooks(UnitAction::kRestart, std::nullopt, up, ended, 1s).accepted);
  // Not running under the InvocationID it had when asked: still a start
  // on its way (held behind an ordering dependency).
  Look waiting = L("inactive", "dead", "a", 0, true);
  EXPECT_TRUE(JudgeTwoLooks(UnitAction::kStart, std::nullopt, waiting, waiting, 1s).accepted);
}

TEST(TwoLookTest, JobResultOtherThanDoneFails) {
  Verdict v =
      JudgeTwoLooks(UnitAction::kStart, "failed", L("failed", "failed", "a", 0, false, "exit-code"),
                    L("failed", "failed", "a", 0, false, "exit-code"), 1s);
  EXPECT_FALSE(v.accepted);
  EXPECT_THAT(v.detail, HasSubstr("job start ended \"failed\""));
}

TEST(TwoLookTest, NewInvocationInsideThePauseFails) {
  Verdict v = JudgeTwoLooks(UnitAction::kRestart, "done", L("active", "running", "a"),
                            L("active", "running", "b"), 1s);
  EXPECT_FALSE(v.accepted);
  EXPECT_THAT(v.detail, HasSubstr("new InvocationID"));
}

TEST(TwoLookTest, NRestartsGrowingFails) {
  Verdict v = JudgeTwoLooks(UnitAction::kRestart, "done", L("active", "running", "a", 1),
                            L("active", "running", "a", 3), 1s);
  EXPECT_FALSE(v.accepted);
  EXPECT_THAT(v.detail, HasSubstr("NRestarts 1 -> 3"));
}

TEST(TwoLookTest, AutoRestartIsNotRunning) {
  Verdict v = JudgeTwoLooks(UnitAction::kRestart, "done", L("active", "running"),
                            L("activating", "auto-restart"), 1s);
  EXPECT_FALSE(v.accepted);
  EXPECT_THAT(v.detail, HasSubstr("auto-restart"));
}

TEST(TwoLookTest, FinishedOneshotIsAccepted) {
  Look done = L("inactive", "dead", "", 0, false, "success", "oneshot");
  EXPECT_TRUE(JudgeTwoLooks(UnitAction::kStart, "done", done, done, 1s).accepted);
  Look failed = L("failed", "failed", "", 0, false, "exit-code", "oneshot");
  EXPECT_FALSE(JudgeTwoLooks(UnitAction::kStart, "done", failed, failed, 1s).accepted);
}

TEST(TwoLookTest, DeadAtTheFirstLookFails) {
  Verdict v = JudgeTwoLooks(UnitAction::kStart, "done", L("inactive", "dead", ""),
                            L("active", "running"), 1s);
  EXPECT_FALSE(v.accepted);
  EXPECT_THAT(v.detail, HasSubstr("inactive"));
}

TEST(TwoLookTest, StartingThenRunningIsAccepted) {
  Verdict v = JudgeTwoLooks(UnitAction::kStart, std::nullopt, L("activating", "start", "", 0, true),
                            L("active", "running", "a"), 1s);
  EXPECT_TRUE(v.accepted);
}

}  // namespace
}  // namespace mesh::core
