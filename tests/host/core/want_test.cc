#include "host/core/want.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "host/core/sha256.h"

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
  std::string base = WantDigest(r, "k");
  Resource changed = r;
  changed.mode = 0600;
  EXPECT_NE(WantDigest(changed, "k"), base);
  changed = r;
  changed.content = "y";
  EXPECT_NE(WantDigest(changed, "k"), base);
  changed = r;
  changed.owner = "daemon";
  EXPECT_NE(WantDigest(changed, "k"), base);
  changed = r;
  changed.id = "b";  // the id names the resource; it does not shape the machine
  EXPECT_EQ(WantDigest(changed, "k"), base);
  EXPECT_TRUE(base.starts_with("sha256:"));
}

TEST(WantTest, DigestNeverContainsTheSecret) {
  Resource r;
  r.kind = Kind::kCredential;
  r.path = "/etc/t";
  r.content = "hunter2";
  EXPECT_EQ(WantDigest(r, "k").find("hunter2"), std::string::npos);
}

// Issue 17: a credential's digest is shown on /status and kept in the
// record; a short secret must not fall to a dictionary run over it.
TEST(WantTest, CredentialDigestIsKeyedByTheMachinesSecret) {
  Resource r;
  r.id = "token";
  r.kind = Kind::kCredential;
  r.path = "/etc/t";
  r.mode = 0400;
  r.content = "hunter2";
  std::string here = WantDigest(r, "machine one's key");
  EXPECT_TRUE(here.starts_with("hmac-sha256:")) << here;
  EXPECT_EQ(here.size(), 12u + 64u);
  EXPECT_EQ(WantDigest(r, "machine one's key"), here) << "compares across applies";
  EXPECT_NE(here.substr(12), Sha256Hex("hunter2"));
  EXPECT_NE(WantDigest(r, "machine two's key"), here) << "another machine says another digest";
  // Without the key, the digest is what a file of the same fields has:
  // exactly what a dictionary could reproduce.
  Resource as_file = r;
  as_file.kind = Kind::kFile;
  EXPECT_NE(here.substr(12), WantDigest(as_file, "").substr(7));
  Resource changed = r;
  changed.content = "hunter3";
  EXPECT_NE(WantDigest(changed, "machine one's key"), here) << "a new secret shows";
}

// The stamp and the text it came from agree on every file: a stamp that
// matched where the text would not would be a false unchanged.
TEST(WantTest, AStampReadsBackOnlyWhatFileFingerprintWrites) {
  FileInfo info;
  info.type = FileType::kRegular;
  info.size = 145;
  info.mtime_ns = 1796147175421717121;
  info.ctime_ns = -5;  // before 1970: to_chars writes a sign
  info.inode = 18446744073709551615u;
  std::string text = FileFingerprint(info);
  auto stamp = ParseFingerprint(text);
  ASSERT_TRUE(stamp.has_value()) << text;
  EXPECT_TRUE(StampMatches(info, *stamp));
  for (auto moved : {&FileInfo::mtime_ns, &FileInfo::ctime_ns}) {
    FileInfo other = info;
    ++(other.*moved);
    EXPECT_FALSE(StampMatches(other, *stamp));
    EXPECT_EQ(StampMatches(other, *stamp), FingerprintMatches(other, text));
  }
  FileInfo bigger = info;
  ++bigger.size;
  EXPECT_FALSE(StampMatches(bigger, *stamp));
  FileInfo replaced = info;
  --replaced.inode;
  EXPECT_FALSE(StampMatches(replaced, *stamp));

  for (std::string_view bad :
       {"", "1:2:3", "1:2:3:4:5", "01:2:3:4", "1:-0:3:4", "1:+2:3:4", " 1:2:3:4", "1:2:3:4 ",
        "1::3:4", "1:2:3:", "18446744073709551616:2:3:4", "1:9223372036854775808:3:4", "1:2:3:4x",
        "a:2:3:4", "dir:420:0:0:12"}) {
    EXPECT_FALSE(ParseFingerprint(bad).has_value()) << bad;
  }
  auto small = ParseFingerprint("0:0:0:0");
  ASSERT_TRUE(small.has_value());
  EXPECT_TRUE(StampMatches(FileInfo{}, *small));
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
  ASSERT_EQ(out->size(), 3u) << "the two files and the bin/ they imply";
  EXPECT_EQ((*out)[0].relpath, "bin/serve");
  EXPECT_EQ((*out)[2].relpath, "bin");
  EXPECT_EQ((*out)[2].type, FileType::kDirectory);
}

// Issue 14: `tar czf x bin/serve` lists no bin/, the tree on disk has it.
// Implied directories are part of the tree as if listed (0755): the bundle
// has one digest with or without directory entries, and it is the digest
// of the tree it unpacks to.
TEST(WantTest, ImpliedDirectoriesAreAsIfListed) {
  TreeEntry bin;
  bin.relpath = "bin";
  bin.type = FileType::kDirectory;
  bin.mode = 0755;
  TreeEntry lib = bin;
  lib.relpath = "lib";
  TreeEntry deep = bin;
  deep.relpath = "lib/x";
  auto without = CheckBundleEntries({File("bin/serve"), File("lib/x/y.so")});
  auto with = CheckBundleEntries({bin, File("bin/serve"), lib, deep, File("lib/x/y.so")});
  ASSERT_TRUE(without.has_value() && with.has_value());
  HashContents(*without);
  HashContents(*with);
  EXPECT_EQ(TreeDigest(*without), TreeDigest(*with));
  // A directory the bundle lists keeps its own mode.
  bin.mode = 0700;
  auto listed = CheckBundleEntries({bin, File("bin/serve"), File("lib/x/y.so")});
  HashContents(*listed);
  EXPECT_NE(TreeDigest(*listed), TreeDigest(*without));
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
  // Within every other limit (20 levels of 250-byte names), too long a path
  // for the kernel: refused, not failed at every apply.
  std::string deep;
  for (int i = 0; i < 20; ++i) deep += std::string(250, 'd') + "/";
  EXPECT_THAT(CheckBundleEntries({File(deep + "f")}).error().message,
              HasSubstr("\" is 5021 bytes long; at most 4095"));
  EXPECT_TRUE(CheckBundleEntries({File(deep.substr(0, 4094) + "f")}).has_value());
}

}  // namespace
}  // namespace mesh::core
