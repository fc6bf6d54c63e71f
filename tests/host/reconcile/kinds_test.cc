// Issue 16: `directory` and `symlink` resources — created, unchanged after
// (from the record too), drift put back, pruned only when the host made
// them and they are still as it left them (a directory only when empty),
// and what is in the way never replaced when it may be someone's.
#include <gmock/gmock.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <tuple>

#include "tests/fakes/faulty_file_system.h"
#include "tests/host/reconcile/reconciler_fixture.h"

namespace mesh::reconcile {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::WriteText;

class KindsTest : public ReconcilerTest {
 protected:
  static json Dir(const std::string& id, const std::string& path, const std::string& mode) {
    return {{"id", id}, {"kind", "directory"}, {"path", path}, {"mode", mode}};
  }
  static json Link(const std::string& id, const std::string& path, const std::string& target) {
    return {{"id", id}, {"kind", "symlink"}, {"path", path}, {"target", target}};
  }
  uint32_t Mode(const std::string& rel) {
    struct stat st;
    EXPECT_EQ(::lstat(Root(rel).c_str(), &st), 0) << rel;
    return st.st_mode & 07777;
  }
  std::string Target(const std::string& rel) {
    char buf[4096];
    ssize_t n = ::readlink(Root(rel).c_str(), buf, sizeof buf);
    return n < 0 ? "" : std::string(buf, static_cast<size_t>(n));
  }
};

TEST_F(KindsTest, ADirectoryIsMadeKeptAndPutBack) {
  json decl =
      Decl({Dir("data", "/srv/data", "0750"),
            {{"id", "conf"}, {"kind", "file"}, {"path", "/srv/data/app.conf"}, {"content", "x"}}});
  ApplyReport first = Run(decl);
  ASSERT_EQ(first.result, ApplyResult::kOk) << first.error;
  EXPECT_THAT(Outcomes(first), ElementsAre("created", "created"));
  EXPECT_THAT(first.outcomes[0].detail, HasSubstr("made directory, mode 0750, owner root:root"));
  EXPECT_EQ(Mode("/srv/data"), 0750u)
      << "the file's write made it 0755 first; the declared mode wins";

  for (bool from_record : {true, false}) {
    ApplyReport again = Run(decl, false, from_record);
    EXPECT_THAT(Outcomes(again), ElementsAre("unchanged", "unchanged")) << from_record;
    EXPECT_EQ(again.from_record, from_record);
  }
  // A file added inside is not a change of the directory.
  WriteText(Root("/srv/data/someone-elses"), "y");
  EXPECT_THAT(Outcomes(Run(decl)), ElementsAre("unchanged", "unchanged"));

  ::chmod(Root("/srv/data").c_str(), 0777);
  ApplyReport drifted = Run(decl);
  EXPECT_FALSE(drifted.from_record);
  EXPECT_THAT(Outcomes(drifted), ElementsAre("updated", "unchanged"));
  EXPECT_THAT(drifted.outcomes[0].detail,
              HasSubstr("drifted: mode changed on the machine, put back; set mode 0750"));
  EXPECT_EQ(Mode("/srv/data"), 0750u);
}

// An ACL given since to a credential of 0440 or a directory of 0750 lets
// a user the mode leaves out read it. Its mode, owner and bytes are as
// declared, and its times moved: neither the no-op proof nor the full pass
// may call it unchanged. Written again, it has none.
TEST_F(KindsTest, AnAclGivenSinceIsDriftPutRight) {
  json decl = Decl({Dir("private", "/srv/private", "0750"),
                    {{"id", "token"},
                     {"kind", "credential"},
                     {"path", "/srv/token"},
                     {"mode", "0440"},
                     {"content", "hunter2"}}});
  ASSERT_EQ(Run(decl).result, ApplyResult::kOk);
  ASSERT_TRUE(Run(decl).from_record);
  // Each a mode of 0UG0 as it was, its group bits now the mask's.
  const std::tuple<const char*, unsigned, unsigned> acls[] = {{"/srv/private", 7, 5},
                                                              {"/srv/token", 4, 4}};
  for (const auto& [path, user, group] : acls) {
    if (!testing::GiveAcl(Root(path), user, group)) {
      GTEST_SKIP() << "no POSIX ACLs on this file system: " << std::strerror(errno);
    }
  }
  ASSERT_EQ(Mode("/srv/private"), 0750u) << "the ACL left the mode as it was";
  ASSERT_EQ(Mode("/srv/token"), 0440u);
  for (bool from_record : {true, false}) {
    SCOPED_TRACE(from_record ? "the no-op proof first" : "the full pass");
    for (const auto& [path, user, group] : acls)
      ASSERT_TRUE(testing::GiveAcl(Root(path), user, group));
    ApplyReport r = Run(decl, false, from_record);
    EXPECT_FALSE(r.from_record);
    EXPECT_THAT(Outcomes(r), ElementsAre("updated", "updated"));
    for (const auto& o : r.outcomes) {
      EXPECT_THAT(o.detail, HasSubstr("drifted: access granted beyond its mode (an ACL)"));
    }
    EXPECT_FALSE(testing::HasAcl(Root("/srv/private")));
    EXPECT_FALSE(testing::HasAcl(Root("/srv/token")));
    EXPECT_EQ(Mode("/srv/private"), 0750u);
    EXPECT_EQ(Mode("/srv/token"), 0440u);
  }
  ApplyReport again = Run(decl);
  EXPECT_THAT(Outcomes(again), ElementsAre("unchanged", "unchanged"));
  EXPECT_TRUE(again.from_record);
}

// The same inside a bundle's tree: an ACL on one of its files or
// directories is drift, and the tree is swapped for one without.
TEST_F(KindsTest, AnAclInsideATreeIsDriftPutRight) {
  std::string sha = Bundle("app.tar.gz", {{testing::TarMember::kDir, "etc", "", 0750},
                                          {testing::TarMember::kFile, "etc/key", "k", 0440}});
  json decl = Decl(json::array({{{"id", "app"},
                                 {"kind", "archive"},
                                 {"path", "/opt/app"},
                                 {"source", "app.tar.gz"},
                                 {"sha256", sha}}}));
  ASSERT_EQ(Run(decl).result, ApplyResult::kOk);
  const std::tuple<const char*, unsigned, unsigned> acls[] = {{"/opt/app/etc/key", 4, 4},
                                                              {"/opt/app/etc", 7, 5}};
  for (const auto& [rel, user, group] : acls) {
    if (!testing::GiveAcl(Root(rel), user, group)) {
      GTEST_SKIP() << "no POSIX ACLs on this file system: " << std::strerror(errno);
    }
    ApplyReport r = Run(decl);
    EXPECT_FALSE(r.from_record) << rel;
    EXPECT_THAT(Outcomes(r), ElementsAre("updated")) << rel;
    EXPECT_FALSE(testing::HasAcl(Root(rel))) << rel;
    EXPECT_THAT(Outcomes(Run(decl)), ElementsAre("unchanged")) << rel;
  }
}

// A bundle's own directory opened to everyone (chmod 0777: anyone may
// then put a file of theirs in it) moves nothing its fingerprint or digest
// holds: neither the no-op proof nor the full pass may call it unchanged.
TEST_F(KindsTest, ATreesRootChmodedIsDriftPutRight) {
  std::string sha = Bundle("app.tar.gz", {{testing::TarMember::kFile, "bin/serve", "s", 0755}});
  json decl = Decl(json::array({{{"id", "app"},
                                 {"kind", "archive"},
                                 {"path", "/opt/app"},
                                 {"source", "app.tar.gz"},
                                 {"sha256", sha}}}));
  ASSERT_EQ(Run(decl).result, ApplyResult::kOk);
  ASSERT_EQ(Mode("/opt/app"), 0755u);
  for (bool from_record : {true, false}) {
    ASSERT_TRUE(Run(decl).from_record);
    ASSERT_EQ(::chmod(Root("/opt/app").c_str(), 0777), 0);
    ApplyReport r = Run(decl, false, from_record);
    EXPECT_FALSE(r.from_record);
    EXPECT_THAT(Outcomes(r), ElementsAre("updated")) << from_record;
    EXPECT_EQ(Mode("/opt/app"), 0755u) << from_record;
  }
}

TEST_F(KindsTest, WhatIsInTheWayOfADirectoryIsNotReplaced) {
  WriteText(Root("/srv/data"), "an operator's file");
  ApplyReport r = Run(Decl({Dir("data", "/srv/data", "0755")}));
  EXPECT_THAT(Outcomes(r), ElementsAre("failed"));
  EXPECT_THAT(r.outcomes[0].detail, HasSubstr("/srv/data is not a directory (not replaced"));
  EXPECT_EQ(testing::ReadText(Root("/srv/data")), "an operator's file");
}

TEST_F(KindsTest, ADirectoryIsPrunedOnlyWhenTheHostMadeItAndItIsEmpty) {
  std::filesystem::create_directories(Root("/srv/theirs"));
  ::chmod(Root("/srv/theirs").c_str(), 0755);
  Run(Decl({Dir("empty", "/srv/empty", "0755"), Dir("full", "/srv/full", "0755"),
            Dir("theirs", "/srv/theirs", "0755")}));
  WriteText(Root("/srv/full/keep"), "x");
  ApplyReport r = Run(Decl(json::array(), 2));
  EXPECT_FALSE(std::filesystem::exists(Root("/srv/empty")));
  EXPECT_TRUE(std::filesystem::exists(Root("/srv/full/keep")));
  EXPECT_TRUE(std::filesystem::exists(Root("/srv/theirs")));
  std::map<std::string, std::string> detail;
  for (const auto& o : r.outcomes) detail[o.id] = o.detail;
  EXPECT_THAT(detail["empty"], HasSubstr("deleted 1 path"));
  EXPECT_THAT(detail["full"], HasSubstr("left /srv/full: not empty"));
  EXPECT_THAT(detail["theirs"], HasSubstr("there before the host managed it"));
}

// Found by examples/README.md: a declaration that drops a directory and the
// files in it at once left the directory behind, judged not empty before
// its files were deleted — and forgot it, so no later apply removed it.
TEST_F(KindsTest, ADirectoryDroppedWithItsFilesGoesWithThem) {
  auto file = [](const std::string& id, const std::string& path) {
    return json{{"id", id}, {"kind", "file"}, {"path", path}, {"content", "x"}};
  };
  Run(Decl({Dir("web.root", "/srv/web", "0755"), Dir("web.sub", "/srv/web/sub", "0755"),
            file("a.index", "/srv/web/index.html"), file("z.page", "/srv/web/sub/page.html"),
            Dir("mixed", "/srv/mixed", "0755"), file("mixed.conf", "/srv/mixed/app.conf")}));
  WriteText(Root("/srv/mixed/someone-elses"), "y");

  ApplyReport plan = Run(Decl(json::array(), 2), /*dry_run=*/true);
  std::map<std::string, std::string> planned;
  for (const auto& o : plan.outcomes) planned[o.id] = o.detail;
  EXPECT_THAT(planned["web.root"], HasSubstr("would delete 1 path"));
  EXPECT_THAT(planned["mixed"], HasSubstr("left /srv/mixed: not empty"))
      << "the plan says what the apply will do: only the host's entry goes";

  ApplyReport r = Run(Decl(json::array(), 2));
  ASSERT_EQ(r.result, ApplyResult::kOk) << r.error;
  std::map<std::string, std::string> detail;
  for (const auto& o : r.outcomes) detail[o.id] = o.detail;
  EXPECT_FALSE(std::filesystem::exists(Root("/srv/web")))
      << "a parent sorted before its files, a subdirectory before its parent: all gone";
  EXPECT_THAT(detail["web.root"], HasSubstr("deleted 1 path"));
  EXPECT_THAT(detail["web.sub"], HasSubstr("deleted 1 path"));
  // Someone else's file keeps the directory; that is found when it is
  // tried, said, and not a failure.
  EXPECT_FALSE(std::filesystem::exists(Root("/srv/mixed/app.conf")));
  EXPECT_TRUE(std::filesystem::exists(Root("/srv/mixed/someone-elses")));
  EXPECT_THAT(detail["mixed"], HasSubstr("no longer managed; left /srv/mixed: not empty"));
}

// A directory whose file of the host's could not be removed is not
// forgotten as "not empty": it stays recorded, and the next apply, once the
// file goes, removes it too.
TEST_F(KindsTest, ADirectoryBlockedByAFailedRemovalIsTriedAgain) {
  fakes::FaultyFileSystem faulty(*root_);
  ReconcilerPorts ports = Ports();
  ports.root = &faulty;
  auto run = [&](const json& decl) { return Reconciler(ports, Options()).Apply(decl.dump()); };
  run(Decl({Dir("web.root", "/srv/web", "0755"),
            {{"id", "web.index"},
             {"kind", "file"},
             {"path", "/srv/web/index.html"},
             {"content", "x"}}}));
  faulty.FailWrites("/srv/web/index.html", EBUSY);
  ApplyReport r = run(Decl(json::array(), 2));
  std::map<std::string, std::string> detail;
  for (const auto& o : r.outcomes) detail[o.id] = o.detail;
  EXPECT_THAT(Outcomes(r), ElementsAre("failed", "failed"));
  EXPECT_THAT(detail["web.root"], HasSubstr("/srv/web/index.html could not be removed"));
  EXPECT_TRUE(Record()["resources"].contains("web.root")) << "not forgotten";

  faulty.Heal();
  ApplyReport again = run(Decl(json::array(), 3));
  EXPECT_THAT(Outcomes(again), ElementsAre("removed", "removed"));
  EXPECT_FALSE(std::filesystem::exists(Root("/srv/web")));
}

TEST_F(KindsTest, ASymlinkIsMadeKeptAndPutBack) {
  json decl = Decl({Link("current", "/opt/app/current", "/opt/app/releases/42")});
  ApplyReport first = Run(decl);
  ASSERT_EQ(first.result, ApplyResult::kOk) << first.error;
  EXPECT_THAT(first.outcomes[0].detail, HasSubstr("linked to /opt/app/releases/42"));
  EXPECT_EQ(Target("/opt/app/current"), "/opt/app/releases/42") << "a dangling target is fine";
  for (bool from_record : {true, false}) {
    EXPECT_THAT(Outcomes(Run(decl, false, from_record)), ElementsAre("unchanged")) << from_record;
  }
  ::unlink(Root("/opt/app/current").c_str());
  ASSERT_EQ(::symlink("/tmp/elsewhere", Root("/opt/app/current").c_str()), 0);
  ApplyReport drifted = Run(decl);
  EXPECT_THAT(drifted.outcomes[0].detail,
              HasSubstr("drifted: target changed on the machine, put back; linked to"));
  EXPECT_EQ(Target("/opt/app/current"), "/opt/app/releases/42");

  ::unlink(Root("/opt/app/current").c_str());
  WriteText(Root("/opt/app/current"), "a file now");
  EXPECT_THAT(Run(decl).outcomes[0].detail, HasSubstr("replaced by something else"));
  EXPECT_EQ(Target("/opt/app/current"), "/opt/app/releases/42");

  ApplyReport retarget =
      Run(Decl({Link("current", "/opt/app/current", "/opt/app/releases/43")}, 2));
  EXPECT_THAT(Outcomes(retarget), ElementsAre("updated"));
  EXPECT_EQ(Target("/opt/app/current"), "/opt/app/releases/43");
}

TEST_F(KindsTest, ASymlinkNeverReplacesADirectoryAndIsPrunedOnlyAsWritten) {
  std::filesystem::create_directories(Root("/opt/dir"));
  EXPECT_THAT(Run(Decl({Link("l", "/opt/dir", "/x")})).outcomes[0].detail,
              HasSubstr("/opt/dir is a directory (not replaced by a symlink"));
  Run(Decl({Link("mine", "/opt/mine", "/a"), Link("moved", "/opt/moved", "/b")}, 2));
  ::unlink(Root("/opt/moved").c_str());
  ASSERT_EQ(::symlink("/c", Root("/opt/moved").c_str()), 0);
  ApplyReport r = Run(Decl(json::array(), 3));
  EXPECT_FALSE(std::filesystem::is_symlink(Root("/opt/mine")));
  EXPECT_EQ(Target("/opt/moved"), "/c");
  EXPECT_THAT(r.outcomes[1].detail, HasSubstr("left /opt/moved: changed since the host wrote it"));
}

TEST_F(KindsTest, PlanDiffSaysWhatChanges) {
  Run(Decl({Dir("d", "/srv/d", "0750"), Link("l", "/opt/l", "/a")}));
  ReconcilerOptions options = Options();
  options.dry_run = options.diff = true;
  ApplyReport plan = Reconciler(Ports(), options)
                         .Apply(Decl({Dir("d", "/srv/d", "0700"), Link("l", "/opt/l", "/b"),
                                      Dir("n", "/srv/n", "0755")},
                                     2)
                                    .dump());
  EXPECT_THAT(
      plan.diffs,
      ElementsAre("diff d (directory)\nmode 0750 → 0700\n", "diff l (symlink)\ntarget /a → /b\n",
                  "diff n (directory)\nnew directory, mode 0755, owner root:root\n"));
}

// A resource whose path moved under the same id: what it wrote at the old
// path was no longer recorded anywhere, and stayed (an old cron job
// running, an old secret on disk) while every apply read `unchanged`. It
// goes as a dropped resource's would, under ID~PATH, by the same rules.
TEST_F(KindsTest, AResourceMovedUnderItsIdLeavesNothingBehind) {
  auto decl = [&](const std::string& at, int generation) {
    return Decl({{{"id", "cron"},
                  {"kind", "file"},
                  {"path", "/etc/cron.d/job" + at},
                  {"content", "* * * * * root /bin/true\n"}},
                 {{"id", "tok"},
                  {"kind", "credential"},
                  {"path", "/etc/mesh/tok" + at},
                  {"content", "s3cr3t\n"}},
                 Dir("data", "/srv/data" + at, "0750"),
                 Link("cur", "/srv/cur" + at, "/srv/data")},
                generation);
  };
  ASSERT_EQ(Run(decl("", 1)).result, ApplyResult::kOk);
  ApplyReport moved = Run(decl("2", 2));
  ASSERT_EQ(moved.result, ApplyResult::kOk) << moved.error;
  std::vector<std::string> lines;
  for (const auto& o : moved.outcomes) lines.push_back(core::FormatOutcomeLine(o));
  EXPECT_THAT(lines, ::testing::IsSupersetOf({
                         "removed cron~/etc/cron.d/job (file): deleted 1 path(s)",
                         "removed tok~/etc/mesh/tok (credential): deleted 1 path(s)",
                         "removed data~/srv/data (directory): deleted 1 path(s)",
                         "removed cur~/srv/cur (symlink): deleted 1 path(s)",
                     }));
  for (const char* gone : {"/etc/cron.d/job", "/etc/mesh/tok", "/srv/data", "/srv/cur"}) {
    EXPECT_FALSE(testing::Exists(Root(gone))) << gone;
    EXPECT_TRUE(testing::Exists(Root(std::string(gone) + "2"))) << gone;
  }
  EXPECT_FALSE(Record()["resources"].contains("cron~/etc/cron.d/job")) << "done: not recorded";
  for (bool from_record : {true, false}) {
    ApplyReport again = Run(decl("2", 2), false, from_record);
    EXPECT_THAT(Outcomes(again), ElementsAre("unchanged", "unchanged", "unchanged", "unchanged"));
  }

  // The old copy changed by hand since: someone's now, left and said.
  WriteText(Root("/etc/cron.d/job2"), "edited\n");
  ApplyReport back = Run(decl("", 3));
  ASSERT_EQ(back.result, ApplyResult::kOk) << back.error;
  lines.clear();
  for (const auto& o : back.outcomes) lines.push_back(core::FormatOutcomeLine(o));
  EXPECT_THAT(lines, ::testing::Contains(
                         HasSubstr("removed cron~/etc/cron.d/job2 (file): no longer managed; left "
                                   "/etc/cron.d/job2: changed since the host wrote it")));
  EXPECT_TRUE(testing::Exists(Root("/etc/cron.d/job2")));
}

// Moved to a path it cannot take (a directory in the way, a read-only file
// system at its write): the old copy stays, recorded, until the new one is
// in place; deleted, the machine would have neither.
TEST_F(KindsTest, AResourceThatFailsAtItsNewPathKeepsItsOldCopy) {
  auto decl = [&](const std::string& path, int generation) {
    return Decl({{{"id", "cron"}, {"kind", "file"}, {"path", path}, {"content", "job\n"}}},
                generation);
  };
  ASSERT_EQ(Run(decl("/etc/cron.d/job", 1)).result, ApplyResult::kOk);
  ASSERT_EQ(::mkdir(Root("/srv").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(Root("/srv/in-the-way").c_str(), 0755), 0);
  for (int k = 0; k < 2; ++k) {
    ApplyReport r = Run(decl("/srv/in-the-way", 2));
    EXPECT_EQ(r.result, ApplyResult::kFailed);
    ASSERT_EQ(r.outcomes.size(), 2u);
    EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[1]),
              "failed cron~/etc/cron.d/job (file): kept: cron failed, and what it left stays "
              "until it is in place");
    EXPECT_TRUE(testing::Exists(Root("/etc/cron.d/job"))) << k;
    EXPECT_TRUE(Record()["resources"].contains("cron~/etc/cron.d/job")) << k;
  }
  // Moved back while its old copy's removal waits: that copy is its own.
  ApplyReport back = Run(decl("/etc/cron.d/job", 2));
  ASSERT_EQ(back.result, ApplyResult::kOk) << back.error;
  ASSERT_EQ(back.outcomes.size(), 2u);
  EXPECT_EQ(core::FormatOutcomeLine(back.outcomes[1]),
            "removed cron~/etc/cron.d/job (file): no longer managed; left /etc/cron.d/job, "
            "declared by cron again");
  EXPECT_TRUE(testing::Exists(Root("/etc/cron.d/job")));
  ApplyReport done = Run(decl("/srv/job", 3));
  ASSERT_EQ(done.result, ApplyResult::kOk) << done.error;
  EXPECT_FALSE(testing::Exists(Root("/etc/cron.d/job")));
  EXPECT_FALSE(Record()["resources"].contains("cron~/etc/cron.d/job"));

  // Failed at its write.
  fakes::FaultyFileSystem faulty(*root_);
  ReconcilerPorts ports = Ports();
  ports.root = &faulty;
  faulty.FailWrites("/srv/ro/job", EROFS);
  ApplyReport ro = Reconciler(ports, Options()).Apply(decl("/srv/ro/job", 4).dump());
  EXPECT_EQ(ro.result, ApplyResult::kFailed);
  ASSERT_EQ(ro.outcomes.size(), 2u);
  EXPECT_EQ(core::FormatOutcomeLine(ro.outcomes[1]),
            "failed cron~/srv/job (file): kept: cron failed, and what it left stays until it is "
            "in place");
  EXPECT_TRUE(testing::Exists(Root("/srv/job")));
  EXPECT_TRUE(Record()["resources"].contains("cron~/srv/job"));
  faulty.Heal();
  ApplyReport healed = Reconciler(ports, Options()).Apply(decl("/srv/ro/job", 4).dump());
  ASSERT_EQ(healed.result, ApplyResult::kOk) << healed.error;
  EXPECT_FALSE(testing::Exists(Root("/srv/job")));
  EXPECT_TRUE(testing::Exists(Root("/srv/ro/job")));
}

}  // namespace
}  // namespace mesh::reconcile
