// `plan --diff` (issue 17), golden: what each kind of change shows.
#include <gmock/gmock.h>

#include <cerrno>
#include <cstring>

#include "tests/host/reconcile/reconciler_fixture.h"

namespace mesh::reconcile {
namespace {

using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::TarMember;
using testing::WriteText;

class DiffTest : public ReconcilerTest {
 protected:
  std::vector<std::string> PlanDiffs(const json& decl) {
    ReconcilerOptions options = Options();
    options.dry_run = true;
    options.diff = true;
    options.dirs.units = "/etc/systemd/system";
    ApplyReport report = Reconciler(Ports(), options).Apply(decl.dump());
    EXPECT_NE(report.result, ApplyResult::kRefused) << report.error;
    return report.diffs;
  }
  static json File(const std::string& id, const std::string& content,
                   const json& extra = json::object()) {
    json r = {{"id", id}, {"kind", "file"}, {"path", "/etc/app/" + id}, {"content", content}};
    r.update(extra);
    return r;
  }
};

TEST_F(DiffTest, AChangedLine) {
  Run(Decl({File("app.conf", "a = 1\nb = 2\nc = 3\n")}));
  EXPECT_THAT(PlanDiffs(Decl({File("app.conf", "a = 1\nb = 20\nc = 3\n")}, 2)),
              ElementsAre("diff app.conf (file)\n"
                          "--- a/etc/app/app.conf\n"
                          "+++ b/etc/app/app.conf\n"
                          "@@ -1,3 +1,3 @@\n"
                          " a = 1\n"
                          "-b = 2\n"
                          "+b = 20\n"
                          " c = 3\n"));
}

TEST_F(DiffTest, AnAddedFile) {
  EXPECT_THAT(PlanDiffs(Decl({File("new.conf", "x\ny\n", {{"mode", "0640"}})})),
              ElementsAre("diff new.conf (file)\n"
                          "new file, mode 0640\n"
                          "--- /dev/null\n"
                          "+++ b/etc/app/new.conf\n"
                          "@@ -0,0 +1,2 @@\n"
                          "+x\n"
                          "+y\n"));
}

TEST_F(DiffTest, ARemovedFile) {
  Run(Decl({File("keep", "k\n"), File("old", "going\naway\n")}));
  EXPECT_THAT(PlanDiffs(Decl({File("keep", "k\n")}, 2)), ElementsAre("diff old (file)\n"
                                                                     "deleted file\n"
                                                                     "--- a/etc/app/old\n"
                                                                     "+++ /dev/null\n"
                                                                     "@@ -1,2 +0,0 @@\n"
                                                                     "-going\n"
                                                                     "-away\n"));
}

// Dropped from the declaration, a file only its owner may read is deleted
// unshown, as it is written over unshown: a plan's output goes to CI logs.
TEST_F(DiffTest, ARemovedFileOnlyItsOwnerMayReadIsNotShown) {
  Run(Decl({File("keep", "k\n"), File("db.pass", "hunter2\n", {{"mode", "0400"}})}));
  std::vector<std::string> diffs = PlanDiffs(Decl({File("keep", "k\n")}, 2));
  EXPECT_THAT(diffs, ElementsAre("diff db.pass (file)\n"
                                 "deleted file /etc/app/db.pass (not world-readable: its content "
                                 "is not shown)\n"));
  EXPECT_THAT(diffs, Each(Not(HasSubstr("hunter2"))));
}

// Drift that is an ACL alone (mode, owner and bytes as declared): the plan
// says what the write will do, not an empty block.
TEST_F(DiffTest, AnAclAloneIsSaid) {
  json dir = {{"id", "data"}, {"kind", "directory"}, {"path", "/srv/data"}, {"mode", "0750"}};
  json conf = File("app.conf", "x\n", {{"mode", "0640"}});
  Run(Decl({dir, conf}));
  if (!testing::GiveAcl(Root("/srv/data"), 7, 5) ||
      !testing::GiveAcl(Root("/etc/app/app.conf"), 6, 4)) {
    GTEST_SKIP() << "no POSIX ACLs on this file system: " << std::strerror(errno);
  }
  EXPECT_THAT(PlanDiffs(Decl({dir, conf})),
              ElementsAre("diff data (directory)\nACL → none (the mode is all the access)\n",
                          "diff app.conf (file)\nACL → none (the mode is all the access)\n"));
}

TEST_F(DiffTest, AModeOnlyChange) {
  Run(Decl({File("mode", "x\n")}));
  EXPECT_THAT(PlanDiffs(Decl({File("mode", "x\n", {{"mode", "0600"}})}, 2)),
              ElementsAre("diff mode (file)\nmode 0644 → 0600\n"));
}

TEST_F(DiffTest, ACredentialShowsItsDigestsOnly) {
  json token = {{"id", "token"},
                {"kind", "credential"},
                {"path", "/etc/app/token"},
                {"content", "hunter2\n"}};
  ApplyReport first = Run(Decl({token}));
  token["content"] = "hunter3\n";
  std::vector<std::string> diffs = PlanDiffs(Decl({token}, 2));
  ApplyReport applied = Run(Decl({token}, 2));
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_EQ(diffs[0], "diff token (credential)\ndigest " + first.outcomes[0].digest + " → " +
                          applied.outcomes[0].digest +
                          " (a credential: its content is not shown)\n");
  EXPECT_NE(first.outcomes[0].digest, applied.outcomes[0].digest);
  EXPECT_THAT(diffs[0], ::testing::Not(HasSubstr("hunter")));
  // Drifted on the machine under the same declaration: said, not shown
  // (WriteText also left it 0644).
  WriteText(Root("/etc/app/token"), "stolen?\n");
  diffs = PlanDiffs(Decl({token}, 2));
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_EQ(diffs[0],
            "diff token (credential)\n"
            "mode 0644 → 0400\n"
            "the content on the machine is not as declared (a credential: its content "
            "is not shown)\n");
  // Only its mode moved: its content is not said to differ.
  WriteText(Root("/etc/app/token"), "hunter3\n");
  diffs = PlanDiffs(Decl({token}, 2));
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_EQ(diffs[0],
            "diff token (credential)\n"
            "mode 0644 → 0400\n"
            "the content on the machine is as declared (a credential: its content is not "
            "shown)\n");
}

TEST_F(DiffTest, ABundlesMembersAddedRemovedAndChanged) {
  std::string v1 = Bundle("t1.tar.gz", {{TarMember::kFile, "bin/serve", "serve\n", 0755},
                                        {TarMember::kFile, "README", "readme\n", 0644},
                                        {TarMember::kFile, "lib/a.so", "a", 0644}});
  json tools = {{"id", "tools"},
                {"kind", "archive"},
                {"path", "/opt/tools"},
                {"source", "t1.tar.gz"},
                {"sha256", v1}};
  Run(Decl({tools}));
  std::string v2 = Bundle("t2.tar.gz", {{TarMember::kFile, "bin/serve", "serve 2\n", 0755},
                                        {TarMember::kFile, "NEWS", "new\n", 0644},
                                        {TarMember::kFile, "lib/a.so", "a", 0755}});
  tools["source"] = "t2.tar.gz";
  tools["sha256"] = v2;
  EXPECT_THAT(PlanDiffs(Decl({tools}, 2)), ElementsAre("diff tools (archive)\n"
                                                       "added   NEWS\n"
                                                       "changed bin/serve (content)\n"
                                                       "changed lib/a.so (mode 0644 → 0755)\n"
                                                       "removed README\n"));
}

TEST_F(DiffTest, BinaryAndLargeContentIsSummarised) {
  Run(Decl({File("blob", std::string("\0\1", 2)), File("big", std::string(300 << 10, 'x'))}));
  EXPECT_THAT(PlanDiffs(Decl({File("blob", std::string("\0\2\3", 3)), File("big", "small\n")}, 2)),
              ElementsAre("diff blob (file)\nbinary content, 2 → 3 bytes: not diffed\n",
                          "diff big (file)\nlarge content, 307200 bytes → 6 bytes: not diffed\n"));
}

// A file on the machine may hold terminal escapes: shown escaped.
TEST_F(DiffTest, WhatTheMachineHoldsIsShownEscaped) {
  Run(Decl({File("app.conf", "a\n")}));
  WriteText(Root("/etc/app/app.conf"), "a\n\x1b]2;pwned\x07\n");
  std::vector<std::string> diffs = PlanDiffs(Decl({File("app.conf", "a\n")}));
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_EQ(diffs[0].find('\x1b'), std::string::npos) << diffs[0];
  EXPECT_THAT(diffs[0], HasSubstr("-\\x1b]2;pwned\\x07\n"));
}

TEST_F(DiffTest, AUnitFilesText) {
  services_.AddUnit("x.service", {});
  json svc = {{"id", "x"},
              {"kind", "service"},
              {"unit", "x.service"},
              {"state", "stopped"},
              {"unit_text", "[Service]\nExecStart=/bin/true\n"}};
  Run(Decl({svc}));
  svc["unit_text"] = "[Service]\nExecStart=/bin/false\n";
  EXPECT_THAT(PlanDiffs(Decl({svc}, 2)), ElementsAre("diff x (service)\n"
                                                     "--- a/etc/systemd/system/x.service\n"
                                                     "+++ b/etc/systemd/system/x.service\n"
                                                     "@@ -1,2 +1,2 @@\n"
                                                     " [Service]\n"
                                                     "-ExecStart=/bin/true\n"
                                                     "+ExecStart=/bin/false\n"));
}

TEST_F(DiffTest, NothingToShowForAnUnchangedMachineAndNoneWithoutTheFlag) {
  json decl = Decl({File("app.conf", "a\n")});
  Run(decl);
  EXPECT_THAT(PlanDiffs(decl), ElementsAre());
  EXPECT_THAT(Run(Decl({File("app.conf", "b\n")}, 2), /*dry_run=*/true).diffs, ElementsAre());
}

// Review: a file only its owner may read (a key, a credential's old file
// now declared as a file) may hold a secret; a plan's output goes to CI
// logs. Only the declared side is shown.
TEST_F(DiffTest, WhatOnlyItsOwnerMayReadIsNotShown) {
  Run(Decl({File("key", "old-secret\n", {{"mode", "0600"}})}));
  std::vector<std::string> diffs = PlanDiffs(Decl({File("key", "new\n", {{"mode", "0600"}})}, 2));
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_THAT(diffs[0], ::testing::Not(HasSubstr("old-secret")));
  EXPECT_THAT(diffs[0], HasSubstr("the content on the machine is not shown (not world-readable)"));
  EXPECT_THAT(diffs[0], HasSubstr("+new\n"));
}

}  // namespace
}  // namespace mesh::reconcile

