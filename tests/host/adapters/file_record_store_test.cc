// The record decides what the host deletes, so whose it is matters.
#include "host/adapters/file_record_store.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/testing/record_json.h"
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

// One apply at a time per state directory, even when the lock file is
// deleted under a holder (an operator taking it for a stale one): the
// next process made a new lock file, locked it, and two applies ran at
// once, each saving its own record over the other's.
TEST_F(FileRecordStoreTest, ALockFileDeletedUnderItsHolderStillLocks) {
  auto holder = FileRecordStore::Open(state_, /*create=*/true);
  ASSERT_TRUE(holder.has_value()) << holder.error().message;
  ASSERT_TRUE((*holder)->Lock().has_value());
  auto second = FileRecordStore::Open(state_, /*create=*/true);
  ASSERT_TRUE(second.has_value()) << second.error().message;
  auto refused = (*second)->Lock();
  ASSERT_FALSE(refused.has_value());
  // What to do instead of a second apply.
  EXPECT_THAT(
      refused.error().message,
      HasSubstr("another mesh-host process holds " + state_ +
                "/lock: one process applies a state directory at a time (while `mesh-host "
                "run` holds it, `systemctl reload mesh-host` or SIGHUP makes it apply now)"));
  ASSERT_EQ(::unlink((state_ + "/lock").c_str()), 0);
  auto third = FileRecordStore::Open(state_, /*create=*/true);
  ASSERT_TRUE(third.has_value()) << third.error().message;
  auto also_refused = (*third)->Lock();
  ASSERT_FALSE(also_refused.has_value()) << "two holders at once";
  EXPECT_THAT(also_refused.error().message, HasSubstr("another mesh-host process holds"));
  holder->reset();
  auto now = FileRecordStore::Open(state_, /*create=*/true);
  ASSERT_TRUE(now.has_value()) << now.error().message;
  EXPECT_TRUE((*now)->Lock().has_value()) << "released with its holder";
  now->reset();
  // A --state-dir that is a link (/var/lib/mesh-host -> /data/...) locks
  // the directory it names.
  std::string link = dir_.Sub("state-link");
  ASSERT_EQ(::symlink(state_.c_str(), link.c_str()), 0);
  auto linked = FileRecordStore::Open(link, /*create=*/true);
  ASSERT_TRUE(linked.has_value()) << linked.error().message;
  auto locked = (*linked)->Lock();
  EXPECT_TRUE(locked.has_value()) << locked.error().message;
}

// A refused apply on a new machine takes back what it made, and nothing
// else: a state directory that was there (or that another process made
// first), and a digest key it did not write, belong to a record that may
// use them. Before, the lock and digest.key were removed wherever the
// caller said the directory was missing when it looked.
TEST_F(FileRecordStoreTest, WhatARefusalLeftIsRemovedOnlyWhereThisProcessMadeIt) {
  WriteText(state_ + "/digest.key", std::string(32, 'k'));
  ::chmod((state_ + "/digest.key").c_str(), 0600);
  std::vector<std::string> made;
  auto there = FileRecordStore::Open(state_, /*create=*/true, false, &made);
  ASSERT_TRUE(there.has_value()) << there.error().message;
  EXPECT_TRUE(made.empty());
  ASSERT_TRUE((*there)->Lock().has_value());
  (*there)->RemoveWhatARefusalLeft();
  EXPECT_TRUE(std::filesystem::exists(state_ + "/lock"));
  EXPECT_TRUE(std::filesystem::exists(state_ + "/digest.key"));
  there->reset();
  // Named through a directory that is missing: `new` is made, the state
  // directory it leads to was there.
  std::string via = dir_.Sub("new") + "/../state";
  auto through = FileRecordStore::Open(via, /*create=*/true, false, &made);
  ASSERT_TRUE(through.has_value()) << through.error().message;
  EXPECT_THAT(made, ::testing::ElementsAre(dir_.Sub("new")));
  (*through)->RemoveWhatARefusalLeft();
  EXPECT_TRUE(std::filesystem::exists(state_ + "/digest.key"));
  through->reset();
  // Made here: its lock and the key it wrote go, and the directory with them.
  made.clear();
  std::string fresh = dir_.Sub("fresh") + "/state";
  auto mine = FileRecordStore::Open(fresh, /*create=*/true, false, &made);
  ASSERT_TRUE(mine.has_value()) << mine.error().message;
  EXPECT_THAT(made, ::testing::ElementsAre(dir_.Sub("fresh"), fresh));
  ASSERT_TRUE((*mine)->Lock().has_value());
  ASSERT_FALSE((*mine)->LoadDigestKey().bytes.empty());
  ASSERT_TRUE(std::filesystem::exists(fresh + "/digest.key"));
  (*mine)->RemoveWhatARefusalLeft();
  EXPECT_EQ(::rmdir(fresh.c_str()), 0) << "left in it: lock or digest.key";
  // Made by the caller's own mkdir before (a unit directory inside it,
  // made first), or named with a "." at its end: still this process's.
  for (const std::string& spelled :
       {dir_.Sub("outer"), dir_.Sub("dotted") + "/.", dir_.Sub("a") + "/./b"}) {
    SCOPED_TRACE(spelled);
    made.clear();
    std::string real = std::filesystem::path(spelled).lexically_normal().string();
    if (real.ends_with('/')) real.pop_back();
    if (spelled.ends_with("outer")) {
      ASSERT_TRUE(PosixFileSystem::Open(spelled + "/units", /*create=*/true, &made).has_value());
    }
    auto again = FileRecordStore::Open(spelled, /*create=*/true, false, &made);
    ASSERT_TRUE(again.has_value()) << again.error().message;
    ASSERT_TRUE((*again)->Lock().has_value());
    (*again)->RemoveWhatARefusalLeft();
    EXPECT_FALSE(std::filesystem::exists(real + "/lock")) << "the lock of a directory it made";
  }
}

