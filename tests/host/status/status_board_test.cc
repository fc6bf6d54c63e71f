#include "host/status/status_board.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace mesh::status {
namespace {

using ::testing::HasSubstr;

core::ApplyReport Report() {
  core::ApplyReport r;
  r.machine = "edge-1";
  r.generation = 7;
  r.declaration_digest = "abc";
  core::ResourceOutcome cred;
  cred.id = "tok";
  cred.kind = "credential";
  cred.outcome = core::Outcome::kCreated;
  cred.detail = "wrote secret, mode 0400";
  cred.digest = "sha256:1";
  core::ResourceOutcome svc;
  svc.id = "jail";
  svc.kind = "service";
  svc.outcome = core::Outcome::kRestarted;
  svc.mutable_declared().unit = "fail2ban.service";
  svc.mutable_declared().state = "running";
  svc.host_acted = true;
  svc.mutable_declared().restart_reason = core::RestartReason::kRestartOn;
  svc.unit = core::UnitSnapshot{"fail2ban.service", "active", "running", "success", 2, 0, true};
  r.outcomes = {cred, svc};
  return r;
}

// A look at the unit: running, or failed, after `n_restarts` of systemd's.
core::UnitStatus Running(uint32_t n_restarts, std::string invocation = "") {
  core::UnitStatus s;
  s.active_state = "active";
  s.sub_state = "running";
  s.n_restarts = n_restarts;
  s.invocation_id = std::move(invocation);
  return s;
}
core::UnitStatus Failed(uint32_t n_restarts) {
  core::UnitStatus s;
  s.active_state = "failed";
  s.sub_state = "failed";
  s.result = "exit-code";
  s.n_restarts = n_restarts;
  return s;
}

TEST(StatusBoardTest, JsonShapeOfTheSpec) {
  StatusBoard board;
  board.PublishApply(Report());
  nlohmann::json j = ToJson(*board.Get());
  for (const char* key : {"machine", "generation", "declaration_digest", "healthy",
                          "last_reconcile", "error", "resources"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["machine"], "edge-1");
  EXPECT_TRUE(j["healthy"].get<bool>());
  EXPECT_TRUE(j["error"].is_null());
  for (const char* key : {"started_at", "finished_at", "duration_seconds", "result", "counts"}) {
    EXPECT_TRUE(j["last_reconcile"].contains(key)) << key;
  }
  EXPECT_EQ(j["last_reconcile"]["counts"]["restarted"], 1);
  EXPECT_EQ(j["last_reconcile"]["counts"]["failed"], 0);
  const auto& svc = j["resources"][1];
  for (const char* key : {"id", "kind", "outcome", "detail", "applied_at", "digest", "unit"}) {
    EXPECT_TRUE(svc.contains(key)) << key;
  }
  for (const char* key :
       {"name", "active_state", "sub_state", "result", "n_restarts", "host_restarts"}) {
    EXPECT_TRUE(svc["unit"].contains(key)) << key;
  }
  EXPECT_EQ(svc["unit"]["host_restarts"], 1);
  EXPECT_TRUE(svc["unit"]["journal"].is_null()) << "not looked: nothing failed on it";
  EXPECT_FALSE(j["resources"][0].contains("unit"));

  core::ApplyReport failed = Report();
  failed.outcomes[1].outcome = core::Outcome::kFailed;
  failed.outcomes[1].unit->journal = {"refusing /etc/app.conf: line 3"};
  board.PublishApply(failed);
  nlohmann::json unit = ToJson(*board.Get())["resources"][1]["unit"];
  EXPECT_EQ(unit["journal"],
            nlohmann::json({{"lines", {"refusing /etc/app.conf: line 3"}}, {"note", nullptr}}));

  // Not read (the bus lost): its state is not known, and says so, rather
  // than a state of "" and 0 restarts by systemd.
  core::ApplyReport unread = Report();
  unread.outcomes[1].outcome = core::Outcome::kFailed;
  unread.outcomes[1].unit->active_state.clear();
  unread.outcomes[1].unit->sub_state.clear();
  unread.outcomes[1].unit->result.clear();
  unread.outcomes[1].unit->n_restarts = 0;
  board.PublishApply(unread);
  unit = ToJson(*board.Get())["resources"][1]["unit"];
  for (const char* key : {"active_state", "sub_state", "result", "n_restarts"}) {
    EXPECT_TRUE(unit[key].is_null()) << key << ": " << unit[key];
  }
  EXPECT_EQ(unit["name"], "fail2ban.service");
  EXPECT_TRUE(unit["host_restarts"].is_number()) << "the host's own count is known";
}

TEST(StatusBoardTest, DeadUnitBetweenAppliesTurnsUnhealthy) {
  StatusBoard board;
  board.PublishApply(Report());
  core::UnitStatus dead;
  dead.active_state = "failed";
  dead.sub_state = "failed";
  dead.result = "signal";
  board.PublishUnit("fail2ban.service", dead, std::chrono::steady_clock::now());
  Health h = Judge(*board.Get());
  EXPECT_FALSE(h.healthy);
  EXPECT_THAT(h.text, HasSubstr("unit fail2ban.service is failed (failed), declared running"));
  EXPECT_EQ(ToJson(*board.Get())["resources"][1]["unit"]["active_state"], "failed");
}

// The live watch saw the unit die while the apply ran (the apply did not
// act on it, and looked at it first): the apply's picture of it is not
// the last word, and its outcome stays what the apply did.
TEST(StatusBoardTest, ALaterLookOverTheReportKeepsADeathSeenDuringTheApply) {
  core::ApplyReport report = Report();
  core::UnitStatus dead;
  dead.active_state = "failed";
  dead.sub_state = "failed";
  dead.result = "signal";
  dead.n_restarts = 3;
  ShowLaterLook(report, "fail2ban.service", dead, /*up=*/false);
  ShowLaterLook(report, "other.service", core::UnitStatus{}, /*up=*/false);
  StatusBoard board;
  board.PublishApply(std::move(report));
  Health h = Judge(*board.Get());
  EXPECT_FALSE(h.healthy);
  EXPECT_THAT(h.text, HasSubstr("unit fail2ban.service is failed (failed), declared running"));
  nlohmann::json unit = ToJson(*board.Get())["resources"][1];
  EXPECT_EQ(unit["outcome"], "restarted");
  EXPECT_EQ(unit["unit"]["n_restarts"], 3);
  EXPECT_EQ(unit["unit"]["result"], "signal");
  EXPECT_EQ(ToJson(*board.Get())["resources"][0]["outcome"], "created");
}

// Issue 14: a record that could not be saved failed the apply, but
// /healthz stayed 200 — the apply's own failure is not health.
TEST(StatusBoardTest, TheApplysOwnFailureIsNotHealthy) {
  StatusBoard board;
  auto r = Report();
  r.result = core::ApplyResult::kFailed;
  r.error = "record not saved: write /state.json: No space left on device";
  board.PublishApply(r);
  Health h = Judge(*board.Get());
  EXPECT_FALSE(h.healthy);
  EXPECT_THAT(h.text, HasSubstr("the last apply failed: record not saved"));
  EXPECT_EQ(ToJson(*board.Get())["last_reconcile"]["error"], r.error);
  EXPECT_TRUE(ToJson(*board.Get())["error"].is_null()) << "not a refused declaration";
  board.PublishApply(Report());
  EXPECT_TRUE(Judge(*board.Get()).healthy) << "the next good apply clears it";
}

// An apply that became a plan (its intent not saved) showed its "would
// write" and "would restart" as the machine's outcomes, at the generation it
// never applied. The last applied picture stays, the failure beside it.
TEST(StatusBoardTest, AnApplyThatChangedNothingLeavesThePictureAsItWas) {
  StatusBoard board;
  board.PublishApply(Report());
  auto would = Report();
  would.generation = 8;
  would.result = core::ApplyResult::kFailed;
  would.changed_nothing = true;
  would.error = "intent not saved: No space left on device; nothing was changed";
  would.outcomes[0].outcome = core::Outcome::kUpdated;
  would.outcomes[0].detail = "would write secret, mode 0400";
  board.PublishApply(would);
  nlohmann::json j = ToJson(*board.Get());
  EXPECT_EQ(j["generation"], 7);
  EXPECT_EQ(j["resources"][0]["outcome"], "created");
  EXPECT_EQ(j["resources"][0]["detail"], "wrote secret, mode 0400");
  EXPECT_EQ(j["last_reconcile"]["result"], "failed");
  EXPECT_EQ(j["last_reconcile"]["error"], would.error);
  EXPECT_EQ(j["last_reconcile"]["counts"]["updated"], 0);
  EXPECT_FALSE(Judge(*board.Get()).healthy);
}

// Issue 15: an apply frozen in one call kept /healthz at 200 for ever.
TEST(StatusBoardTest, AStuckApplyIsNotHealthy) {
  StatusBoard board;
  board.PublishApply(Report());
  ASSERT_TRUE(Judge(*board.Get()).healthy);
  board.SetStalled("the apply under way has made no progress for 120.0 s");
  Health h = Judge(*board.Get());
  EXPECT_FALSE(h.healthy);
  EXPECT_THAT(h.text, HasSubstr("no progress for 120.0 s"));
  EXPECT_EQ(ToJson(*board.Get())["apply_stalled"],
            "the apply under way has made no progress for 120.0 s");
  board.SetStalled(std::nullopt);
  EXPECT_TRUE(Judge(*board.Get()).healthy) << "moving again";
  board.SetStalled("stuck");
  board.PublishApply(Report());
  EXPECT_TRUE(Judge(*board.Get()).healthy) << "the apply ended";
  EXPECT_TRUE(ToJson(*board.Get())["apply_stalled"].is_null());
}

// The live watch blind to systemd (the bus gone): the units' states shown
// are the last seen, and /healthz says so rather than vouching for them.
// An apply keeps it: only the watch, seeing again, clears it.
TEST(StatusBoardTest, UnitsTheWatchCannotSeeAreNotHealthy) {
  StatusBoard board;
  board.PublishApply(Report());
  ASSERT_TRUE(Judge(*board.Get()).healthy);
  board.SetUnitsUnseen(
      "the units have not been seen for 10.0 s: the live unit watch cannot follow "
      "systemd (the bus connection was lost)");
  Health h = Judge(*board.Get());
  EXPECT_FALSE(h.healthy);
  EXPECT_THAT(h.text, HasSubstr("the live unit watch cannot follow systemd"));
  EXPECT_THAT(ToJson(*board.Get())["units_unseen"].get<std::string>(),
              HasSubstr("not been seen for 10.0 s"));
  board.PublishApply(Report());
  EXPECT_FALSE(Judge(*board.Get()).healthy) << "an apply does not give the watch its sight back";
  board.SetUnitsUnseen(std::nullopt);
  EXPECT_TRUE(Judge(*board.Get()).healthy);
  EXPECT_TRUE(ToJson(*board.Get())["units_unseen"].is_null());
}

// Issue 14: a crash loop reads "active" for a moment in every run. Once a
// look found the unit down (NRestarts grown, auto-restart, failed), it is
// up again only after staying up a settle, as two looks would say.
TEST(StatusBoardTest, ACrashLoopIsNeverUpBetweenApplies) {
  using namespace std::chrono_literals;
  StatusBoard board(1s);
  board.PublishApply(Report());  // confirmed up at NRestarts 2
  auto t = std::chrono::steady_clock::time_point{} + 100s;
  core::UnitStatus s = Running(2);
  EXPECT_TRUE(board.PublishUnit("fail2ban.service", s, t)) << "as the apply confirmed it";
  for (uint32_t run = 3; run < 8; ++run) {
    s.n_restarts = run;  // systemd restarted it
    EXPECT_FALSE(board.PublishUnit("fail2ban.service", s, t += 10ms));
    EXPECT_FALSE(board.PublishUnit("fail2ban.service", s, t += 100ms)) << "active for a moment";
    EXPECT_FALSE(Judge(*board.Get()).healthy);
  }
  // /healthz says why in plain words (issue 40): who restarted it, and
  // what it waits for.
  EXPECT_THAT(Judge(*board.Get()).text,
              HasSubstr("unit fail2ban.service is active (running), restarted by systemd "
                        "(NRestarts 7) and not yet running for a whole --settle since"));
  // It stays up now: up again once a settle has passed.
  EXPECT_FALSE(board.PublishUnit("fail2ban.service", s, t += 900ms));
  {
    // Started by someone else (NRestarts back to 0): not said to be
    // systemd's doing.
    StatusBoard other;
    other.PublishApply(Report());
    core::UnitStatus dead;
    dead.active_state = "failed";
    dead.sub_state = "failed";
    other.PublishUnit("fail2ban.service", dead, t);
    core::UnitStatus started = s;
    started.n_restarts = 0;
    started.invocation_id = "by-hand";
    other.PublishUnit("fail2ban.service", started, t + 100ms);
    EXPECT_THAT(Judge(*other.Get()).text,
                HasSubstr("unit fail2ban.service is active (running), started again (by an "
                          "operator or a job: NRestarts 0) and not yet running for a whole "
                          "--settle since"));
  }
  EXPECT_TRUE(board.PublishUnit("fail2ban.service", s, t += 200ms));
  EXPECT_TRUE(Judge(*board.Get()).healthy);
}

// A crash loop slower than a settle (each run 3 s, restarted after 1 s):
// every run outlasted a settle, so the unit read up three quarters of the
// time, /healthz flipped, and MeshHostDaemonDead's minute never ran out.
// Once systemd restarted it more than twice in 15 minutes, a run must
// outlast the loop's last two runs by a settle; an apply's two looks
// inside a run do not call it up either.
TEST(StatusBoardTest, ACrashLoopSlowerThanASettleIsNotUp) {
  using namespace std::chrono_literals;
  StatusBoard board(1s);
  board.PublishApply(Report());  // confirmed up at NRestarts 2
  auto t = std::chrono::steady_clock::time_point{} + 100s;
  core::UnitStatus s = Running(2, "run0");
  EXPECT_TRUE(board.PublishUnit("fail2ban.service", s, t));
  int up_looks = 0;
  // One run: the crash, systemd's restart a second later, then looks every
  // 200 ms for `lasts` of running; returns how many looks said up.
  auto run = [&](uint32_t n, std::chrono::milliseconds lasts) {
    core::UnitStatus dead = s;
    dead.active_state = "activating";
    dead.sub_state = "auto-restart";
    EXPECT_FALSE(board.PublishUnit("fail2ban.service", dead, t += 10ms));
    s.n_restarts = n;
    s.invocation_id = "run" + std::to_string(n);
    int up = 0;
    for (auto ran = 0ms; ran <= lasts; ran += 200ms) {
      up += board.PublishUnit("fail2ban.service", s, t += ran == 0ms ? 1s : 200ms);
    }
    return up;
  };
  for (uint32_t n = 3; n <= 5; ++n) up_looks += run(n, 3000ms);
  EXPECT_GT(up_looks, 0) << "the first two crashes are not yet a loop";
  for (uint32_t n = 6; n <= 12; ++n) {
    EXPECT_EQ(run(n, 3000ms), 0) << "run " << n << " read up inside a crash loop";
    EXPECT_FALSE(Judge(*board.Get()).healthy);
  }
  EXPECT_THAT(Judge(*board.Get()).text,
              HasSubstr("restarted by systemd (NRestarts 12) more than twice in 15 minutes (a "
                        "crash loop), and not yet running longer than its last runs (2.8 s) and "
                        "a --settle since"));
  // An apply whose two looks fell inside a run does not call it up.
  core::ApplyReport applied = Report();
  applied.outcomes[1].unit->n_restarts = 12;
  board.PublishApply(applied);
  EXPECT_FALSE(Judge(*board.Get()).healthy) << "the apply's looks were inside a run";
  EXPECT_FALSE(board.PublishUnit("fail2ban.service", s, t += 200ms));
  // Mended: a run that outlasts the loop's by a settle is up.
  int looks = 0;
  while (!board.PublishUnit("fail2ban.service", s, t += 200ms) && ++looks < 100) {
  }
  EXPECT_GE(looks, 15) << "up before it outlasted the loop's runs";
  EXPECT_LE(looks, 25);
  EXPECT_TRUE(Judge(*board.Get()).healthy);
  // The next apply leaves it alone (still within the 15 minutes of the
  // loop): the watch's word stands, not a new wait that would page.
  core::ApplyReport unchanged = Report();
  unchanged.outcomes[1].outcome = core::Outcome::kUnchanged;
  unchanged.outcomes[1].host_acted = false;
  unchanged.outcomes[1].unit->n_restarts = 12;
  board.HoldLoops(unchanged, t);
  EXPECT_TRUE(unchanged.outcomes[1].unit->up) << "what the metrics are told";
  board.PublishApply(unchanged);
  EXPECT_TRUE(Judge(*board.Get()).healthy);
  EXPECT_TRUE(board.PublishUnit("fail2ban.service", s, t += 200ms));
}

// The run before a loop began (an hour, then a crash) is not one of the
// loop's: a run outlasting the loop's own is up, not one outlasting the hour.
TEST(StatusBoardTest, TheRunBeforeALoopIsNotTheLoops) {
  using namespace std::chrono_literals;
  StatusBoard board(1s);
  board.PublishApply(Report());
  auto t = std::chrono::steady_clock::time_point{} + 100s;
  core::UnitStatus dead = Failed(2);
  board.PublishUnit("fail2ban.service", dead, t);
  // Started by hand (NRestarts back to 0): a run the watch times from its
  // start, an hour long; then it crashes, and keeps crashing 2 s in.
  core::UnitStatus s = Running(0, "long");
  board.PublishUnit("fail2ban.service", s, t += 1s);
  dead.n_restarts = 0;
  for (uint32_t n = 1; n <= 3; ++n) {
    board.PublishUnit("fail2ban.service", dead, t += n == 1 ? 1h : 2s);
    s.n_restarts = n;
    s.invocation_id = "run" + std::to_string(n);
    board.PublishUnit("fail2ban.service", s, t += 500ms);  // NRestarts grown: down
    board.PublishUnit("fail2ban.service", s, t += 200ms);  // the run timed from here
    dead.n_restarts = n;
  }
  EXPECT_THAT(Judge(*board.Get()).text, HasSubstr("(a crash loop)"));
  int looks = 0;
  while (!board.PublishUnit("fail2ban.service", s, t += 200ms) && ++looks < 1000) {
  }
  EXPECT_LE(looks, 20) << "held to the hour before the loop";
}

// A review's cases: an hour-long run ended, then restarts so fast that one
// look saw NRestarts grow by 3 (the hour was filed as the last of them, and
// held the unit down for an hour); and a reload of a mended unit, which
// is no new run, taken as one (it waited out the loop's runs again).
TEST(StatusBoardTest, ABurstOfRestartsAndAReloadDoNotHoldAMendedUnitDown) {
  using namespace std::chrono_literals;
  StatusBoard board(1s);
  board.PublishApply(Report());
  auto t = std::chrono::steady_clock::time_point{} + 100s;
  core::UnitStatus s = Running(0, "long");
  core::UnitStatus dead = Failed(2);
  board.PublishUnit("fail2ban.service", dead, t);
  board.PublishUnit("fail2ban.service", s, t += 1s);  // started by hand: timed from here
  board.PublishUnit("fail2ban.service", s, t += 1h);
  dead.n_restarts = 0;
  board.PublishUnit("fail2ban.service", dead, t += 1s);
  s.n_restarts = 3;  // three restarts between two looks
  s.invocation_id = "after";
  EXPECT_FALSE(board.PublishUnit("fail2ban.service", s, t += 500ms));
  EXPECT_THAT(Judge(*board.Get()).text, HasSubstr("unit fail2ban.service is active (running)"));
  int looks = 0;
  while (!board.PublishUnit("fail2ban.service", s, t += 200ms) && ++looks < 1000) {
  }
  EXPECT_LE(looks, 10) << "held to the hour before the burst";
  // Up again; a reload by the host (restart_on's kin, reload_on) is the
  // same run: it stays up.
  core::ApplyReport reloaded = Report();
  reloaded.outcomes[1].outcome = core::Outcome::kReloaded;
  reloaded.outcomes[1].unit->n_restarts = 3;
  board.HoldLoops(reloaded, t);
  EXPECT_TRUE(reloaded.outcomes[1].unit->up);
  board.PublishApply(reloaded);
  EXPECT_TRUE(Judge(*board.Get()).healthy) << Judge(*board.Get()).text;
}

// Issue 38 (9): in a crash loop whose restarts the watch's looks missed
// (a death between two looks, NRestarts the same at both), two looks a
// settle apart under different invocations made it up for a moment every
// cycle, and MeshHostDaemonDead never fired. A streak is one invocation.
TEST(StatusBoardTest, TwoRunsAreNotOneStreak) {
  using namespace std::chrono_literals;
  StatusBoard board(1s);
  board.PublishApply(Report());
  auto t = std::chrono::steady_clock::time_point{} + 100s;
  core::UnitStatus s;
  s.active_state = "active";
  s.sub_state = "running";
  s.n_restarts = 3;  // grown since the apply: down until it stays up
  for (int run = 0; run < 6; ++run) {
    s.invocation_id = "run" + std::to_string(run);
    EXPECT_FALSE(board.PublishUnit("fail2ban.service", s, t += 600ms)) << "run " << run;
    EXPECT_FALSE(board.PublishUnit("fail2ban.service", s, t += 600ms)) << "run " << run;
    s.invocation_id = "run" + std::to_string(run) + "b";  // died and came back, unseen
  }
  s.invocation_id = "stays";
  EXPECT_FALSE(board.PublishUnit("fail2ban.service", s, t += 600ms));
  EXPECT_FALSE(board.PublishUnit("fail2ban.service", s, t += 600ms));
  EXPECT_TRUE(board.PublishUnit("fail2ban.service", s, t += 600ms)) << "one run, up a settle";
}

// Issue 38 (8): a daemon started on a refused declaration showed machine
// "", generation 0 and no resources. It shows the recorded truth; once an
// apply was shown, a refusal keeps that one.
TEST(StatusBoardTest, ARefusalBeforeAnyApplyShowsTheRecordedTruth) {
  StatusBoard board;
  core::ApplyReport refused;
  refused.result = core::ApplyResult::kRefused;
  refused.error = "declaration: invalid JSON: ...";
  core::RecordedState recorded{"edge-1", 15, "abc", {}};
  core::ResourceOutcome web;
  web.id = "web";
  web.kind = "service";
  web.outcome = core::Outcome::kFailed;
  web.mutable_declared().unit = "web.service";
  web.mutable_declared().state = "running";
  web.unit = core::UnitSnapshot{};
  web.unit->name = "web.service";
  recorded.resources.push_back(web);
  refused.recorded = recorded;
  board.PublishApply(refused);
  auto snap = board.Get();
  EXPECT_EQ(snap->machine, "edge-1");
  EXPECT_EQ(snap->generation, 15u);
  ASSERT_EQ(snap->resources.size(), 1u);
  EXPECT_EQ(snap->resources[0].id, "web");
  EXPECT_EQ(*snap->error, "declaration: invalid JSON: ...");
  EXPECT_THAT(board.WatchedUnits(), ::testing::ElementsAre("web.service"));
  board.PublishApply(Report());
  refused.recorded->generation = 99;
  board.PublishApply(refused);
  EXPECT_NE(board.Get()->generation, 99u) << "an apply shown stays in force";
}

// Issue 38 (9): a restarted daemon showed no unit at all until its first
// apply ended, so the alerts saw the series vanish (a dead daemon's alert
// resolved). The record is shown from the start, not yet healthy; a
// refusal then shows its own words, and an apply replaces it.
TEST(StatusBoardTest, TheRecordIsShownFromTheStartUntilAnApply) {
  StatusBoard board;
  core::RecordedState recorded{"edge-1", 15, "abc", {}};
  core::ResourceOutcome web;
  web.id = "web";
  web.kind = "service";
  web.detail = "as recorded at generation 15 (the host has just started: ...)";
  web.mutable_declared().unit = "web.service";
  web.mutable_declared().state = "running";
  web.unit = core::UnitSnapshot{};
  web.unit->name = "web.service";
  web.unit->active_state = "active";
  web.unit->up = true;
  recorded.resources.push_back(web);
  board.PublishRecorded(recorded);
  auto snap = board.Get();
  EXPECT_EQ(snap->generation, 15u);
  ASSERT_EQ(snap->resources.size(), 1u);
  EXPECT_TRUE(snap->resources[0].unit->up);
  Health h = Judge(*snap);
  EXPECT_FALSE(h.healthy);
  EXPECT_THAT(h.text, HasSubstr("no reconcile has finished yet"));
  EXPECT_THAT(board.WatchedUnits(), ::testing::ElementsAre("web.service"));

  core::ApplyReport refused;
  refused.result = core::ApplyResult::kRefused;
  refused.error = "declaration: invalid JSON: ...";
  web.detail = "as recorded at generation 15 (the declaration is refused: nothing changed)";
  refused.recorded = core::RecordedState{"edge-1", 15, "abc", {web}};
  board.PublishApply(refused);
  EXPECT_THAT(board.Get()->resources[0].detail, HasSubstr("the declaration is refused"));

  board.PublishApply(Report());
  refused.recorded->generation = 99;
  board.PublishApply(refused);
  EXPECT_NE(board.Get()->generation, 99u) << "an apply shown stays in force";
}

TEST(StatusBoardTest, FailedResourceNamedInHealth) {
  StatusBoard board;
  auto r = Report();
  r.outcomes[0].outcome = core::Outcome::kFailed;
  r.outcomes[0].detail = "unknown user \"x\"";
  r.result = core::ApplyResult::kFailed;
  board.PublishApply(r);
  Health h = Judge(*board.Get());
  EXPECT_FALSE(h.healthy);
  EXPECT_THAT(h.text, HasSubstr("resource tok (credential) failed: unknown user"));
}

// /healthz is one line per thing wrong: a refusal naming an unknown field
// whose name holds a newline printed it raw, and the line after it read as
// a unit failure of its own.
TEST(StatusBoardTest, EachThingWrongIsOneLineWhateverItQuotes) {
  StatusBoard board;
  board.PublishApply(Report());
  core::ApplyReport refused;
  refused.result = core::ApplyResult::kRefused;
  refused.error =
      "declaration, field x\nunit forged.service is failed (failed), declared running: "
      "unknown field";
  board.PublishApply(refused);
  Health h = Judge(*board.Get());
  EXPECT_EQ(h.text,
            "declaration refused: declaration, field x\\x0aunit forged.service is failed "
            "(failed), declared running: unknown field\n");
}

// Bounded: /healthz is written whole into the socket's buffer, and read by
// people. 10,000 failed resources made it hundreds of KB.
TEST(StatusBoardTest, HealthSaysAtMostTwentyThingsAndCountsTheRest) {
  StatusBoard board;
  auto r = Report();
  r.result = core::ApplyResult::kFailed;
  r.outcomes.resize(30, r.outcomes[0]);
  for (size_t k = 0; k < r.outcomes.size(); ++k) {
    r.outcomes[k].id = "r" + std::to_string(k);
    r.outcomes[k].outcome = core::Outcome::kFailed;
    r.outcomes[k].detail = "unknown user";
  }
  board.PublishApply(r);
  Health h = Judge(*board.Get(), kHealthzLines);
  EXPECT_EQ(std::count(h.text.begin(), h.text.end(), '\n'), 21);
  std::string all = Judge(*board.Get()).text;
  EXPECT_EQ(std::count(all.begin(), all.end(), '\n'), 30) << "the page counts them all";
  EXPECT_THAT(h.text, HasSubstr("\n... and 10 more (GET /status lists every resource)\n"));
}

TEST(StatusBoardTest, RefusalKeepsTheLastStateAndShowsTheError) {
  StatusBoard board;
  board.PublishApply(Report());
  core::ApplyReport refused;
  refused.result = core::ApplyResult::kRefused;
  refused.error = "resource x, field mode: bad";
  board.PublishApply(refused);
  nlohmann::json j = ToJson(*board.Get());
  EXPECT_EQ(j["generation"], 7);
  EXPECT_EQ(j["error"], "resource x, field mode: bad");
  EXPECT_EQ(j["resources"].size(), 2u);
  EXPECT_EQ(j["last_reconcile"]["result"], "refused");
  EXPECT_FALSE(j["healthy"].get<bool>());
  // A refused declaration changed nothing: every count is 0.
  for (core::Outcome o : core::kAllOutcomes) {
    EXPECT_EQ(j["last_reconcile"]["counts"][std::string(core::OutcomeName(o))], 0)
        << core::OutcomeName(o);
  }
}

// The host's restarts are counted for the units declared now: one named
// per release (app-v1, app-v2, ...) grew a map entry each for the
// daemon's life. A unit dropped and declared again counts from 0.
TEST(StatusBoardTest, HostRestartsAreKeptOnlyForDeclaredUnits) {
  StatusBoard board;
  board.PublishApply(Report());
  board.PublishApply(Report());
  EXPECT_EQ(ToJson(*board.Get())["resources"][1]["unit"]["host_restarts"], 2);
  core::ApplyReport other = Report();
  other.outcomes[1].mutable_declared().unit = "fail2ban-v2.service";
  other.outcomes[1].unit->name = "fail2ban-v2.service";
  board.PublishApply(other);
  core::ApplyReport failed_whole;
  failed_whole.result = core::ApplyResult::kFailed;
  failed_whole.error = "last good not readable";
  board.PublishApply(failed_whole);  // forgets nothing
  board.PublishApply(other);
  EXPECT_EQ(ToJson(*board.Get())["resources"][1]["unit"]["host_restarts"], 2);
  board.PublishApply(Report());
  EXPECT_EQ(ToJson(*board.Get())["resources"][1]["unit"]["host_restarts"], 1)
      << "fail2ban.service was not declared in between";
}

// A removed resource is counted, and is no longer in the picture.
TEST(StatusBoardTest, ARemovedResourceIsCountedButNotShown) {
  StatusBoard board;
  core::ApplyReport r = Report();
  core::ResourceOutcome gone;
  gone.id = "old";
  gone.kind = "file";
  gone.outcome = core::Outcome::kRemoved;
  r.outcomes.insert(r.outcomes.begin(), gone);
  board.PublishApply(r);
  nlohmann::json j = ToJson(*board.Get());
  EXPECT_EQ(j["last_reconcile"]["counts"]["removed"], 1);
  EXPECT_EQ(j["last_reconcile"]["counts"]["created"], 1);
  EXPECT_EQ(j["last_reconcile"]["counts"]["restarted"], 1);
  ASSERT_EQ(j["resources"].size(), 2u);
  EXPECT_EQ(j["resources"][0]["id"], "tok");
  EXPECT_EQ(j["resources"][1]["id"], "jail");
}

TEST(StatusBoardTest, NothingYetIsNotHealthy) {
  StatusBoard board;
  EXPECT_FALSE(Judge(*board.Get()).healthy);
  EXPECT_TRUE(ToJson(*board.Get())["last_reconcile"].is_null());
}

}  // namespace
// With --verify-key, /status says whose signature the applied declaration
// carries; a refused push (a bad signature among them) leaves the one of
// the generation in force.
TEST(StatusBoardTest, TheSignerOfTheAppliedDeclarationStaysThroughARefusal) {
  StatusBoard board;
  EXPECT_TRUE(ToJson(*board.Get())["signature"].is_null());
  core::ApplyReport signed_report = Report();
  signed_report.signer = core::Signer{"62DA9E45B3F8B0AF", "generation 7 by ops"};
  board.PublishApply(signed_report);
  nlohmann::json j = ToJson(*board.Get());
  EXPECT_EQ(j["signature"]["key_id"], "62DA9E45B3F8B0AF");
  EXPECT_EQ(j["signature"]["trusted_comment"], "generation 7 by ops");
  core::ApplyReport refused;
  refused.result = core::ApplyResult::kRefused;
  refused.error = "declaration signature d.json.minisig: signed by another key";
  board.PublishApply(refused);
  EXPECT_EQ(ToJson(*board.Get())["signature"]["key_id"], "62DA9E45B3F8B0AF");
  board.PublishApply(Report());  // applied without --verify-key
  EXPECT_TRUE(ToJson(*board.Get())["signature"].is_null());
}

}  // namespace mesh::status
