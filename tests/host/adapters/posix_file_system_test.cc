#include "host/adapters/posix_file_system.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/fs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "tests/testing/temp_dir.h"

namespace mesh::adapters {
namespace {

using testing::Exists;
using ::testing::HasSubstr;
using testing::ReadText;
using testing::TempDir;
using testing::WriteText;

// The entries of `dir` (names), sorted.
std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

class PosixFileSystemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir_.Sub("root"));
    std::filesystem::create_directories(dir_.Sub("outside"));
    fs_ = std::move(*PosixFileSystem::Open(dir_.Sub("root")));
  }
  // Stages "ours" at `path`, alone in its directory, and makes it durable;
  // `temp` receives its temporary's path.
  void StageDurable(const std::string& path, ports::StagedFile& staged, std::string& temp) {
    auto s = fs_->StageFile(path, "ours");
    ASSERT_TRUE(s.has_value()) << s.error().message;
    ASSERT_TRUE(fs_->MakeStagedDurable().has_value());
    std::string dir = dir_.Sub("root" + path.substr(0, path.rfind('/')));
    std::vector<std::string> names = Entries(dir);
    ASSERT_EQ(names.size(), 1u);
    staged = *s;
    temp = dir + "/" + names[0];
  }
  TempDir dir_;
  std::unique_ptr<PosixFileSystem> fs_;
};

TEST_F(PosixFileSystemTest, WritesAtomicallyWithModeAndCreatesParents) {
  auto info = fs_->WriteFileAtomic("/etc/app/conf", "hello", {0640, 0, 0});
  ASSERT_TRUE(info.has_value()) << info.error().message;
  EXPECT_EQ(ReadText(dir_.Sub("root/etc/app/conf")), "hello");
  struct stat st;
  ASSERT_EQ(::stat(dir_.Sub("root/etc/app/conf").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(info->inode, st.st_ino);
  // No temporary file is left beside it.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_.Sub("root/etc/app")),
                          std::filesystem::directory_iterator()),
            1);
}