// What Scan hands over, written out: header, entries, verdict.
class Listing : public core::RecordVisitor {
 public:
  bool Header(const core::Record& header) override {
    text += "header " + header.machine + "\n";
    return true;
  }
  bool Entry(const std::string& id, const core::RecordEntry& entry) override {
    text += id + " " + entry.digest + " " + entry.applied_at + "\n";
    return true;
  }
  std::string text;
};

// A record of `n` files, f0 to f(n-1).
core::Record Files(int n) {
  core::Record record;
  record.machine = "m";
  for (int i = 0; i < n; ++i) {
    core::RecordEntry e;
    e.kind = "file";
    e.digest = "sha256:" + std::to_string(i);
    e.applied_at = "2026-12-02T01:02:03.000Z";
    e.written.push_back({"/etc/f-" + std::to_string(i), "1:2:3", "", 0, false});
    record.resources["f" + std::to_string(i)] = e;
  }
  return record;
}

// Needs no root: the state directory is this user's own.
class FileRecordStoreReadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(state_);
    ::chmod(state_.c_str(), 0700);
  }
  TempDir dir_;
  std::string state_ = dir_.Sub("state");
};

// A small record is read whole, a large one streamed:
// the store must read the same file the same way either way, a damaged one
// with the same words.
TEST_F(FileRecordStoreReadTest, ARecordReadWholeOrStreamedReadsAlike) {
  core::Record record = Files(50);
  auto writer = FileRecordStore::Open(state_, /*create=*/true);
  ASSERT_TRUE(writer.has_value()) << writer.error().message;
  ASSERT_TRUE((*writer)->Save(record).has_value());
  std::string good = core::SerializeRecord(record);
  std::string damaged = good.substr(0, good.size() / 2);
  for (const std::string& text : {good, damaged}) {
    WriteText(state_ + "/state.json", text);
    std::string seen[2];
    for (uint64_t limit : {FileRecordStore::kWholeRecordBytes, uint64_t{0}}) {
      auto store = FileRecordStore::Open(state_, /*create=*/false);
      ASSERT_TRUE(store.has_value()) << store.error().message;
      (*store)->set_whole_record_bytes(limit);
      auto loaded = (*store)->Load();
      Listing listing;
      auto scanned = (*store)->Scan(listing);
      std::string& out = seen[limit == 0];
      out = loaded ? "loaded " + std::to_string((*loaded)->resources.size()) + "\n"
                   : "refused " + loaded.error().message + "\n";
      out += listing.text + (scanned ? "scanned " + std::to_string(*scanned)
                                     : "refused " + scanned.error().message);
      if (loaded) EXPECT_EQ(**loaded, record);
    }
    EXPECT_EQ(seen[0], seen[1]);
    EXPECT_THAT(seen[0], HasSubstr(text == good ? "f49 sha256:49" : "refused state: "));
  }
}

