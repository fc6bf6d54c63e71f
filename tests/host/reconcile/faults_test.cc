// Faults from the disk and from systemd: each becomes a failed resource with
// a clear detail; the others are applied; nothing is half-written; the
// record stays consistent.
#include <gmock/gmock.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <iterator>
#include <string>
#include <utility>

#include "tests/fakes/faulty_file_system.h"
#include "tests/host/reconcile/reconciler_fixture.h"

namespace mesh::reconcile {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::ReadText;

class FaultsTest : public ReconcilerTest {
 protected:
  ApplyReport RunFaulty(const json& decl) {
    ReconcilerPorts ports = Ports();
    ports.root = faulty_.get();
    ReconcilerOptions options;
    options.machine = "edge-1";
    return Reconciler(ports, options).Apply(decl.dump());
  }
  static json File(const std::string& id, const std::string& content) {
    return {{"id", id}, {"kind", "file"}, {"path", "/etc/" + id}, {"content", content}};
  }
  void SetUp() override {
    ReconcilerTest::SetUp();
    faulty_ = std::make_unique<fakes::FaultyFileSystem>(*root_);
  }
  std::unique_ptr<fakes::FaultyFileSystem> faulty_;
};

TEST_F(FaultsTest, DiskFullFailsOneResourceAndKeepsItsOldContent) {
  RunFaulty(Decl({File("a", "old a"), File("b", "old b")}));
  faulty_->FailWrites("/etc/a", ENOSPC);
  ApplyReport r = RunFaulty(Decl({File("a", "new a"), File("b", "new b")}, 2));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_THAT(Outcomes(r), ElementsAre("failed", "updated"));
  EXPECT_THAT(r.outcomes[0].detail, HasSubstr("write /etc/a: No space left on device"));
  EXPECT_EQ(ReadText(Root("/etc/a")), "old a");
  EXPECT_EQ(ReadText(Root("/etc/b")), "new b");
  // The record still describes the disk: the next apply (disk freed) writes a.
  faulty_->Heal();
  EXPECT_THAT(Outcomes(RunFaulty(Decl({File("a", "new a"), File("b", "new b")}, 2))),
              ElementsAre("updated", "unchanged"));
}

// A bundle that takes the path of the host's dropped files, and fails to
// write its tree there: those files are still on the machine, and were
// forgotten; every later apply then refused them as someone's.
TEST_F(FaultsTest, FilesABundleFailedToTakeOverStayTheHosts) {
  json conf = {{"id", "conf"}, {"kind", "file"}, {"path", "/opt/tools/conf"}, {"content", "x"}};
  ASSERT_EQ(RunFaulty(Decl({conf})).result, ApplyResult::kOk);
  std::string sha = Bundle("t.tar.gz", {{testing::TarMember::kFile, "run", "run\n", 0755}});
  json tree = {{"id", "tools"},
               {"kind", "archive"},
               {"path", "/opt/tools"},
               {"source", "t.tar.gz"},
               {"sha256", sha}};
  faulty_->FailWrites("/opt/tools", ENOSPC);
  ApplyReport r = RunFaulty(Decl({tree}, 2));
  EXPECT_THAT(Outcomes(r), ElementsAre("failed", "failed"));
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[1]),
            "failed conf (file): kept as the host's: its paths lie in the path of tools, which "
            "failed; removed once that bundle takes its path");
  EXPECT_EQ(ReadText(Root("/opt/tools/conf")), "x");
  faulty_->Heal();
  r = RunFaulty(Decl({tree}, 2));
  EXPECT_THAT(Outcomes(r), ElementsAre("updated", "removed"));
  EXPECT_EQ(ReadText(Root("/opt/tools/run")), "run\n");
}

