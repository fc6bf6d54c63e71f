// LinuxEventSource on the real kernel: what one wait reads is what the
// daemon must act on — a stop before anything else, a reload without the
// change read with it — and a watched directory replaced is watched again.
#include "host/adapters/linux_event_source.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <thread>

#include "tests/testing/temp_dir.h"

namespace mesh::adapters {
namespace {

using Kind = ports::Event::Kind;
using std::chrono::milliseconds;

class LinuxEventSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    BlockDaemonSignals();
    std::filesystem::create_directories(dir_.Sub("etc"));
    std::string warning;
    auto opened = LinuxEventSource::Open(dir_.Sub("etc/declaration.json"), &warning);
    ASSERT_TRUE(opened.has_value()) << opened.error().message;
    ASSERT_EQ(warning, "");
    events_ = std::move(*opened);
  }
  void Replace() {
    testing::WriteText(dir_.Sub("etc/.next"), "{}");
    std::filesystem::rename(dir_.Sub("etc/.next"), dir_.Sub("etc/declaration.json"));
  }
  testing::TempDir dir_;
  std::unique_ptr<LinuxEventSource> events_;
};

TEST_F(LinuxEventSourceTest, AReplacedDeclarationIsOneChange) {
  Replace();
  EXPECT_EQ(events_->Wait(milliseconds(1000)).kind, Kind::kDeclarationChanged);
  EXPECT_EQ(events_->Wait(milliseconds(20)).kind, Kind::kTimeout);
}

