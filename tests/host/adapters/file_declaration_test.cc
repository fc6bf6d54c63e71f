// The declaration file as the apply reads it: hashed in chunks without being
// held, read whole only when asked, and refused by name when it is not a
// regular file of bounded size.
#include "host/adapters/file_declaration.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "host/core/declaration.h"
#include "host/core/sha256.h"
#include "tests/testing/temp_dir.h"

namespace mesh::adapters {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;
using testing::WriteText;

TEST(FileDeclarationTest, TheStreamedDigestIsTheDigestOfTheWholeText) {
  TempDir dir;
  std::string text;  // several 64 KiB chunks and a partial one
  for (int i = 0; text.size() < (300u << 10); ++i)
    text += "{\"line\": " + std::to_string(i) + "}\n";
  WriteText(dir.Sub("decl.json"), text);
  auto decl = FileDeclaration::Open(dir.Sub("decl.json"));
  ASSERT_TRUE(decl.has_value()) << decl.error().message;
  auto digest = (*decl)->Digest();
  ASSERT_TRUE(digest.has_value());
  EXPECT_EQ(*digest, core::Sha256Hex(text));
  auto read = (*decl)->Text();
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(*read, text);
  EXPECT_EQ((*decl)->Digest().value(), *digest) << "asked again after the text";
}

// Opened once: a new file renamed over the path is not mixed into this apply.
TEST(FileDeclarationTest, DigestAndTextComeFromTheFileThatWasOpened) {
  TempDir dir;
  WriteText(dir.Sub("decl.json"), "first");
  auto decl = FileDeclaration::Open(dir.Sub("decl.json"));
  ASSERT_TRUE(decl.has_value());
  WriteText(dir.Sub("next.json"), "second");
  ASSERT_EQ(::rename(dir.Sub("next.json").c_str(), dir.Sub("decl.json").c_str()), 0);
  EXPECT_EQ((*decl)->Digest().value(), core::Sha256Hex("first"));
  EXPECT_EQ((*decl)->Text().value(), "first");
}

// Where the bytes were read: the file a link led to when opened, not the
// one it leads to once the mesh re-points it (the apply guards that file).
TEST(FileDeclarationTest, SaysTheFileItOpenedThroughALink) {
  TempDir dir;
  WriteText(dir.Sub("gen-12.json"), "first");
  WriteText(dir.Sub("gen-13.json"), "second");
  ASSERT_EQ(::symlink("gen-12.json", dir.Sub("current.json").c_str()), 0);
  auto decl = FileDeclaration::Open(dir.Sub("current.json"));
  ASSERT_TRUE(decl.has_value());
  ASSERT_EQ(::symlink("gen-13.json", dir.Sub("next").c_str()), 0);
  ASSERT_EQ(::rename(dir.Sub("next").c_str(), dir.Sub("current.json").c_str()), 0);
  char* real = ::realpath(dir.Sub("gen-12.json").c_str(), nullptr);
  ASSERT_NE(real, nullptr);
  std::string gen12(real);
  std::free(real);
  EXPECT_EQ((*decl)->OpenedAt(), gen12);
  auto next = FileDeclaration::Open(dir.Sub("current.json"));
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ((*next)->OpenedAt(), gen12.substr(0, gen12.size() - 7) + "13.json");

  // Renamed over as it is opened (the mesh rewrites gen-13.json): the file
  // read is in no directory, and where it was is what a declared path
  // there would write over. Opened here through its descriptor's link.
  int held = ::open(dir.Sub("gen-13.json").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(held, 0);
  WriteText(dir.Sub("gen-13.new"), "third");
  ASSERT_EQ(::rename(dir.Sub("gen-13.new").c_str(), dir.Sub("gen-13.json").c_str()), 0);
  auto replaced = FileDeclaration::Open("/proc/self/fd/" + std::to_string(held));
  ::close(held);
  ASSERT_TRUE(replaced.has_value()) << replaced.error().message;
  EXPECT_EQ((*replaced)->Text().value(), "second");
  EXPECT_EQ((*replaced)->OpenedAt(), gen12.substr(0, gen12.size() - 7) + "13.json");
}

// Once the apply has parsed the text, a second read could be other bytes
// than the ones parsed: it is refused, not read again.
// Written in place without a truncation (rsync --inplace), every moment of
// the file was valid JSON, the new text's head over the old one's tail, and
// a SIGHUP's apply read such a moment: applied, `apply ok`. Not read while
// a writer has it open; read once it is closed.
TEST(FileDeclarationTest, AFileOpenForWritingIsNotRead) {
  testing::TempDir dir;
  WriteText(dir.Sub("decl.json"), "{\"generation\": 1}");
  int writer = ::open(dir.Sub("decl.json").c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(writer, 0);
  auto decl = FileDeclaration::Open(dir.Sub("decl.json"));
  ASSERT_TRUE(decl.has_value()) << decl.error().message;
  auto text = (*decl)->Text();
  ASSERT_FALSE(text.has_value());
  EXPECT_THAT(text.error().message,
              HasSubstr("decl.json: being written: another process has it open for writing"));
  EXPECT_THAT(text.error().message, HasSubstr("(lsof " + dir.Sub("decl.json") + " names it)"));
  ::close(writer);
  auto closed = FileDeclaration::Open(dir.Sub("decl.json"));
  ASSERT_TRUE(closed.has_value());
  auto read = (*closed)->Text();
  ASSERT_TRUE(read.has_value()) << read.error().message;
  EXPECT_EQ(*read, "{\"generation\": 1}");
}

TEST(FileDeclarationTest, NothingIsReadAgainAfterTheTextIsReleased) {
  TempDir dir;
  WriteText(dir.Sub("decl.json"), "first");
  auto decl = FileDeclaration::Open(dir.Sub("decl.json"));
  ASSERT_TRUE(decl.has_value());
  ASSERT_EQ((*decl)->Text().value(), "first");
  (*decl)->ReleaseText();
  WriteText(dir.Sub("decl.json"), "second");
  auto text = (*decl)->Text();
  ASSERT_FALSE(text.has_value());
  EXPECT_EQ(text.error().message,
            "declaration " + dir.Sub("decl.json") + ": read after its text was released");
  EXPECT_FALSE((*decl)->Digest().has_value());
}

TEST(FileDeclarationTest, RefusesWhatIsNotABoundedRegularFile) {
  TempDir dir;
  auto missing = FileDeclaration::Open(dir.Sub("none.json"));
  ASSERT_FALSE(missing.has_value());
  EXPECT_THAT(missing.error().message, HasSubstr("declaration " + dir.Sub("none.json") + ": "));
  ASSERT_EQ(::mkfifo(dir.Sub("fifo").c_str(), 0600), 0);
  auto fifo = FileDeclaration::Open(dir.Sub("fifo"));  // refused, not waited on
  ASSERT_FALSE(fifo.has_value());
  EXPECT_THAT(fifo.error().message, HasSubstr("not a regular file"));
  EXPECT_FALSE(FileDeclaration::Open(dir.path()).has_value()) << "a directory";
  WriteText(dir.Sub("huge.json"), "");
  ASSERT_EQ(::truncate(dir.Sub("huge.json").c_str(), core::kMaxDeclarationBytes + 1), 0);
  auto huge = FileDeclaration::Open(dir.Sub("huge.json"));
  ASSERT_FALSE(huge.has_value());
  EXPECT_THAT(huge.error().message, HasSubstr("larger than the limit"));
}

// Who else could change it, as --verify-key's file is checked: its owner,
// its mode, the directories it is in. Root's alone (or this process's
// user's) is none.
TEST(FileDeclarationTest, SaysWhoElseCanChangeIt) {
  TempDir dir;
  const std::string path = dir.Sub("decl.json");
  WriteText(path, "{}");
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  auto own = FileDeclaration::Open(path);
  ASSERT_TRUE(own.has_value());
  EXPECT_EQ((*own)->ChangeableByOthers(), std::nullopt);

  ASSERT_EQ(::chmod(path.c_str(), 0664), 0);
  auto group = FileDeclaration::Open(path);
  ASSERT_TRUE(group.has_value());
  EXPECT_THAT((*group)->ChangeableByOthers().value_or(""),
              HasSubstr("declaration " + path +
                        ": writable by users other than its owner (mode "
                        "0664): chmod go-w " +
                        path));

  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  constexpr uid_t kNobody = 65534;
  if (::geteuid() != 0) GTEST_SKIP() << "not root: cannot give the file away";
  ASSERT_EQ(::chown(path.c_str(), kNobody, kNobody), 0);
  auto theirs = FileDeclaration::Open(path);
  ASSERT_TRUE(theirs.has_value());
  EXPECT_THAT((*theirs)->ChangeableByOthers().value_or(""), HasSubstr("owned by uid 65534"));

  ASSERT_EQ(::chown(path.c_str(), 0, 0), 0);
  ASSERT_EQ(::chown(dir.path().c_str(), kNobody, kNobody), 0);
  auto in_theirs = FileDeclaration::Open(path);
  ASSERT_TRUE(in_theirs.has_value());
  EXPECT_THAT((*in_theirs)->ChangeableByOthers().value_or(""),
              HasSubstr("in " + dir.path() + ", which users other than root"));
  ASSERT_EQ(::chown(dir.path().c_str(), 0, 0), 0);

  // Through a link in a directory another user owns: they choose the file,
  // whatever file it leads to now.
  ASSERT_EQ(::mkdir(dir.Sub("theirs").c_str(), 0755), 0);
  ASSERT_EQ(::symlink(path.c_str(), dir.Sub("theirs/current.json").c_str()), 0);
  ASSERT_EQ(::chown(dir.Sub("theirs").c_str(), kNobody, kNobody), 0);
  auto linked = FileDeclaration::Open(dir.Sub("theirs/current.json"));
  ASSERT_TRUE(linked.has_value());
  EXPECT_THAT((*linked)->ChangeableByOthers().value_or(""),
              HasSubstr("through the link " + dir.Sub("theirs/current.json") + " in " +
                        dir.Sub("theirs") + ", which users other than root"));
  // A link of theirs in a directory of root's.
  ASSERT_EQ(::symlink(path.c_str(), dir.Sub("link.json").c_str()), 0);
  ASSERT_EQ(::lchown(dir.Sub("link.json").c_str(), kNobody, kNobody), 0);
  auto their_link = FileDeclaration::Open(dir.Sub("link.json"));
  ASSERT_TRUE(their_link.has_value());
  EXPECT_THAT((*their_link)->ChangeableByOthers().value_or(""),
              HasSubstr("through the link " + dir.Sub("link.json") + ", owned by uid 65534"));
  // A link of root's, in root's directory, that leads through one in
  // theirs: the way is theirs to re-point. Not on the path as given, nor
  // on the file's real path.
  ASSERT_EQ(::symlink(path.c_str(), dir.Sub("theirs/mid.json").c_str()), 0);
  ASSERT_EQ(::symlink(dir.Sub("theirs/mid.json").c_str(), dir.Sub("chain.json").c_str()), 0);
  auto chained = FileDeclaration::Open(dir.Sub("chain.json"));
  ASSERT_TRUE(chained.has_value());
  EXPECT_THAT((*chained)->ChangeableByOthers().value_or(""),
              HasSubstr("through the link " + dir.Sub("theirs/mid.json") + " in " +
                        dir.Sub("theirs") + ", which users other than root"));
  // A link of root's in a directory of root's, inside one of theirs: they
  // can rename that directory away and put another of root's in its place,
  // whose link leads elsewhere. So can they a directory a `..` climbs back
  // through.
  ASSERT_EQ(::mkdir(dir.Sub("theirs/roots").c_str(), 0755), 0);
  ASSERT_EQ(::symlink(path.c_str(), dir.Sub("theirs/roots/lnk").c_str()), 0);
  auto above = FileDeclaration::Open(dir.Sub("theirs/roots/lnk"));
  ASSERT_TRUE(above.has_value());
  EXPECT_THAT(
      (*above)->ChangeableByOthers().value_or(""),
      HasSubstr("on the way to it, in " + dir.Sub("theirs") + ", which users other than root"));
  auto climbed = FileDeclaration::Open(dir.Sub("theirs/roots/../../decl.json"));
  ASSERT_TRUE(climbed.has_value());
  EXPECT_THAT(
      (*climbed)->ChangeableByOthers().value_or(""),
      HasSubstr("on the way to it, in " + dir.Sub("theirs") + ", which users other than root"));
  ASSERT_EQ(::chown(dir.Sub("theirs").c_str(), 0, 0), 0);
  auto chained_root = FileDeclaration::Open(dir.Sub("chain.json"));
  ASSERT_TRUE(chained_root.has_value());
  EXPECT_EQ((*chained_root)->ChangeableByOthers(), std::nullopt) << "root's all the way";
}

}  // namespace
}  // namespace mesh::adapters