// The same for a dropped process whose tree lies in that path: while the
// bundle fails at its write, nothing of the removal is done. Its daemon was
// stopped and its unit file deleted, while the removal said "kept".
TEST_F(FaultsTest, AProcessABundleFailedToTakeOverKeepsItsUnit) {
  services_.AddUnit("rt.service", {});
  std::string sha = Bundle("t.tar.gz", {{testing::TarMember::kFile, "run", "run\n", 0755}});
  json process = {{"id", "rt"},
                  {"kind", "process"},
                  {"path", "/opt/tools/bin"},
                  {"source", "t.tar.gz"},
                  {"sha256", sha},
                  {"unit", "rt.service"},
                  {"unit_text", "[Service]\nExecStart=/opt/tools/bin/run\n"}};
  ASSERT_EQ(RunFaulty(Decl({process})).result, ApplyResult::kOk);
  json tree = {{"id", "tools"},
               {"kind", "archive"},
               {"path", "/opt/tools"},
               {"source", "t.tar.gz"},
               {"sha256", sha}};
  faulty_->FailWrites("/opt/tools", ENOSPC);
  ApplyReport r = RunFaulty(Decl({tree}, 2));
  EXPECT_THAT(Outcomes(r), ElementsAre("failed", "failed"));
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[1]),
            "failed rt (process): kept as the host's: its paths lie in the path of tools, which "
            "failed; removed once that bundle takes its path");
  EXPECT_EQ(services_.StopsOf("rt.service"), 0);
  EXPECT_TRUE(std::filesystem::exists(dir_.Sub("units") + "/rt.service"));
  faulty_->Heal();
  r = RunFaulty(Decl({tree}, 2));
  EXPECT_THAT(Outcomes(r), ElementsAre("updated", "removed"))
      << core::FormatOutcomeLine(r.outcomes[1]);
  EXPECT_EQ(services_.StopsOf("rt.service"), 1);
  // SPEC 8: the unit file goes once the unit no longer runs.
  r = RunFaulty(Decl({tree}, 2));
  EXPECT_THAT(Outcomes(r), ElementsAre("unchanged", "removed"))
      << core::FormatOutcomeLine(r.outcomes[1]);
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("units") + "/rt.service"));
}

// The apply's files are made durable in one step before any is put in
// place: when that step fails, none is placed — each file says why, their
// old contents stay, what is not a staged file (a directory) is still
// written, and the next apply writes them.
TEST_F(FaultsTest, FilesThatCouldNotBeMadeDurableAreNotPutInPlace) {
  json dir = {{"id", "d"}, {"kind", "directory"}, {"path", "/srv/d"}};
  RunFaulty(Decl({File("a", "old a"), File("b", "old b")}));
  faulty_->FailDurable();
  ApplyReport r = RunFaulty(Decl({File("a", "new a"), File("b", "new b"), dir}, 2));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_THAT(Outcomes(r), ElementsAre("failed", "failed", "created"));
  EXPECT_THAT(r.outcomes[0].detail, HasSubstr("syncfs: Input/output error"));
  EXPECT_EQ(ReadText(Root("/etc/a")), "old a");
  EXPECT_EQ(ReadText(Root("/etc/b")), "old b");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(Root("/etc")),
                          std::filesystem::directory_iterator()),
            2)
      << "no temporary left beside them";
  faulty_->Heal();
  EXPECT_THAT(Outcomes(RunFaulty(Decl({File("a", "new a"), File("b", "new b"), dir}, 2))),
              ElementsAre("updated", "updated", "unchanged"));
  EXPECT_EQ(ReadText(Root("/etc/a")), "new a");
}

// A directory's own step runs before a file under it is staged: the key of
// a directory declared private is never written while the directory is
// open to others.
TEST_F(FaultsTest, AFileUnderAPrivateDirectoryIsStagedOnlyOnceItIsPrivate) {
  json dir = {{"id", "d"}, {"kind", "directory"}, {"path", "/srv/d"}, {"mode", "0700"}};
  json key = {{"id", "key"}, {"kind", "credential"}, {"path", "/srv/d/key"}, {"content", "k"}};
  std::string seen;
  faulty_->before_stage = [&](const std::string& path) {
    if (path != "/srv/d/key") return;
    struct stat st;
    seen = ::stat(Root("/srv/d").c_str(), &st) != 0 ? "missing" : std::to_string(st.st_mode & 0777);
  };
  ApplyReport r = RunFaulty(Decl({File("a", "a"), dir, key}));
  faulty_->before_stage = nullptr;
  EXPECT_EQ(r.result, ApplyResult::kOk) << r.error;
  EXPECT_EQ(seen, std::to_string(0700));
}

