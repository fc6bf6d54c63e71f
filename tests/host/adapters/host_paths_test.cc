// The host's places as the kernel reaches them: a symlink on the way is
// followed as far as the path exists, the rest kept as written.
#include "host/adapters/host_paths.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

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

// Each link the way to the declaration goes through, where it lies: a
// chain of links, one reached through a linked directory, a relative and
// an absolute target, ".." after a link. A loop ends, as the kernel's.
TEST(HostPathsTest, EveryLinkOnTheWayIsNamedWhereItLies) {
  testing::TempDir dir;
  std::string real = std::filesystem::canonical(dir.path()).string();
  std::filesystem::create_directories(real + "/etc/gens");
  { std::ofstream(real + "/etc/gens/gen-6.json") << "{}"; }
  std::filesystem::create_symlink("gens", real + "/etc/gdir");
  std::filesystem::create_symlink("gdir/../gdir/gen-6.json", real + "/etc/mid.json");
  std::filesystem::create_symlink(real + "/etc/mid.json", real + "/etc/current.json");
  std::filesystem::create_symlink(real + "/etc", real + "/etclink");
  EXPECT_EQ(
      LinksOnTheWay(real + "/etclink/current.json"),
      (std::vector<std::string>{real + "/etclink", real + "/etc/current.json",
                                real + "/etc/mid.json", real + "/etc/gdir", real + "/etc/gdir"}));
  EXPECT_EQ(LinksOnTheWay(real + "/etc/gens/gen-6.json"), std::vector<std::string>())
      << "no link on the way";
  EXPECT_EQ(LinksOnTheWay(real + "/etc/not-there/x"), std::vector<std::string>());
  EXPECT_EQ(LinksOnTheWay(""), std::vector<std::string>());
  std::filesystem::create_symlink("b", real + "/a");
  std::filesystem::create_symlink("a", real + "/b");
  EXPECT_EQ(LinksOnTheWay(real + "/a").size(), 40u) << "a loop ends at the kernel's limit";
}

// Every directory the way enters, each once: those above each link, those
// a link leads through, and those a `..` climbs back through, which are
// not on the file's real path.
TEST(HostPathsTest, EveryDirectoryTheWayEntersIsNamed) {
  testing::TempDir dir;
  std::string real = std::filesystem::canonical(dir.path()).string();
  std::filesystem::create_directories(real + "/safe");
  std::filesystem::create_directories(real + "/evil/sub");
  std::filesystem::create_directories(real + "/other/in");
  { std::ofstream(real + "/safe/real.json") << "{}"; }
  std::filesystem::create_symlink("../../safe/real.json", real + "/other/in/lnk");
  TheWay climbed = TheWayTo(real + "/evil/sub/../../safe/real.json");
  EXPECT_TRUE(climbed.links.empty());
  std::vector<std::string> prefix;
  for (size_t at = real.find('/', 1); at != std::string::npos; at = real.find('/', at + 1)) {
    prefix.push_back(real.substr(0, at));
  }
  auto with = [&](std::vector<std::string> tail) {
    std::vector<std::string> all{"/"};
    all.insert(all.end(), prefix.begin(), prefix.end());
    all.push_back(real);
    all.insert(all.end(), tail.begin(), tail.end());
    return all;
  };
  EXPECT_EQ(climbed.directories, with({real + "/evil", real + "/evil/sub", real + "/safe"}));
  TheWay linked = TheWayTo(real + "/other/in/lnk");
  EXPECT_EQ(linked.links, std::vector<std::string>{real + "/other/in/lnk"});
  EXPECT_EQ(linked.directories, with({real + "/other", real + "/other/in", real + "/safe"}));
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
