// The walk to a path's parent while another user of a directory it passes
// through removes what the host just made there. The race is made certain
// here: this test binary's own mkdirat stands in for libc's (the adapter's
// calls bind to it) and removes the directory right after making it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "host/adapters/posix_file_system.h"
#include "tests/testing/temp_dir.h"

namespace {
// The name whose directory is taken away as soon as it is made (null: none).
const char* snatched = nullptr;
}  // namespace

extern "C" int mkdirat(int dir, const char* name, mode_t mode) {
  auto rc = static_cast<int>(::syscall(SYS_mkdirat, dir, name, mode));
  if (rc == 0 && snatched != nullptr && std::strcmp(name, snatched) == 0) {
    (void)::syscall(SYS_unlinkat, dir, name, AT_REMOVEDIR);
  }
  return rc;
}

namespace mesh::adapters {
namespace {

using testing::TempDir;

// /a is removed each time it is made: writing /a/b/x must fail, naming
// /a, and write nothing anywhere else (it went to /b/x, one level up, and
// said it was created).
TEST(PosixFileSystemRaceTest, ADirectoryRemovedAsItIsMadeFailsTheWrite) {
  TempDir dir;
  std::filesystem::create_directories(dir.Sub("root"));
  auto fs = PosixFileSystem::Open(dir.Sub("root"));
  ASSERT_TRUE(fs.has_value()) << fs.error().message;
  snatched = "a";
  auto made = (*fs)->MakeDirectory("/a/b/x", {0755, ::geteuid(), ::getegid()});
  snatched = nullptr;
  ASSERT_FALSE(made.has_value()) << "made /a/b/x although /a was never there";
  EXPECT_NE(made.error().message.find("/a"), std::string::npos) << made.error().message;
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("root/b")));
  EXPECT_TRUE(std::filesystem::is_empty(dir.Sub("root")));
}

}  // namespace
}  // namespace mesh::adapters
