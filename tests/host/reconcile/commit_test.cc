// The commit phase: outcomes, the record's entries and what stays owed
// from what the phases did (Settle), and the order in which they are made
// durable (Commit).
#include "host/reconcile/commit.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "host/adapters/posix_file_system.h"
#include "tests/fakes/faulty_file_system.h"
#include "tests/fakes/memory_record_store.h"
#include "tests/testing/temp_dir.h"

namespace mesh::reconcile {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using json = nlohmann::json;
using core::UnitAction;

core::UnitStatus Running(uint32_t n_restarts = 0) {
  core::UnitStatus s;
  s.active_state = "active";
  s.sub_state = "running";
  s.n_restarts = n_restarts;
  return s;
}

class SettleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    decl_ = *core::ParseDeclaration(json{
        {"machine", "m"},
        {"generation", 7},
        {"resources",
         {{{"id", "conf"}, {"kind", "file"}, {"path", "/c"}, {"content", "x"}},
          {{"id", "web"},
           {"kind", "service"},
           {"unit", "web.service"},
           {"state", "running"},
           {"restart_on", {"conf"}}}}}}.dump());
    plan_.steps.resize(2);
    for (Step& s : plan_.steps) {
      s.entry = core::RecordEntry{};
      s.entry->digest = "d";
      s.detail = "as declared";
    }
    UnitPlan u;
    u.index = 1;
    u.status = Running(2);
    u.up = true;
    plan_.units.push_back(u);
    acts_.resize(1);
    confirmed_.resize(1);
  }
  // Settles a copy: Settle spends the plan it is given (it takes the new
  // record entries from it), and a test may settle the same plan twice.
  Settled Run(bool dry_run = false) {
    writes_ = writes_.steps.empty() ? NoWrites(plan_) : writes_;
    olds_ = OldEntriesOf(decl_, record_);
    spent_ = plan_;  // the settle spends the plan, the writes and the contents
    spent_writes_ = writes_;
    spent_decl_ = decl_;
    return Settle({.declaration = &spent_decl_,
                   .record = &record_,
                   .olds = &olds_,
                   .plan = &spent_,
                   .owed = &owed_,
                   .writes = &spent_writes_,
                   .reloaded = &reloaded_,
                   .acts = &acts_,
                   .confirmed = &confirmed_,
                   .now = "now",
                   .dry_run = dry_run});
  }
  Plan spent_;
  Writes spent_writes_;
  core::Declaration spent_decl_;
  // The apply asked for a restart and its two looks said `accepted`.
  void Restarted(bool accepted, std::optional<uint64_t> owed_since = std::nullopt) {
    UnitPlan& u = plan_.units[0];
    u.action = UnitAction::kRestart;
    u.reason = core::RestartReason::kRestartOn;
    u.why = "restart_on conf changed";
    u.owed_since = owed_since;
    acts_[0] = {Acted::State::kQueued, "", "job/1"};
    confirmed_[0] = Confirmation{{accepted, accepted ? "active (running)"
                                                     : "failed (Result=exit-code) 1.0 s after "
                                                       "restart"},
                                 Running(2)};
    plan_.intent.owed["web"] = {UnitAction::kRestart, false, core::RestartReason::kRestartOn, u.why,
                                owed_since.value_or(7)};
  }

  core::Declaration decl_;
  core::Record record_;
  OldEntries olds_;
  Plan plan_;
  core::Intent owed_;
  Writes writes_;
  SystemdAnswer reloaded_;
  std::vector<Acted> acts_;
  std::vector<std::optional<Confirmation>> confirmed_;
};

TEST_F(SettleTest, AConfirmedDebtIsClearedAndItsGenerationSaid) {
  owed_.owed["web"] = {UnitAction::kRestart, false, core::RestartReason::kRestartOn,
                       "restart_on conf changed", 3};
  Restarted(true, 3);
  Settled s = Run();
  EXPECT_EQ(core::FormatOutcomeLine(s.outcomes[1]),
            "restarted web (service): restart_on conf changed (pending since generation 3); "
            "web.service active (running)");
  EXPECT_TRUE(s.outcomes[1].host_acted);
  EXPECT_EQ(s.outcomes[1].restart_reason_name(), "restart_on");
  EXPECT_TRUE(s.intent.owed.empty());
  EXPECT_FALSE(s.failed);
}

