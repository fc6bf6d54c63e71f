// JobLedger: which systemd jobs are the host's, and how those ended.
//
// systemd announces the end of every job on the machine (JobRemoved), and a
// job may end before the reply that names it has been read. The ledger
// keeps a result only for a job the host queued and will wait for, or
// while its own job requests are in flight; every other job is ignored, so
// what it holds is bounded by the host's own jobs, however busy the machine.
// It knows nothing of the bus: the sd-bus adapter feeds it.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace mesh::adapters {

class JobLedger {
 public:
  // Before `calls` job requests are sent. A new batch (an apply's act
  // phase) first drops what earlier applies left, unless requests are still
  // in flight: no one waits for those jobs any more.
  void ExpectCalls(size_t calls, bool new_batch);
  // The replies to `calls` requests are in: `jobs` are the job paths they
  // named. Once none is in flight, results of jobs not the host's go.
  void KeepJobs(size_t calls, const std::vector<std::string>& jobs);
  // A JobRemoved signal: kept when the job is the host's, or may be.
  void Finished(const std::string& job, const std::string& result);
  // Whether every one of `jobs` has ended.
  bool AllFinished(const std::vector<std::string>& jobs) const;
  // The results of those of `jobs` that ended (job -> result), forgotten
  // here once taken.
  std::map<std::string, std::string> Take(const std::vector<std::string>& jobs);
  // Jobs held, ended or awaited (the bound the tests check).
  size_t held() const { return finished_.size() + expected_.size(); }

 private:
  std::map<std::string, std::string> finished_;
  std::set<std::string> expected_;
  size_t calls_in_flight_ = 0;
};

}  // namespace mesh::adapters
