// Files, credentials and bundles: unchanged by fingerprint, drift, adoption,
// prune, plan, refusals, and issue 210's regression.
#include <gmock/gmock.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/host/reconcile/reconciler_fixture.h"

namespace mesh::reconcile {
namespace {

using ::testing::ElementsAre;
using testing::Exists;
using ::testing::HasSubstr;
using testing::ReadText;
using testing::TarMember;
using testing::WriteText;

int64_t MtimeNs(const std::string& path) {
  struct stat st;
  ::stat(path.c_str(), &st);
  return int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
}

class FilesTest : public ReconcilerTest {
 protected:
  json Resources() {
    std::string sha = Bundle("tools.tar.gz", {{TarMember::kDir, "bin", "", 0755},
                                              {TarMember::kFile, "bin/serve", "#!/bin/sh\n", 0755},
                                              {TarMember::kFile, "README", "tools\n", 0644}});
    return json::array({{{"id", "app.conf"},
                         {"kind", "file"},
                         {"path", "/etc/app/app.conf"},
                         {"content", "a = 1\n"}},
                        {{"id", "app.token"},
                         {"kind", "credential"},
                         {"path", "/etc/app/token"},
                         {"content", "hunter2"}},
                        {{"id", "app.tools"},
                         {"kind", "archive"},
                         {"path", "/opt/tools"},
                         {"source", "tools.tar.gz"},
                         {"sha256", sha}}});
  }
};

// Issue 210: the same declaration applied three times is created, then
// unchanged, unchanged — and the record keeps every digest through the
// unchanged applies. Dropping the digest on the unchanged path makes the
// third apply re-create (and this test fail).
TEST_F(FilesTest, Issue210UnchangedKeepsItsDigest) {
  json decl = Decl(Resources());
  ApplyReport first = Run(decl);
  ASSERT_EQ(first.result, ApplyResult::kOk) << first.error;
  EXPECT_THAT(Outcomes(first), ElementsAre("created", "created", "created"));
  json record_after_first = Record();

  for (int i = 0; i < 2; ++i) {
    ApplyReport again = Run(decl);
    EXPECT_THAT(Outcomes(again), ElementsAre("unchanged", "unchanged", "unchanged"))
        << "apply " << i + 2;
    for (const auto& o : again.outcomes) {
      EXPECT_EQ(o.digest, record_after_first["resources"][o.id]["digest"]) << o.id;
      EXPECT_EQ(Record()["resources"][o.id]["digest"], o.digest) << o.id << " lost its digest";
      EXPECT_EQ(Record()["resources"][o.id]["applied_at"],
                record_after_first["resources"][o.id]["applied_at"]);
    }
  }
}

TEST_F(FilesTest, UnchangedWritesNothing) {
  json decl = Decl(Resources());
  Run(decl);
  int64_t before = MtimeNs(Root("/etc/app/app.conf"));
  int64_t tree_before = MtimeNs(Root("/opt/tools/bin/serve"));
  clock_.Advance(std::chrono::minutes(5));
  Run(decl);
  EXPECT_EQ(MtimeNs(Root("/etc/app/app.conf")), before);
  EXPECT_EQ(MtimeNs(Root("/opt/tools/bin/serve")), tree_before);
}

TEST_F(FilesTest, ContentModeAndTreeLandAsDeclared) {
  Run(Decl(Resources()));
  EXPECT_EQ(ReadText(Root("/etc/app/app.conf")), "a = 1\n");
  EXPECT_EQ(ReadText(Root("/etc/app/token")), "hunter2");
  struct stat st;
  ::stat(Root("/etc/app/token").c_str(), &st);
  EXPECT_EQ(st.st_mode & 07777, 0400u);
  ::stat(Root("/opt/tools/bin/serve").c_str(), &st);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  EXPECT_EQ(ReadText(Root("/opt/tools/README")), "tools\n");
}

// What a declared `directory` holds is not the host's: a bundle declared
// over its parent once the directory is dropped would delete it.
TEST_F(FilesTest, ADeclaredDirectorysContentsAreNotTheHosts) {
  json data = {{"id", "data"}, {"kind", "directory"}, {"path", "/opt/tools/data"}};
  ASSERT_EQ(Run(Decl(json::array({data}))).result, ApplyResult::kOk);
  WriteText(Root("/opt/tools/data/important.db"), "rows");
  ApplyReport r = Run(Decl(json::array({Resources()[2]}), 2));
  EXPECT_EQ(r.outcomes[0].outcome, core::Outcome::kFailed);
  EXPECT_THAT(r.outcomes[0].detail,
              HasSubstr("holds /opt/tools/data/important.db, which is not the host's"));
  EXPECT_EQ(ReadText(Root("/opt/tools/data/important.db")), "rows");
  // A directory declared at the very path, then an archive there: the
  // record names the path (as a directory's), and the swap deleted it all.
  json here = {{"id", "tools-dir"}, {"kind", "directory"}, {"path", "/opt/tools"}};
  ASSERT_EQ(Run(Decl(json::array({here}), 3)).result, ApplyResult::kOk);
  json tree = Resources()[2];
  tree["id"] = "tools-dir";
  ApplyReport same_path = Run(Decl(json::array({tree}), 4));
  EXPECT_EQ(same_path.outcomes[0].outcome, core::Outcome::kFailed);
  EXPECT_EQ(ReadText(Root("/opt/tools/data/important.db")), "rows");
  // An operator's file the host adopted (there before it managed it, and
  // left by its removal) is not the host's content either.
  std::filesystem::remove_all(Root("/opt/tools"));
  WriteText(Root("/opt/tools/site.conf"), "operator's");
  json adopted = {{"id", "site"},
                  {"kind", "file"},
                  {"path", "/opt/tools/site.conf"},
                  {"content", "operator's"}};
  ASSERT_EQ(Run(Decl(json::array({adopted}), 5)).result, ApplyResult::kOk);
  ApplyReport over = Run(Decl(json::array({Resources()[2]}), 6));
  EXPECT_EQ(over.outcomes[0].outcome, core::Outcome::kFailed);
  EXPECT_THAT(over.outcomes[0].detail,
              HasSubstr("holds /opt/tools/site.conf, which is not the host's"));
  EXPECT_EQ(ReadText(Root("/opt/tools/site.conf")), "operator's");
}

// A bundle unpacked by hand at its path, then one file changed: the
// refusal named whichever file came first in the directory (one the same as
// the bundle's), and an operator moving it away was refused again. It
// names what the swap would lose.
TEST_F(FilesTest, ADirectoryInTheWayIsRefusedNamingWhatTheBundleWouldLose) {
  std::vector<TarMember> members;
  for (int i = 0; i < 40; ++i) {
    members.push_back({TarMember::kFile, "f" + std::to_string(i), "same " + std::to_string(i)});
  }
  std::string sha = Bundle("many.tar.gz", members);
  for (int i = 0; i < 40; ++i) {
    WriteText(Root("/opt/many/f" + std::to_string(i)), "same " + std::to_string(i));
    ::chmod(Root("/opt/many/f" + std::to_string(i)).c_str(), 0644);
  }
  WriteText(Root("/opt/many/f17"), "the operator's own\n");
  json tree = {{"id", "many"},
               {"kind", "archive"},
               {"path", "/opt/many"},
               {"source", "many.tar.gz"},
               {"sha256", sha}};
  ApplyReport r = Run(Decl(json::array({tree})));
  ASSERT_EQ(r.outcomes[0].outcome, core::Outcome::kFailed);
  EXPECT_THAT(r.outcomes[0].detail, HasSubstr("holds /opt/many/f17, which is not the host's"));
  // A mode changed alone is what differs then.
  WriteText(Root("/opt/many/f17"), "same 17");
  ::chmod(Root("/opt/many/f17").c_str(), 0644);
  ::chmod(Root("/opt/many/f23").c_str(), 0600);
  r = Run(Decl(json::array({tree})));
  ASSERT_EQ(r.outcomes[0].outcome, core::Outcome::kFailed);
  EXPECT_THAT(r.outcomes[0].detail, HasSubstr("holds /opt/many/f23, which is not the host's"));
  EXPECT_EQ(ReadText(Root("/opt/many/f0")), "same 0") << "nothing replaced";
}

// Killed after the tree went in and before the record said so: the intent
// names the tree being created, and the next apply takes it as the
// host's, whatever the daemon wrote inside meanwhile.
TEST_F(FilesTest, ATreeAnApplyCutShortWasCreatingIsTheHosts) {
  json tree = Resources()[2];
  WriteText(Root("/opt/tools/bin/serve"), "#!/bin/sh\n");
  WriteText(Root("/opt/tools/cache/written-by-the-daemon"), "x");
  core::Intent cut;
  cut.applying = true;
  cut.creating = {"/opt/tools"};
  cut.creating_trees = {"/opt/tools"};
  store_.intent = core::SerializeIntent(cut);
  ApplyReport r = Run(Decl(json::array({tree})));
  EXPECT_EQ(r.result, ApplyResult::kOk) << r.outcomes[0].detail;
  EXPECT_EQ(ReadText(Root("/opt/tools/README")), "tools\n");
}

// Killed after a new version of a tree went in and before its record:
// the next apply, of the version before, found the tree not as recorded
// and said it was changed on the machine, sending the operator looking
// for someone who had touched it.
TEST_F(FilesTest, ADriftAfterAnApplyCutShortIsNotSaidToBeSomeones) {
  json decl = Decl(Resources());
  Run(decl);
  WriteText(Root("/opt/tools/README"), "tools v2\n");  // as the cut-short apply left it
  core::Intent cut;
  cut.applying = true;
  store_.intent = core::SerializeIntent(cut);
  ApplyReport r = Run(decl);
  ASSERT_EQ(r.outcomes[2].outcome, core::Outcome::kUpdated);
  EXPECT_THAT(r.outcomes[2].detail,
              HasSubstr("drifted: the tree was changed since the host's record (the apply "
                        "before was cut short, perhaps as it wrote it), put back"));
  EXPECT_EQ(ReadText(Root("/opt/tools/README")), "tools\n");
  // Without a cut-short apply before, it is the machine's.
  WriteText(Root("/opt/tools/README"), "edited\n");
  r = Run(decl);
  EXPECT_THAT(r.outcomes[2].detail, HasSubstr("drifted: the tree was changed on the machine"));
}

// Killed while it deleted a dropped bundle's tree, moved aside first: the
// next apply finds the path gone and the resource still recorded. It says
// the removal is done, forgets the resource, and sweeps what was left.
TEST_F(FilesTest, ATreeLeftAsideByAKilledRemovalIsSweptAndTheRemovalDone) {
  Run(Decl(Resources()));
  pid_t dead = ::fork();  // a process that was, as the killed host was
  if (dead == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(dead, nullptr, 0), dead);
  std::string aside = Root("/opt/.tools.mesh-host-tmp." + std::to_string(dead) + ".0");
  std::filesystem::rename(Root("/opt/tools"), aside);
  std::filesystem::remove(aside + "/README");  // part deleted before the kill
  core::Intent cut;
  cut.applying = true;
  store_.intent = core::SerializeIntent(cut);
  json without = Resources();
  without.erase(2);
  ApplyReport r = Run(Decl(without, 2));
  ASSERT_EQ(r.outcomes.size(), 3u);
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[2]),
            "removed app.tools (archive): no longer declared");
  EXPECT_EQ(r.result, ApplyResult::kOk);
  EXPECT_FALSE(Exists(aside)) << "what the kill left aside is swept";
  EXPECT_FALSE(Exists(Root("/opt/tools")));
  EXPECT_FALSE(Record()["resources"].contains("app.tools"));
}