// A directory with a default ACL naming another user: the file written in
// it inherits an access ACL, whose mask a chmod to 0440 would open to that
// user. The mode declared is all the access a written file gets.
TEST_F(PosixFileSystemTest, AnInheritedAclIsRemovedSoTheModeIsAllTheAccess) {
  std::string shared = dir_.Sub("root/etc/shared");
  std::filesystem::create_directories(shared);
  struct Entry {
    uint16_t tag, perm;
    uint32_t id;
  };
  // posix_acl_xattr: version 2, then user::rwx user:nobody:r-- group::r-x
  // mask::r-- other::---.
  uint32_t version = 2;
  const Entry entries[] = {
      {0x01, 7, ~0u}, {0x02, 4, 65534}, {0x04, 5, ~0u}, {0x10, 4, ~0u}, {0x20, 0, ~0u}};
  std::string acl(reinterpret_cast<const char*>(&version), sizeof version);
  acl.append(reinterpret_cast<const char*>(entries), sizeof entries);
  if (::setxattr(shared.c_str(), "system.posix_acl_default", acl.data(), acl.size(), 0) != 0) {
    GTEST_SKIP() << "no POSIX ACLs on this file system: " << std::strerror(errno);
  }
  std::string token = shared + "/token";
  // What a file made there without the host gets: the ACL (the test's own check).
  {
    std::ofstream(shared + "/plain") << "x";
    ASSERT_GT(::getxattr((shared + "/plain").c_str(), "system.posix_acl_access", nullptr, 0), 0);
  }
  auto no_acl = [](const std::string& path) {
    errno = 0;
    return ::getxattr(path.c_str(), "system.posix_acl_access", nullptr, 0) < 0 && errno == ENODATA;
  };
  // Written whole, staged then placed, a directory, a bundle's tree.
  auto info = fs_->WriteFileAtomic("/etc/shared/token", "secret", {0440, 0, 0});
  ASSERT_TRUE(info.has_value()) << info.error().message;
  EXPECT_TRUE(no_acl(token)) << "user:nobody may read the credential";
  struct stat st;
  ASSERT_EQ(::stat(token.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0440u);
  auto staged = fs_->StageFile("/etc/shared/key", "secret");
  ASSERT_TRUE(staged.has_value()) << staged.error().message;
  ASSERT_TRUE(fs_->MakeStagedDurable().has_value());
  ASSERT_TRUE(fs_->PlaceStaged(*staged, {0440, 0, 0}).has_value());
  EXPECT_TRUE(no_acl(shared + "/key"));
  ASSERT_TRUE(fs_->MakeDirectory("/etc/shared/private", {0750, 0, 0}).has_value());
  EXPECT_TRUE(no_acl(shared + "/private"));
  std::vector<core::TreeEntry> tree(2);
  tree[0].relpath = "conf/secret";
  tree[0].mode = 0640;
  tree[0].content = "secret";
  tree[1].relpath = "conf";
  tree[1].mode = 0750;
  tree[1].type = core::FileType::kDirectory;
  ASSERT_TRUE(fs_->ReplaceTree("/etc/shared/bundle", tree).has_value());
  for (const char* entry : {"bundle", "bundle/conf", "bundle/conf/secret"}) {
    EXPECT_TRUE(no_acl(shared + "/" + entry)) << entry;
  }
}

// Staged: written beside the path, private to the host and invisible until
// placed; made durable in one step for all; discarded, nothing is left.
// What is read is the file looked at: not a file renamed over it, nor one
// a directory swapped higher up the path leads to, nor one written since.
// A daemon started before its --artifacts directory existed failed every
// bundle for the rest of its life ("open root ...: No such file or
// directory"), the directory made and filled since notwithstanding.
TEST_F(PosixFileSystemTest, ARootMadeAfterItWasOpenedIsFound) {
  std::string later = dir_.Sub("later");
  auto fs = PosixFileSystem::OpenOrDeferError(later);
  auto before = fs->ReadFile("/a.tar.gz", 1024);
  ASSERT_FALSE(before.has_value());
  EXPECT_THAT(before.error().message, HasSubstr("No such file or directory"));
  std::filesystem::create_directories(later);
  testing::WriteText(later + "/a.tar.gz", "bytes");
  auto after = fs->ReadFile("/a.tar.gz", 1024);
  ASSERT_TRUE(after.has_value()) << after.error().message;
  EXPECT_EQ(*after, "bytes");
}

TEST_F(PosixFileSystemTest, ReadsOnlyTheFileAsItWasSeen) {
  WriteText(dir_.Sub("root/srv/app/conf/x"), "ours");
  auto seen = fs_->Stat("/srv/app/conf/x");
  ASSERT_TRUE(seen.has_value());
  auto read = fs_->ReadFileAsSeen("/srv/app/conf/x", *seen);
  ASSERT_TRUE(read.has_value()) << read.error().message;
  EXPECT_EQ(*read, "ours");

  // A copy with the same bytes behind a swapped parent directory.
  std::filesystem::rename(dir_.Sub("root/srv/app/conf"), dir_.Sub("root/srv/app/away"));
  WriteText(dir_.Sub("root/srv/app/conf/x"), "ours");
  auto swapped = fs_->ReadFileAsSeen("/srv/app/conf/x", *seen);
  ASSERT_FALSE(swapped.has_value());
  EXPECT_THAT(swapped.error().message, HasSubstr("not the file looked at"));
  std::filesystem::remove_all(dir_.Sub("root/srv/app/conf"));
  std::filesystem::rename(dir_.Sub("root/srv/app/away"), dir_.Sub("root/srv/app/conf"));
  ASSERT_TRUE(fs_->ReadFileAsSeen("/srv/app/conf/x", *seen).has_value()) << "back as it was";

  // Written since it was seen (same size, new times).
  WriteText(dir_.Sub("root/srv/app/conf/x.new"), "ours");
  std::filesystem::rename(dir_.Sub("root/srv/app/conf/x.new"), dir_.Sub("root/srv/app/conf/x"));
  EXPECT_FALSE(fs_->ReadFileAsSeen("/srv/app/conf/x", *seen).has_value());
  auto now = fs_->Stat("/srv/app/conf/x");
  ASSERT_TRUE(now.has_value());
  ASSERT_TRUE(fs_->ReadFileAsSeen("/srv/app/conf/x", *now).has_value());
  std::filesystem::last_write_time(
      dir_.Sub("root/srv/app/conf/x"),
      std::filesystem::file_time_type::clock::now() + std::chrono::hours(1));
  EXPECT_FALSE(fs_->ReadFileAsSeen("/srv/app/conf/x", *now).has_value());
}

TEST_F(PosixFileSystemTest, StagedFilesArePrivateAndAppearOnlyWhenPlaced) {
  auto a = fs_->StageFile("/etc/app/a.conf", "alpha");
  auto b = fs_->StageFile("/etc/b.conf", "beta");
  auto c = fs_->StageFile("/etc/app/c.conf", "gamma");
  ASSERT_TRUE(a.has_value() && b.has_value() && c.has_value());
  EXPECT_FALSE(Exists(dir_.Sub("root/etc/app/a.conf")));
  std::vector<std::string> temps = Entries(dir_.Sub("root/etc/app"));
  ASSERT_EQ(temps.size(), 2u);
  struct stat st;
  ASSERT_EQ(::stat(dir_.Sub("root/etc/app/" + temps[0]).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u) << "a temporary is the host's alone until placed";
  EXPECT_EQ(st.st_uid, ::geteuid());
  ASSERT_TRUE(fs_->MakeStagedDurable().has_value());
  auto placed = fs_->PlaceStaged(*a, {0640, 0, 0});
  ASSERT_TRUE(placed.has_value()) << placed.error().message;
  ASSERT_TRUE(fs_->PlaceStaged(*b, {0644, 0, 0}).has_value());
  fs_->DiscardStaged(*c);
  EXPECT_EQ(ReadText(dir_.Sub("root/etc/app/a.conf")), "alpha");
  EXPECT_EQ(ReadText(dir_.Sub("root/etc/b.conf")), "beta");
  ASSERT_EQ(::stat(dir_.Sub("root/etc/app/a.conf").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(placed->inode, st.st_ino);
  EXPECT_EQ(Entries(dir_.Sub("root/etc/app")), std::vector<std::string>{"a.conf"})
      << "no temporary of the placed nor of the discarded";
  EXPECT_TRUE(fs_->Flush().has_value());
  // A staged file is confined like any write: no symlink on the way.
  std::filesystem::create_directory_symlink(dir_.Sub("outside"), dir_.Sub("root/out"));
  EXPECT_FALSE(fs_->StageFile("/out/x", "x").has_value());
  EXPECT_TRUE(std::filesystem::is_empty(dir_.Sub("outside")));
  auto in_the_way = fs_->StageFile("/etc/app", "x");
  ASSERT_TRUE(in_the_way.has_value());
  ASSERT_TRUE(fs_->MakeStagedDurable().has_value());
  auto refused = fs_->PlaceStaged(*in_the_way, {0644, 0, 0});
  ASSERT_FALSE(refused.has_value());
  EXPECT_THAT(refused.error().message, HasSubstr("a directory is in the way"));
  EXPECT_EQ(Entries(dir_.Sub("root/etc")), (std::vector<std::string>{"app", "b.conf"}));
}

TEST_F(PosixFileSystemTest, AFileIsNotPlacedBeforeItIsDurable) {
  auto a = fs_->StageFile("/etc/a", "a");
  ASSERT_TRUE(a.has_value());
  auto placed = fs_->PlaceStaged(*a, {0644, 0, 0});
  ASSERT_FALSE(placed.has_value());
  EXPECT_THAT(placed.error().message, HasSubstr("not made durable"));
  EXPECT_TRUE(std::filesystem::is_empty(dir_.Sub("root/etc")));
}

// A neighbour moves the directory away between staging and placing, and
// puts one of theirs at its path: nothing is placed in either, nothing is
// claimed, no temporary is left.
TEST_F(PosixFileSystemTest, ADirectoryMovedWhileStagedPlacesNothing) {
  std::filesystem::create_directories(dir_.Sub("root/srv/app"));
  auto a = fs_->StageFile("/srv/app/conf", "ours");
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(fs_->MakeStagedDurable().has_value());
  std::filesystem::rename(dir_.Sub("root/srv/app"), dir_.Sub("root/srv/moved"));
  std::filesystem::create_directories(dir_.Sub("root/srv/app"));
  auto placed = fs_->PlaceStaged(*a, {0644, 0, 0});
  ASSERT_FALSE(placed.has_value());
  EXPECT_THAT(placed.error().message, HasSubstr("moved or replaced"));
  EXPECT_TRUE(std::filesystem::is_empty(dir_.Sub("root/srv/app")));
  EXPECT_TRUE(std::filesystem::is_empty(dir_.Sub("root/srv/moved")));
}

// A neighbour who may write in the directory swaps the temporary for a
// file of theirs: it is neither given the declared owner and mode nor put
// in place.
TEST_F(PosixFileSystemTest, AReplacedTemporaryIsNeitherChangedNorPlaced) {
  ports::StagedFile a;
  std::string temp;
  ASSERT_NO_FATAL_FAILURE(StageDurable("/srv/conf", a, temp));
  WriteText(temp + ".theirs", "theirs");
  ASSERT_EQ(::chmod((temp + ".theirs").c_str(), 0600), 0);
  std::filesystem::rename(temp + ".theirs", temp);
  auto placed = fs_->PlaceStaged(a, {04755, 0, 0});
  ASSERT_FALSE(placed.has_value());
  EXPECT_THAT(placed.error().message, HasSubstr("replaced"));
  EXPECT_FALSE(Exists(dir_.Sub("root/srv/conf")));
  struct stat st;
  ASSERT_EQ(::stat(temp.c_str(), &st), 0) << "the neighbour's file is theirs: not removed";
  EXPECT_EQ(st.st_mode & 07777, 0600u) << "not given the declared mode";
  EXPECT_EQ(ReadText(temp), "theirs");
}

// A neighbour who links the temporary elsewhere would keep a way to the
// file the host is about to give its owner and mode: it is not placed.
TEST_F(PosixFileSystemTest, ALinkedTemporaryIsNotPlaced) {
  ports::StagedFile a;
  std::string temp;
  ASSERT_NO_FATAL_FAILURE(StageDurable("/srv/conf", a, temp));
  ASSERT_EQ(::link(temp.c_str(), dir_.Sub("outside/kept").c_str()), 0);
  auto placed = fs_->PlaceStaged(a, {04755, 0, 0});
  ASSERT_FALSE(placed.has_value());
  EXPECT_FALSE(Exists(dir_.Sub("root/srv/conf")));
  struct stat st;
  ASSERT_EQ(::stat(dir_.Sub("outside/kept").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u) << "never given the declared mode";
  EXPECT_TRUE(std::filesystem::is_empty(dir_.Sub("root/srv"))) << "the host's own name is removed";
}

TEST_F(PosixFileSystemTest, MissingParentsAre0755WhateverTheUmask) {
  mode_t old = ::umask(077);  // the shipped unit's UMask
  auto info = fs_->WriteFileAtomic("/srv/app/conf", "x", {0644, 0, 0});
  ::umask(old);
  ASSERT_TRUE(info.has_value()) << info.error().message;
  for (const char* dir : {"root/srv", "root/srv/app"}) {
    struct stat st;
    ASSERT_EQ(::stat(dir_.Sub(dir).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0755u) << dir;
  }
}

TEST_F(PosixFileSystemTest, SymlinkPlantedInRootIsNotFollowed) {
  // root/etc -> <outside>: a write to /etc/passwd must not land outside.
  ASSERT_EQ(::symlink(dir_.Sub("outside").c_str(), dir_.Sub("root/etc").c_str()), 0);
  auto written = fs_->WriteFileAtomic("/etc/passwd", "owned", {0644, 0, 0});
  ASSERT_FALSE(written.has_value());
  EXPECT_THAT(written.error().message,
              HasSubstr("/etc is a symlink; mesh-host does not follow symlinks under its root (" +
                        dir_.Sub("root") + ")"));
  EXPECT_FALSE(Exists(dir_.Sub("outside/passwd")));
  // Relative symlinks climbing out are refused the same way.
  ASSERT_EQ(::symlink("../outside", dir_.Sub("root/opt").c_str()), 0);
  EXPECT_FALSE(fs_->WriteFileAtomic("/opt/x", "owned", {0644, 0, 0}).has_value());
  EXPECT_FALSE(fs_->ReplaceTree("/opt/tree", {}).has_value());
  EXPECT_FALSE(fs_->Remove("/opt/x").has_value());
  EXPECT_FALSE(Exists(dir_.Sub("outside/x")));
  EXPECT_FALSE(Exists(dir_.Sub("outside/tree")));
}

TEST_F(PosixFileSystemTest, SymlinkAtTheLeafIsReplacedNotWrittenThrough) {
  WriteText(dir_.Sub("outside/target"), "keep");
  ASSERT_EQ(::symlink(dir_.Sub("outside/target").c_str(), dir_.Sub("root/leaf").c_str()), 0);
  auto info = fs_->Stat("/leaf");
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->type, core::FileType::kSymlink);
  EXPECT_FALSE(fs_->ReadFile("/leaf", 100).has_value());
  ASSERT_TRUE(fs_->WriteFileAtomic("/leaf", "new", {0644, 0, 0}).has_value());
  EXPECT_EQ(ReadText(dir_.Sub("outside/target")), "keep");
  EXPECT_EQ(ReadText(dir_.Sub("root/leaf")), "new");
}

TEST_F(PosixFileSystemTest, DotDotRefused) {
  EXPECT_FALSE(fs_->WriteFileAtomic("/../outside/x", "x", {0644, 0, 0}).has_value());
  EXPECT_FALSE(Exists(dir_.Sub("outside/x")));
}

// A real fault: with files limited to 4 KiB, write() fails with EFBIG
// part-way (a full disk is hard to arrange in a unit test).
template <typename Fn>
auto WithFilesOf4KiB(Fn fn) {
  struct rlimit old_limit;
  ::getrlimit(RLIMIT_FSIZE, &old_limit);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit limit = {4096, old_limit.rlim_max};
  EXPECT_EQ(::setrlimit(RLIMIT_FSIZE, &limit), 0);
  auto result = fn();
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  std::signal(SIGXFSZ, old_handler);
  return result;
}

TEST_F(PosixFileSystemTest, WriteThatFailsHalfWayLeavesTheOldFile) {
  WriteText(dir_.Sub("root/big"), "old content");
  auto written = WithFilesOf4KiB([&] {
    return fs_->WriteFileAtomic("/big", std::string(size_t{64} * 1024, 'n'), {0644, 0, 0});
  });
  ASSERT_FALSE(written.has_value());
  EXPECT_THAT(written.error().message, HasSubstr("write /big"));
  EXPECT_EQ(ReadText(dir_.Sub("root/big")), "old content");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_.Sub("root")),
                          std::filesystem::directory_iterator()),
            1)
      << "a temporary file was left behind";
}

// A text made in pieces (the record's): a failed write fails the file even
// when the producer carries on and says it did well, and a producer's own
// failure leaves the old file too.
TEST_F(PosixFileSystemTest, APieceThatFailsToWriteFailsTheWholeFile) {
  WriteText(dir_.Sub("root/big"), "old content");
  auto written = WithFilesOf4KiB([&] {
    return fs_->WriteFileAtomicFrom("/big",
                                    [](const ports::FileSystem::ContentSink& write) {
                                      for (int i = 0; i < 4; ++i)
                                        (void)write(std::string(3000, 'n'));
                                      return core::Ok();  // a careless producer
                                    },
                                    {0644, 0, 0});
  });
  ASSERT_FALSE(written.has_value());
  EXPECT_THAT(written.error().message, HasSubstr("write /big"));
  EXPECT_EQ(ReadText(dir_.Sub("root/big")), "old content");

  auto refused =
      fs_->WriteFileAtomicFrom("/big",
                               [](const ports::FileSystem::ContentSink& write) -> core::Status {
                                 if (auto st = write("half"); !st) return st;
                                 return core::Fail("the producer gave up");
                               },
                               {0644, 0, 0});
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().message, "the producer gave up");
  EXPECT_EQ(ReadText(dir_.Sub("root/big")), "old content");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_.Sub("root")),
                          std::filesystem::directory_iterator()),
            1)
      << "a temporary file was left behind";
}

