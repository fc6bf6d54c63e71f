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
// The second look stands unless the unit came up after its first look and
// has been active for less than a settle: then the pause runs on until it
// has been up for one.
TEST(TwoLookTest, APauseRunsFromWhenALateUnitCameUp) {
  Look starting = L("activating", "start", "a", 0, /*pending=*/true);
  Look up = L("active", "running");
  up.unit.in_state_for = 200ms;
  EXPECT_EQ(PauseLeft(starting, up, 1s), std::optional(800ms));
  Look job_pending_but_active = L("active", "running", "a", 0, /*pending=*/true);
  EXPECT_EQ(PauseLeft(job_pending_but_active, up, 1s), std::optional(800ms));

  EXPECT_EQ(PauseLeft(L("active", "running"), up, 1s), std::nullopt) << "up at its first look";
  Look long_up = up;
  long_up.unit.in_state_for = 1s;
  EXPECT_EQ(PauseLeft(starting, long_up, 1s), std::nullopt) << "up for a settle already";
  Look unknown = up;
  unknown.unit.in_state_for = 0s;
  EXPECT_EQ(PauseLeft(starting, unknown, 1s), std::nullopt);
  EXPECT_EQ(PauseLeft(starting, L("activating", "start"), 1s), std::nullopt) << "not up yet";
  Look oneshot = L("active", "exited", "a", 0, false, "success", "oneshot");
  oneshot.unit.in_state_for = 200ms;
  EXPECT_EQ(PauseLeft(starting, oneshot, 1s), std::nullopt);
  Look lost = up;
  lost.error = "bus lost";
  EXPECT_EQ(PauseLeft(starting, lost, 1s), std::nullopt);
}

TEST(TwoLookTest, DeadAtTheSecondLookFailsNamingTheState) {
  Verdict v = JudgeTwoLooks(UnitAction::kRestart, "done", L("active", "running"),
                            L("failed", "failed", "a", 0, false, "exit-code"), 1s);
  EXPECT_FALSE(v.accepted);
  EXPECT_EQ(v.detail, "failed (Result=exit-code) 1.0 s after restart");
}

// Issue 40 (1): a start that failed before the daemon ran says which step,
// in plain words; the daemon's own exit status says nothing more.
TEST(TwoLookTest, AStartThatNeverRanSaysWhy) {
  Look gone = L("failed", "failed", "b", 0, false, "exit-code");
  gone.unit.exec_main_status = 203;
  gone.unit.exec_start = "/usr/sbin/jaild";
  Verdict v = JudgeTwoLooks(UnitAction::kRestart, "done", gone, gone, 200ms);
  EXPECT_FALSE(v.accepted);
  EXPECT_EQ(v.detail,
            "failed (Result=exit-code) 0.2 s after restart: its ExecStart= command /usr/sbin/jaild "
            "could not be run: missing, or not executable (status 203/EXEC)");
  gone.unit.exec_main_status = 217;
  EXPECT_THAT(JudgeTwoLooks(UnitAction::kStart, "done", gone, gone, 200ms).detail,
              ::testing::EndsWith("after start: its User= does not exist (status 217/USER)"));
  gone.unit.exec_main_status = 1;
  EXPECT_EQ(JudgeTwoLooks(UnitAction::kStart, "done", gone, gone, 200ms).detail,
            "failed (Result=exit-code) 0.2 s after start");
}

TEST(TwoLookTest, StillStartingAtBothLooksIsAccepted) {
  Verdict v =
      JudgeTwoLooks(UnitAction::kStart, std::nullopt, L("activating", "start", "a", 0, true),
                    L("activating", "start", "a", 0, true), 2s);
  EXPECT_TRUE(v.accepted);
  EXPECT_THAT(v.detail, HasSubstr("still starting"));
}

// systemd 254 and later read auto-restart-queued (activating) once the
// restart after a death is queued: dead, as auto-restart is, not starting.
TEST(TwoLookTest, AnAutoRestartQueuedIsNotStarting) {
  Look queued = L("activating", "auto-restart-queued", "b");
  Verdict v = JudgeTwoLooks(UnitAction::kRestart, "done", L("active", "running", "b"), queued, 1s);
  EXPECT_FALSE(v.accepted);
  EXPECT_EQ(v.detail,
            "activating (auto-restart-queued: it died, and systemd starts it again after "
            "RestartSec=) 1.0 s after restart");
  EXPECT_FALSE(UnitUp(queued.unit));
}