TEST_F(FilesTest, CredentialContentNeverInRecordOrOutput) {
  ApplyReport r = Run(Decl(Resources()));
  EXPECT_EQ(store_.text->find("hunter2"), std::string::npos);
  for (const auto& o : r.outcomes)
    EXPECT_EQ(core::FormatOutcomeLine(o).find("hunter2"), std::string::npos);
  WriteText(Root("/etc/app/token"), "hunter3", 0400);
  r = Run(Decl(Resources()));
  for (const auto& o : r.outcomes)
    EXPECT_EQ(core::FormatOutcomeLine(o).find("hunter"), std::string::npos);
}

TEST_F(FilesTest, HandEditIsDriftPutBack) {
  json decl = Decl(Resources());
  Run(decl);
  WriteText(Root("/etc/app/app.conf"), "a = 2\n");
  ::chmod(Root("/opt/tools/README").c_str(), 0600);
  ApplyReport r = Run(decl);
  EXPECT_THAT(Outcomes(r), ElementsAre("updated", "unchanged", "updated"));
  EXPECT_THAT(r.outcomes[0].detail, HasSubstr("drifted"));
  EXPECT_THAT(r.outcomes[2].detail, HasSubstr("drifted"));
  EXPECT_EQ(ReadText(Root("/etc/app/app.conf")), "a = 1\n");
  EXPECT_THAT(Outcomes(Run(decl)), ElementsAre("unchanged", "unchanged", "unchanged"));
}