// A producer that throws (the record's serializer out of memory) leaves
// the old file and no temporary: the exception goes on to the apply, which
// says it ran out of memory.
TEST_F(PosixFileSystemTest, AProducerThatThrowsLeavesNoTemporary) {
  WriteText(dir_.Sub("root/big"), "old content");
  EXPECT_THROW((void)fs_->WriteFileAtomicFrom(
                   "/big",
                   [](const ports::FileSystem::ContentSink& write) -> core::Status {
                     (void)write("half");
                     throw std::bad_alloc();
                   },
                   {0644, 0, 0}),
               std::bad_alloc);
  EXPECT_EQ(ReadText(dir_.Sub("root/big")), "old content");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_.Sub("root")),
                          std::filesystem::directory_iterator()),
            1)
      << "a temporary file was left behind";
}

TEST_F(PosixFileSystemTest, ReplaceTreeSwapsWholeAndScans) {
  std::vector<core::TreeEntry> v1(2);
  v1[0].relpath = "bin/serve";
  v1[0].mode = 0755;
  v1[0].content = "#!/bin/sh\n";
  v1[1].relpath = "README";
  v1[1].mode = 0644;
  v1[1].content = "one";
  ASSERT_TRUE(fs_->ReplaceTree("/opt/tools", v1).has_value());
  EXPECT_EQ(ReadText(dir_.Sub("root/opt/tools/README")), "one");
  WriteText(dir_.Sub("root/opt/tools/stray"), "hand-made");

  std::vector<core::TreeEntry> v2 = {v1[1]};
  v2[0].content = "two";
  ASSERT_TRUE(fs_->ReplaceTree("/opt/tools", v2).has_value());
  EXPECT_EQ(ReadText(dir_.Sub("root/opt/tools/README")), "two");
  EXPECT_FALSE(Exists(dir_.Sub("root/opt/tools/stray")));
  EXPECT_FALSE(Exists(dir_.Sub("root/opt/tools/bin")));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_.Sub("root/opt")),
                          std::filesystem::directory_iterator()),
            1);

  auto scan = fs_->ScanTree("/opt/tools", true);
  ASSERT_TRUE(scan.has_value());
  ASSERT_EQ(scan->size(), 1u);
  EXPECT_EQ((*scan)[0].relpath, "README");
  EXPECT_EQ((*scan)[0].content_sha256.size(), 64u);
}

