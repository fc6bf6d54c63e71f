// Who owns what the host wrote: needs root and the machine's real user
// table (chown to another uid), so it runs outside Bazel's sandbox.
#include <gmock/gmock.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/fakes/faulty_file_system.h"
#include "tests/host/reconcile/reconciler_fixture.h"

namespace mesh::reconcile {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::TarMember;

constexpr uid_t kNobody = 65534;

class OwnershipTest : public ReconcilerTest {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a file to another user";
    ReconcilerTest::SetUp();
  }
  // A bundle of bin/serve unpacked at /opt/tools, its members of `mode`.
  json Tools(uint32_t mode = 0755) {
    std::string sha = Bundle(
        "tools.tar.gz",
        {{TarMember::kDir, "bin", "", mode}, {TarMember::kFile, "bin/serve", "#!/bin/sh\n", mode}});
    return Decl(json::array({{{"id", "tools"},
                              {"kind", "archive"},
                              {"path", "/opt/tools"},
                              {"source", "tools.tar.gz"},
                              {"sha256", sha}}}));
  }
};

// Issue 15: a file inside an unpacked tree given to another user was
// `unchanged` for ever; the tree is the host's, entry by entry.
TEST_F(OwnershipTest, AnOwnerChangedInsideATreeIsDrift) {
  json decl = Tools();
  ASSERT_EQ(Run(decl).result, ApplyResult::kOk);
  ASSERT_EQ(::chown(Root("/opt/tools/bin/serve").c_str(), kNobody, kNobody), 0);
  ApplyReport r = Run(decl);
  EXPECT_THAT(Outcomes(r), ElementsAre("updated"));
  EXPECT_THAT(r.outcomes[0].detail, HasSubstr("drifted"));
  struct stat st;
  ASSERT_EQ(::stat(Root("/opt/tools/bin/serve").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, ::geteuid()) << "put back";
  EXPECT_THAT(Outcomes(Run(decl)), ElementsAre("unchanged"));
}

// `chown -R nobody` of a whole tree: every entry still owned as its root
// is, so it was unchanged for ever, its programs now the new owner's to
// change. The root is the host's: the daemon's kept proof, a one-shot's
// and the full pass each find it drifted.
TEST_F(OwnershipTest, AWholeTreeGivenToAnotherUserIsDrift) {
  json decl = Tools();
  for (bool from_record : {true, false}) {
    SCOPED_TRACE(from_record ? "the record's proof" : "the full pass");
    ASSERT_EQ(Run(decl, false, from_record).result, ApplyResult::kOk);
    for (const char* path : {"/opt/tools", "/opt/tools/bin", "/opt/tools/bin/serve"}) {
      ASSERT_EQ(::chown(Root(path).c_str(), kNobody, kNobody), 0);
    }
    ApplyReport r = Run(decl, false, from_record);
    EXPECT_THAT(Outcomes(r), ElementsAre("updated"));
    EXPECT_THAT(r.outcomes[0].detail, HasSubstr("drifted"));
    struct stat st;
    ASSERT_EQ(::stat(Root("/opt/tools/bin/serve").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, ::geteuid()) << "put back";
    EXPECT_THAT(Outcomes(Run(decl, false, from_record)), ElementsAre("unchanged"));
  }
}

// `chgrp -R` of a whole tree: still owned by the host's user, each entry
// owned as the root is, yet the new group may write what the bundle makes
// group-writable. The root's group is the one mkdir gives it there.
TEST_F(OwnershipTest, AWholeTreeGivenToAnotherGroupIsDrift) {
  json decl = Tools(0775);
  for (bool from_record : {true, false}) {
    SCOPED_TRACE(from_record ? "the record's proof" : "the full pass");
    ASSERT_EQ(Run(decl, false, from_record).result, ApplyResult::kOk);
    for (const char* path : {"/opt/tools", "/opt/tools/bin", "/opt/tools/bin/serve"}) {
      ASSERT_EQ(::chown(Root(path).c_str(), ::geteuid(), kNobody), 0);
    }
    ApplyReport r = Run(decl, false, from_record);
    EXPECT_THAT(Outcomes(r), ElementsAre("updated"));
    struct stat st;
    ASSERT_EQ(::stat(Root("/opt/tools/bin/serve").c_str(), &st), 0);
    EXPECT_EQ(st.st_gid, ::getegid()) << "put back";
    EXPECT_THAT(Outcomes(Run(decl, false, from_record)), ElementsAre("unchanged"));
  }
}

// Under a setgid directory a tree's root takes that directory's group, not
// the host's: as made, not drift. Compared with the host's group, every
// apply found it changed and swapped the tree again, for ever.
TEST_F(OwnershipTest, ATreeUnderASetgidDirectoryIsAsMade) {
  ASSERT_EQ(::mkdir(Root("/opt").c_str(), 0755), 0);
  ASSERT_EQ(::chown(Root("/opt").c_str(), 0, kNobody), 0);
  ASSERT_EQ(::chmod(Root("/opt").c_str(), 02775), 0);
  json decl = Tools();
  ASSERT_EQ(Run(decl).result, ApplyResult::kOk);
  for (bool from_record : {true, false}) {
    SCOPED_TRACE(from_record ? "the record's proof" : "the full pass");
    ApplyReport r = Run(decl, false, from_record);
    EXPECT_THAT(Outcomes(r), ElementsAre("unchanged")) << r.outcomes[0].detail;
  }
}

// A user renumbered since the apply (deleted and made again, another NSS
// source): nothing on disk moved, so every fingerprint holds, yet the file
// belongs to whoever has the old uid now. Neither the daemon's kept proof,
// nor a one-shot's, nor the full pass may call it unchanged.
TEST_F(OwnershipTest, AUserRenumberedSinceIsNotProvenUnchanged) {
  fakes::FaultyFileSystem root(*root_);
  ReconcilerPorts ports = Ports();
  ports.root = &root;
  Reconciler daemon(ports, Options());
  json decl = Decl(json::array({{{"id", "conf"},
                                 {"kind", "file"},
                                 {"path", "/etc/conf"},
                                 {"content", "x=1\n"},
                                 {"owner", "root"},
                                 {"group", "root"}},
                                {{"id", "dir"},
                                 {"kind", "directory"},
                                 {"path", "/srv/data"},
                                 {"owner", "root"},
                                 {"group", "root"}}}));
  auto uid_of = [&](const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::stat(Root(path).c_str(), &st), 0);
    return st.st_uid;
  };
  for (bool kept : {true, false}) {
    SCOPED_TRACE(kept ? "the daemon's kept proof" : "a one-shot's proof");
    root.ids.clear();
    store_.stream = !kept;
    auto apply = [&] {
      return kept ? daemon.Apply(decl.dump()) : Reconciler(ports, Options()).Apply(decl.dump());
    };
    ASSERT_EQ(apply().result, ApplyResult::kOk);
    ASSERT_TRUE(apply().from_record);
    ASSERT_EQ(uid_of("/etc/conf"), 0u);
    root.ids[{"root", "root"}] = {kNobody, kNobody};  // "root" is uid 65534 now
    ApplyReport r = apply();
    EXPECT_FALSE(r.from_record);
    EXPECT_THAT(Outcomes(r), ElementsAre("updated", "updated"));
    EXPECT_THAT(r.outcomes[0].detail, HasSubstr("owner changed"));
    EXPECT_EQ(uid_of("/etc/conf"), kNobody) << "owned as the name resolves now";
    EXPECT_EQ(uid_of("/srv/data"), kNobody);
    EXPECT_TRUE(apply().from_record) << "and proven again from what was checked";
    root.ids.clear();  // back to the machine's own table for the next round
    ASSERT_EQ(apply().result, ApplyResult::kOk);
  }
}

// The no-op proof reads a touched file rather than run the full pass
// (record_proof.h): a file given to another user has its bytes and its
// times, but not its owner, and is put back.
TEST_F(OwnershipTest, AFileGivenToAnotherUserIsNotProvenUnchanged) {
  json decl = Decl(json::array(
      {{{"id", "conf"}, {"kind", "file"}, {"path", "/etc/conf"}, {"content", "x=1\n"}}}));
  ASSERT_EQ(Run(decl).result, ApplyResult::kOk);
  ASSERT_TRUE(Run(decl).from_record);
  ASSERT_EQ(::chown(Root("/etc/conf").c_str(), kNobody, kNobody), 0);
  ApplyReport r = Run(decl);
  EXPECT_FALSE(r.from_record);
  EXPECT_THAT(Outcomes(r), ElementsAre("updated"));
  EXPECT_THAT(r.outcomes[0].detail, HasSubstr("owner changed"));
  struct stat st;
  ASSERT_EQ(::stat(Root("/etc/conf").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, ::geteuid()) << "put back";
  EXPECT_TRUE(Run(decl).from_record);
}

}  // namespace
}  // namespace mesh::reconcile