// An outcome boxes a unit's words (outcome.h): a file's carries none, or it
// costs /status's picture what the box saves.
TEST_F(SettleTest, OnlyAUnitsOutcomeHoldsItsWords) {
  Restarted(true, 3);
  Settled s = Run();
  EXPECT_EQ(s.outcomes[0].kind, "file");
  EXPECT_FALSE(s.outcomes[0].declared.has_value());
  EXPECT_EQ(s.outcomes[1].declared_unit(), "web.service");
}

TEST_F(SettleTest, AFailedSecondLookKeepsTheDebtAndSaysSo) {
  owed_.owed["web"] = {UnitAction::kRestart, false, core::RestartReason::kRestartOn,
                       "restart_on conf changed", 3};
  Restarted(false, 3);
  Settled s = Run();
  EXPECT_EQ(s.outcomes[1].outcome, core::Outcome::kFailed);
  EXPECT_TRUE(s.outcomes[1].confirm_failed);
  EXPECT_THAT(s.outcomes[1].detail, HasSubstr("(restart pending since generation 3)"));
  EXPECT_FALSE(s.outcomes[1].unit->up);
  EXPECT_TRUE(s.intent.owed.contains("web"));
  EXPECT_TRUE(s.failed);
}

// Held back by a write that failed, the action stays owed until the write
// succeeds: a write that failed may still have landed (a tree swapped in
// whose old copy could not be deleted), and the next apply, finding it
// matching, would never act.
TEST_F(SettleTest, ADebtHeldBackByAFailedWriteStaysOwed) {
  Restarted(true);
  plan_.units[0].causes = {0};
  writes_ = NoWrites(plan_);
  writes_.steps[0].status = core::Fail("write /c: No space left on device");
  acts_[0] = {Acted::State::kBlocked, "not restarted: restart_on resource conf failed", ""};
  confirmed_[0].reset();
  EXPECT_TRUE(Run().intent.owed.contains("web"));
}

TEST_F(SettleTest, ADoneDaemonReloadIsCleared) {
  plan_.intent.owed["web"] = {std::nullopt, true, core::RestartReason::kDeclared, "", 7};
  plan_.units[0].daemon_reload = true;
  EXPECT_TRUE(Run().intent.owed.contains("web"));
  reloaded_ = SystemdAnswer::Of(core::Ok());
  EXPECT_FALSE(Run().intent.owed.contains("web"));
}

// A file written: the settled entry is the plan's, with the fingerprint
// the write phase saw, and it is the same settled again from the same plan.
// A large apply peaks in the settle: each content is freed once its
// resource has settled, and a written fingerprint moved, not copied.
TEST_F(SettleTest, EachContentIsSpentOnceItsResourceSettles) {
  ASSERT_FALSE(decl_.resources[0].content.empty());
  plan_.steps[0].write_files = true;
  plan_.steps[0].outcome = core::Outcome::kCreated;
  ASSERT_TRUE(plan_.steps[0].entry.has_value());
  plan_.steps[0].entry->written = {core::WrittenPath{"/c", "", ""}};
  writes_ = NoWrites(plan_);
  writes_.steps[0].fingerprint = "1:2:3:4";
  Settled s = Run();
  EXPECT_TRUE(spent_decl_.resources[0].content.empty());
  EXPECT_TRUE(spent_writes_.steps[0].fingerprint.empty());
  EXPECT_EQ(s.entries["conf"]->written[0].fingerprint, "1:2:3:4");
}

TEST_F(SettleTest, AWrittenFileIsRecordedAsPlannedWithItsFingerprint) {
  plan_.steps[0].write_files = true;
  plan_.steps[0].outcome = core::Outcome::kCreated;
  plan_.steps[0].entry->written = {core::WrittenPath{"/c", "", ""}};
  writes_ = NoWrites(plan_);
  writes_.steps[0].fingerprint = "1:2:3:4";
  for (int run = 0; run < 2; ++run) {
    Settled s = Run();
    ASSERT_TRUE(s.entries.contains("conf")) << run;
    const core::RecordEntry& e = *s.entries["conf"];
    EXPECT_EQ(e.digest, "d") << run;
    ASSERT_EQ(e.written.size(), 1u) << run;
    EXPECT_EQ(e.written[0].path, "/c") << run;
    EXPECT_EQ(e.written[0].fingerprint, "1:2:3:4") << run;
    EXPECT_EQ(s.outcomes[0].digest, "d") << run;
    // Moved into the record and its box freed: a large apply's spent
    // steps keep no emptied entries.
    EXPECT_FALSE(spent_.steps[0].entry.has_value()) << run;
  }
}

