#include "host/core/want.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace mesh::core {
namespace {

using ::testing::HasSubstr;

TreeEntry File(std::string name, std::string content = "x") {
  TreeEntry e;
  e.relpath = std::move(name);
  e.type = FileType::kRegular;
  e.mode = 0644;
  e.content = std::move(content);
  return e;
}

TEST(WantTest, DigestCoversEveryDefiningField) {
  Resource r;
  r.id = "a";
  r.kind = Kind::kFile;
  r.path = "/etc/a";
  r.content = "x";
  std::string base = WantDigest(r);
  Resource changed = r;
  changed.mode = 0600;
  EXPECT_NE(WantDigest(changed), base);
  changed = r;
  changed.content = "y";
  EXPECT_NE(WantDigest(changed), base);
  changed = r;
  changed.owner = "daemon";
  EXPECT_NE(WantDigest(changed), base);
  changed = r;
  changed.id = "b";  // the id names the resource; it does not shape the machine
  EXPECT_EQ(WantDigest(changed), base);
  EXPECT_TRUE(base.starts_with("sha256:"));
}

TEST(WantTest, DigestNeverContainsTheSecret) {
  Resource r;
  r.kind = Kind::kCredential;
  r.path = "/etc/t";
  r.content = "hunter2";
  EXPECT_EQ(WantDigest(r).find("hunter2"), std::string::npos);
}

TEST(WantTest, TreeDigestIgnoresOrderButNotContentOrMode) {
  std::vector<TreeEntry> a = {File("x", "1"), File("y", "2")};
  std::vector<TreeEntry> b = {File("y", "2"), File("x", "1")};
  HashContents(a);
  HashContents(b);
  EXPECT_EQ(TreeDigest(a), TreeDigest(b));
  b[0].mode = 0755;
  EXPECT_NE(TreeDigest(a), TreeDigest(b));
}

TEST(WantTest, BundleEntriesNormalised) {
  std::vector<TreeEntry> in = {File("./bin//serve"), File("README")};
  TreeEntry dot;
  dot.relpath = "./";
  dot.type = FileType::kDirectory;
  in.push_back(dot);
  auto out = CheckBundleEntries(in);
  ASSERT_TRUE(out.has_value()) << out.error().message;
  ASSERT_EQ(out->size(), 2u);
  EXPECT_EQ((*out)[0].relpath, "bin/serve");
}

TEST(WantTest, BundleEscapesRefused) {
  EXPECT_THAT(CheckBundleEntries({File("../etc/passwd")}).error().message,
              HasSubstr("entry \"../etc/passwd\" climbs out"));
  EXPECT_THAT(CheckBundleEntries({File("a/../../x")}).error().message, HasSubstr("climbs out"));
  EXPECT_THAT(CheckBundleEntries({File("/etc/passwd")}).error().message,
              HasSubstr("entry \"/etc/passwd\" is absolute"));
  TreeEntry link = File("bin/sh");
  link.type = FileType::kSymlink;
  link.link_target = "/bin/sh";
  EXPECT_THAT(CheckBundleEntries({link}).error().message, HasSubstr("is a symlink"));
  TreeEntry hard = File("h");
  hard.type = FileType::kHardlink;
  hard.link_target = "/etc/shadow";
  EXPECT_THAT(CheckBundleEntries({hard}).error().message, HasSubstr("is a hard link"));
  TreeEntry dev = File("dev");
  dev.type = FileType::kOther;
  EXPECT_THAT(CheckBundleEntries({dev}).error().message, HasSubstr("device"));
  EXPECT_THAT(CheckBundleEntries({File("a"), File("./a")}).error().message, HasSubstr("twice"));
  EXPECT_THAT(CheckBundleEntries({File("a"), File("a/b")}).error().message,
              HasSubstr("which is not a directory"));
}

}  // namespace
}  // namespace mesh::core