// A job still pending is not the unit on its way up when the unit ran
// and stopped since the host asked: a stop of someone else's run, or a run
// that already ended.
TEST(TwoLookTest, APendingJobOfAUnitThatRanAndStoppedIsNotStarting) {
  Look stopping = L("deactivating", "stop-sigterm", "b", 0, true);
  stopping.another_run = true;
  Verdict v = JudgeTwoLooks(UnitAction::kRestart, std::nullopt, stopping, stopping, 1s);
  EXPECT_FALSE(v.accepted);
  EXPECT_EQ(v.detail, "deactivating (stop-sigterm) 1.0 s after restart");
  Look ended = L("failed", "failed", "b", 0, true, "exit-code");
  ended.another_run = true;
  Look up = L("active", "running", "b", 0, true);
  EXPECT_FALSE(JudgeTwoLooks(UnitAction::kRestart, std::nullopt, up, ended, 1s).accepted);
}

// A start whose job is still queued at the second look (held behind a unit
// it is ordered after) has not started the unit: SPEC accepts activating,
// nothing else. If the unit it waits on never comes up, the job ends
// "dependency" and the unit never runs; this was accepted as "still
// starting (inactive (dead))".
TEST(TwoLookTest, AJobStillQueuedIsNotAStart) {
  Look waiting = L("inactive", "dead", "a", 0, true);
  Verdict v = JudgeTwoLooks(UnitAction::kStart, std::nullopt, waiting, waiting, 1s);
  EXPECT_FALSE(v.accepted);
  EXPECT_EQ(v.detail,
            "its start job is still queued (behind a unit it is ordered after), inactive (dead) "
            "1.0 s after start");
  EXPECT_TRUE(v.not_run) << "not a death on what was written: nothing to roll back";
  // Queued at the first look, up at the second: the new InvocationID is the
  // run the host asked for, not systemd restarting a dead one.
  Look up = L("active", "running", "b", 0, false);
  Verdict came_up = JudgeTwoLooks(UnitAction::kStart, "done", waiting, up, 1s);
  EXPECT_TRUE(came_up.accepted) << came_up.detail;
  EXPECT_EQ(came_up.detail, "active (running)");
}

TEST(TwoLookTest, JobResultOtherThanDoneFails) {
  Verdict v =
      JudgeTwoLooks(UnitAction::kStart, "failed", L("failed", "failed", "a", 0, false, "exit-code"),
                    L("failed", "failed", "a", 0, false, "exit-code"), 1s);
  EXPECT_FALSE(v.accepted);
  EXPECT_THAT(v.detail, HasSubstr("job start ended \"failed\""));
  // A Type=notify start that timed out under Restart=: the job failed, and
  // systemd is starting it again. "unit activating (start)" alone read as
  // if it were coming up; the words now say why the run ended and that
  // systemd started another.
  Verdict again = JudgeTwoLooks(UnitAction::kStart, "failed",
                                L("activating", "start", "a", 0, false, "timeout", "notify"),
                                L("activating", "start", "c", 2, false, "timeout", "notify"), 1s);
  EXPECT_FALSE(again.accepted);
  EXPECT_THAT(again.detail,
              HasSubstr("job start ended \"failed\" (Result=timeout), unit activating (start), "
                        "started again by its Restart= (NRestarts 0 -> 2) 1.0 s after start"));
}