TEST_F(FilesTest, TouchedButEqualIsUnchangedAfterRehash) {
  json decl = Decl(Resources());
  Run(decl);
  WriteText(Root("/etc/app/app.conf"), "a = 1\n");  // same bytes, new mtime
  ApplyReport r = Run(decl);
  EXPECT_THAT(Outcomes(r), ElementsAre("unchanged", "unchanged", "unchanged"));
}

TEST_F(FilesTest, MissingRecordAdoptsMatchingFilesWithoutRewriting) {
  json decl = Decl(Resources());
  Run(decl);
  int64_t before = MtimeNs(Root("/etc/app/app.conf"));
  store_.text.reset();  // the record is lost
  ApplyReport r = Run(decl);
  EXPECT_THAT(Outcomes(r), ElementsAre("unchanged", "unchanged", "unchanged"));
  EXPECT_EQ(MtimeNs(Root("/etc/app/app.conf")), before);
  store_.text = "{ not json";  // or corrupt
  r = Run(decl);
  EXPECT_THAT(Outcomes(r), ElementsAre("unchanged", "unchanged", "unchanged"));
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_THAT(r.warnings[0], HasSubstr("adopted"));
}

// Only a record that is no record is adopted from: one that could not be
// read (a read error, not the host's own, changed while read) fails the
// apply, which writes nothing and saves nothing over it. Before, any
// failure to load started from an empty record and saved over it.
TEST_F(FilesTest, ARecordThatCannotBeReadIsNotReplaced) {
  json decl = Decl(Resources());
  Run(decl);
  std::string before = *store_.text;
  WriteText(Root("/etc/app/app.conf"), "changed by hand\n");
  store_.fail_loads =
      core::Error{"read /state.json: Input/output error", core::ErrorKind::kOther, {}};
  int saves = store_.saves;
  ApplyReport r = Run(decl);
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_THAT(r.error, HasSubstr("record not readable: read /state.json: Input/output error"));
  EXPECT_EQ(ReadText(Root("/etc/app/app.conf")), "changed by hand\n");
  EXPECT_EQ(store_.saves, saves);
  EXPECT_EQ(*store_.text, before);
  store_.fail_loads.reset();
  EXPECT_EQ(Run(decl).result, ApplyResult::kOk);
  EXPECT_EQ(ReadText(Root("/etc/app/app.conf")), "a = 1\n") << "put back once it reads";
}

// A record too large to read (version 1, laid out as no host writes it,
// past its bound) is not corrupt: read as empty, the apply would forget what
// the host wrote and save over the record that knows it. The apply fails,
// writes nothing, and the record stays.
TEST_F(FilesTest, ARecordTooLargeToReadChangesNothing) {
  json decl = Decl(Resources());
  Run(decl);
  store_.limits.max_version1_bytes = 4096;  // 64 MiB in the host
  store_.text = R"({"version": 1, "machine": "edge-1", "generation": 1,)" + std::string(4096, ' ') +
                R"("declaration_digest": "", "resources": {}})";
  std::string before = *store_.text;
  WriteText(Root("/etc/app/app.conf"), "changed by hand\n");
  ApplyReport r = Run(decl);
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_THAT(r.error, HasSubstr("record not readable: "));
  EXPECT_THAT(r.error, HasSubstr("not read as corrupt"));
  EXPECT_EQ(ReadText(Root("/etc/app/app.conf")), "changed by hand\n") << "nothing is written";
  EXPECT_EQ(*store_.text, before) << "the record is not saved over";
}

TEST_F(FilesTest, PruneRemovesOnlyWhatTheHostCreated) {
  WriteText(Root("/etc/app/token"), "was here before");
  json resources = Resources();
  Run(Decl(resources));
  ASSERT_EQ(ReadText(Root("/etc/app/token")), "hunter2");
  ApplyReport r = Run(Decl(json::array({resources[0]}), 2));
  EXPECT_THAT(Outcomes(r), ElementsAre("unchanged", "removed", "removed"));
  EXPECT_TRUE(Exists(Root("/etc/app/token"))) << "a file that predates the host is left";
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[1]),
            "removed app.token (credential): no longer managed; left /etc/app/token, there "
            "before the host managed it");
  EXPECT_FALSE(Exists(Root("/opt/tools")));
  EXPECT_FALSE(Record()["resources"].contains("app.tools"));
  EXPECT_THAT(Outcomes(Run(Decl(json::array({resources[0]}), 2))), ElementsAre("unchanged"));
}

// Issue 15: a host-written file an operator replaced by a directory of
// their own, and a bundle tree someone wrote into, are left when the
// resources are dropped; before, the whole directory went.
TEST_F(FilesTest, PruneLeavesWhatNoLongerMatchesWhatTheHostWrote) {
  json db = {
      {"id", "db"}, {"kind", "file"}, {"path", "/srv/data/db/important.db"}, {"content", "x"}};
  json resources = Resources();
  resources.push_back(db);
  Run(Decl(resources));
  std::filesystem::remove(Root("/srv/data/db/important.db"));
  std::filesystem::create_directories(Root("/srv/data/db/important.db"));
  WriteText(Root("/srv/data/db/important.db/000001.log"), "the operator's data");
  WriteText(Root("/opt/tools/bin/cache"), "written by the service");
  ApplyReport r = Run(Decl(json::array({resources[0]}), 2));
  EXPECT_THAT(Outcomes(r), ElementsAre("unchanged", "removed", "removed", "removed"));
  EXPECT_EQ(ReadText(Root("/srv/data/db/important.db/000001.log")), "the operator's data");
  EXPECT_TRUE(Exists(Root("/opt/tools/bin/serve")));
  std::string details;
  for (const auto& o : r.outcomes) details += o.detail + "\n";
  EXPECT_THAT(details, HasSubstr("left /srv/data/db/important.db: now a directory"));
  EXPECT_THAT(details, HasSubstr("left /opt/tools: changed since the host wrote it"));
  EXPECT_FALSE(Exists(Root("/etc/app/token"))) << "the untouched credential is deleted";
  EXPECT_FALSE(Record()["resources"].contains("db")) << "left, and forgotten";
}

