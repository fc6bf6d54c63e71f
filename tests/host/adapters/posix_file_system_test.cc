#include "host/adapters/posix_file_system.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <iterator>
#include <string>

#include "tests/testing/temp_dir.h"

namespace mesh::adapters {
namespace {

using testing::Exists;
using ::testing::HasSubstr;
using testing::ReadText;
using testing::TempDir;
using testing::WriteText;

class PosixFileSystemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir_.Sub("root"));
    std::filesystem::create_directories(dir_.Sub("outside"));
    fs_ = std::move(*PosixFileSystem::Open(dir_.Sub("root")));
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
  EXPECT_THAT(written.error().message, HasSubstr("/etc is a symlink"));
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

TEST_F(PosixFileSystemTest, WriteThatFailsHalfWayLeavesTheOldFile) {
  WriteText(dir_.Sub("root/big"), "old content");
  // A real fault: the file-size limit makes write() fail with EFBIG part-way.
  struct rlimit old_limit;
  ::getrlimit(RLIMIT_FSIZE, &old_limit);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit limit = {4096, old_limit.rlim_max};
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limit), 0);
  auto written = fs_->WriteFileAtomic("/big", std::string(64 * 1024, 'n'), {0644, 0, 0});
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  std::signal(SIGXFSZ, old_handler);
  ASSERT_FALSE(written.has_value());
  EXPECT_THAT(written.error().message, HasSubstr("write /big"));
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