// A file of the old tree that is exactly the new entry (bytes and mode),
// the host's alone, is linked into the new tree, not written again; any
// other is written fresh, so the new tree is what a fresh unpack makes.
core::TreeEntry FileEntry(std::string rel, uint32_t mode, std::string content) {
  core::TreeEntry e;
  e.relpath = std::move(rel);
  e.mode = mode;
  e.content = std::move(content);
  return e;
}

ino_t Inode(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

TEST_F(PosixFileSystemTest, ReplaceTreeLinksOnlyFilesExactlyAsTheNewEntries) {
  std::vector<core::TreeEntry> v1 = {FileEntry("lib/same", 0644, "unchanged"),
                                     FileEntry("lib/bytes", 0644, "old bytes"),
                                     FileEntry("lib/mode", 0644, "same bytes"),
                                     FileEntry("lib/twice", 0644, "linked elsewhere"),
                                     FileEntry("lib/owner", 0644, "someone's now"),
                                     FileEntry("lib/xattr", 0644, "with an attribute"),
                                     FileEntry("top", 0600, "at the top")};
  ASSERT_TRUE(fs_->ReplaceTree("/opt/b", v1).has_value());
  std::string lib = dir_.Sub("root/opt/b/lib/");
  std::map<std::string, ino_t> before;
  for (const auto& e : v1) before[e.relpath] = Inode(dir_.Sub("root/opt/b/" + e.relpath));
  // Made so by someone else since: a second name, another owner, an
  // extended attribute (user.* where the file system has them).
  ASSERT_EQ(::link((lib + "twice").c_str(), dir_.Sub("outside/twice").c_str()), 0);
  bool chowned = ::chown((lib + "owner").c_str(), 12345, 12345) == 0;
  if (!chowned) std::cerr << "not run: the case of another owner (no chown here)\n";
  bool xattrs = ::setxattr((lib + "xattr").c_str(), "user.mark", "x", 1, 0) == 0;
  if (!xattrs) std::cerr << "not run: the case of an extended attribute (none here)\n";

  std::vector<core::TreeEntry> v2 = v1;
  v2[1].content = "new bytes";
  v2[2].mode = 0640;
  ASSERT_TRUE(fs_->ReplaceTree("/opt/b", v2).has_value());

  EXPECT_EQ(Inode(lib + "same"), before["lib/same"]) << "an unchanged file is written again";
  EXPECT_EQ(Inode(dir_.Sub("root/opt/b/top")), before["top"]);
  EXPECT_NE(Inode(lib + "bytes"), before["lib/bytes"]);
  EXPECT_NE(Inode(lib + "mode"), before["lib/mode"]);
  EXPECT_NE(Inode(lib + "twice"), before["lib/twice"]) << "a file with another name is shared";
  if (chowned) {
    EXPECT_NE(Inode(lib + "owner"), before["lib/owner"]) << "someone else's file is taken in";
  }
  if (xattrs) EXPECT_NE(Inode(lib + "xattr"), before["lib/xattr"]);
  for (const auto& e : v2) {
    std::string at = dir_.Sub("root/opt/b/" + e.relpath);
    EXPECT_EQ(ReadText(at), e.content) << e.relpath;
    struct stat st;
    ASSERT_EQ(::lstat(at.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, e.mode) << e.relpath;
    EXPECT_EQ(st.st_uid, ::geteuid()) << e.relpath;
    EXPECT_EQ(st.st_nlink, 1u) << e.relpath << ": the old tree's name is left";
  }
  EXPECT_EQ(ReadText(dir_.Sub("outside/twice")), "linked elsewhere");
  char value[8];
  EXPECT_LT(::getxattr((lib + "xattr").c_str(), "user.mark", value, sizeof value), 0);
}

// A fresh unpack under a setgid directory gives its files that directory's
// group: a file of the old tree made before the directory was setgid is
// not the file a fresh unpack makes, and is written, not linked.
TEST_F(PosixFileSystemTest, ReplaceTreeUnderANowSetgidParentWritesFiles) {
  core::TreeEntry a = FileEntry("lib/a", 0644, "same");
  ASSERT_TRUE(fs_->ReplaceTree("/opt/b", {a}).has_value());
  ino_t inode = Inode(dir_.Sub("root/opt/b/lib/a"));
  std::string opt = dir_.Sub("root/opt");
  if (::chown(opt.c_str(), static_cast<uid_t>(-1), 12345) != 0) {
    GTEST_SKIP() << "no other group to give the directory here (Bazel's sandbox maps none)";
  }
  ASSERT_EQ(::chmod(opt.c_str(), 02755), 0);
  ASSERT_TRUE(fs_->ReplaceTree("/opt/b", {a}).has_value());
  struct stat st;
  ASSERT_EQ(::lstat(dir_.Sub("root/opt/b/lib/a").c_str(), &st), 0);
  EXPECT_NE(st.st_ino, inode) << "linked a file of another group than a fresh one gets";
  EXPECT_EQ(st.st_gid, 12345u);
  EXPECT_EQ(ReadText(dir_.Sub("root/opt/b/lib/a")), "same");
}

// A file someone holds open for writing (a service updating it in place)
// is written fresh, not linked: what they write next must not land in the
// new tree, where the record would take it for what was declared.
TEST_F(PosixFileSystemTest, ReplaceTreeDoesNotLinkAFileOpenForWriting) {
  core::TreeEntry a = FileEntry("lib/db", 0644, "rows");
  ASSERT_TRUE(fs_->ReplaceTree("/opt/b", {a}).has_value());
  std::string db = dir_.Sub("root/opt/b/lib/db");
  ino_t inode = Inode(db);
  int writer = ::open(db.c_str(), O_WRONLY);
  ASSERT_GE(writer, 0);
  ASSERT_TRUE(fs_->ReplaceTree("/opt/b", {a}).has_value());
  EXPECT_NE(Inode(db), inode) << "linked a file open for writing";
  ASSERT_EQ(::pwrite(writer, "late", 4, 0), 4);
  ::close(writer);
  EXPECT_EQ(ReadText(db), "rows");
}

// A file linked from the old tree that someone changes before the swap
// (through the old tree's name, as a service rewriting it in place would)
// is not taken for the declared file: the replace fails, saying which, and
// the next one writes it afresh.
TEST_F(PosixFileSystemTest, ALinkedFileChangedBeforeTheSwapFailsTheReplace) {
  core::TreeEntry a = FileEntry("lib/a", 0644, "declared");
  core::TreeEntry b = FileEntry("lib/b", 0644, "also");
  ASSERT_TRUE(fs_->ReplaceTree("/opt/b", {a, b}).has_value());
  std::string old_a = dir_.Sub("root/opt/b/lib/a");
  ino_t inode = Inode(old_a);
  bool ran = false;
  fs_->set_before_swap_for_testing([&] {
    ran = true;
    // Still the old tree's name here; the new tree holds the same inode.
    int fd = ::open(old_a.c_str(), O_WRONLY | O_APPEND);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, " and more", 9), 9);
    ::close(fd);
  });
  auto replaced = fs_->ReplaceTree("/opt/b", {a, b});
  fs_->set_before_swap_for_testing(nullptr);
  ASSERT_TRUE(ran);
  ASSERT_FALSE(replaced.has_value()) << "a linked file changed before the swap was kept";
  EXPECT_THAT(replaced.error().message,
              HasSubstr("lib/a was changed while the tree was being replaced"));
  EXPECT_EQ(Inode(dir_.Sub("root/opt/b/lib/a")), inode) << "the file was linked";
  ASSERT_TRUE(fs_->ReplaceTree("/opt/b", {a, b}).has_value());
  EXPECT_EQ(ReadText(dir_.Sub("root/opt/b/lib/a")), "declared");
  EXPECT_NE(Inode(dir_.Sub("root/opt/b/lib/a")), inode) << "the changed file was linked again";
}