// Issue 15: four archives naming one artifact that expands to 1,000 MiB
// held four copies (4.1 GB). One artifact is unpacked once, and each
// bundle is read within what the ones before it left of the apply's budget.
TEST_F(FilesTest, BundlesShareOneCopyAndOneBudget) {
  struct Counting : ports::ArchiveReader {
    explicit Counting(ports::ArchiveReader& real) : real(real) {}
    core::Result<std::vector<core::TreeEntry>> Read(std::string_view bytes,
                                                    uint64_t max_expanded) override {
      budgets.push_back(max_expanded);
      return real.Read(bytes, max_expanded);
    }
    ports::ArchiveReader& real;
    std::vector<uint64_t> budgets;
  } counting(archives_);
  std::string same = Bundle("same.tar.gz", {{TarMember::kFile, "f", std::string(1000, 'x')}});
  std::string other = Bundle("other.tar.gz", {{TarMember::kFile, "g", std::string(500, 'y')}});
  json resources = json::array();
  for (int i = 0; i < 4; ++i) {
    resources.push_back({{"id", "b" + std::to_string(i)},
                         {"kind", "archive"},
                         {"path", "/opt/b" + std::to_string(i)},
                         {"source", "same.tar.gz"},
                         {"sha256", same}});
  }
  resources.push_back({{"id", "c"},
                       {"kind", "archive"},
                       {"path", "/opt/c"},
                       {"source", "other.tar.gz"},
                       {"sha256", other}});
  ReconcilerPorts ports = Ports();
  ports.archives = &counting;
  ApplyReport r = Reconciler(ports, Options()).Apply(Decl(resources).dump());
  ASSERT_EQ(r.result, ApplyResult::kOk) << r.error;
  EXPECT_EQ(ReadText(Root("/opt/b3/f")), std::string(1000, 'x'));
  ASSERT_EQ(counting.budgets.size(), 2u) << "the shared artifact is unpacked once";
  EXPECT_EQ(counting.budgets[0] - counting.budgets[1], 1000u) << "the second gets what is left";
}

TEST_F(FilesTest, PruneKeepsAPathANewResourceClaims) {
  json a = {{"id", "old.name"}, {"kind", "file"}, {"path", "/etc/app/x.conf"}, {"content", "x"}};
  Run(Decl(json::array({a})));
  json b = a;
  b["id"] = "new.name";  // renamed: same path, same content
  ApplyReport r = Run(Decl(json::array({b}), 2));
  EXPECT_THAT(Outcomes(r), ElementsAre("unchanged", "removed"));
  EXPECT_EQ(ReadText(Root("/etc/app/x.conf")), "x") << "the renamed resource's file stays";
  // A path inside a bundle directory that is now declared is kept too.
  json tree = Resources()[2];
  tree["path"] = "/etc/app";
  r = Run(Decl(json::array({tree}), 3));
  EXPECT_TRUE(Exists(Root("/etc/app/bin/serve")));
}

// A bundle is swapped in whole. Over a directory that was there before the
// host took its path, that deleted what it held: a path's typo, and an
// operator's data was gone with no word but `unpacked 3 file(s)`.
TEST_F(FilesTest, ABundleNeverReplacesADirectoryHoldingSomeoneElsesFiles) {
  json tree = Resources()[2];
  WriteText(Root("/opt/tools/data/important.db"), "rows");
  ApplyReport r = Run(Decl(json::array({tree})));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[0]),
            "failed app.tools (archive): /opt/tools holds /opt/tools/data/important.db, which is "
            "not the host's: not replaced by the bundle, it may be someone's (move it away, or "
            "declare the bundle at another path)");
  EXPECT_EQ(ReadText(Root("/opt/tools/data/important.db")), "rows");
  EXPECT_FALSE(Exists(Root("/opt/tools/bin/serve")));
  // Moved away: the bundle goes in, and updates of it stay the host's.
  std::filesystem::remove_all(Root("/opt/tools/data"));
  EXPECT_THAT(Outcomes(Run(Decl(json::array({tree})))), ElementsAre("updated"))
      << "an empty directory holds nothing to lose";
  EXPECT_EQ(ReadText(Root("/opt/tools/bin/serve")), "#!/bin/sh\n");
  WriteText(Root("/opt/tools/README"), "hand edit");
  EXPECT_THAT(Outcomes(Run(Decl(json::array({tree})))), ElementsAre("updated"))
      << "the host's own tree, drifted, is put back";
  EXPECT_EQ(ReadText(Root("/opt/tools/README")), "tools\n");
}