TEST(TwoLookTest, NewInvocationInsideThePauseFails) {
  Verdict v = JudgeTwoLooks(UnitAction::kRestart, "done", L("active", "running", "a"),
                            L("active", "running", "b"), 1s);
  EXPECT_FALSE(v.accepted);
  EXPECT_THAT(v.detail, HasSubstr("new InvocationID"));
  // Which of the two the words say: systemd's Restart= counts its restarts,
  // any other start zeroes the count.
  EXPECT_THAT(v.detail, HasSubstr("started again by someone else, not by its Restart="));
  Verdict by_systemd = JudgeTwoLooks(UnitAction::kRestart, "done", L("active", "running", "a"),
                                     L("active", "running", "b", 1), 1s);
  EXPECT_FALSE(by_systemd.accepted);
  EXPECT_THAT(by_systemd.detail,
              HasSubstr("died and was restarted by systemd (new InvocationID, NRestarts 0 -> 1)"));
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

// A oneshot with RemainAfterExit=yes reads active (exited) after its run;
// inactive, it was stopped (systemctl stop, or a reboot while not
// enabled). It read "finished" and was up as recorded for ever: never run
// again, unchanged at every apply, mesh_host_unit_active 1.
TEST(TwoLookTest, AOneshotThatRemainsIsNotFinishedOnceStopped) {
  UnitStatus stopped;
  stopped.type = "oneshot";
  stopped.active_state = "inactive";
  stopped.sub_state = "dead";
  stopped.result = "success";
  stopped.remain_after_exit = true;
  EXPECT_FALSE(stopped.FinishedOneshot());
  EXPECT_FALSE(UnitUp(stopped));
  EXPECT_FALSE(UpAsRecorded(stopped, UnitBaseline{0, /*finished=*/true, false}));
  UnitStatus ran = stopped;
  ran.active_state = "active";
  ran.sub_state = "exited";
  EXPECT_TRUE(UpAsRecorded(ran, UnitBaseline{0, /*finished=*/true, false}));
  stopped.remain_after_exit = false;  // without it, inactive is the run ended well
  EXPECT_TRUE(UpAsRecorded(stopped, UnitBaseline{0, /*finished=*/true, false}));
}

// Recorded after systemd had restarted it 3 times; an operator's restart
// zeroes the count, and a crash since counts 1: not up as recorded, nor
// up since (the live watch), though 1 is below 3. At 0 it is the reset
// alone.
TEST(TwoLookTest, ACrashAfterAManualRestartIsNotHiddenByTheReset) {
  UnitStatus s;
  s.active_state = "active";
  s.sub_state = "running";
  s.n_restarts = 1;
  EXPECT_FALSE(UpAsRecorded(s, UnitBaseline{3, false, false}));
  EXPECT_FALSE(UpSince(s, 3));
  s.n_restarts = 0;
  EXPECT_TRUE(UpAsRecorded(s, UnitBaseline{3, false, false}));
  EXPECT_TRUE(UpSince(s, 3));
  s.n_restarts = 3;
  EXPECT_TRUE(UpAsRecorded(s, UnitBaseline{3, false, false}));
  s.n_restarts = 4;
  EXPECT_FALSE(UpAsRecorded(s, UnitBaseline{3, false, false}));
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

// Issue 38 (1): a reload whose ExecReload= outlasts the settle read
// "still starting (reloading (reload))" and was accepted. A reload has no
// starting: nothing is accepted before its job says how it ended.
TEST(TwoLookTest, AReloadIsJudgedByItsOwnJob) {
  Look reloading = L("reloading", "reload", "a", 0, true);
  Verdict pending = JudgeTwoLooks(UnitAction::kReload, std::nullopt, reloading, reloading, 2s);
  EXPECT_FALSE(pending.accepted) << pending.detail;
  EXPECT_THAT(pending.detail, HasSubstr("job reload still pending"));
  Verdict failed = JudgeTwoLooks(UnitAction::kReload, "failed", L("active", "running"),
                                 L("active", "running"), 4s);
  EXPECT_FALSE(failed.accepted);
  EXPECT_EQ(failed.detail, "job reload ended \"failed\", unit active (running) 4.0 s after reload");
  Verdict done = JudgeTwoLooks(UnitAction::kReload, "done", L("active", "running"),
                               L("active", "running"), 4s);
  EXPECT_TRUE(done.accepted);
  EXPECT_EQ(done.detail, "active (running)");
  // Its end heard only by the second look: judged by it.
  Verdict late = JudgeTwoLooks(UnitAction::kReload, "done", L("active", "running", "a", 0, true),
                               L("active", "running"), 1s);
  EXPECT_TRUE(late.accepted) << late.detail;
}

TEST(FirstLookWaitTest, AReloadWaitsForItsJobWhileSystemdRunsIt) {
  UnitStatus running;
  running.active_state = "active";
  running.sub_state = "running";
  running.invocation_id = "a";
  UnitStatus reloading = running;
  reloading.active_state = "reloading";
  reloading.sub_state = "reload";
  FirstLookWait w(UnitAction::kReload, running, 1s);
  EXPECT_FALSE(w.Due(1s, false, reloading));
  EXPECT_FALSE(w.Due(3s, false, reloading)) << "ExecReload= still runs: its job decides";
  EXPECT_TRUE(w.Due(3500ms, true, running));
  EXPECT_FALSE(w.reloading());
  FirstLookWait stuck(UnitAction::kReload, running, 1s);
  EXPECT_TRUE(stuck.Due(5min + 1s, false, reloading));
  EXPECT_TRUE(stuck.reloading());
  FirstLookWait queued(UnitAction::kReload, running, 1s);
  EXPECT_FALSE(queued.Due(900ms, false, running));
  EXPECT_TRUE(queued.Due(1s, false, running)) << "not running ExecReload=: one settle";
}

// Issue 38 (5): an ExecStop= that hangs until TimeoutStopSec=, then a
// SIGTERM ignored until the second timeout: systemd gives each phase the
// timeout, and so does the wait. It failed at the first timeout before.
TEST(FirstLookWaitTest, EachStopPhaseGetsTheStopTimeoutAnew) {
  UnitStatus running;
  running.active_state = "active";
  running.sub_state = "running";
  running.invocation_id = "a";
  running.timeout_stop = 2s;
  UnitStatus exec_stop = running;
  exec_stop.active_state = "deactivating";
  exec_stop.sub_state = "stop";
  UnitStatus sigterm = exec_stop;
  sigterm.sub_state = "stop-sigterm";
  UnitStatus up = running;
  up.invocation_id = "b";
  FirstLookWait w(UnitAction::kRestart, running, 1s);
  EXPECT_FALSE(w.Due(50ms, false, exec_stop));
  EXPECT_FALSE(w.Due(2s, false, sigterm)) << "the SIGTERM phase begins: its own timeout";
  EXPECT_FALSE(w.Due(4500ms, false, sigterm));
  EXPECT_FALSE(w.Due(4600ms, false, up)) << "came up after SIGKILL: a settle from now";
  EXPECT_TRUE(w.Due(5600ms, false, up));
  EXPECT_FALSE(w.stopping());
  FirstLookWait hung(UnitAction::kRestart, running, 1s);
  EXPECT_FALSE(hung.Due(50ms, false, exec_stop));
  EXPECT_FALSE(hung.Due(2900ms, false, exec_stop));
  EXPECT_TRUE(hung.Due(3s, false, exec_stop)) << "one phase that outlasts its timeout";
  EXPECT_TRUE(hung.stopping());
}

// Each ExecStop= command gets TimeoutStopSec= of its own (the sub-state
// stays "stop" from one to the next): three commands of 1.6 s under a 2 s
// timeout are one phase of 4.8 s. It failed at the first timeout before.
TEST(FirstLookWaitTest, EachExecStopCommandGetsTheStopTimeout) {
  UnitStatus running;
  running.active_state = "active";
  running.sub_state = "running";
  running.invocation_id = "a";
  running.timeout_stop = 2s;
  running.exec_stop = 3;
  UnitStatus exec_stop = running;
  exec_stop.active_state = "deactivating";
  exec_stop.sub_state = "stop";
  UnitStatus up = running;
  up.invocation_id = "b";
  FirstLookWait w(UnitAction::kRestart, running, 1s);
  EXPECT_FALSE(w.Due(50ms, false, exec_stop));
  EXPECT_FALSE(w.Due(4800ms, false, exec_stop)) << "the third command still within its timeout";
  EXPECT_FALSE(w.Due(4900ms, false, up));
  EXPECT_TRUE(w.Due(5900ms, false, up));
  EXPECT_FALSE(w.stopping());
  FirstLookWait hung(UnitAction::kRestart, running, 1s);
  EXPECT_FALSE(hung.Due(6900ms, false, exec_stop));
  EXPECT_TRUE(hung.Due(7s, false, exec_stop)) << "three timeouts and a settle";
  EXPECT_TRUE(hung.stopping());
  // No ExecStop=: the stop begins with SIGTERM, one timeout.
  running.exec_stop = 0;
  UnitStatus sigterm = exec_stop;
  sigterm.sub_state = "stop-sigterm";
  FirstLookWait plain(UnitAction::kRestart, running, 1s);
  EXPECT_FALSE(plain.Due(2900ms, false, sigterm));
  EXPECT_TRUE(plain.Due(3s, false, sigterm));
}

// Issue 38 (10): a false condition read "inactive (dead) 1.0 s after
// start", and a oneshot whose condition was false "finished
// (Result=success)" though it never ran.
TEST(TwoLookTest, ASkippedStartSaysWhichConditionWasFalse) {
  Look skipped = L("inactive", "dead", "", 0, false, "success", "oneshot");
  skipped.unit.failed_condition = "ConditionPathExists=/etc/app.conf";
  Verdict v = JudgeTwoLooks(UnitAction::kStart, "done", skipped, skipped, 1s);
  EXPECT_FALSE(v.accepted) << "a oneshot that never ran is not finished";
  EXPECT_EQ(
      v.detail,
      "skipped by systemd: ConditionPathExists=/etc/app.conf is false (inactive (dead)) 1.0 s "
      "after start");
  skipped.unit.type = "simple";
  EXPECT_FALSE(JudgeTwoLooks(UnitAction::kStart, "done", skipped, skipped, 1s).accepted);
}

// A start systemd's rate limit refused, or one held by a unit it requires
// that failed, never ran what the apply wrote: not a death on it (a
// rollback would hold a good fix back), and still owed.
TEST(TwoLookTest, AStartThatNeverRanIsNotADeathOnWhatWasWritten) {
  Look limited = L("failed", "failed", "a", 0, false, "start-limit-hit");
  Verdict v = JudgeTwoLooks(UnitAction::kRestart, "failed", limited, limited, 1s);
  EXPECT_FALSE(v.accepted);
  EXPECT_TRUE(v.not_run);
  EXPECT_THAT(v.detail, HasSubstr("Result=start-limit-hit"));
  // One that ran what was written and died until systemd's limit stopped
  // restarting it is a crash loop on it: a death, rolled back.
  v = JudgeTwoLooks(UnitAction::kRestart, "done", L("active", "running", "b"),
                    L("failed", "failed", "b", 4, false, "start-limit-hit"), 1s);
  EXPECT_FALSE(v.accepted);
  EXPECT_FALSE(v.not_run);
  Look ran = L("failed", "failed", "c", 0, false, "start-limit-hit");
  ran.another_run = true;
  EXPECT_FALSE(JudgeTwoLooks(UnitAction::kRestart, "failed", ran, ran, 1s).not_run)
      << "a run since the host asked: it ran, and died";
  Look dead = L("inactive", "dead", "a", 0, false, "success");
  EXPECT_TRUE(JudgeTwoLooks(UnitAction::kStart, "dependency", dead, dead, 1s).not_run);
  Look died = L("failed", "failed", "b", 0, false, "exit-code");
  died.another_run = true;
  EXPECT_FALSE(JudgeTwoLooks(UnitAction::kRestart, "failed", died, died, 1s).not_run)
      << "one that ran and died is a death";
  Look up_then_down = L("active", "running", "b");
  up_then_down.another_run = true;
  EXPECT_FALSE(JudgeTwoLooks(UnitAction::kRestart, "failed", up_then_down, died, 1s).not_run);
}

// The rate limit refuses a start of a unit whose last run was killed: the
// Result stays that run's (systemd writes start-limit-hit only over a
// success), and the InvocationID the run's. Before, the job's "failed"
// read as the new config dying: a good fix was rolled back and held.
TEST(TwoLookTest, AFailedJobWithNoRunSinceAskedNeverRanWhateverTheResult) {
  Look old = L("failed", "failed", "a", 0, false, "signal");
  Verdict v = JudgeTwoLooks(UnitAction::kStart, "failed", old, old, 300ms);
  EXPECT_FALSE(v.accepted);
  EXPECT_TRUE(v.not_run);
  EXPECT_TRUE(JudgeTwoLooks(UnitAction::kRestart, "canceled", old, old, 300ms).not_run);
  EXPECT_FALSE(JudgeTwoLooks(UnitAction::kReload, "failed", L("active", "running"),
                             L("active", "running"), 300ms)
                   .not_run)
      << "a reload that failed is the daemon refusing what was written";
  EXPECT_FALSE(JudgeTwoLooks(UnitAction::kRestart, "assert", old, old, 300ms).not_run)
      << "an AssertPathExists= of the new definition that failed: refused, rolled back";
  Look unknown = L("failed", "failed", "", 0, false, "exit-code");
  EXPECT_FALSE(JudgeTwoLooks(UnitAction::kStart, "failed", unknown, unknown, 300ms).not_run)
      << "no InvocationID: whether it ran cannot be told";
}

// A unit the apply did not act on, looked at with those it did.
TEST(BystanderTest, OnlyWhatMovedIsJudged) {
  UnitStatus before = L("active", "running", "a", 2).unit;
  Look same = L("active", "running", "a", 2);
  EXPECT_FALSE(JudgeBystander(before, same).has_value()) << "as it was: no verdict";
  Look lost = same;
  lost.error = "Transport endpoint is not connected";
  EXPECT_FALSE(JudgeBystander(before, lost).has_value()) << "a look not taken judges nothing";

  Look anew = L("active", "running", "b", 0);  // a start by anyone zeroes NRestarts
  std::optional<Verdict> v = JudgeBystander(before, anew);
  ASSERT_TRUE(v.has_value());
  EXPECT_TRUE(v->accepted) << "started anew with a unit acted on, and holding";
  EXPECT_THAT(v->detail, HasSubstr("started anew during this apply"));

  v = JudgeBystander(before, L("active", "running", "c", 1));
  ASSERT_TRUE(v.has_value());
  EXPECT_FALSE(v->accepted) << "a run Restart= began at the second look";

  v = JudgeBystander(before, L("active", "running", "a", 3));
  ASSERT_TRUE(v.has_value());
  EXPECT_FALSE(v->accepted) << "NRestarts grew: a death Restart= hid";
  EXPECT_THAT(v->detail, HasSubstr("(NRestarts 2 -> 3)"));

  Look reset = L("active", "running", "d", 0);
  v = JudgeBystander(before, reset);
  ASSERT_TRUE(v.has_value());
  EXPECT_TRUE(v->accepted) << "stopped and started with a unit acted on: NRestarts starts at 0, "
                              "and the first look may catch it on the way";
  v = JudgeBystander(before, L("activating", "start", "e", 3));
  ASSERT_TRUE(v.has_value());
  EXPECT_FALSE(v->accepted) << "a run Restart= began counts on";

  v = JudgeBystander(before, L("inactive", "dead", "a", 2));
  ASSERT_TRUE(v.has_value());
  EXPECT_FALSE(v->accepted);
  EXPECT_EQ(v->detail, "went down during this apply: inactive (dead), declared running");

  // Stopped with a unit it requires and is ordered after, which is not up
  // yet: its start waits in systemd's queue. On its way, as a start is.
  Look queued = L("inactive", "dead", "a", 2);
  queued.unit.job_queued = true;
  v = JudgeBystander(before, queued);
  ASSERT_TRUE(v.has_value());
  EXPECT_TRUE(v->accepted);
  EXPECT_THAT(v->detail, HasSubstr("its start is queued behind one it is ordered after"));
  queued.unit.active_state = "failed";
  queued.unit.result = "exit-code";
  EXPECT_FALSE(JudgeBystander(before, queued)->accepted) << "failed, whatever is queued";

  // A oneshot that finished well during the apply is as declared.
  UnitStatus running_oneshot = L("activating", "start", "o", 0, false, "success", "oneshot").unit;
  EXPECT_FALSE(
      JudgeBystander(running_oneshot, L("inactive", "dead", "o", 0, false, "success", "oneshot"))
          .has_value());
}

// What a unit read again as not found (its file deleted, systemd
// reloaded) would stop without.
TEST(UnitStatusTest, AStopReadsItsFileForWhatAUnitWithoutOneLacks) {
  UnitStatus plain;
  plain.timeout_stop = std::chrono::seconds(90);
  plain.kill_mode = "control-group";
  EXPECT_FALSE(StopReadsItsFile(plain));
  EXPECT_FALSE(StopReadsItsFile(UnitStatus{})) << "nothing known: nothing read";
  UnitStatus s = plain;
  s.exec_stop = 1;
  EXPECT_TRUE(StopReadsItsFile(s));
  s = plain;
  s.exec_stop_post = 2;
  EXPECT_TRUE(StopReadsItsFile(s));
  s = plain;
  s.timeout_stop = std::chrono::minutes(5);
  EXPECT_TRUE(StopReadsItsFile(s));
  s = plain;
  s.timeout_stop = {};
  s.timeout_stop_unbounded = true;
  EXPECT_TRUE(StopReadsItsFile(s));
  s = plain;
  s.kill_mode = "mixed";
  EXPECT_TRUE(StopReadsItsFile(s));
}

TEST(UnitStatusTest, StoppedIsNotStopping) {
  UnitStatus s;
  s.active_state = "deactivating";
  s.sub_state = "stop-sigterm";
  EXPECT_FALSE(StoppedAsDeclared(s));
  s.active_state = "inactive";
  EXPECT_TRUE(StoppedAsDeclared(s));
  s.active_state = "failed";
  EXPECT_TRUE(StoppedAsDeclared(s));
  s.timeout_stop = 10s;
  EXPECT_EQ(StopPhaseBound(s), 10s);
  s.timeout_stop = 0s;
  EXPECT_EQ(StopPhaseBound(s), 90s) << "systemd's default";
  s.timeout_stop = 24h;
  EXPECT_EQ(StopPhaseBound(s), 5min);
  s.timeout_stop = 10s;
  s.exec_stop = 3;
  s.exec_stop_post = 2;
  EXPECT_EQ(StopPhaseBound(s), 10s) << "stop-sigterm: one timeout, whatever the commands";
  EXPECT_EQ(StopPhaseBound(s, "stop"), 30s) << "one timeout per ExecStop=";
  s.exec_stop = 100000;
  EXPECT_EQ(StopPhaseBound(s, "stop"), 160s) << "at most sixteen commands' worth";
  s.exec_stop = 3;
  EXPECT_EQ(StopPhaseBound(s, "stop-post"), 20s) << "one timeout per ExecStopPost=";
  EXPECT_EQ(FirstStopPhase(s), "stop");
}

}  // namespace
}  // namespace mesh::core

