#include "host/adapters/job_ledger.h"

#include <algorithm>

namespace mesh::adapters {

void JobLedger::ExpectCalls(size_t calls, bool new_batch) {
  if (new_batch && calls_in_flight_ == 0) {
    finished_.clear();
    expected_.clear();
  }
  calls_in_flight_ += calls;
}

void JobLedger::KeepJobs(size_t calls, const std::vector<std::string>& jobs) {
  calls_in_flight_ -= std::min(calls, calls_in_flight_);
  expected_.insert(jobs.begin(), jobs.end());
  if (calls_in_flight_ == 0) {
    std::erase_if(finished_, [&](const auto& entry) { return !expected_.contains(entry.first); });
  }
}

void JobLedger::Finished(const std::string& job, const std::string& result) {
  if (calls_in_flight_ > 0 || expected_.contains(job)) finished_.insert_or_assign(job, result);
}

bool JobLedger::AllFinished(const std::vector<std::string>& jobs) const {
  return std::all_of(jobs.begin(), jobs.end(),
                     [&](const std::string& j) { return finished_.contains(j); });
}

std::map<std::string, std::string> JobLedger::Take(const std::vector<std::string>& jobs) {
  std::map<std::string, std::string> out;
  for (const std::string& j : jobs) {
    auto it = finished_.find(j);
    if (it == finished_.end()) continue;
    out[j] = std::move(it->second);
    finished_.erase(it);
    expected_.erase(j);
  }
  return out;
}

}  // namespace mesh::adapters