// A replace that fails part-way leaves the old tree as it was: what it
// linked from it goes with the temporary tree, not the old names.
TEST_F(PosixFileSystemTest, AFailedReplaceLeavesTheOldTreeWhole) {
  core::TreeEntry a = FileEntry("a", 0644, "kept");
  ASSERT_TRUE(fs_->ReplaceTree("/opt/b", {a}).has_value());
  ino_t inode = Inode(dir_.Sub("root/opt/b/a"));
  struct stat before;
  ASSERT_EQ(::lstat(dir_.Sub("root/opt/b/a").c_str(), &before), 0);
  // ctime moves by the kernel's tick: wait one, so that a link and its
  // removal show.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  core::TreeEntry bad;
  bad.relpath = "z";
  bad.type = core::FileType::kSymlink;
  ASSERT_FALSE(fs_->ReplaceTree("/opt/b", {a, bad}).has_value());
  EXPECT_EQ(Inode(dir_.Sub("root/opt/b/a")), inode);
  EXPECT_EQ(ReadText(dir_.Sub("root/opt/b/a")), "kept");
  struct stat st;
  ASSERT_EQ(::lstat(dir_.Sub("root/opt/b/a").c_str(), &st), 0);
  EXPECT_EQ(st.st_nlink, 1u) << "the temporary tree's link was left";
  EXPECT_NE(st.st_ctim.tv_nsec + st.st_ctim.tv_sec * 1000000000LL,
            before.st_ctim.tv_nsec + before.st_ctim.tv_sec * 1000000000LL)
      << "nothing was linked: this test proves nothing";
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_.Sub("root/opt")),
                          std::filesystem::directory_iterator()),
            1);
}