// The same for a file, or a FIFO, at the bundle's path: it was deleted with
// `unpacked 1 file(s)`, exit 0, and recorded as there before the host. A
// file the host wrote there itself (a `file` that became a bundle) is
// replaced.
TEST_F(FilesTest, ABundleNeverReplacesSomeoneElsesFileAtItsPath) {
  json tree = Resources()[2];
  WriteText(Root("/opt/tools"), "operator data");
  ApplyReport r = Run(Decl(json::array({tree})));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[0]),
            "failed app.tools (archive): /opt/tools is not a directory, and not the host's: not "
            "replaced by the bundle, it may be someone's (move it away, or declare the bundle at "
            "another path)");
  EXPECT_EQ(ReadText(Root("/opt/tools")), "operator data");
  std::filesystem::remove(Root("/opt/tools"));
  ASSERT_EQ(::mkfifo(Root("/opt/tools").c_str(), 0600), 0);
  EXPECT_EQ(Run(Decl(json::array({tree}))).result, ApplyResult::kFailed);
  EXPECT_TRUE(std::filesystem::is_fifo(Root("/opt/tools")));
  std::filesystem::remove(Root("/opt/tools"));

  json file = {{"id", "tools"}, {"kind", "file"}, {"path", "/opt/tools"}, {"content", "x"}};
  ASSERT_EQ(Run(Decl(json::array({file}))).result, ApplyResult::kOk);
  // The host's file, edited by hand since: someone's now.
  WriteText(Root("/opt/tools"), "hand edit");
  EXPECT_EQ(Run(Decl(json::array({tree}), 2)).result, ApplyResult::kFailed);
  EXPECT_EQ(ReadText(Root("/opt/tools")), "hand edit");
  WriteText(Root("/opt/tools"), "x");  // as the host left it: its bytes read
  r = Run(Decl(json::array({tree}), 2));
  EXPECT_EQ(r.result, ApplyResult::kOk) << core::FormatOutcomeLine(r.outcomes.at(0)) << r.error;
  EXPECT_EQ(ReadText(Root("/opt/tools/bin/serve")), "#!/bin/sh\n");
  // Under its own id turned bundle too.
  std::filesystem::remove_all(Root("/opt/tools"));
  ASSERT_EQ(Run(Decl(json::array({file}), 3)).result, ApplyResult::kOk);
  WriteText(Root("/opt/tools"), "hand edit");
  json same = tree;
  same["id"] = "tools";
  EXPECT_EQ(Run(Decl(json::array({same}), 4)).result, ApplyResult::kFailed);
  EXPECT_EQ(ReadText(Root("/opt/tools")), "hand edit");
  // Still the host's (its entry kept while the bundle fails): put back as
  // it was, the bundle takes the path.
  WriteText(Root("/opt/tools"), "x");
  r = Run(Decl(json::array({same}), 4));
  EXPECT_EQ(r.result, ApplyResult::kOk) << core::FormatOutcomeLine(r.outcomes.at(0));
  EXPECT_EQ(ReadText(Root("/opt/tools/bin/serve")), "#!/bin/sh\n");
}

// A file declared where a directory is: the plan said `would write 4
// byte(s)`, exit 0, where the apply fails (the host never replaces a
// directory with a file). Both now fail with the same words.
TEST_F(FilesTest, AFileOverADirectoryFailsInThePlanAsInTheApply) {
  std::filesystem::create_directories(Root("/etc/f/sub"));
  json f = {{"id", "f"}, {"kind", "file"}, {"path", "/etc/f"}, {"content", "new\n"}};
  for (bool dry_run : {true, false}) {
    ApplyReport r = Run(Decl(json::array({f})), dry_run);
    EXPECT_EQ(r.result, ApplyResult::kFailed) << dry_run;
    EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[0]),
              "failed f (file): write /etc/f: a directory is in the way");
  }
  EXPECT_TRUE(std::filesystem::is_directory(Root("/etc/f/sub")));
}

// The host's file inside a bundle's path, replaced by someone's directory
// (or a FIFO, or a link): what was in it was deleted by the swap, and the
// removal said the bundle replaced the host's file. The bundle fails.
TEST_F(FilesTest, ABundleNeverReplacesWhatTookTheHostsFilesPlace) {
  json conf = {{"id", "conf"}, {"kind", "file"}, {"path", "/opt/tools/conf"}, {"content", "v1"}};
  json tree = Resources()[2];
  for (int how = 0; how < 3; ++how) {
    std::filesystem::remove_all(Root("/opt/tools"));
    ASSERT_EQ(Run(Decl(json::array({conf}), 1 + 2 * how)).result, ApplyResult::kOk) << how;
    std::filesystem::remove(Root("/opt/tools/conf"));
    if (how == 0) WriteText(Root("/opt/tools/conf/x"), "important");
    if (how == 1) ASSERT_EQ(::mkfifo(Root("/opt/tools/conf").c_str(), 0600), 0);
    if (how == 2) std::filesystem::create_symlink("/etc/passwd", Root("/opt/tools/conf"));
    ApplyReport r = Run(Decl(json::array({tree}), 2 + 2 * how));
    EXPECT_EQ(r.result, ApplyResult::kFailed) << how;
    EXPECT_THAT(core::FormatOutcomeLine(r.outcomes[0]),
                HasSubstr("/opt/tools holds /opt/tools/conf"))
        << how;
    if (how == 0) EXPECT_EQ(ReadText(Root("/opt/tools/conf/x")), "important");
  }
}

// A file the host wrote, edited by hand since, at a path a bundle now
// takes: it was deleted with the swap, and the removal said it was left.
// Edited, it is no longer the host's to replace: the bundle fails.
TEST_F(FilesTest, ABundleNeverReplacesAHostFileEditedByHand) {
  json conf = {{"id", "conf"}, {"kind", "file"}, {"path", "/opt/tools/conf"}, {"content", "host"}};
  ASSERT_EQ(Run(Decl(json::array({conf}))).result, ApplyResult::kOk);
  WriteText(Root("/opt/tools/conf"), "operator's precious edit");
  json tree = Resources()[2];
  ApplyReport r = Run(Decl(json::array({tree}), 2));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[0]),
            "failed app.tools (archive): /opt/tools holds /opt/tools/conf (changed since the host "
            "wrote it), which is not the host's: not replaced by the bundle, it may be someone's "
            "(move it away, or declare the bundle at another path)");
  EXPECT_EQ(ReadText(Root("/opt/tools/conf")), "operator's precious edit");
  // The host's file is not forgotten while the bundle fails: put back as
  // the host wrote it, the bundle takes the path, and says so.
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[1]),
            "failed conf (file): kept as the host's: /opt/tools/conf lies in the path of "
            "app.tools, which failed; removed once that bundle takes its path");
  WriteText(Root("/opt/tools/conf"), "host");
  r = Run(Decl(json::array({tree}), 3));
  EXPECT_EQ(r.result, ApplyResult::kOk) << core::FormatOutcomeLine(r.outcomes[0]);
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[1]),
            "removed conf (file): /opt/tools/conf, replaced by app.tools's bundle");
  EXPECT_FALSE(Exists(Root("/opt/tools/conf")));
}

