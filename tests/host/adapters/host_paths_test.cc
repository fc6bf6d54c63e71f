// The host's places as the kernel reaches them: a symlink on the way is
// followed as far as the path exists, the rest kept as written.
#include "host/adapters/host_paths.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/testing/temp_dir.h"

namespace mesh::adapters {
namespace {

TEST(HostPathsTest, ALinkOnTheWayIsFollowedAsFarAsThePathExists) {
  testing::TempDir dir;
  std::string real = std::filesystem::canonical(dir.path()).string();
  std::filesystem::create_directories(real + "/gen");
  std::filesystem::create_symlink(real + "/gen", real + "/current");
  { std::ofstream(real + "/gen/gen-12.json") << "{}"; }
  std::filesystem::create_symlink("gen-12.json", real + "/gen/d.json");
  EXPECT_EQ(ResolvedPath(real + "/current"), real + "/gen");
  EXPECT_EQ(ResolvedPath(real + "/current/d.json"), real + "/gen/gen-12.json")
      << "the link's own name is where it leads";
  EXPECT_EQ(ResolvedPath(real + "/current/not/yet"), real + "/gen/not/yet");
  EXPECT_EQ(ResolvedPath(real + "/current/not/yet/"), real + "/gen/not/yet");
  EXPECT_EQ(ResolvedPath(""), "");
  EXPECT_EQ(ResolvedPath("/"), "/");
}

TEST(HostPathsTest, ARelativePathIsTakenFromTheWorkingDirectory) {
  char* cwd = ::getcwd(nullptr, 0);
  ASSERT_NE(cwd, nullptr);
  EXPECT_EQ(AbsolutePath("a/b.json").value(), std::string(cwd) + "/a/b.json");
  std::free(cwd);
  EXPECT_EQ(AbsolutePath("/etc/x").value(), "/etc/x");
  EXPECT_EQ(AbsolutePath("").value(), "");
}

}  // namespace
}  // namespace mesh::adapters