// The record is streamed from an open descriptor; a FIFO planted where a
// file is expected is refused at once by both readers, never waited on.
TEST_F(PosixFileSystemTest, OpenAndReadRefuseAFifoWithoutBlocking) {
  ASSERT_EQ(::mkfifo(dir_.Sub("root/state.json").c_str(), 0600), 0);
  auto opened = fs_->OpenRegular("/state.json", 1 << 20);
  ASSERT_FALSE(opened.has_value());
  EXPECT_THAT(opened.error().message, HasSubstr("not a regular file"));
  auto read = fs_->ReadFile("/state.json", 1 << 20);
  ASSERT_FALSE(read.has_value());
  EXPECT_THAT(read.error().message, HasSubstr("not a regular file"));
  WriteText(dir_.Sub("root/record"), "{\"a\": 1}");
  auto ok = fs_->OpenRegular("/record", 1 << 20);
  ASSERT_TRUE(ok.has_value()) << ok.error().message;
  EXPECT_EQ(ok->second, 8u);
  FdStreamBuf buffer(ok->first.get());
  std::string text(std::istreambuf_iterator<char>(&buffer), {});
  EXPECT_EQ(text, "{\"a\": 1}");
  EXPECT_EQ(buffer.error(), 0);
  EXPECT_FALSE(fs_->OpenRegular("/record", 3).has_value()) << "over the limit";
}