// A hand edit found by an apply that also changes the file was written
// over with only `wrote 3 byte(s)`: SPEC reports drift. Said now.
TEST_F(FilesTest, AHandEditUnderADeclaredChangeIsSaid) {
  json f = {{"id", "f"}, {"kind", "file"}, {"path", "/etc/f"}, {"content", "v1"}};
  ASSERT_EQ(Run(Decl(json::array({f}))).result, ApplyResult::kOk);
  WriteText(Root("/etc/f"), "hand");
  f["content"] = "v2";
  ApplyReport r = Run(Decl(json::array({f}), 2));
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[0]),
            "updated f (file): drifted: changed on the machine since the host wrote it, replaced; "
            "wrote 2 byte(s), mode 0644");
  std::filesystem::remove(Root("/etc/f"));
  f["content"] = "v3";
  r = Run(Decl(json::array({f}), 3));
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[0]),
            "updated f (file): drifted: deleted on the machine since the host wrote it; wrote 2 "
            "byte(s), mode 0644");
  f["content"] = "v4";
  r = Run(Decl(json::array({f}), 4));
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[0]), "updated f (file): wrote 2 byte(s), mode 0644")
      << "untouched since the host wrote it: no word";
}

// An artifact that is not there, or is a link, was named as "open
// /tools.tar.gz", a path at the machine's root, and a link as "Too many
// levels of symbolic links".
TEST_F(FilesTest, AnArtifactNotReadIsNamedInTheArtifactsDirectory) {
  json tree = Resources()[2];
  std::string art = dir_.Sub("artifacts/tools.tar.gz");
  std::filesystem::rename(art, dir_.Sub("kept.tar.gz"));
  ApplyReport r = Run(Decl(json::array({tree})));
  EXPECT_EQ(r.error,
            "resource app.tools, field source: cannot read tools.tar.gz from the artifacts "
            "directory (--artifacts): No such file or directory; put the file there under that "
            "name, or correct \"source\"");
  std::filesystem::create_symlink(dir_.Sub("kept.tar.gz"), art);
  r = Run(Decl(json::array({tree})));
  EXPECT_THAT(r.error, HasSubstr("(--artifacts): it is a symbolic link, which --artifacts does "
                                 "not follow (copy the file in)"));
  // A directory there: "read /tools.tar.gz: not a regular file".
  std::filesystem::remove(art);
  std::filesystem::create_directory(art);
  r = Run(Decl(json::array({tree})));
  EXPECT_THAT(r.error, HasSubstr("cannot read tools.tar.gz from the artifacts directory "
                                 "(--artifacts): not a regular file;"));
}

TEST_F(FilesTest, PlanWritesNothing) {
  ApplyReport r = Run(Decl(Resources()), /*dry_run=*/true);
  EXPECT_THAT(Outcomes(r), ElementsAre("created", "created", "created"));
  EXPECT_THAT(r.outcomes[0].detail, HasSubstr("would write"));
  EXPECT_FALSE(Exists(Root("/etc")));
  EXPECT_FALSE(Exists(Root("/opt")));
  EXPECT_EQ(store_.saves, 0);
}

TEST_F(FilesTest, RefusedDeclarationTouchesNothing) {
  json decl = Decl(Resources(), 5);
  Run(decl);
  std::string record = *store_.text;
  WriteText(Root("/etc/app/app.conf"), "hand edit");
  struct Case {
    json decl;
    const char* why;
  };
  json wrong_machine = decl;
  wrong_machine["machine"] = "edge-2";
  json older = decl;
  older["generation"] = 4;
  json bad_sha = decl;
  bad_sha["resources"][2]["sha256"] = std::string(64, 'a');
  bad_sha["resources"][2]["path"] = "/opt/other";
  json missing_source = decl;
  missing_source["resources"][2]["source"] = "nope.tar.gz";
  missing_source["resources"][2]["path"] = "/opt/other";
  json hostile = decl;
  hostile["resources"][2]["sha256"] =
      Bundle("evil.tar.gz", {{TarMember::kFile, "../../etc/passwd", "x"}});
  hostile["resources"][2]["source"] = "evil.tar.gz";
  for (const Case& c :
       {Case{wrong_machine, "field machine: \"edge-2\" is not this machine"},
        Case{older, "field generation: 4 is lower than the applied generation 5"},
        Case{bad_sha, "resource app.tools, field sha256: source tools.tar.gz has sha256"},
        Case{missing_source, "resource app.tools, field source"}, Case{hostile, "climbs out"}}) {
    ApplyReport r = Run(c.decl);
    EXPECT_EQ(r.result, ApplyResult::kRefused);
    EXPECT_THAT(r.error, HasSubstr(c.why));
    EXPECT_TRUE(r.outcomes.empty());
    EXPECT_EQ(*store_.text, record);
    EXPECT_EQ(ReadText(Root("/etc/app/app.conf")), "hand edit");
    EXPECT_FALSE(Exists(Root("/opt/other")));
  }
}

// SPEC: a refused declaration reports every refusal found. The checks that
// need the machine (its name, the applied generation, the host's own
// places) are named beside a resource's own refusal, not only once that is
// mended.
TEST_F(FilesTest, EveryRefusalIsNamedAtOnce) {
  Run(Decl(Resources(), 5));
  json resources = Resources();
  resources[0]["mode"] = "0999";
  json decl = Decl(resources, 4);
  decl["machine"] = "edge-2";
  ApplyReport r = Run(decl);
  EXPECT_EQ(r.result, ApplyResult::kRefused);
  EXPECT_THAT(r.refusals, ElementsAre(HasSubstr("field machine: \"edge-2\" is not this machine"),
                                      HasSubstr("field generation: 4 is lower"),
                                      HasSubstr("resource app.conf, field mode")));
  EXPECT_TRUE(r.outcomes.empty());
}

// The same for bundles: each that cannot be used is named, as validate
// names them (apply and plan named the first only).
TEST_F(FilesTest, EveryBadBundleIsNamedAtOnce) {
  std::string climbs = Bundle("climbs.tar.gz", {{TarMember::kFile, "../escape", "x"}});
  std::string links = Bundle("links.tar.gz", {{TarMember::kSymlink, "bin/sh", "/bin/sh"}});
  auto bundle = [](const std::string& id, const std::string& source, const std::string& sha) {
    return json{{"id", id},
                {"kind", "archive"},
                {"path", "/opt/" + id},
                {"source", source},
                {"sha256", sha}};
  };
  json decl = Decl({bundle("a", "climbs.tar.gz", climbs), bundle("b", "links.tar.gz", links)});
  for (bool dry_run : {true, false}) {
    ApplyReport r = Run(decl, dry_run);
    EXPECT_EQ(r.result, ApplyResult::kRefused);
    EXPECT_THAT(r.refusals, ElementsAre(HasSubstr("climbs.tar.gz"), HasSubstr("links.tar.gz")))
        << r.error;
    EXPECT_FALSE(Exists(Root("/opt/a")));
  }
}