// The record remembers the NRestarts of the last look that found the unit
// as declared; one not found so keeps what was remembered before.
TEST_F(SettleTest, TheRecordKeepsTheBaselineOfTheLastGoodLook) {
  Settled s = Run();
  ASSERT_TRUE(s.entries.contains("web"));
  EXPECT_EQ(s.entries["web"]->unit().n_restarts, 2u);
  core::RecordEntry old = *plan_.steps[1].entry;
  old.mutable_unit().n_restarts = 1;
  plan_.steps[1].old = &old;
  Restarted(false);
  EXPECT_EQ(Run().entries["web"]->unit().n_restarts, 1u);
}

TEST_F(SettleTest, APlanOwesWhatItFoundAndRecordsNothing) {
  plan_.steps[0].write_files = true;
  plan_.steps[0].outcome = core::Outcome::kCreated;
  plan_.intent.owed["web"] = {UnitAction::kRestart, false, core::RestartReason::kRestartOn, "x", 7};
  Settled s = Run(/*dry_run=*/true);
  EXPECT_EQ(s.intent, plan_.intent);
  EXPECT_FALSE(s.entries.contains("conf")) << "no old entry, nothing written";
}

// Flushed, then the intent, then the record: a kill between the last two
// leaves an old record (the files are adopted) and no paid debt.
TEST(CommitTest, FlushThenIntentThenRecord) {
  testing::TempDir dir;
  auto real = adapters::PosixFileSystem::Open(dir.path());
  fakes::FaultyFileSystem fs(**real);
  struct OrderStore : fakes::MemoryRecordStore {
    std::vector<std::string> order;
    fakes::FaultyFileSystem* fs = nullptr;
    core::Status SaveIntent(const core::Intent& i) override {
      order.push_back("intent after " + std::to_string(fs->flushes()) + " flush(es)");
      return MemoryRecordStore::SaveIntent(i);
    }
    core::Status Save(core::Record r) override {
      order.push_back("record");
      return MemoryRecordStore::Save(std::move(r));
    }
  } store;
  store.fs = &fs;
  core::Declaration decl;
  decl.machine = "m";
  decl.generation = 2;
  decl.digest = "d2";
  core::Record record;
  core::Intent saved;
  saved.applying = true;
  Settled settled;
  settled.entries["a"] = core::RecordEntry{};
  ASSERT_TRUE(Commit({.root = &fs, .units = &fs, .records = &store},
                     {.declaration = &decl, .record = &record, .had_record = true, .saved = &saved},
                     Settled(settled))
                  .has_value());
  EXPECT_THAT(store.order, ElementsAre("intent after 2 flush(es)", "record"));
  EXPECT_FALSE(store.intent.has_value()) << "nothing owed: no intent file";
  EXPECT_THAT(*store.text, HasSubstr("\"settled_declaration_digest\":\"d2\""));

  // Something still owed: the record is not settled (no proof from it).
  settled.intent.owed["a"] = {UnitAction::kStart, false, core::RestartReason::kWasDead, "", 2};
  ASSERT_TRUE(Commit({.root = &fs, .units = &fs, .records = &store},
                     {.declaration = &decl, .record = &record, .had_record = true, .saved = &saved},
                     Settled(settled))
                  .has_value());
  EXPECT_THAT(*store.text, HasSubstr("\"settled_declaration_digest\":\"\""));

  // A flush that fails saves neither: the intent still says applying.
  fs.FailFlush();
  store.order.clear();
  auto failed =
      Commit({.root = &fs, .units = &fs, .records = &store},
             {.declaration = &decl, .record = &record, .had_record = true, .saved = &saved},
             Settled(settled));
  EXPECT_THAT(failed.error().message, HasSubstr("record not saved: fsync"));
  EXPECT_TRUE(store.order.empty());
}

}  // namespace
}  // namespace mesh::reconcile
