// The no-op proven from the record alone (reconciler.cc, ConfirmFromRecord)
// against the full pass: the same report, word for word, for every kind;
// and the full pass as soon as anything differs. Also: an apply that writes
// nothing sets no apply mark (no fsync on the hot path).
#include <gmock/gmock.h>

#include <chrono>

#include "host/core/want.h"
#include "tests/host/reconcile/reconciler_fixture.h"

namespace mesh::reconcile {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace std::chrono_literals;
using Behavior = fakes::FakeServiceManager::Behavior;
using testing::TarMember;

// Every test runs twice: with the record streamed, as `mesh-host apply`
// reads it, and walked in memory, as the daemon's store keeps it.
class NoopTest : public ReconcilerTest, public ::testing::WithParamInterface<bool> {
 protected:
  void SetUp() override {
    ReconcilerTest::SetUp();
    store_.stream = GetParam();
  }

  json Everything() {
    std::string sha = Bundle("tools.tar", {{TarMember::kFile, "bin/serve", "#!/bin/sh\n", 0755},
                                           {TarMember::kFile, "README", "x", 0644}});
    services_.AddUnit("web.service", {Behavior::kHealthy, 0s, /*running_initially=*/true});
    services_.AddUnit("old.service", {Behavior::kHealthy, 0s, false});
    services_.AddUnit("tools.service", {Behavior::kHealthy, 0s, false});
    return Decl({
        {{"id", "app.conf"}, {"kind", "file"}, {"path", "/etc/app.conf"}, {"content", "a=1\n"}},
        {{"id", "app.token"},
         {"kind", "credential"},
         {"path", "/etc/app.token"},
         {"content", "s3cret"}},
        {{"id", "web"},
         {"kind", "service"},
         {"unit", "web.service"},
         {"state", "running"},
         {"restart_on", {"app.conf"}}},
        {{"id", "old"}, {"kind", "service"}, {"unit", "old.service"}, {"state", "stopped"}},
        {{"id", "data"},
         {"kind", "archive"},
         {"path", "/srv/data"},
         {"source", "tools.tar"},
         {"sha256", sha}},
        {{"id", "tools"},
         {"kind", "process"},
         {"path", "/opt/tools"},
         {"source", "tools.tar"},
         {"sha256", sha},
         {"unit", "tools.service"},
         {"unit_text", "[Service]\nExecStart=/opt/tools/bin/serve\n"}},
    });
  }

  // f0..f99 at /etc/f0..f99: enough resources that one touched file is
  // fewer than one in 64.
  static json HundredFiles() {
    json resources = json::array();
    for (int i = 0; i < 100; ++i) {
      std::string id = "f" + std::to_string(i);
      resources.push_back(
          {{"id", id}, {"kind", "file"}, {"path", "/etc/" + id}, {"content", "x=1\n"}});
    }
    return resources;
  }