// A resource whose kind changed and failed (a file declared a directory,
// the host's file in the way) is shown under a refusal as the kind that
// failed, not the kind the record still holds.
TEST_F(FilesTest, AFailedKindChangeIsShownAsTheKindThatFailed) {
  json file = {{"id", "x"}, {"kind", "file"}, {"path", "/srv/x"}, {"content", "x"}};
  ASSERT_EQ(Run(Decl({file})).result, ApplyResult::kOk);
  json dir = {{"id", "x"}, {"kind", "directory"}, {"path", "/srv/x"}};
  ASSERT_EQ(Run(Decl({dir}, 2)).result, ApplyResult::kFailed);
  ReconcilerOptions options = Options();
  options.recorded_on_refusal = true;
  ApplyReport r = Reconciler(Ports(), options).Apply("{not json");
  ASSERT_EQ(r.result, ApplyResult::kRefused);
  ASSERT_TRUE(r.recorded.has_value());
  ASSERT_EQ(r.recorded->resources.size(), 1u);
  EXPECT_EQ(r.recorded->resources[0].outcome, core::Outcome::kFailed);
  EXPECT_EQ(r.recorded->resources[0].kind, "directory");
}

// SPEC: a refused declaration leaves the truth of the last applied
// generation told, also after a restart. A first write that failed has no
// record entry, and one whose update failed keeps its older entry: a daemon
// started again under a refused declaration showed neither as failed, and
// their alerts resolved while the machine was still wrong.
TEST_F(FilesTest, WhatTheLastApplyLeftFailedIsToldUnderARefusal) {
  json resources = Resources();
  ASSERT_EQ(Run(Decl(resources)).result, ApplyResult::kOk);
  resources[0]["content"] = "new";
  resources[0]["owner"] = "no-such-user-here";
  resources.push_back({{"id", "bad.conf"},
                       {"kind", "file"},
                       {"path", "/etc/bad.conf"},
                       {"content", "x"},
                       {"owner", "no-such-user-here"}});
  ASSERT_EQ(Run(Decl(resources, 2)).result, ApplyResult::kFailed);
  ReconcilerOptions options = Options();
  options.recorded_on_refusal = true;
  ApplyReport r = Reconciler(Ports(), options).Apply("{not json");
  ASSERT_EQ(r.result, ApplyResult::kRefused);
  ASSERT_TRUE(r.recorded.has_value());
  std::map<std::string, const core::ResourceOutcome*> by_id;
  for (const core::ResourceOutcome& o : r.recorded->resources) by_id[o.id] = &o;
  ASSERT_TRUE(by_id.contains("bad.conf")) << "a first write that failed is not forgotten";
  EXPECT_EQ(by_id["bad.conf"]->outcome, core::Outcome::kFailed);
  EXPECT_EQ(by_id["bad.conf"]->kind, "file");
  EXPECT_THAT(by_id["bad.conf"]->detail,
              HasSubstr("unknown user \"no-such-user-here\" (failed since generation 2) (the "
                        "declaration is refused: nothing changed)"));
  ASSERT_TRUE(by_id.contains("app.conf"));
  EXPECT_EQ(by_id["app.conf"]->outcome, core::Outcome::kFailed) << "its update did not land";
  EXPECT_EQ(by_id["app.tools"]->outcome, core::Outcome::kUnchanged);
  // Failing again the same way: the words first saved stay (a unit's hold
  // a time that moves), and the intent is not written again for that.
  core::Intent saved = store_.Owed();
  saved.failed["bad.conf"].detail = "the words first said";
  store_.intent = core::SerializeIntent(saved);
  ASSERT_EQ(Run(Decl(resources, 2)).result, ApplyResult::kFailed);
  EXPECT_EQ(store_.Owed().failed["bad.conf"].detail, "the words first said");
  EXPECT_EQ(store_.Owed().failed["bad.conf"].generation, 2u);
  // Mended: nothing is left failed, and no intent file stays behind.
  ASSERT_EQ(Run(Decl(Resources(), 3)).result, ApplyResult::kOk);
  EXPECT_TRUE(store_.Owed().empty());
}

TEST_F(FilesTest, OneFailureDoesNotStopTheOthers) {
  json resources = Resources();
  resources[0]["owner"] = "no-such-user-here";
  ApplyReport r = Run(Decl(resources));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_THAT(Outcomes(r), ElementsAre("failed", "created", "created"));
  EXPECT_THAT(r.outcomes[0].detail, HasSubstr("unknown user \"no-such-user-here\""));
  // The path whose owner it is: the words name what to mend.
  EXPECT_THAT(r.outcomes[0].detail, HasSubstr(std::string(resources[0]["path"]) +
                                              ": unknown user \"no-such-user-here\""));
  EXPECT_FALSE(Record()["resources"].contains("app.conf"));
}

TEST_F(FilesTest, SymlinkPlantedInRootRefusesTheDeclarationWhole) {
  std::filesystem::create_directories(dir_.Sub("outside"));
  ::symlink(dir_.Sub("outside").c_str(), Root("/etc").c_str());
  ApplyReport r = Run(Decl(Resources()));
  EXPECT_EQ(r.result, ApplyResult::kRefused);
  EXPECT_THAT(
      r.error,
      HasSubstr("resource app.conf, field path: path /etc/app/app.conf: /etc is a symlink"));
  EXPECT_TRUE(r.outcomes.empty());
  EXPECT_FALSE(Exists(dir_.Sub("outside/app")));
  EXPECT_FALSE(Exists(Root("/opt/tools"))) << "nothing else was written either";
  EXPECT_FALSE(store_.text.has_value());
  // SPEC: every refusal found. Both resources under /etc are named, not
  // only the first.
  EXPECT_THAT(r.error, HasSubstr("resource app.token, field path: path /etc/app/token: /etc is"))
      << r.error;
}