namespace mesh::core {
namespace {

// Of two unit files of one name, systemd loads the one in the directory it
// reads first: only that order says the host's file is shadowed.
TEST(UnitSearchOrderTest, OnlyADirectoryReadBeforeTheUnitDirShadowsIt) {
  const std::vector<std::string> path = {"/run/systemd/transient", "/etc/systemd/system/",
                                         "/run/systemd/system", "/usr/lib/systemd/system"};
  auto shadows = [&](std::string_view fragment, std::string_view unit_dir) {
    return LoadedFromEarlierDirectory(fragment, "a.service", unit_dir, path);
  };
  EXPECT_TRUE(shadows("/etc/systemd/system/a.service", "/run/systemd/system"));
  EXPECT_TRUE(shadows("/run/systemd/transient/a.service", "/etc/systemd/system"));
  EXPECT_TRUE(shadows("/etc//systemd/system/./a.service", "/run/systemd/system/"));
  EXPECT_FALSE(shadows("/etc/systemd/system/a.service", "/etc/systemd//system/.")) << "its own";
  EXPECT_FALSE(shadows("/usr/lib/systemd/system/a.service", "/etc/systemd/system"))
      << "a vendor's file, overridden by the host's";
  EXPECT_FALSE(shadows("/etc/systemd/system/a.service", "/srv/units"))
      << "--unit-dir by a name systemd does not use: no judgement";
  EXPECT_FALSE(shadows("/opt/linked/a.service", "/run/systemd/system"))
      << "a linked unit's file, outside the search path";
  EXPECT_FALSE(shadows("/etc/systemd/system/b.service", "/run/systemd/system"))
      << "a file of another name (an instance's template)";
  EXPECT_FALSE(shadows("a.service", "/run/systemd/system"));
  EXPECT_FALSE(LoadedFromEarlierDirectory("/etc/systemd/system/a.service", "a.service",
                                          "/run/systemd/system", {}));
  UnitStatus s;
  s.fragment_path = "/etc/systemd/system/a.service";
  EXPECT_TRUE(LoadedFrom(s, "/etc//systemd/system/", "a.service"));
  EXPECT_FALSE(LoadedFrom(s, "/etc/systemd", "system/a.service"));
  EXPECT_EQ(SimpleDir("//a/./b//"), "/a/b");
  EXPECT_EQ(SimpleDir("/"), "/");
}

}  // namespace
}  // namespace mesh::core