  // Every field an operator or a metric reads.
  static std::vector<std::string> Rows(const ApplyReport& r) {
    std::vector<std::string> rows;
    for (const core::ResourceOutcome& o : r.outcomes) {
      std::string unit = o.unit.has_value()
                             ? o.unit->name + "/" + o.unit->active_state + "/" + o.unit->sub_state +
                                   "/" + o.unit->result + "/" + std::to_string(o.unit->n_restarts)
                             : "-";
      rows.push_back(core::FormatOutcomeLine(o) + " | " + o.digest + " | " + o.applied_at + " | " +
                     unit + " | " + o.declared_unit() + " | " +
                     (o.unit_should_run() ? "run" : "-") + " | " +
                     std::string(o.restart_reason_name()) + " | " + (o.host_acted ? "acted" : "-"));
    }
    rows.push_back(r.machine + " " + std::to_string(r.generation) + " " + r.declaration_digest +
                   " " + std::string(ApplyResultName(r.result)));
    return rows;
  }
};

TEST_P(NoopTest, FromTheRecordReportsExactlyWhatTheFullPassReports) {
  json decl = Everything();
  ApplyReport first = Run(decl);
  ASSERT_EQ(first.result, ApplyResult::kOk) << first.error;
  EXPECT_FALSE(first.from_record);
  clock_.Advance(5min);  // applied_at must be the recorded one, not now

  ApplyReport full = Run(decl, false, /*from_record=*/false);
  ApplyReport quick = Run(decl);
  EXPECT_FALSE(full.from_record);
  EXPECT_TRUE(quick.from_record);
  EXPECT_THAT(Outcomes(quick), ElementsAre("unchanged", "unchanged", "unchanged", "unchanged",
                                           "unchanged", "unchanged"));
  EXPECT_EQ(Rows(quick), Rows(full));
  // A plan proves it the same way, and writes nothing.
  ApplyReport plan = Run(decl, /*dry_run=*/true);
  EXPECT_TRUE(plan.from_record);
  EXPECT_EQ(Rows(plan), Rows(full));
}

TEST_P(NoopTest, AnyDifferenceRunsTheFullPass) {
  json decl = Everything();
  ASSERT_EQ(Run(decl).result, ApplyResult::kOk);
  ASSERT_TRUE(Run(decl).from_record);

  // A touched credential (fingerprint moved, same bytes): the full pass
  // adopts it (a secret's bytes have no digest in the record to prove).
  std::filesystem::last_write_time(Root("/etc/app.token"),
                                   std::filesystem::file_time_type::clock::now() + 1h);
  ApplyReport touched = Run(decl);
  EXPECT_FALSE(touched.from_record);
  EXPECT_EQ(touched.outcomes[1].outcome, core::Outcome::kUnchanged);
  ASSERT_TRUE(Run(decl).from_record) << "the adopted fingerprint is recorded again";

  // A unit declared running found dead: started again, not reported unchanged.
  services_.Kill("web.service");
  ApplyReport dead = Run(decl);
  EXPECT_FALSE(dead.from_record);
  EXPECT_EQ(dead.outcomes[2].outcome, core::Outcome::kStarted);
  EXPECT_EQ(dead.outcomes[2].restart_reason_name(), "was_dead");

  // A file in a tree edited by hand: put back.
  testing::WriteText(Root("/opt/tools/README"), "edited");
  ApplyReport drift = Run(decl);
  EXPECT_FALSE(drift.from_record);
  EXPECT_EQ(drift.outcomes[5].outcome, core::Outcome::kUpdated);

  // A unit file edited by hand: put back.
  testing::WriteText(dir_.Sub("units/tools.service"), "[Service]\nExecStart=/bin/false\n");
  ApplyReport unit_file = Run(decl);
  EXPECT_FALSE(unit_file.from_record);
  EXPECT_EQ(unit_file.outcomes[5].outcome, core::Outcome::kUpdated);
  EXPECT_THAT(unit_file.outcomes[5].detail, HasSubstr("drifted: unit file tools.service"));
}

// The daemon's store keeps the record, and its reconciler the proof
// gathered from it: every no-op after the first looks at the machine again
// without visiting the record, and still sees each difference; a new
// record is gathered anew.
TEST_P(NoopTest, AKeptProofLooksAgainAtEveryNoOp) {
  json decl = Everything();
  ASSERT_EQ(Run(decl).result, ApplyResult::kOk);
  ApplyReport first = Run(decl);
  ASSERT_TRUE(first.from_record);
  for (int i = 0; i < 3; ++i) {
    ApplyReport again = Run(decl);
    EXPECT_TRUE(again.from_record);
    EXPECT_EQ(Rows(again), Rows(first));
  }

  // Changed behind the record's back, the record itself unchanged: a file
  // of the same size, then a unit, then a bundle's file.
  testing::WriteText(Root("/etc/app.conf"), "a=2\n");
  ApplyReport edited = Run(decl);
  EXPECT_FALSE(edited.from_record);
  EXPECT_EQ(edited.outcomes[0].outcome, core::Outcome::kUpdated);
  ASSERT_TRUE(Run(decl).from_record);

  services_.Kill("web.service");
  ApplyReport dead = Run(decl);
  EXPECT_FALSE(dead.from_record);
  EXPECT_EQ(dead.outcomes[2].outcome, core::Outcome::kStarted);
  ASSERT_TRUE(Run(decl).from_record);

  std::filesystem::remove(Root("/srv/data/README"));
  ApplyReport gone = Run(decl);
  EXPECT_FALSE(gone.from_record);
  EXPECT_EQ(gone.outcomes[4].outcome, core::Outcome::kUpdated);

  // A declaration with one resource more: its record is gathered anew, and
  // the no-op after it reports all seven.
  json more = decl;
  more["resources"].push_back(
      {{"id", "extra"}, {"kind", "file"}, {"path", "/etc/extra"}, {"content", "e\n"}});
  ASSERT_EQ(Run(more).result, ApplyResult::kOk);
  ApplyReport seven = Run(more);
  EXPECT_TRUE(seven.from_record);
  ASSERT_EQ(seven.outcomes.size(), 7u);
  EXPECT_EQ(seven.outcomes[6].id, "extra");
  // And the declaration before it is not proven from the newer record.
  EXPECT_FALSE(Run(decl).from_record);
}

// A file whose times moved and nothing else (touched, or restored with the
// same bytes and mode): proven from the record by reading that file alone,
// reported word for word as the full pass reports it, and its new
// fingerprint recorded so that the next no-op reads nothing.
TEST_P(NoopTest, ATouchedFileIsProvenByItsBytes) {
  json decl = Everything();
  ASSERT_EQ(Run(decl).result, ApplyResult::kOk);
  ASSERT_TRUE(Run(decl).from_record);
  clock_.Advance(5min);
  auto touch = [&] {
    std::filesystem::last_write_time(Root("/etc/app.conf"),
                                     std::filesystem::file_time_type::clock::now() + 1h);
  };
  touch();
  ApplyReport full = Run(decl, false, /*from_record=*/false);  // adopts it
  touch();
  std::string before = Record()["resources"]["app.conf"]["written"][0]["fingerprint"];
  ApplyReport quick = Run(decl);
  EXPECT_TRUE(quick.from_record);
  EXPECT_EQ(Rows(quick), Rows(full));
  EXPECT_THAT(quick.warnings, ElementsAre());
  std::string after = Record()["resources"]["app.conf"]["written"][0]["fingerprint"];
  EXPECT_NE(after, before) << "the touched file's new fingerprint is recorded";
  EXPECT_EQ(after, core::FileFingerprint(*root_->Stat("/etc/app.conf")));

  // A plan proves it the same way and records nothing.
  touch();
  std::string held = store_.text.value();
  ApplyReport plan = Run(decl, /*dry_run=*/true);
  EXPECT_TRUE(plan.from_record);
  EXPECT_EQ(store_.text.value(), held);
}

// Among many resources, a few touched files are not worth rewriting the
// record for: the next no-op reads them again, and is proven again.
TEST_P(NoopTest, AFewTouchedFilesAreReadAgainNotRecorded) {
  json decl = Decl(HundredFiles());
  ASSERT_EQ(Run(decl).result, ApplyResult::kOk);
  std::filesystem::last_write_time(Root("/etc/f7"),
                                   std::filesystem::file_time_type::clock::now() + 1h);
  std::string held = store_.text.value();
  ApplyReport once = Run(decl);
  ApplyReport again = Run(decl);
  EXPECT_TRUE(once.from_record);
  EXPECT_TRUE(again.from_record);
  EXPECT_EQ(store_.text.value(), held) << "one file in 100: the record is not rewritten";
  EXPECT_EQ(once.outcomes[7].detail, again.outcomes[7].detail);

  // Two in 100 are worth it.
  std::filesystem::last_write_time(Root("/etc/f8"),
                                   std::filesystem::file_time_type::clock::now() + 1h);
  EXPECT_TRUE(Run(decl).from_record);
  EXPECT_NE(store_.text.value(), held);
}

// Prune deletes what the host wrote and nobody changed: a file touched but
// not recorded (one in 64 or fewer) is read, and still the host's.
TEST_P(NoopTest, ATouchedFileNoLongerDeclaredIsStillRemoved) {
  json resources = HundredFiles();
  ASSERT_EQ(Run(Decl(resources)).result, ApplyResult::kOk);
  std::filesystem::last_write_time(Root("/etc/f7"),
                                   std::filesystem::file_time_type::clock::now() + 1h);
  ASSERT_TRUE(Run(Decl(resources)).from_record);
  resources.erase(7);
  ApplyReport dropped = Run(Decl(resources, 2));
  EXPECT_EQ(dropped.result, ApplyResult::kOk) << dropped.error;
  ASSERT_EQ(dropped.outcomes.back().id, "f7");
  EXPECT_EQ(dropped.outcomes.back().outcome, core::Outcome::kRemoved)
      << dropped.outcomes.back().detail;
  EXPECT_FALSE(testing::Exists(Root("/etc/f7")));
}

// Only the times: new bytes of the same size or a new mode each fail the
// proof, and the full pass puts the file back.
TEST_P(NoopTest, ATouchedFileWithOtherBytesOrModeIsPutBack) {
  json decl = Everything();
  ASSERT_EQ(Run(decl).result, ApplyResult::kOk);
  ASSERT_TRUE(Run(decl).from_record);
  testing::WriteText(Root("/etc/app.conf"), "a=2\n");  // same size, other bytes
  ApplyReport edited = Run(decl);
  EXPECT_FALSE(edited.from_record);
  EXPECT_EQ(edited.outcomes[0].outcome, core::Outcome::kUpdated);
  EXPECT_EQ(testing::ReadText(Root("/etc/app.conf")), "a=1\n");

  std::filesystem::permissions(Root("/etc/app.conf"), std::filesystem::perms::owner_all);
  ApplyReport chmod = Run(decl);
  EXPECT_FALSE(chmod.from_record);
  EXPECT_EQ(chmod.outcomes[0].outcome, core::Outcome::kUpdated);
  EXPECT_THAT(chmod.outcomes[0].detail, HasSubstr("mode changed"));
  EXPECT_TRUE(Run(decl).from_record);
  // A new owner: ownership_test (it needs the machine's user table).
}

// A record of an older host holds no digest of a file's bytes: a touched
// file there runs the full pass, which records the digest for next time.
TEST_P(NoopTest, AnOlderRecordLearnsTheBytesDigestFromTheFullPass) {
  json decl = Everything();
  ASSERT_EQ(Run(decl).result, ApplyResult::kOk);
  json old = Record();
  auto& written = old["resources"]["app.conf"]["written"][0];
  ASSERT_TRUE(written.contains("content_digest"));
  EXPECT_FALSE(old["resources"]["app.token"]["written"][0].contains("content_digest"))
      << "a secret's bytes are not digested in the record";
  written.erase("content_digest");
  store_.text = testing::Version1Text(old);  // as an older host wrote it
  std::filesystem::last_write_time(Root("/etc/app.conf"),
                                   std::filesystem::file_time_type::clock::now() + 1h);
  ApplyReport upgrade = Run(decl);
  EXPECT_FALSE(upgrade.from_record);
  EXPECT_EQ(upgrade.outcomes[0].outcome, core::Outcome::kUnchanged);
  EXPECT_TRUE(Record()["resources"]["app.conf"]["written"][0].contains("content_digest"));
  std::filesystem::last_write_time(Root("/etc/app.conf"),
                                   std::filesystem::file_time_type::clock::now() + 2h);
  EXPECT_TRUE(Run(decl).from_record);
}

// A declaration that counts what is asked of it.
class CountingSource : public ports::DeclarationSource {
 public:
  explicit CountingSource(std::string text) : text_(std::move(text)) {}
  core::Result<std::string> Digest() override {
    ++digests;
    return core::Sha256Hex(text_);
  }
  core::Result<std::string_view> Text() override {
    ++texts;
    return std::string_view(text_);
  }
  void ReleaseText() override {
    ++releases;
    if (on_release) on_release();
  }
  int digests = 0, texts = 0, releases = 0;
  std::function<void()> on_release;

