#include "host/adapters/libarchive_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "host/core/want.h"
#include "tests/testing/tar_builder.h"

namespace mesh::adapters {
namespace {

using testing::BuildTar;
using ::testing::HasSubstr;
using testing::TarMember;

TEST(LibarchiveReaderTest, ReadsFilesAndDirectories) {
  LibarchiveReader reader;
  auto entries = reader.Read(BuildTar({{TarMember::kDir, "bin", "", 0755},
                                       {TarMember::kFile, "bin/serve", "#!/bin/sh\n", 0755}}),
                             1ull << 30);
  ASSERT_TRUE(entries.has_value()) << entries.error().message;
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[1].content, "#!/bin/sh\n");
  EXPECT_EQ((*entries)[1].mode, 0755u);
}

TEST(LibarchiveReaderTest, PlainTarToo) {
  LibarchiveReader reader;
  auto entries = reader.Read(BuildTar({{TarMember::kFile, "a", "x"}}, /*gzip=*/false), 1ull << 30);
  ASSERT_TRUE(entries.has_value());
  EXPECT_EQ(entries->size(), 1u);
}

// The reader reports hostile members faithfully; the core refuses them.
TEST(LibarchiveReaderTest, HostileMembersAreRefusedByTheCore) {
  LibarchiveReader reader;
  struct Case {
    TarMember member;
    const char* why;
  } cases[] = {
      {{TarMember::kFile, "../escape", "x"}, "climbs out"},
      {{TarMember::kFile, "/etc/passwd", "x"}, "is absolute"},
      {{TarMember::kSymlink, "link", "/etc/shadow"}, "is a symlink"},
      {{TarMember::kHardlink, "hard", "/etc/shadow"}, "is a hard link"},
      {{TarMember::kFifo, "fifo", ""}, "device, fifo or socket"},
  };
  for (const Case& c : cases) {
    auto entries = reader.Read(BuildTar({c.member}), 1ull << 30);
    ASSERT_TRUE(entries.has_value()) << c.member.name;
    auto checked = core::CheckBundleEntries(*entries);
    ASSERT_FALSE(checked.has_value()) << c.member.name;
    EXPECT_THAT(checked.error().message, HasSubstr(c.why));
  }
}

TEST(LibarchiveReaderTest, GarbageIsAnError) {
  LibarchiveReader reader;
  auto entries = reader.Read("this is not a tar file at all, not even close........", 1ull << 30);
  EXPECT_FALSE(entries.has_value());
}

// What an apply holds of its bundles is bounded: the reader stops at the
// budget it is given, before allocating past it.
TEST(LibarchiveReaderTest, StopsAtTheBudgetItIsGiven) {
  LibarchiveReader reader;
  std::string tar = BuildTar({{TarMember::kFile, "a", std::string(3000, 'a')},
                              {TarMember::kFile, "b", std::string(3000, 'b')}});
  EXPECT_TRUE(reader.Read(tar, 6000).has_value());
  auto over = reader.Read(tar, 5999);
  ASSERT_FALSE(over.has_value());
  EXPECT_EQ(over.error().message, "bundle expands beyond 5999 bytes");
}

}  // namespace
}  // namespace mesh::adapters