TEST_F(FilesTest, InterruptedApplyLeavesNoTemporaryFilesBehind) {
  json decl = Decl(Resources());
  Run(decl);
  // What kill -9 in the middle of a write leaves: a temporary file and a
  // temporary tree of a process that is gone, and the apply mark still set.
  WriteText(Root("/etc/app/.app.conf.mesh-host-tmp.999999.0"), "half");
  WriteText(Root("/opt/.tools.mesh-host-tmp.999999.1/bin/serve"), "half");
  WriteText(Root("/etc/app/.keep.mesh-host-tmp.notapid.0"), "not ours");
  store_.SetApplying();
  ApplyReport r = Run(decl);
  EXPECT_EQ(r.result, ApplyResult::kOk);
  EXPECT_THAT(Outcomes(r), ElementsAre("unchanged", "unchanged", "unchanged"));
  EXPECT_FALSE(Exists(Root("/etc/app/.app.conf.mesh-host-tmp.999999.0")));
  EXPECT_FALSE(Exists(Root("/opt/.tools.mesh-host-tmp.999999.1")));
  EXPECT_TRUE(Exists(Root("/etc/app/.keep.mesh-host-tmp.notapid.0")));
  ASSERT_FALSE(r.warnings.empty());
  EXPECT_THAT(r.warnings[0], HasSubstr("interrupted; removed 2 temporary file(s)"));
  EXPECT_FALSE(store_.Applying()) << "a finished apply clears its mark";
}

// After a reboot a daemon may well be given the PID its killed
// predecessor had (early-boot PIDs repeat): the predecessor's temporaries
// carried the sweeper's own PID and were taken for its own writes in
// flight — left for ever, a credential's secret among them. The sweep runs
// before the apply writes anything: none of its own is in flight.
TEST_F(FilesTest, TemporariesUnderThisProcesssPidAreSweptToo) {
  json decl = Decl(Resources());
  Run(decl);
  std::string mine = Root("/etc/app/.app.conf.mesh-host-tmp." + std::to_string(::getpid()) + ".3");
  WriteText(mine, "the secret, half written before the reboot");
  store_.SetApplying();
  ApplyReport r = Run(decl);
  EXPECT_EQ(r.result, ApplyResult::kOk);
  EXPECT_FALSE(Exists(mine));
}

TEST_F(FilesTest, RecordNotSavedIsAFailure) {
  store_.fail_saves = true;
  ApplyReport r = Run(Decl(Resources()));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_THAT(r.error, HasSubstr("record not saved"));
}

// Issue 17: the digest /status, plan and the record show for a credential
// is keyed with this machine's secret: not the SHA-256 of its content, not
// another machine's, and still moving when the secret changes.
TEST_F(FilesTest, CredentialDigestIsKeyedAndMoves) {
  json decl = Decl(Resources());
  ApplyReport first = Run(decl);
  ASSERT_EQ(first.result, ApplyResult::kOk) << first.error;
  const std::string digest = first.outcomes[1].digest;
  EXPECT_TRUE(digest.starts_with("hmac-sha256:")) << digest;
  EXPECT_EQ(digest.find(core::Sha256Hex("hunter2")), std::string::npos);
  EXPECT_EQ(Record()["resources"]["app.token"]["digest"], digest);
  EXPECT_EQ(store_.text->find(core::Sha256Hex("hunter2")), std::string::npos);

  EXPECT_EQ(Run(decl, /*dry_run=*/false, /*from_record=*/false).outcomes[1].digest, digest);

  json changed = Decl(Resources(), 2);
  changed["resources"][1]["content"] = "hunter3";
  ApplyReport next = Run(changed);
  EXPECT_EQ(core::OutcomeName(next.outcomes[1].outcome), "updated");
  EXPECT_NE(next.outcomes[1].digest, digest);

  // Another machine (another key), the same declaration: another digest.
  fakes::MemoryRecordStore other;
  other.digest_key = "another machine's secret";
  ReconcilerPorts ports = Ports();
  ports.records = &other;
  ApplyReport there = Reconciler(ports, Options()).Apply(changed.dump());
  EXPECT_NE(there.outcomes[1].digest, next.outcomes[1].digest);
  EXPECT_EQ(there.outcomes[0].digest, next.outcomes[0].digest) << "only credentials are keyed";
}

// Upgrading to keyed digests (or losing the key) must not restart anything
// (issue 210): the credential's recorded digest no longer matches, the
// content on disk does, so it is unchanged and its restart_on service is
// left alone; the record then holds the keyed digest.
TEST_F(FilesTest, ANewKeyNeverRestartsWhatTheCredentialFeeds) {
  services_.AddUnit("app.service", {fakes::FakeServiceManager::Behavior::kHealthy, {}, true});
  json resources = Resources();
  resources.push_back({{"id", "app"},
                       {"kind", "service"},
                       {"unit", "app.service"},
                       {"state", "running"},
                       {"restart_on", {"app.token"}}});
  json decl = Decl(resources);
  ASSERT_EQ(Run(decl).result, ApplyResult::kOk);
  const std::string keyed = Record()["resources"]["app.token"]["digest"];
  int starts = services_.StartsOf("app.service");

  // A record written before the keyed digests: recipe 1, the plain digest.
  json old = Record();
  old["want_version"] = 1;
  old["resources"]["app.token"]["digest"] = "sha256:" + core::Sha256Hex("any older recipe");
  store_.text = testing::Version1Text(old);  // as an older host wrote it
  ApplyReport upgraded = Run(decl);
  ASSERT_EQ(upgraded.result, ApplyResult::kOk) << upgraded.error;
  EXPECT_THAT(Outcomes(upgraded), ElementsAre("unchanged", "unchanged", "unchanged", "unchanged"));
  EXPECT_EQ(services_.StartsOf("app.service"), starts) << "a new digest recipe restarted a unit";
  EXPECT_EQ(Record()["resources"]["app.token"]["digest"], keyed);
  EXPECT_EQ(Record()["want_version"], core::Record::kWantVersion);

  // The key lost (a new one made), met by the next declaration (the same
  // declaration keeps its recorded digests): the same, once more.
  store_.digest_key = "a new secret";
  ApplyReport rekeyed = Run(Decl(resources, 2));
  EXPECT_THAT(Outcomes(rekeyed), ElementsAre("unchanged", "unchanged", "unchanged", "unchanged"));
  EXPECT_EQ(services_.StartsOf("app.service"), starts);
  EXPECT_NE(Record()["resources"]["app.token"]["digest"], keyed);
}

}  // namespace
}  // namespace mesh::reconcile