 private:
  std::string text_;
};

// At 100,000 resources the text is 24 MB: a proven no-op must not read it.
TEST_P(NoopTest, AProvenNoOpNeverReadsTheDeclarationText) {
  json decl = Everything();
  ASSERT_EQ(Run(decl).result, ApplyResult::kOk);
  CountingSource quiet(decl.dump());
  ApplyReport proven = Reconciler(Ports(), Options()).Apply(quiet);
  EXPECT_TRUE(proven.from_record);
  EXPECT_EQ(quiet.digests, 1);
  EXPECT_EQ(quiet.texts, 0);
  // Anything to decide from the declaration: the text is read, once.
  services_.Kill("web.service");
  CountingSource moved(decl.dump());
  ApplyReport full = Reconciler(Ports(), Options()).Apply(moved);
  EXPECT_FALSE(full.from_record);
  EXPECT_EQ(full.outcomes[2].outcome, core::Outcome::kStarted);
  EXPECT_EQ(moved.texts, 1);
}

// The text is freed once parsed, before anything is written: it is not
// held through the apply's peak (24 MB at 100,000 resources).
TEST_P(NoopTest, TheFullPassReleasesTheTextOnceParsedBeforeWriting) {
  json decl = Everything();
  CountingSource first(decl.dump());
  bool written_before_release = true;
  first.on_release = [&] {
    written_before_release = std::filesystem::exists(Root("/etc/app.conf"));
  };
  ApplyReport applied = Reconciler(Ports(), Options()).Apply(first);
  ASSERT_EQ(applied.result, ApplyResult::kOk);
  ASSERT_TRUE(std::filesystem::exists(Root("/etc/app.conf")));
  EXPECT_EQ(first.texts, 1);
  EXPECT_EQ(first.releases, 1);
  EXPECT_FALSE(written_before_release);
}

// `mesh-host apply` prints each outcome and forgets it: the sink receives
// what the report would have held, in order, and the report keeps none.
TEST_P(NoopTest, ASinkReceivesEveryOutcomeAndTheReportKeepsNone) {
  json decl = Everything();
  ASSERT_EQ(Run(decl).result, ApplyResult::kOk);
  ApplyReport held = Run(decl);
  ASSERT_TRUE(held.from_record);
  EXPECT_EQ(held.resources, 6u);
  ReconcilerOptions options = Options();
  for (bool proven : {true, false}) {
    options.confirm_from_record = proven;
    std::vector<core::ResourceOutcome> received;
    ApplyReport streamed =
        Reconciler(Ports(), options).Apply(decl.dump(), [&](const core::ResourceOutcome& o) {
          received.push_back(o);
        });
    EXPECT_EQ(streamed.from_record, proven);
    EXPECT_TRUE(streamed.outcomes.empty());
    EXPECT_EQ(streamed.resources, 6u);
    EXPECT_EQ(streamed.failed, 0u);
    streamed.outcomes = received;
    EXPECT_EQ(Rows(streamed), Rows(held)) << (proven ? "proven" : "full pass");
  }
}

TEST_P(NoopTest, TheDeclarationStillDecidesWhatTheRecordCannotKnow) {
  json decl = Everything();
  ASSERT_EQ(Run(decl).result, ApplyResult::kOk);
  // Another machine's name on the command line: refused, as the full pass does.
  ReconcilerOptions other = Options();
  other.machine = "edge-2";
  ApplyReport refused = Reconciler(Ports(), other).Apply(decl.dump());
  EXPECT_EQ(refused.result, ApplyResult::kRefused);
  EXPECT_THAT(refused.error, HasSubstr("is not this machine"));
  // One byte more in the declaration (same meaning): the full pass, which
  // settles the new bytes; then the record proves the no-op again.
  std::string spaced = decl.dump() + " ";
  Reconciler r(Ports(), Options());
  EXPECT_FALSE(r.Apply(spaced).from_record);
  EXPECT_TRUE(r.Apply(spaced).from_record);
}

// A record written before positions and states were recorded (an older
// host, or an indented state.json) is read, the full pass runs once and
// adds them without touching the machine, and the next no-op is proven.
TEST_P(NoopTest, AnOlderRecordIsUpgradedByOneFullPass) {
  json decl = Everything();
  ASSERT_EQ(Run(decl).result, ApplyResult::kOk);
  json old = Record();
  for (auto& [id, entry] : old["resources"].items()) {
    entry.erase("position");
    entry.erase("state");
  }
  store_.text = testing::Version1Text(old, 1);  // indented, as the first host wrote it
  int starts = services_.StartsOf("web.service") + services_.StartsOf("tools.service");
  ApplyReport upgrade = Run(decl);
  EXPECT_FALSE(upgrade.from_record);
  EXPECT_EQ(upgrade.result, ApplyResult::kOk) << upgrade.error;
  EXPECT_THAT(Outcomes(upgrade), ElementsAre("unchanged", "unchanged", "unchanged", "unchanged",
                                             "unchanged", "unchanged"));
  EXPECT_EQ(services_.StartsOf("web.service") + services_.StartsOf("tools.service"), starts);
  EXPECT_TRUE(Record()["resources"]["tools"].contains("position"));
  EXPECT_TRUE(Run(decl).from_record);
}

// A record of version 1 that holds everything the no-op needs proves
// nothing: the full pass runs once, touches nothing and writes the record
// anew as JSON Lines, and the next no-op is proven from it. Kept as it
// was, every one-shot apply would read the old document whole.
TEST_P(NoopTest, ARecordOfVersion1IsWrittenAnewByOneFullPass) {
  json decl = Everything();
  ASSERT_EQ(Run(decl).result, ApplyResult::kOk);
  ASSERT_TRUE(Run(decl).from_record);
  store_.text = testing::Version1Text(Record());
  int starts = services_.StartsOf("web.service") + services_.StartsOf("tools.service");
  int saves = store_.saves;
  ApplyReport upgrade = Run(decl);
  EXPECT_FALSE(upgrade.from_record);
  EXPECT_EQ(upgrade.result, ApplyResult::kOk) << upgrade.error;
  EXPECT_THAT(Outcomes(upgrade), ::testing::Each("unchanged"));
  EXPECT_EQ(services_.StartsOf("web.service") + services_.StartsOf("tools.service"), starts);
  EXPECT_EQ(store_.saves, saves + 1);
  EXPECT_THAT(*store_.text, ::testing::StartsWith(R"({"version":2,)"));
  EXPECT_TRUE(Run(decl).from_record);
}

TEST_P(NoopTest, NotAfterAFailure) {
  json decl =
      Decl({{{"id", "app.conf"}, {"kind", "file"}, {"path", "/etc/app.conf"}, {"content", "a"}},
            {{"id", "gone"}, {"kind", "service"}, {"unit", "gone.service"}, {"state", "running"}}});
  services_.AddUnit("gone.service", {Behavior::kJobFails, 0s});
  EXPECT_EQ(Run(decl).result, ApplyResult::kFailed);
  ApplyReport again = Run(decl);
  EXPECT_FALSE(again.from_record) << "a failed apply settles nothing: the failure is retried";
  EXPECT_EQ(again.outcomes[1].outcome, core::Outcome::kFailed);
}

// The apply mark is written (and fsynced) only by an apply that writes; it
// used to be written and removed by every apply, the no-op included.
TEST_P(NoopTest, AnApplyThatWritesNothingSetsNoMark) {
  json decl =
      Decl({{{"id", "app.conf"}, {"kind", "file"}, {"path", "/etc/app.conf"}, {"content", "a"}}});
  Run(decl);
  EXPECT_EQ(store_.marks, 1);
  Run(decl);                                // proven from the record
  Run(decl, false, /*from_record=*/false);  // the full pass, no writes either
  EXPECT_EQ(store_.marks, 1);
  EXPECT_FALSE(store_.Applying());
  testing::WriteText(Root("/etc/app.conf"), "changed by hand");
  Run(decl);
  EXPECT_EQ(store_.marks, 2);
  EXPECT_FALSE(store_.Applying());
}

INSTANTIATE_TEST_SUITE_P(StreamedAndKept, NoopTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Streamed" : "Kept";
                         });

}  // namespace
}  // namespace mesh::reconcile
