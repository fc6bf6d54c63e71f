// ThreadBackground: the work runs on a thread of its own, Wait() says whether
// it ended well, an exception stays inside the job, and a job dropped
// without Wait() is still waited for (a thread not joined would end the
// process as the job is destroyed).
#include "host/adapters/thread_background.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>

namespace mesh::adapters {
namespace {

TEST(ThreadBackgroundTest, RunsTheWorkOnAnotherThread) {
  ThreadBackground background;
  std::thread::id ran_on;
  auto job = background.Start([&] { ran_on = std::this_thread::get_id(); });
  ASSERT_NE(job, nullptr);
  EXPECT_TRUE(job->Wait());
  EXPECT_NE(ran_on, std::thread::id());
  EXPECT_NE(ran_on, std::this_thread::get_id());
}

TEST(ThreadBackgroundTest, WorkThatThrowsDidNotEndWell) {
  ThreadBackground background;
  auto job = background.Start([] { throw std::runtime_error("no"); });
  ASSERT_NE(job, nullptr);
  EXPECT_FALSE(job->Wait());
}

TEST(ThreadBackgroundTest, ADroppedJobIsWaitedFor) {
  ThreadBackground background;
  std::atomic<bool> done = false;
  {
    auto job = background.Start([&] { done = true; });
    ASSERT_NE(job, nullptr);
  }
  EXPECT_TRUE(done);
}

}  // namespace
}  // namespace mesh::adapters