// A declaration refused for its mode (it holds credentials, others can
// read it) is mended by the chmod its refusal asks for: nothing else of
// it changes, and that chmod must be seen.
TEST_F(LinuxEventSourceTest, AChmodOfTheDeclarationIsAChange) {
  Replace();
  ASSERT_EQ(events_->Wait(milliseconds(1000)).kind, Kind::kDeclarationChanged);
  std::filesystem::permissions(
      dir_.Sub("etc/declaration.json"),
      std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  EXPECT_EQ(events_->Wait(milliseconds(1000)).kind, Kind::kDeclarationChanged);
  testing::WriteText(dir_.Sub("etc/other"), "x");
  ASSERT_EQ(events_->Wait(milliseconds(200)).kind, Kind::kTimeout);
  std::filesystem::permissions(dir_.Sub("etc/other"), std::filesystem::perms::owner_read);
  EXPECT_EQ(events_->Wait(milliseconds(200)).kind, Kind::kTimeout)
      << "another file's mode is not the declaration's";
}

TEST_F(LinuxEventSourceTest, AStopComesFirstAndAloneAReloadCoversAChange) {
  Replace();
  ::raise(SIGHUP);
  EXPECT_EQ(events_->Wait(milliseconds(1000)).kind, Kind::kReload);
  EXPECT_EQ(events_->Wait(milliseconds(20)).kind, Kind::kTimeout)
      << "the change read with the reload is what the reload applies";
  Replace();
  ::raise(SIGHUP);
  ::raise(SIGTERM);
  ports::Event e = events_->Wait(milliseconds(1000));
  EXPECT_EQ(e.kind, Kind::kStop) << "not held up behind the reload's apply";
  EXPECT_EQ(events_->Wait(milliseconds(20)).kind, Kind::kTimeout);
}

TEST_F(LinuxEventSourceTest, AReplacedDirectoryIsWatchedAgain) {
  std::filesystem::remove_all(dir_.Sub("etc"));
  EXPECT_EQ(events_->Wait(milliseconds(200)).kind, Kind::kTimeout);  // the watch is gone
  std::filesystem::create_directories(dir_.Sub("etc"));
  EXPECT_EQ(events_->Wait(milliseconds(200)).kind, Kind::kDeclarationChanged)
      << "watched again, and what happened meanwhile may have been a change";
  Replace();
  EXPECT_EQ(events_->Wait(milliseconds(1000)).kind, Kind::kDeclarationChanged);
}

// The watch follows the directory it was made on: one moved away for a
// new one in its place (or a link to it re-pointed, a release layout) was
// still watched where it went, and every change in its successor waited
// for the interval.
TEST_F(LinuxEventSourceTest, ADirectoryMovedAwayForAnotherIsWatchedWhereTheNameLeads) {
  namespace fs = std::filesystem;
  fs::create_directories(dir_.Sub("etc.new"));
  testing::WriteText(dir_.Sub("etc.new/declaration.json"), "{\"v\": 2}");
  fs::rename(dir_.Sub("etc"), dir_.Sub("etc.old"));
  fs::rename(dir_.Sub("etc.new"), dir_.Sub("etc"));
  EXPECT_EQ(events_->Wait(milliseconds(1000)).kind, Kind::kDeclarationChanged);
  EXPECT_EQ(events_->Wait(milliseconds(20)).kind, Kind::kTimeout) << "one change";
  Replace();
  EXPECT_EQ(events_->Wait(milliseconds(1000)).kind, Kind::kDeclarationChanged)
      << "the new directory is the one watched";
  testing::WriteText(dir_.Sub("etc.old/declaration.json"), "{}");
  EXPECT_EQ(events_->Wait(milliseconds(200)).kind, Kind::kTimeout) << "the old one is not";

  // etc a link to a release directory, re-pointed to the next.
  fs::rename(dir_.Sub("etc"), dir_.Sub("rel1"));
  fs::create_directories(dir_.Sub("rel2"));
  testing::WriteText(dir_.Sub("rel2/declaration.json"), "{\"v\": 3}");
  fs::create_directory_symlink("rel1", dir_.Sub("etc"));
  ASSERT_EQ(events_->Wait(milliseconds(1000)).kind, Kind::kDeclarationChanged);
  fs::create_directory_symlink("rel2", dir_.Sub("etc.next"));
  fs::rename(dir_.Sub("etc.next"), dir_.Sub("etc"));
  EXPECT_EQ(events_->Wait(milliseconds(1000)).kind, Kind::kDeclarationChanged);
  testing::WriteText(dir_.Sub("rel2/.next"), "{}");
  fs::rename(dir_.Sub("rel2/.next"), dir_.Sub("rel2/declaration.json"));
  EXPECT_EQ(events_->Wait(milliseconds(1000)).kind, Kind::kDeclarationChanged)
      << "a change inside the release the link leads to now";
}

// Spelled with "//" or "/./", the declaration's directory split as "its
// directory's parent, name ''": the watch of the directory above was made
// on the directory itself, in place of its own, and nothing was seen.
TEST(LinuxEventSourceSpelledTest, ADeclarationSpelledWithDoubleSlashesIsWatched) {
  BlockDaemonSignals();
  testing::TempDir dir;
  std::filesystem::create_directories(dir.Sub("etc"));
  for (std::string spelled : {"etc//declaration.json", "etc/./declaration.json"}) {
    std::string warning;
    auto events = LinuxEventSource::Open(dir.Sub(spelled), &warning);
    ASSERT_TRUE(events.has_value()) << events.error().message;
    testing::WriteText(dir.Sub("etc/.next"), "{}");
    std::filesystem::rename(dir.Sub("etc/.next"), dir.Sub("etc/declaration.json"));
    EXPECT_EQ((*events)->Wait(milliseconds(1000)).kind, Kind::kDeclarationChanged) << spelled;
  }
}

// A declaration that is a link into the directory above its own: that
// directory is watched twice, for the link's target and for its own name.
TEST_F(LinuxEventSourceTest, ALinkIntoTheDirectoryAboveIsFollowed) {
  testing::WriteText(dir_.Sub("decl.json"), "{}");
  std::filesystem::create_symlink("../decl.json", dir_.Sub("etc/declaration.json"));
  ASSERT_EQ(events_->Wait(milliseconds(1000)).kind, Kind::kDeclarationChanged);
  testing::WriteText(dir_.Sub(".next"), "{\"v\": 2}");
  std::filesystem::rename(dir_.Sub(".next"), dir_.Sub("decl.json"));
  EXPECT_EQ(events_->Wait(milliseconds(1000)).kind, Kind::kDeclarationChanged);
}

// A Kubernetes volume: declaration.json is a link through "..data", which
// is swapped to a new directory by a rename; nothing named declaration.json
// moves, and what it leads to is new.
TEST_F(LinuxEventSourceTest, ADeclarationSwappedThroughALinkIsAChange) {
  namespace fs = std::filesystem;
  auto version = [&](const std::string& v) {
    fs::create_directories(dir_.Sub("etc/.." + v));
    testing::WriteText(dir_.Sub("etc/.." + v + "/declaration.json"), "{\"v\": \"" + v + "\"}");
    fs::create_symlink(".." + v, dir_.Sub("etc/..data_tmp"));
    fs::rename(dir_.Sub("etc/..data_tmp"), dir_.Sub("etc/..data"));
  };
  version("v1");
  fs::create_symlink("..data/declaration.json", dir_.Sub("etc/declaration.json"));
  EXPECT_EQ(events_->Wait(milliseconds(1000)).kind, Kind::kDeclarationChanged);
  EXPECT_EQ(events_->Wait(milliseconds(20)).kind, Kind::kTimeout);
  version("v2");
  fs::remove_all(dir_.Sub("etc/..v1"));
  EXPECT_EQ(events_->Wait(milliseconds(1000)).kind, Kind::kDeclarationChanged)
      << "declaration.json leads to another file now";
  EXPECT_EQ(events_->Wait(milliseconds(20)).kind, Kind::kTimeout);
  // Other names coming and going, the declaration the same: no change.
  testing::WriteText(dir_.Sub("etc/notes.txt"), "x");
  EXPECT_EQ(events_->Wait(milliseconds(200)).kind, Kind::kTimeout);
}

// A declaration that is a link into another directory (a release
// directory): a new file renamed over its target there, or the target
// written in place, changes nothing in the declaration's own directory.
// Before, neither was seen until the next interval or SIGHUP.
TEST_F(LinuxEventSourceTest, ALinkIntoAnotherDirectoryIsFollowed) {
  namespace fs = std::filesystem;
  fs::create_directories(dir_.Sub("rel"));
  testing::WriteText(dir_.Sub("rel/cur.json"), "{\"v\": 1}");
  fs::create_symlink(dir_.Sub("rel/cur.json"), dir_.Sub("etc/declaration.json"));
  EXPECT_EQ(events_->Wait(milliseconds(1000)).kind, Kind::kDeclarationChanged);
  EXPECT_EQ(events_->Wait(milliseconds(20)).kind, Kind::kTimeout);
  testing::WriteText(dir_.Sub("rel/.next"), "{\"v\": 2}");
  fs::rename(dir_.Sub("rel/.next"), dir_.Sub("rel/cur.json"));
  EXPECT_EQ(events_->Wait(milliseconds(1000)).kind, Kind::kDeclarationChanged)
      << "renamed over in the target's directory";
  EXPECT_EQ(events_->Wait(milliseconds(20)).kind, Kind::kTimeout);
  testing::WriteText(dir_.Sub("rel/cur.json"), "{\"v\": 3, \"longer\": true}");
  EXPECT_EQ(events_->Wait(milliseconds(1000)).kind, Kind::kDeclarationChanged)
      << "written in place";
  testing::WriteText(dir_.Sub("rel/notes.txt"), "x");
  EXPECT_EQ(events_->Wait(milliseconds(200)).kind, Kind::kTimeout)
      << "another file there is not the declaration";
  // Replaced by unlink and create (install, cp --remove-destination): the
  // file made again is seen, though the link led nowhere for a moment.
  fs::remove(dir_.Sub("rel/cur.json"));
  EXPECT_EQ(events_->Wait(milliseconds(1000)).kind, Kind::kDeclarationChanged);
  testing::WriteText(dir_.Sub("rel/cur.json"), "{\"v\": 4}");
  EXPECT_EQ(events_->Wait(milliseconds(1000)).kind, Kind::kDeclarationChanged)
      << "made again after a moment missing";
}

// The declaration's directory made after the daemon started (by whoever
// pushes the first declaration): watched from when it is there.
TEST(LinuxEventSourceLateTest, ADirectoryMadeAfterTheStartIsWatchedOnceItIs) {
  BlockDaemonSignals();
  testing::TempDir dir;
  std::string warning;
  auto events = LinuxEventSource::Open(dir.Sub("etc/declaration.json"), &warning);
  ASSERT_TRUE(events.has_value()) << events.error().message;
  EXPECT_NE(warning.find("until it can be"), std::string::npos) << warning;
  EXPECT_EQ((*events)->Wait(milliseconds(50)).kind, Kind::kTimeout);
  std::filesystem::create_directories(dir.Sub("etc"));
  EXPECT_EQ((*events)->Wait(milliseconds(200)).kind, Kind::kDeclarationChanged);
  testing::WriteText(dir.Sub("etc/.next"), "{}");
  std::filesystem::rename(dir.Sub("etc/.next"), dir.Sub("etc/declaration.json"));
  EXPECT_EQ((*events)->Wait(milliseconds(1000)).kind, Kind::kDeclarationChanged);
}

// ... also within one long wait, as the daemon's (up to its interval):
// before, the directory was tried again only when the wait ended.
TEST(LinuxEventSourceLateTest, ADirectoryMadeDuringALongWaitIsWatchedWithinIt) {
  BlockDaemonSignals();
  testing::TempDir dir;
  std::string warning;
  auto events = LinuxEventSource::Open(dir.Sub("etc/declaration.json"), &warning);
  ASSERT_TRUE(events.has_value()) << events.error().message;
  std::thread maker([&] {
    std::this_thread::sleep_for(milliseconds(100));
    std::filesystem::create_directories(dir.Sub("etc"));
  });
  ports::Event got = (*events)->Wait(std::chrono::seconds(5));
  maker.join();
  EXPECT_EQ(got.kind, Kind::kDeclarationChanged) << "the wait ran out first";
}

}  // namespace
}  // namespace mesh::adapters