// A record an older host wrote (version 1: one document, in any layout) is
// read whole or streamed alike, and what it holds is what the host's own
// record of today holds.
TEST_F(FileRecordStoreReadTest, ARecordOfVersion1ReadsWholeOrStreamed) {
  core::Record record = Files(20);
  record.declaration_digest = "d";
  std::string today = core::SerializeRecord(record);
  nlohmann::json old = testing::RecordJson(today);
  std::string expected;
  for (const std::string& text :
       {today, testing::Version1Text(old, 2), testing::Version1Text(old)}) {
    WriteText(state_ + "/state.json", text);
    for (uint64_t limit : {FileRecordStore::kWholeRecordBytes, uint64_t{0}}) {
      auto store = FileRecordStore::Open(state_, /*create=*/false);
      ASSERT_TRUE(store.has_value()) << store.error().message;
      (*store)->set_whole_record_bytes(limit);
      Listing listing;
      auto scanned = (*store)->Scan(listing);
      ASSERT_TRUE(scanned.has_value()) << scanned.error().message;
      EXPECT_TRUE(*scanned);
      if (expected.empty()) expected = listing.text;
      EXPECT_EQ(listing.text, expected) << text.substr(0, 40) << " limit " << limit;
      auto loaded = (*store)->Load();
      ASSERT_TRUE(loaded.has_value()) << loaded.error().message;
      EXPECT_EQ((*loaded)->version, text == today ? 2 : 1);
      EXPECT_EQ((*loaded)->resources, record.resources);
    }
  }
  EXPECT_THAT(expected, HasSubstr("f19 sha256:19"));
}

// The daemon's store keeps what it saved: a record read as version 1 and
// saved again (written as version 2) must be kept as version 2, or every
// later pass proves no no-op and rewrites the record. Fails when the store
// keeps the object it was handed as it was.
TEST_F(FileRecordStoreReadTest, ARecordOfVersion1SavedIsKeptAsTheVersionWritten) {
  core::Record record = Files(3);
  WriteText(state_ + "/state.json",
            testing::Version1Text(testing::RecordJson(core::SerializeRecord(record))));
  auto store = FileRecordStore::Open(state_, /*create=*/true, /*keep=*/true);
  ASSERT_TRUE(store.has_value()) << store.error().message;
  auto loaded = (*store)->Load();
  ASSERT_TRUE(loaded.has_value()) << loaded.error().message;
  EXPECT_EQ((*loaded)->version, 1);
  ASSERT_TRUE((*store)->Save(**loaded).has_value());
  auto again = (*store)->Load();
  ASSERT_TRUE(again.has_value()) << again.error().message;
  EXPECT_EQ((*again)->version, core::Record::kVersion);
  EXPECT_EQ((*again)->resources, record.resources);
  EXPECT_THAT(testing::ReadText(state_ + "/state.json"), ::testing::StartsWith(R"({"version":2,)"));
}

// A record built an entry at a time (a chunked apply's): the entries wait
// on disk, come out sorted by id, and the file is the one Save writes (of
// more than one 64 KiB piece).
TEST_F(FileRecordStoreReadTest, ARecordBuiltEntryByEntryIsTheOneSaveWrites) {
  core::Record record;
  record.want_version = core::Record::kWantVersion;
  record.machine = "m";
  record.generation = 3;
  record.declaration_digest = "d";
  record.settled_declaration_digest = "d";
  constexpr int kEntries = 1000;
  for (int k = 0; k < kEntries; ++k) {
    core::RecordEntry e;
    e.kind = "file";
    e.digest = "sha256:" + std::to_string(k * 7919 % kEntries);
    e.written.push_back(
        {"/srv/\"quoted\"/" + std::to_string(k), std::to_string(k) + ":1:2:3", "", 0, k % 2 == 0});
    e.applied_at = "t";
    e.position = static_cast<uint64_t>(k);
    record.resources.emplace("r" + std::to_string(k * 7919 % kEntries), e);
  }
  auto store = FileRecordStore::Open(state_, /*create=*/true);
  ASSERT_TRUE(store.has_value()) << store.error().message;
  auto builder = (*store)->BuildRecord();
  ASSERT_TRUE(builder.has_value()) << builder.error().message;
  // Added in another order than the ids'.
  for (int k = kEntries - 1; k >= 0; k -= 2) {
    std::string id = "r" + std::to_string(k);
    ASSERT_TRUE((*builder)->Add(id, record.resources.at(id)).has_value());
  }
  for (int k = 0; k < kEntries; k += 2) {
    std::string id = "r" + std::to_string(k);
    ASSERT_TRUE((*builder)->Add(id, record.resources.at(id)).has_value());
  }
  EXPECT_FALSE(std::filesystem::exists(state_ + "/state.json")) << "nothing before Commit";
  core::Record header = record;
  header.resources.clear();
  ASSERT_TRUE((*builder)->Commit(header).has_value());
  std::string text = core::SerializeRecord(record);
  ASSERT_GT(text.size(), 64u << 10);
  EXPECT_EQ(testing::ReadText(state_ + "/state.json"), text);
  builder->reset();
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(state_)) {
    left.push_back(e.path().filename().string());
  }
  EXPECT_THAT(left, ::testing::UnorderedElementsAre("state.json")) << "the spill has no name";
}