namespace mesh::reconcile {
namespace {

class FormerCredentialDiffTest : public ReconcilerTest {};

// Issue 39 (6): a credential whose resource became a `file`, or whose path
// a file took, had its old content printed by `plan --diff`.
TEST_F(FormerCredentialDiffTest, AFormerCredentialIsNeverPrinted) {
  json token = {{"id", "token"},
                {"kind", "credential"},
                {"path", "/etc/app/token"},
                {"mode", "0644"},
                {"content", "hunter2\n"}};
  ASSERT_EQ(Run(Decl({token})).result, ApplyResult::kOk);
  ReconcilerOptions options = Options();
  options.dry_run = true;
  options.diff = true;
  for (const json& now :
       {json{
            {"id", "token"}, {"kind", "file"}, {"path", "/etc/app/token"}, {"content", "public\n"}},
        json{{"id", "other"},
             {"kind", "file"},
             {"path", "/etc/app/token"},
             {"content", "public\n"}}}) {
    ApplyReport plan = Reconciler(Ports(), options).Apply(Decl({now}, 2).dump());
    ASSERT_NE(plan.result, ApplyResult::kRefused) << plan.error;
    std::string all;
    for (const std::string& d : plan.diffs) all += d;
    EXPECT_THAT(all, ::testing::Not(HasSubstr("hunter2"))) << all;
    EXPECT_THAT(all, HasSubstr("the host wrote a credential there")) << all;
  }
}

}  // namespace
}  // namespace mesh::reconcile
