// The record decides what the host deletes, so whose it is matters.
#include "host/adapters/file_record_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "tests/testing/temp_dir.h"

namespace mesh::adapters {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;
using testing::WriteText;

constexpr uid_t kNobody = 65534;

const char* kPlanted =
    R"({"version":1,"machine":"m","generation":1,"declaration_digest":"x","resources":{)"
    R"("shadow":{"kind":"file","path":"/etc/shadow","digest":"d","applied_at":"t"}}})";

class FileRecordStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory to another user";
    std::filesystem::create_directories(state_);
    ::chmod(state_.c_str(), 0700);
  }
  TempDir dir_;
  std::string state_ = dir_.Sub("state");
};

TEST_F(FileRecordStoreTest, ItsOwnDirectoryOpensAndSaves) {
  auto store = FileRecordStore::Open(state_, /*create=*/true);
  ASSERT_TRUE(store.has_value()) << store.error().message;
  core::Record record;
  record.machine = "m";
  ASSERT_TRUE((*store)->Save(record).has_value());
  auto again = FileRecordStore::Open(state_, /*create=*/true);
  ASSERT_TRUE(again.has_value()) << again.error().message;
  auto loaded = (*again)->Load();
  ASSERT_TRUE(loaded.has_value()) << loaded.error().message;
  EXPECT_EQ((*loaded)->machine, "m");
}

TEST_F(FileRecordStoreTest, ADirectoryOwnedBySomeoneElseIsRefused) {
  WriteText(state_ + "/state.json", kPlanted, 0600);
  ASSERT_EQ(::chown(state_.c_str(), kNobody, kNobody), 0);
  for (bool create : {true, false}) {
    auto store = FileRecordStore::Open(state_, create);
    ASSERT_FALSE(store.has_value());
    EXPECT_THAT(store.error().message, HasSubstr(state_ + " is owned by uid 65534"));
  }
  struct stat st;
  ASSERT_EQ(::stat(state_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u) << "a refused directory is not chmod'ed";
}

TEST_F(FileRecordStoreTest, ARecordOwnedBySomeoneElseIsRefused) {
  WriteText(state_ + "/state.json", kPlanted, 0600);
  ASSERT_EQ(::chown((state_ + "/state.json").c_str(), kNobody, kNobody), 0);
  auto store = FileRecordStore::Open(state_, /*create=*/true);
  ASSERT_FALSE(store.has_value());
  EXPECT_THAT(store.error().message, HasSubstr("/state.json is owned by uid 65534"));
}

TEST_F(FileRecordStoreTest, ARecordPlantedAfterOpeningIsRefusedWhenRead) {
  auto store = FileRecordStore::Open(state_, /*create=*/true, /*keep=*/false);
  ASSERT_TRUE(store.has_value()) << store.error().message;
  WriteText(state_ + "/intent.json", R"({"version":1,"applying":true,"owed":{}})", 0600);
  ASSERT_EQ(::chown((state_ + "/intent.json").c_str(), kNobody, kNobody), 0);
  WriteText(state_ + "/state.json", kPlanted, 0666);
  auto loaded = (*store)->Load();
  ASSERT_FALSE(loaded.has_value());
  EXPECT_THAT(loaded.error().message, HasSubstr("has mode 0666, writable by group or others"));
  struct Nothing : core::RecordVisitor {
    bool Header(const core::Record&) override { return true; }
    bool Entry(const std::string&, const core::RecordEntry&) override { return true; }
  } visitor;
  EXPECT_FALSE((*store)->Scan(visitor).has_value());
  auto intent = (*store)->LoadIntent();
  ASSERT_FALSE(intent.has_value());
  EXPECT_THAT(intent.error().message, HasSubstr("intent.json is owned by uid 65534"));
}

TEST_F(FileRecordStoreTest, AGroupWritableDirectoryIsRefused) {
  ::chmod(state_.c_str(), 0770);
  auto store = FileRecordStore::Open(state_, /*create=*/false);
  ASSERT_FALSE(store.has_value());
  EXPECT_THAT(store.error().message, HasSubstr("has mode 0770"));
}

// The key of credentials' digests: made once, 0600, kept; a key another
// user could read (or write) is not used; plan makes none.
TEST_F(FileRecordStoreTest, TheDigestKeyIsMadeOnceAndKeptSecret) {
  std::string key_path = state_ + "/digest.key";
  {
    auto plan = FileRecordStore::Open(state_, /*create=*/false);
    ASSERT_TRUE(plan.has_value()) << plan.error().message;
    auto key = (*plan)->LoadDigestKey();
    EXPECT_EQ(key.bytes.size(), 32u);
    EXPECT_EQ(key.warning, "");
    EXPECT_FALSE(std::filesystem::exists(key_path)) << "plan made a key";
  }
  auto store = FileRecordStore::Open(state_, /*create=*/true);
  ASSERT_TRUE(store.has_value()) << store.error().message;
  auto made = (*store)->LoadDigestKey();
  EXPECT_EQ(made.warning, "");
  ASSERT_EQ(made.bytes.size(), 32u);
  struct stat st;
  ASSERT_EQ(::stat(key_path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_size, 32);

  auto again = FileRecordStore::Open(state_, /*create=*/true);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ((*again)->LoadDigestKey().bytes, made.bytes) << "a second process, another key";

  ::chmod(key_path.c_str(), 0644);
  auto exposed = FileRecordStore::Open(state_, /*create=*/true);
  ASSERT_TRUE(exposed.has_value());
  auto key = (*exposed)->LoadDigestKey();
  EXPECT_NE(key.bytes, made.bytes) << "a key others could read was used";
  EXPECT_THAT(key.warning, HasSubstr("digest.key: not a 32-byte file of mode 0600"));
  EXPECT_THAT(key.warning, HasSubstr("compared by its content"));

  ::chmod(key_path.c_str(), 0600);
  ASSERT_EQ(::chown(key_path.c_str(), kNobody, kNobody), 0);
  auto planted = FileRecordStore::Open(state_, /*create=*/true);
  ASSERT_TRUE(planted.has_value());
  key = (*planted)->LoadDigestKey();
  EXPECT_NE(key.bytes, made.bytes);
  EXPECT_THAT(key.warning, HasSubstr("owned by uid 65534"));
}

}  // namespace
}  // namespace mesh::adapters