TEST_F(FileRecordStoreReadTest, ARecordBuiltWithAnIdTwiceIsNotSaved) {
  auto store = FileRecordStore::Open(state_, /*create=*/true);
  ASSERT_TRUE(store.has_value()) << store.error().message;
  core::Record old;
  old.machine = "old";
  ASSERT_TRUE((*store)->Save(old).has_value());
  auto builder = (*store)->BuildRecord();
  ASSERT_TRUE(builder.has_value()) << builder.error().message;
  core::RecordEntry e;
  e.kind = "file";
  ASSERT_TRUE((*builder)->Add("b", e).has_value());
  ASSERT_TRUE((*builder)->Add("a", e).has_value());
  ASSERT_TRUE((*builder)->Add("b", e).has_value());
  core::Record header;
  header.machine = "new";
  auto committed = (*builder)->Commit(header);
  ASSERT_FALSE(committed.has_value());
  EXPECT_THAT(committed.error().message, HasSubstr("record entry b added twice"));
  EXPECT_EQ(testing::ReadText(state_ + "/state.json"), core::SerializeRecord(old));
}

// The host only ever renames a new state.json over the old one: a record
// read whole that grows or shrinks while it is read is someone else's
// doing, refused as changed, not parsed in part.
TEST_F(FileRecordStoreReadTest, ARecordChangedWhileReadWholeIsRefused) {
  core::Record record;
  record.machine = "m";
  auto writer = FileRecordStore::Open(state_, /*create=*/true);
  ASSERT_TRUE(writer.has_value()) << writer.error().message;
  ASSERT_TRUE((*writer)->Save(record).has_value());
  std::string path = state_ + "/state.json";
  std::string text = core::SerializeRecord(record);
  for (bool grow : {true, false}) {
    WriteText(path, text, 0600);
    auto store = FileRecordStore::Open(state_, /*create=*/false);
    ASSERT_TRUE(store.has_value()) << store.error().message;
    (*store)->set_after_open_for_testing([&] {
      // In place, the same file: appended to, or cut short.
      if (grow) {
        int fd = ::open(path.c_str(), O_WRONLY | O_APPEND);
        ASSERT_GE(fd, 0);
        ASSERT_EQ(::write(fd, " ", 1), 1);
        ::close(fd);
      } else {
        ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(text.size() / 2)), 0);
      }
    });
    auto loaded = (*store)->Load();
    ASSERT_FALSE(loaded.has_value()) << (grow ? "grown" : "cut short");
    EXPECT_EQ(loaded.error().kind, core::ErrorKind::kChanged);
    EXPECT_THAT(loaded.error().message, HasSubstr("changed while it was read"));
  }
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

