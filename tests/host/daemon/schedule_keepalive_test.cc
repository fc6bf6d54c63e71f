// The daemon's two pure decisions: Schedule (when to apply, when to pet) and
// Keepalive (what systemd is told while an apply runs: only while it moves).
#include <gmock/gmock.h>

#include "host/daemon/keepalive.h"
#include "host/daemon/schedule.h"
#include "tests/fakes/fake_clock.h"
#include "tests/fakes/fake_notifier.h"

namespace mesh::daemon {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using TimePoint = std::chrono::steady_clock::time_point;

TimePoint At(std::chrono::nanoseconds d) { return TimePoint(d); }

TEST(ScheduleTest, IntervalFromTheLastApply) {
  Schedule s(minutes(5), milliseconds(200), {}, At(minutes(0)));
  EXPECT_EQ(s.ApplyDue(At(minutes(4))), std::nullopt);
  EXPECT_EQ(s.ApplyDue(At(minutes(5))), "interval");
  s.Applied(At(minutes(5) + seconds(3)));
  EXPECT_EQ(s.ApplyDue(At(minutes(10))), std::nullopt) << "counted from the end of the apply";
  EXPECT_EQ(s.WaitFrom(At(minutes(10))), seconds(3));
}

// A removal that waits for its unit to stop is done by the first apply
// that finds it stopped: the next one comes 1 s on, then 2, 4, ... up to
// the interval while it still waits, and the interval once it no longer
// does. It waited a whole interval (5 minutes by default).
TEST(ScheduleTest, AWaitingRemovalIsLookedAtAgainSoon) {
  Schedule s(seconds(10), milliseconds(200), {}, At(seconds(0)));
  s.Applied(At(seconds(1)), /*removal_waits=*/true);
  EXPECT_EQ(s.ApplyDue(At(milliseconds(1900))), std::nullopt);
  EXPECT_EQ(s.WaitFrom(At(milliseconds(1900))), milliseconds(100));
  EXPECT_EQ(s.ApplyDue(At(seconds(2))), "a removal waits for a unit to stop");
  s.Applied(At(seconds(2)), true);
  EXPECT_EQ(s.ApplyDue(At(milliseconds(3900))), std::nullopt);
  EXPECT_EQ(s.ApplyDue(At(seconds(4))), "a removal waits for a unit to stop");
  s.Applied(At(seconds(4)), true);
  EXPECT_EQ(s.ApplyDue(At(seconds(8))), "a removal waits for a unit to stop");
  s.Applied(At(seconds(8)), true);
  EXPECT_EQ(s.ApplyDue(At(seconds(15))), std::nullopt);
  EXPECT_EQ(s.ApplyDue(At(seconds(16))), "a removal waits for a unit to stop");
  s.Applied(At(seconds(16)), true);
  EXPECT_EQ(s.ApplyDue(At(seconds(25))), std::nullopt) << "never longer than the interval";
  EXPECT_EQ(s.ApplyDue(At(seconds(26))), "interval");
  s.Applied(At(seconds(26)), false);
  EXPECT_EQ(s.ApplyDue(At(seconds(35))), std::nullopt);
  EXPECT_EQ(s.ApplyDue(At(seconds(36))), "interval");
  s.Applied(At(seconds(36)), true);
  EXPECT_EQ(s.ApplyDue(At(seconds(37))), "a removal waits for a unit to stop") << "from 1 s again";
  // A wait that has grown long does not hold back a new one that a push
  // brings (a unit that never stops, then another dropped beside it).
  for (int k = 0; k < 5; ++k) s.Applied(At(seconds(37)), true);
  EXPECT_EQ(s.ApplyDue(At(seconds(38))), std::nullopt);
  s.Applied(At(seconds(40)), true, /*asked=*/true);
  EXPECT_EQ(s.ApplyDue(At(seconds(41))), "a removal waits for a unit to stop");
  for (int k = 0; k < 5; ++k) s.Applied(At(seconds(41)), true);
  s.ChangeSeen(At(seconds(42)));
  s.Applied(At(seconds(43)), true);
  EXPECT_EQ(s.ApplyDue(At(seconds(44))), "a removal waits for a unit to stop")
      << "the apply of a changed declaration";
  // Under a second's interval, the interval.
  Schedule quick(milliseconds(300), milliseconds(200), {}, At(seconds(0)));
  quick.Applied(At(seconds(1)), true);
  EXPECT_EQ(quick.ApplyDue(At(milliseconds(1300))), "interval");
}

TEST(ScheduleTest, ChangesDebouncedFromTheLast) {
  Schedule s(minutes(5), milliseconds(200), {}, At(minutes(0)));
  s.ChangeSeen(At(seconds(10)));
  s.ChangeSeen(At(seconds(10) + milliseconds(150)));
  EXPECT_EQ(s.ApplyDue(At(seconds(10) + milliseconds(300))), std::nullopt);
  EXPECT_EQ(s.WaitFrom(At(seconds(10) + milliseconds(300))), milliseconds(50));
  EXPECT_EQ(s.ApplyDue(At(seconds(10) + milliseconds(350))), "declaration changed");
  // An apply for any reason covers the changes seen before it.
  s.Applied(At(seconds(11)));
  EXPECT_EQ(s.ApplyDue(At(seconds(12))), std::nullopt);
}

TEST(ScheduleTest, PetsOnTimeAndNeverWaitsBlindTooLong) {
  Schedule s(minutes(5), milliseconds(200), seconds(10), At(minutes(0)));
  EXPECT_TRUE(s.PetDue(At(seconds(0))));
  EXPECT_FALSE(s.PetDue(At(seconds(9))));
  EXPECT_EQ(s.WaitFrom(At(seconds(9))), seconds(1));
  EXPECT_TRUE(s.PetDue(At(seconds(10))));
  Schedule no_watchdog(minutes(5), milliseconds(200), {}, At(minutes(0)));
  EXPECT_FALSE(no_watchdog.PetDue(At(minutes(4))));
  EXPECT_EQ(no_watchdog.WaitFrom(At(seconds(0))), Schedule::kMaxWait);
  EXPECT_EQ(no_watchdog.WaitFrom(At(minutes(6))), seconds(0)) << "overdue: no negative wait";
}

class KeepaliveTest : public ::testing::Test {
 protected:
  fakes::FakeClock clock_;
  std::vector<std::optional<std::string>> stalled_;
  std::function<void(const std::optional<std::string>&)> record_ =
      [this](const std::optional<std::string>& why) { stalled_.push_back(why); };
};

TEST_F(KeepaliveTest, PetsOnlyWhileTheApplyMoves) {
  fakes::FakeNotifier notifier(clock_, seconds(10));
  Keepalive k(notifier, /*starting=*/false, seconds(60), /*steps=*/0, At(seconds(0)), record_);
  EXPECT_EQ(k.Every(), seconds(10));
  k.Tick(1, At(seconds(0)));
  k.Tick(2, At(seconds(10)));
  k.Tick(2, At(seconds(69)));  // 59 s without a step: still within the allowance
  EXPECT_EQ(notifier.Count("WATCHDOG"), 3);
  EXPECT_TRUE(stalled_.empty());
  k.Tick(2, At(seconds(71)));
  k.Tick(2, At(seconds(81)));
  EXPECT_EQ(notifier.Count("WATCHDOG"), 3) << "stuck: systemd's watchdog is let to act";
  ASSERT_EQ(stalled_.size(), 1u) << "said once";
  EXPECT_THAT(*stalled_[0], ::testing::HasSubstr("no progress for 61.0 s"));
  k.Tick(3, At(seconds(91)));
  EXPECT_EQ(notifier.Count("WATCHDOG"), 4) << "moving again";
  ASSERT_EQ(stalled_.size(), 2u);
  EXPECT_EQ(stalled_[1], std::nullopt);
}

TEST_F(KeepaliveTest, TheFirstApplyExtendsTheStartButNotForEver) {
  fakes::FakeNotifier notifier(clock_);  // no watchdog
  Keepalive k(notifier, /*starting=*/true, minutes(60), 0, At(seconds(0)), record_);
  EXPECT_EQ(k.Every(), Keepalive::kExtendEvery);
  uint64_t steps = 0;
  for (auto t = seconds(0); t < minutes(40); t += seconds(10)) k.Tick(++steps, At(t));
  EXPECT_EQ(notifier.Count("EXTEND"), 180) << "every 10 s for 30 min, then systemd decides";
  EXPECT_EQ(notifier.Count("WATCHDOG"), 0);
}

// A stop asked for during an apply waits for it (event_source.h): the stop
// timeout is pushed out while the apply moves, as the start timeout is for
// the first apply, and not before the stop is asked for.
TEST_F(KeepaliveTest, AStopPendingExtendsTheStopTimeoutWhileTheApplyMoves) {
  fakes::FakeNotifier notifier(clock_);  // no watchdog
  bool stop = false;
  Keepalive k(notifier, /*starting=*/false, minutes(10), 0, At(seconds(0)), record_,
              [&] { return stop; });
  uint64_t steps = 0;
  k.Tick(++steps, At(seconds(0)));
  EXPECT_EQ(notifier.Count("EXTEND"), 0) << "running: no timeout to push out";
  stop = true;
  for (auto t = seconds(10); t < minutes(40); t += seconds(10)) k.Tick(++steps, At(t));
  EXPECT_EQ(notifier.Count("EXTEND"), 179) << "every 10 s until 30 min from the apply's start";
  Keepalive stuck(notifier, false, minutes(1), 0, At(seconds(0)), record_, [] { return true; });
  stuck.Tick(0, At(minutes(2)));
  EXPECT_EQ(notifier.Count("EXTEND"), 179) << "a frozen apply is not waited for";
}

TEST_F(KeepaliveTest, AStallIsToldWithoutAWatchdogToo) {
  // Run in a shell, or by a unit without WatchdogSec=: nothing restarts a
  // frozen apply, so /healthz is the one that must say it.
  fakes::FakeNotifier notifier(clock_);  // no watchdog
  Keepalive k(notifier, /*starting=*/false, minutes(10), 0, At(seconds(0)), record_);
  EXPECT_EQ(k.Every(), Keepalive::kExtendEvery);
  k.Tick(1, At(seconds(0)));
  k.Tick(1, At(minutes(10) + seconds(5)));
  ASSERT_EQ(stalled_.size(), 1u);
  ASSERT_TRUE(stalled_[0].has_value());
  EXPECT_THAT(*stalled_[0], ::testing::HasSubstr("no progress for 605.0 s"));
  EXPECT_THAT(*stalled_[0], ::testing::Not(::testing::HasSubstr("watchdog")))
      << "there is no watchdog to stop telling";
  EXPECT_EQ(notifier.calls().size(), 0u);
  // A short allowance is told within half of it.
  EXPECT_EQ(Keepalive(notifier, false, seconds(4), 0, At(seconds(0)), record_).Every(), seconds(2));
}

}  // namespace
}  // namespace mesh::daemon