// The stream buffer refills across its 64 KiB chunks and loses no byte.
TEST_F(PosixFileSystemTest, AStreamedFileArrivesWholeAcrossChunks) {
  std::string big;
  for (int i = 0; big.size() < (200u << 10); ++i) big += std::to_string(i) + ",";
  WriteText(dir_.Sub("root/big"), big);
  auto opened = fs_->OpenRegular("/big", 1 << 20);
  ASSERT_TRUE(opened.has_value()) << opened.error().message;
  FdStreamBuf buffer(opened->first.get());
  std::string text(std::istreambuf_iterator<char>(&buffer), {});
  EXPECT_EQ(text, big);
  EXPECT_EQ(buffer.error(), 0);
}

TEST_F(PosixFileSystemTest, RemoveDeletesTreesAndToleratesMissing) {
  WriteText(dir_.Sub("root/a/b/c"), "x");
  ASSERT_TRUE(fs_->Remove("/a").has_value());
  EXPECT_FALSE(Exists(dir_.Sub("root/a")));
  EXPECT_TRUE(fs_->Remove("/not/there").has_value());
}

// Sets or clears a file's immutable flag (which even root cannot unlink
// through); false where the file system has no such flag.
bool SetImmutable(const std::string& path, bool on) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  int flags = 0;
  bool ok = ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
  flags = on ? flags | FS_IMMUTABLE_FL : flags & ~FS_IMMUTABLE_FL;
  ok = ok && ::ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
  ::close(fd);
  return ok;
}

// Killed while a tree of 20,000 files was being deleted, the host left
// part of it at its path, which the next apply took for someone's change
// and kept for good. The tree now leaves its path first: a kill there
// leaves it under a temporary name, which the sweep after a kill removes.
TEST_F(PosixFileSystemTest, ATreeKilledWhileRemovedIsGoneFromItsPath) {
  for (int i = 0; i < 20; ++i) WriteText(dir_.Sub("root/opt/x/f" + std::to_string(i)), "x");
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto fs = PosixFileSystem::Open(dir_.Sub("root"));
    if (!fs) ::_exit(2);
    (*fs)->set_before_swap_for_testing([] { ::raise(SIGKILL); });
    (void)(*fs)->Remove("/opt/x");
    ::_exit(3);  // not killed: the hook was not reached
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  EXPECT_FALSE(Exists(dir_.Sub("root/opt/x"))) << "the tree is still at its path";
  std::string aside;
  for (const auto& e : std::filesystem::directory_iterator(dir_.Sub("root/opt"))) {
    if (e.path().filename().string().starts_with(".x.mesh-host-tmp.")) aside = e.path();
  }
  ASSERT_FALSE(aside.empty());
  auto swept = fs_->RemoveStaleTemporaries("/opt");
  ASSERT_TRUE(swept.has_value()) << swept.error().message;
  EXPECT_EQ(*swept, 1);
  EXPECT_FALSE(Exists(aside));
}

// A removal that fails without a kill (a file it cannot unlink) leaves
// what is left at its path, where the next apply sees it and says so; not
// under a temporary name no sweep would look for.
TEST_F(PosixFileSystemTest, WhatATreesRemovalCouldNotDeleteStaysAtItsPath) {
  for (int i = 0; i < 5; ++i) WriteText(dir_.Sub("root/opt/x/f" + std::to_string(i)), "x");
  WriteText(dir_.Sub("root/opt/x/sub/stuck"), "x");
  if (!SetImmutable(dir_.Sub("root/opt/x/sub/stuck"), true)) {
    GTEST_SKIP() << "no immutable flag on this file system";
  }
  auto removed = fs_->Remove("/opt/x");
  bool back = Exists(dir_.Sub("root/opt/x/sub/stuck"));
  SetImmutable(back ? dir_.Sub("root/opt/x/sub/stuck") : dir_.Sub("root/opt"), false);
  ASSERT_FALSE(removed.has_value());
  EXPECT_THAT(removed.error().message, HasSubstr("stuck"));
  EXPECT_TRUE(back);
  for (const auto& e : std::filesystem::directory_iterator(dir_.Sub("root/opt"))) {
    EXPECT_FALSE(e.path().filename().string().starts_with(".x.mesh-host-tmp.")) << e.path();
  }
  // Something made at the path meanwhile keeps it: what is left stays
  // aside, and the error says where.
  ASSERT_TRUE(SetImmutable(dir_.Sub("root/opt/x/sub/stuck"), true));
  fs_->set_before_swap_for_testing(
      [this] { std::filesystem::create_directory(dir_.Sub("root/opt/x")); });
  auto again = fs_->Remove("/opt/x");
  std::string aside;
  for (const auto& e : std::filesystem::directory_iterator(dir_.Sub("root/opt"))) {
    if (e.path().filename().string().starts_with(".x.mesh-host-tmp.")) aside = e.path();
  }
  if (!aside.empty()) SetImmutable(aside + "/sub/stuck", false);
  ASSERT_FALSE(again.has_value());
  ASSERT_FALSE(aside.empty());
  EXPECT_THAT(again.error().message,
              HasSubstr("(what is left of it is in /opt/" +
                        std::filesystem::path(aside).filename().string() + ")"));
}