// A staged file holds its directory open until it is placed: an apply of
// files in many directories stages them in batches, within a process's
// descriptors (a one-shot apply has the default 1,024).
TEST_F(FaultsTest, FilesInManyDirectoriesStayWithinTheDescriptorLimit) {
  json files = json::array();
  for (int i = 0; i < 700; ++i) {
    std::string id = "f" + std::to_string(i);
    files.push_back(
        {{"id", id}, {"kind", "file"}, {"path", "/srv/" + id + "/conf"}, {"content", id}});
  }
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  rlimit low = saved;
  low.rlim_cur = 512;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  ApplyReport r = RunFaulty(Decl(files));
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  EXPECT_EQ(r.result, ApplyResult::kOk) << (r.outcomes.empty() ? r.error : r.outcomes[0].detail);
  EXPECT_EQ(ReadText(Root("/srv/f699/conf")), "f699");
}

// Directory fsyncs are batched into one Flush before the record is saved:
// a flush that fails (EIO) must keep the record from claiming the writes,
// so the next apply looks at the disk again instead of trusting it.
TEST_F(FaultsTest, ARecordIsSavedOnlyAfterTheWritesAreFlushed) {
  RunFaulty(Decl({File("a", "old a")}));
  EXPECT_EQ(faulty_->flushes(), 1);
  std::string before = *store_.text;
  faulty_->FailFlush();
  ApplyReport r = RunFaulty(Decl({File("a", "new a")}, 2));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_THAT(r.error, HasSubstr("record not saved: fsync"));
  EXPECT_EQ(*store_.text, before) << "the record still describes generation 1";
  EXPECT_TRUE(store_.Applying()) << "the mark stays: the next apply sweeps and re-checks";
  faulty_->Heal();
  ApplyReport again = RunFaulty(Decl({File("a", "new a")}, 2));
  EXPECT_EQ(again.result, ApplyResult::kOk) << again.error;
  EXPECT_THAT(Outcomes(again), ElementsAre("unchanged"));
  EXPECT_THAT(*store_.text, HasSubstr("\"generation\":2"));
  // A no-op writes nothing and flushes nothing.
  int flushes = faulty_->flushes();
  RunFaulty(Decl({File("a", "new a")}, 2));
  EXPECT_EQ(faulty_->flushes(), flushes);
}

// When a touched file makes the record proof fail, the full pass uses the
// stats the proof already took: each declared path is looked at once.
TEST_F(FaultsTest, AFailedRecordProofDoesNotStatEveryPathAgain) {
  // A touched credential fails the proof (a file would be read and proven).
  json secret = {{"id", "b"}, {"kind", "credential"}, {"path", "/etc/b"}, {"content", "2"}};
  json decl = Decl({File("a", "1"), secret, File("c", "3")});
  RunFaulty(decl);
  ASSERT_TRUE(RunFaulty(decl).from_record);
  std::filesystem::last_write_time(
      Root("/etc/b"), std::filesystem::file_time_type::clock::now() + std::chrono::hours(1));
  size_t before = faulty_->stats();
  ApplyReport r = RunFaulty(decl);
  EXPECT_FALSE(r.from_record);
  EXPECT_THAT(Outcomes(r), ElementsAre("unchanged", "unchanged", "unchanged"));
  EXPECT_EQ(faulty_->stats() - before, 3u) << "three paths, each stat'ed once";
}

// A touched file the record proof would read (record_proof.h): one grown
// past its recorded size is never read, however large; one replaced
// between the look and the read is not taken for the file looked at.
TEST_F(FaultsTest, ATouchedFileIsReadOnlyAtItsSizeAndOnlyIfStillTheSame) {
  json decl = Decl({File("a", "1"), File("b", "2")});
  RunFaulty(decl);
  ASSERT_TRUE(RunFaulty(decl).from_record);
  std::filesystem::resize_file(Root("/etc/b"), 64u << 20);  // sparse: costs no disk
  ApplyReport grown = RunFaulty(decl);
  EXPECT_FALSE(grown.from_record);
  EXPECT_THAT(Outcomes(grown), ElementsAre("unchanged", "updated"));
  EXPECT_LT(faulty_->largest_read(), 1u << 20) << "the grown file was never read";

  ASSERT_TRUE(RunFaulty(decl).from_record);
  std::filesystem::last_write_time(
      Root("/etc/b"), std::filesystem::file_time_type::clock::now() + std::chrono::hours(1));
  bool swap = true;  // once, between the proof's look and its read
  faulty_->before_read = [&](const std::string& path) {
    if (path != "/etc/b" || !std::exchange(swap, false)) return;
    testing::WriteText(Root("/etc/b.new"), "2");  // the same bytes, another file
    std::filesystem::rename(Root("/etc/b.new"), Root("/etc/b"));
  };
  ApplyReport swapped = RunFaulty(decl);
  faulty_->before_read = nullptr;
  EXPECT_FALSE(swapped.from_record) << "the file read is not the file looked at";
  // The full pass reuses the proof's look, so it too finds another file
  // than the one looked at, and writes it again.
  EXPECT_THAT(Outcomes(swapped), ElementsAre("unchanged", "updated"));
  EXPECT_THAT(swapped.outcomes[1].detail, HasSubstr("changed while the host looked at it"));
  EXPECT_TRUE(RunFaulty(decl).from_record);
}