// Opened as the daemon's, then opened to others while it runs: another
// user could delete the intent (and what is owed with it) or plant a
// record. Each read looks at the directory again; before, only Open did.
TEST_F(FileRecordStoreTest, ADirectoryOpenedToOthersWhileOpenIsRefusedWhenRead) {
  for (bool keep : {true, false}) {
    auto store = FileRecordStore::Open(state_, /*create=*/true, keep);
    ASSERT_TRUE(store.has_value()) << store.error().message;
    ASSERT_EQ(::chmod(state_.c_str(), 0777), 0);
    auto loaded = (*store)->Load();
    ASSERT_FALSE(loaded.has_value());
    EXPECT_THAT(loaded.error().message, HasSubstr(state_ + " has mode 0777, writable by group"));
    EXPECT_FALSE((*store)->LoadIntent().has_value());
    EXPECT_FALSE((*store)->LoadLastGood().has_value());
    ASSERT_EQ(::chmod(state_.c_str(), 0700), 0);
    ASSERT_EQ(::chown(state_.c_str(), kNobody, kNobody), 0);
    auto owned = (*store)->LoadIntent();
    ASSERT_FALSE(owned.has_value());
    EXPECT_THAT(owned.error().message, HasSubstr(state_ + " is owned by uid 65534"));
    ASSERT_EQ(::chown(state_.c_str(), ::geteuid(), ::getegid()), 0);
    EXPECT_TRUE((*store)->Load().has_value()) << "its own again";
  }
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

// The store's files are named where the operator finds them: an error of
// "read /intent.json" sent them to the machine's root.
TEST_F(FileRecordStoreTest, AFileItCannotReadIsNamedInItsDirectory) {
  auto store = FileRecordStore::Open(state_, /*create=*/true, /*keep=*/false);
  ASSERT_TRUE(store.has_value()) << store.error().message;
  std::filesystem::create_directory(state_ + "/intent.json");
  std::filesystem::create_directory(state_ + "/state.json");
  auto intent = (*store)->LoadIntent();
  ASSERT_FALSE(intent.has_value());
  EXPECT_THAT(intent.error().message, HasSubstr(state_ + "/intent.json: not a regular file"));
  auto loaded = (*store)->Load();
  ASSERT_FALSE(loaded.has_value());
  EXPECT_THAT(loaded.error().message, HasSubstr(state_ + "/state.json"));
  core::Record record;
  record.machine = "m";
  auto saved = (*store)->Save(record);
  ASSERT_FALSE(saved.has_value());
  EXPECT_THAT(saved.error().message, HasSubstr(state_ + "/state.json"));
  // Given with a trailing slash, the directory is named once, as is a
  // digest key it cannot read.
  auto slashed = FileRecordStore::Open(state_ + "/", /*create=*/true, /*keep=*/false);
  ASSERT_TRUE(slashed.has_value()) << slashed.error().message;
  auto again = (*slashed)->LoadIntent();
  ASSERT_FALSE(again.has_value());
  EXPECT_THAT(again.error().message, HasSubstr(" " + state_ + "/intent.json:"));
  std::filesystem::create_directory(state_ + "/digest.key");
  auto key = (*slashed)->LoadDigestKey();
  EXPECT_THAT(key.warning, HasSubstr(state_ + "/digest.key"));
  EXPECT_EQ(key.warning.find("digest.key"), key.warning.rfind("digest.key")) << key.warning;
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

// The bundles of the last good: kept once, read back, pruned; a name that
// is not a sha256 makes no file.
TEST_F(FileRecordStoreTest, BundlesOfTheLastGoodAreKeptReadBackAndPruned) {
  auto store = FileRecordStore::Open(state_, /*create=*/true);
  ASSERT_TRUE(store.has_value()) << store.error().message;
  const std::string a(64, 'a');
  const std::string b(64, 'b');
  int reads = 0;
  auto bytes = [&reads](std::string content) {
    return [&reads, content]() -> core::Result<std::string> {
      ++reads;
      return content;
    };
  };
  ASSERT_TRUE((*store)->KeepArtifact(a, bytes("bundle a")).has_value());
  ASSERT_TRUE((*store)->KeepArtifact(a, bytes("other")).has_value());
  EXPECT_EQ(reads, 1) << "kept once: not read again";
  ASSERT_TRUE((*store)->KeepArtifact(b, bytes("bundle b")).has_value());
  EXPECT_EQ((*store)->KeptArtifact(a).value_or(""), "bundle a");
  struct stat st;
  ASSERT_EQ(::stat((state_ + "/kept-artifacts/" + a).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);

  EXPECT_FALSE((*store)->KeepArtifact("../state.json", bytes("x")).has_value());
  EXPECT_FALSE(std::filesystem::exists(state_ + "/state.json"));

  ASSERT_TRUE((*store)->KeepOnlyArtifacts({b}).has_value());
  EXPECT_FALSE((*store)->KeptArtifact(a).has_value());
  EXPECT_EQ((*store)->KeptArtifact(b).value_or(""), "bundle b");
  ASSERT_TRUE((*store)->KeepOnlyArtifacts({}).has_value());
  EXPECT_FALSE(std::filesystem::exists(state_ + "/kept-artifacts"));
}

}  // namespace
}  // namespace mesh::adapters
