#include "host/daemon/stall_watch.h"

#include <gtest/gtest.h>

namespace mesh::daemon {
namespace {

using namespace std::chrono_literals;

TEST(StallWatchTest, ALongApplyThatMovesIsAliveAStuckOneIsNot) {
  StallWatch::TimePoint t0{};
  StallWatch watch(2min, 0, t0);
  // Ten minutes of an apply that takes a step every minute: alive throughout.
  for (int minute = 1; minute <= 10; ++minute) {
    EXPECT_TRUE(watch.Progressing(minute, t0 + minute * 1min)) << minute;
  }
  // Then stuck in one call.
  EXPECT_TRUE(watch.Progressing(10, t0 + 11min + 59s));
  EXPECT_FALSE(watch.Progressing(10, t0 + 12min));
  EXPECT_EQ(watch.Still(t0 + 12min), 2min);
  EXPECT_FALSE(watch.Progressing(10, t0 + 60min));
  // Unstuck: alive again from its next step.
  EXPECT_TRUE(watch.Progressing(11, t0 + 61min));
}

}  // namespace
}  // namespace mesh::daemon