// Someone who can write the tree's parent puts a directory of their own
// under the host's temporary name just before the swap: what the swap
// puts at the path is then theirs. The replace fails, and the tree it
// returns (what a record would hold) is never theirs.
TEST_F(PosixFileSystemTest, ATreeSwappedForAnotherBeforeTheSwapIsNotTakenForTheHosts) {
  core::TreeEntry serve = FileEntry("bin/serve", 0755, "ours");
  ASSERT_TRUE(fs_->ReplaceTree("/opt/app", {serve}).has_value());
  std::string opt = dir_.Sub("root/opt");
  fs_->set_before_swap_for_testing([&] {
    for (const auto& e : std::filesystem::directory_iterator(opt)) {
      std::string name = e.path().filename();
      if (name.find(".mesh-host-tmp.") == std::string::npos) continue;
      std::filesystem::rename(e.path(), opt + "/stolen");
      WriteText(e.path().string() + "/bin/serve", "theirs");
    }
  });
  auto replaced = fs_->ReplaceTree("/opt/app", {serve});
  fs_->set_before_swap_for_testing(nullptr);
  ASSERT_EQ(ReadText(opt + "/app/bin/serve"), "theirs") << "the race was not run";
  EXPECT_FALSE(replaced.has_value()) << "their tree was swapped in and called the host's";
}

// The same for a symlink: one put under its temporary name before it is
// renamed into place is not the host's.
TEST_F(PosixFileSystemTest, ASymlinkSwappedBeforeItIsPlacedIsNotTakenForTheHosts) {
  std::string etc = dir_.Sub("root/etc");
  std::filesystem::create_directories(etc);
  fs_->set_before_swap_for_testing([&] {
    for (const auto& e : std::filesystem::directory_iterator(etc)) {
      if (e.path().filename().string().find(".mesh-host-tmp.") == std::string::npos) continue;
      std::filesystem::remove(e.path());
      std::filesystem::create_symlink("/theirs", e.path());
    }
  });
  auto made = fs_->MakeSymlink("/etc/link", "/ours");
  fs_->set_before_swap_for_testing(nullptr);
  ASSERT_EQ(std::filesystem::read_symlink(etc + "/link"), "/theirs") << "the race was not run";
  EXPECT_FALSE(made.has_value()) << "their link was placed and called the host's";
}

// An operator's file system mounted inside a tree the host manages (a
// volume at /opt/app/data) is never emptied by the host: the scan that
// would find it drift says why it cannot judge the tree, and a removal or
// a replacement of the tree stops at the mount, leaving what it holds.
// The mount is made in a child, in a mount namespace of its own.
TEST_F(PosixFileSystemTest, AMountInsideATreeIsNeverEmptied) {
  std::vector<core::TreeEntry> v1(1);
  v1[0].relpath = "data/seed";
  v1[0].mode = 0644;
  v1[0].content = "one";
  ASSERT_TRUE(fs_->ReplaceTree("/opt/app", v1).has_value());
  std::string data = dir_.Sub("root/opt/app/data");
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("tmpfs", data.c_str(), "tmpfs", 0, "size=1m") != 0) {
      ::_exit(77);
    }
    WriteText(data + "/precious", "the operator's");
    int precious = ::open((data + "/precious").c_str(), O_RDONLY | O_CLOEXEC);
    auto still_there = [&] {
      struct stat st;
      return ::fstat(precious, &st) == 0 && st.st_nlink == 1;
    };
    // Opened in this namespace: a descriptor opened before the unshare
    // walks the mounts of the one before, which do not have this mount.
    auto fs = std::move(*PosixFileSystem::Open(dir_.Sub("root")));
    int wrong = 0;
    auto scan = fs->ScanTree("/opt/app", /*hash_contents=*/true);
    if (scan.has_value() || scan.error().message.find("/opt/app/data") == std::string::npos) {
      wrong |= 1;
    }
    if (fs->Remove("/opt/app").has_value() || !still_there()) wrong |= 2;
    std::vector<core::TreeEntry> v2 = v1;
    v2[0].content = "two";
    // Not swapped out either: the mount stays where the operator put it.
    if (fs->ReplaceTree("/opt/app", v2).has_value() || !still_there() ||
        ReadText(data + "/precious") != "the operator's") {
      wrong |= 4;
    }
    ::_exit(wrong);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "no mount namespace here (it needs root)";
  EXPECT_EQ(WEXITSTATUS(status) & 1, 0) << "the scan did not say the tree holds a mount";
  EXPECT_EQ(WEXITSTATUS(status) & 2, 0) << "Remove went into the mount";
  EXPECT_EQ(WEXITSTATUS(status) & 4, 0) << "ReplaceTree emptied or moved the mount";
}

TEST_F(PosixFileSystemTest, LookupIds) {
  auto root = fs_->LookupIds("root", "root");
  ASSERT_TRUE(root.has_value());
  EXPECT_EQ(root->first, 0u);
  EXPECT_FALSE(fs_->LookupIds("no-such-user-xyz", "root").has_value());
  auto numeric = fs_->LookupIds("4242", "4243");
  ASSERT_TRUE(numeric.has_value());
  EXPECT_EQ(numeric->second, 4243u);
  // chown reads (uid_t)-1 as "leave unchanged": not an id to declare.
  EXPECT_FALSE(fs_->LookupIds("4294967295", "root").has_value());
  EXPECT_FALSE(fs_->LookupIds("root", "4294967295").has_value());
}

}  // namespace
}  // namespace mesh::adapters