// Prune looked at a file of the host's and found it as written; by the
// time it deletes it, someone has put a directory of theirs at the path.
// The directory is left whole: a file's path is unlinked, never emptied.
TEST_F(FaultsTest, ADirectoryPutWhereADroppedFileWasIsLeftWhole) {
  RunFaulty(Decl({File("a", "1"), File("b", "2")}));
  faulty_->before_remove = [&](const std::string& path) {
    if (path != "/etc/b") return;
    std::filesystem::remove(Root("/etc/b"));
    std::filesystem::create_directories(Root("/etc/b"));
    testing::WriteText(Root("/etc/b/theirs"), "keep me");
  };
  ApplyReport r = RunFaulty(Decl({File("a", "1")}, 2));
  faulty_->before_remove = nullptr;
  ASSERT_EQ(r.outcomes.size(), 2u);
  EXPECT_EQ(r.outcomes[1].outcome, core::Outcome::kFailed);
  EXPECT_THAT(r.outcomes[1].detail, HasSubstr("a directory is there now"));
  EXPECT_EQ(testing::ReadText(Root("/etc/b/theirs")), "keep me");
}

TEST_F(FaultsTest, PermissionDeniedIsNamed) {
  faulty_->FailWrites("/etc/a", EACCES);
  ApplyReport r = RunFaulty(Decl({File("a", "x")}));
  EXPECT_THAT(r.outcomes[0].detail, HasSubstr("Permission denied"));
  EXPECT_FALSE(testing::Exists(Root("/etc/a")));
}

TEST_F(FaultsTest, ServiceManagerGoneFailsUnitsButNotFiles) {
  services_.AddUnit("jail.service", {fakes::FakeServiceManager::Behavior::kHealthy, {}, true});
  services_.bus_gone = true;
  json svc = {{"id", "jail"},
              {"kind", "service"},
              {"unit", "jail.service"},
              {"state", "running"},
              {"unit_text", "[Service]\nExecStart=/bin/jail\n"}};
  ApplyReport r = RunFaulty(Decl({File("a", "x"), svc}));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_THAT(Outcomes(r), ElementsAre("created", "failed"));
  EXPECT_THAT(r.outcomes[1].detail, HasSubstr("not connected"));
  EXPECT_TRUE(store_.text.has_value()) << "the record is saved all the same";
  // The unit file was written but never loaded, nor the unit restarted onto
  // it: both stay owed although the unit could not even be read.
  core::Owed owed = store_.Owed().owed.at("jail");
  EXPECT_TRUE(owed.daemon_reload);
  EXPECT_EQ(owed.action, core::UnitAction::kRestart);
  // The bus comes back: the next apply pays what is owed and converges.
  services_.bus_gone = false;
  ApplyReport again = RunFaulty(Decl({File("a", "x"), svc}));
  EXPECT_EQ(again.result, ApplyResult::kOk) << again.outcomes[1].detail;
  EXPECT_THAT(Outcomes(again), ElementsAre("unchanged", "restarted"));
  EXPECT_THAT(again.outcomes[1].detail, HasSubstr("pending since generation 1"));
  EXPECT_EQ(services_.daemon_reloads(), 1);
  EXPECT_TRUE(store_.Owed().empty());
}

}  // namespace
}  // namespace mesh::reconcile
