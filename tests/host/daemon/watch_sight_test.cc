// WatchSight: a watch that cannot reach systemd is logged once, reported
// unseen only after a refresh period without sight, and cleared by the
// first look that works; the look after a failure reads every unit.
#include "host/daemon/watch_sight.h"

#include <gmock/gmock.h>

namespace mesh::daemon {
namespace {

using std::chrono::seconds;
using ::testing::HasSubstr;

// A step (a wait, a read) that failed as soon as it began: a bus gone.
WatchSight::Say FailedAtOnce(WatchSight& sight, const std::string& why, WatchSight::TimePoint t) {
  return sight.Failed(why, t, t);
}

TEST(WatchSightTest, BlindForARefreshPeriodIsSaidThenClearedBySight) {
  WatchSight sight(seconds(10));
  WatchSight::TimePoint t0{seconds(100)};
  EXPECT_FALSE(sight.failing());

  WatchSight::Say first = FailedAtOnce(sight, "the bus connection was lost", t0);
  ASSERT_TRUE(first.log.has_value());
  EXPECT_THAT(*first.log, HasSubstr("cannot follow systemd (the bus connection was lost)"));
  EXPECT_FALSE(first.unseen.has_value()) << "a second's gap is no blindness yet";
  EXPECT_TRUE(sight.failing()) << "the next look reads every unit";

  WatchSight::Say again = FailedAtOnce(sight, "the bus connection was lost", t0 + seconds(9));
  EXPECT_FALSE(again.log.has_value()) << "said once, not once a second";
  EXPECT_FALSE(again.unseen.has_value());

  WatchSight::Say blind = FailedAtOnce(sight, "reading the bus: timed out", t0 + seconds(10));
  ASSERT_TRUE(blind.unseen.has_value());
  ASSERT_TRUE(blind.log.has_value()) << "the moment /healthz turns 503 is logged";
  EXPECT_THAT(*blind.log, HasSubstr("/healthz says so"));
  EXPECT_THAT(*blind.unseen, HasSubstr("not been seen for 10.0 s"));
  EXPECT_THAT(*blind.unseen, HasSubstr("reading the bus: timed out"));
  WatchSight::Say later = FailedAtOnce(sight, "x", t0 + seconds(30));
  EXPECT_FALSE(later.unseen.has_value()) << "told once";
  EXPECT_FALSE(later.log.has_value());

  WatchSight::Say seen = sight.Saw();
  ASSERT_TRUE(seen.log.has_value());
  EXPECT_THAT(*seen.log, HasSubstr("follows systemd again"));
  ASSERT_TRUE(seen.unseen.has_value());
  EXPECT_EQ(*seen.unseen, "") << "cleared";
  EXPECT_FALSE(sight.failing());

  WatchSight::Say quiet = sight.Saw();
  EXPECT_FALSE(quiet.log.has_value());
  EXPECT_FALSE(quiet.unseen.has_value()) << "nothing to clear";
}

TEST(WatchSightTest, AShortGapIsLoggedButNeverReportedUnseen) {
  WatchSight sight(seconds(10));
  WatchSight::TimePoint t0{seconds(5)};
  EXPECT_TRUE(FailedAtOnce(sight, "lost", t0).log.has_value());
  WatchSight::Say seen = sight.Saw();
  EXPECT_TRUE(seen.log.has_value());
  EXPECT_FALSE(seen.unseen.has_value()) << "the board was never told";
  // A new failure counts from its own start.
  EXPECT_TRUE(FailedAtOnce(sight, "lost", t0 + seconds(60)).log.has_value());
  EXPECT_FALSE(FailedAtOnce(sight, "lost", t0 + seconds(65)).unseen.has_value());
  EXPECT_TRUE(FailedAtOnce(sight, "lost", t0 + seconds(70)).unseen.has_value());
}

// A systemd that does not answer: the read fails only at its own bound,
// 11 s after it began. Sight was lost when the read began, so the board is
// told at once, not a refresh period after the failure came back.
TEST(WatchSightTest, BlindnessCountsFromWhenTheFailingStepBegan) {
  WatchSight sight(seconds(10));
  WatchSight::TimePoint began{seconds(100)};
  WatchSight::Say hung = sight.Failed("timed out", began + seconds(11), began);
  ASSERT_TRUE(hung.unseen.has_value());
  EXPECT_THAT(*hung.unseen, ::testing::HasSubstr("not been seen for 11.0 s"));
  ASSERT_TRUE(hung.log.has_value());
  EXPECT_EQ(*hung.log, *hung.unseen + "; /healthz says so") << "one line says both";
}

// A declaration with no unit left to watch: nothing shown is vouched for,
// so a blind watch's words go (before, /healthz stayed 503 for ever).
TEST(WatchSightTest, NothingToWatchClearsWhatWasSaid) {
  WatchSight sight(seconds(10));
  WatchSight::TimePoint t0{seconds(1)};
  (void)FailedAtOnce(sight, "lost", t0);
  ASSERT_TRUE(FailedAtOnce(sight, "lost", t0 + seconds(10)).unseen.has_value());
  WatchSight::Say none = sight.NothingToWatch();
  EXPECT_FALSE(none.log.has_value());
  ASSERT_TRUE(none.unseen.has_value());
  EXPECT_EQ(*none.unseen, "");
  EXPECT_FALSE(sight.failing());
  EXPECT_FALSE(sight.NothingToWatch().unseen.has_value()) << "said once";
}

}  // namespace
}  // namespace mesh::daemon
