#include "host/adapters/job_ledger.h"

#include <gtest/gtest.h>

namespace mesh::adapters {
namespace {

using Results = std::map<std::string, std::string>;

TEST(JobLedgerTest, ForeignJobsAreNotHeld) {
  JobLedger ledger;
  ledger.Finished("/job/1", "done");  // no request of the host's in flight
  EXPECT_EQ(ledger.held(), 0u);
  ledger.ExpectCalls(1, /*new_batch=*/true);
  ledger.KeepJobs(1, {"/job/2"});
  ledger.Finished("/job/3", "done");
  EXPECT_EQ(ledger.held(), 1u);  // only /job/2, awaited
}

// systemd may announce the end of a job before the reply naming it is read.
TEST(JobLedgerTest, JobEndingBeforeItsReplyIsKept) {
  JobLedger ledger;
  ledger.ExpectCalls(2, /*new_batch=*/true);
  ledger.Finished("/job/7", "failed");
  ledger.Finished("/job/9", "done");  // a neighbour's, ended meanwhile
  ledger.KeepJobs(2, {"/job/7", "/job/8"});
  EXPECT_FALSE(ledger.AllFinished({"/job/7", "/job/8"}));
  EXPECT_EQ(ledger.held(), 3u);  // /job/9 went once no call was in flight
  ledger.Finished("/job/8", "done");
  ASSERT_TRUE(ledger.AllFinished({"/job/7", "/job/8"}));
  EXPECT_EQ(ledger.Take({"/job/7", "/job/8"}), (Results{{"/job/7", "failed"}, {"/job/8", "done"}}));
  EXPECT_EQ(ledger.held(), 0u);
}

TEST(JobLedgerTest, TakeGivesOnlyWhatEnded) {
  JobLedger ledger;
  ledger.ExpectCalls(1, true);
  ledger.KeepJobs(1, {"/job/1", "/job/2"});
  ledger.Finished("/job/1", "timeout");
  EXPECT_EQ(ledger.Take({"/job/1", "/job/2"}), (Results{{"/job/1", "timeout"}}));
  EXPECT_EQ(ledger.held(), 1u);  // /job/2 still awaited
  EXPECT_TRUE(ledger.Take({"/job/1"}).empty());
}

TEST(JobLedgerTest, NewBatchDropsWhatNoOneWaitsFor) {
  JobLedger ledger;
  ledger.ExpectCalls(1, true);
  ledger.KeepJobs(1, {"/job/1"});
  ledger.ExpectCalls(1, /*new_batch=*/true);  // an apply left /job/1 behind
  ledger.Finished("/job/1", "done");          // held only as "may be ours"
  ledger.KeepJobs(1, {"/job/2"});
  EXPECT_EQ(ledger.held(), 1u);
  EXPECT_FALSE(ledger.AllFinished({"/job/1"}));
}

// A lone job (a removal's stop) queued beside an apply's batch does not drop
// the batch's jobs.
TEST(JobLedgerTest, NotANewBatchKeepsEarlierJobs) {
  JobLedger ledger;
  ledger.ExpectCalls(1, true);
  ledger.KeepJobs(1, {"/job/1"});
  ledger.ExpectCalls(1, /*new_batch=*/false);
  ledger.KeepJobs(1, {"/job/2"});
  ledger.Finished("/job/1", "done");
  ledger.Finished("/job/2", "done");
  EXPECT_TRUE(ledger.AllFinished({"/job/1", "/job/2"}));
}

// A new batch asked for while requests are still in flight keeps what they
// may yet name.
TEST(JobLedgerTest, NewBatchWhileCallsInFlightKeepsThem) {
  JobLedger ledger;
  ledger.ExpectCalls(1, true);
  ledger.Finished("/job/1", "done");
  ledger.ExpectCalls(1, /*new_batch=*/true);
  ledger.KeepJobs(1, {"/job/1"});
  ledger.KeepJobs(1, {"/job/2"});
  EXPECT_TRUE(ledger.AllFinished({"/job/1"}));
}

}  // namespace
}  // namespace mesh::adapters
