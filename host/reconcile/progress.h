// Progress: how a long apply shows, to another thread, that it is getting
// somewhere, and which units it has in hand. The apply advances it at every
// step it completes (a phase, a resource observed or written, a look at a
// unit while it waits on systemd); the daemon's keepalive tells systemd's
// watchdog the process is alive only while it moves, so an apply stuck in
// one call is not kept alive for ever. The daemon's live watch follows
// every declared unit the apply has not in hand while it runs, so a death
// elsewhere shows while an apply waits minutes on one unit's stop; and
// keeps a look of its own over the apply's report only where the apply did
// not look at that unit later.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace mesh::reconcile {

class Progress {
 public:
  void Step() noexcept { steps_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t steps() const noexcept { return steps_.load(std::memory_order_relaxed); }

  // An apply begins: nothing of it is known in hand or looked at yet.
  void Begin() {
    std::lock_guard<std::mutex> lock(mu_);
    looks_reported_ = true;
    in_hand_ = false;
    acted_.clear();
    looked_.clear();
  }
  // The apply is about to change the state of `units` (its plan's starts,
  // restarts, reloads and stops, its removals' stops): added to those it
  // has in hand. Told before its first write; nothing it does before
  // touches a unit's state.
  void Handle(const std::vector<std::string>& units) {
    std::lock_guard<std::mutex> lock(mu_);
    in_hand_ = true;
    acted_.insert(acted_.end(), units.begin(), units.end());
    std::sort(acted_.begin(), acted_.end());
    acted_.erase(std::unique(acted_.begin(), acted_.end()), acted_.end());
  }
  // The apply's report is shown (the daemon published it): what it had in
  // hand is the watch's again. Until then, after the apply has returned, a
  // look at a unit it just stopped is no death. Without a daemon, the next
  // Begin lets them go.
  void Shown() {
    std::lock_guard<std::mutex> lock(mu_);
    in_hand_ = false;
  }
  // Sorted. Empty before the apply under way says: until then it has
  // acted on no unit (its record, observation and plan only read), so the
  // watch may follow every unit from the apply's start.
  std::vector<std::string> InHand() const {
    std::lock_guard<std::mutex> lock(mu_);
    if (!in_hand_) return {};
    return acted_;
  }
  bool InHandNow(const std::string& unit) const {
    std::lock_guard<std::mutex> lock(mu_);
    return in_hand_ && std::binary_search(acted_.begin(), acted_.end(), unit);
  }

  // A point in the order of looks: taken by the watch before it reads.
  uint64_t Now() const noexcept { return clock_.load(std::memory_order_acquire); }
  // The apply has just read `units`: its report shows them as read then
  // (its observation, a no-op's proof, its second look at the units it
  // left alone).
  void Looked(const std::vector<std::string>& units) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!looks_reported_) return;
    uint64_t at = clock_.fetch_add(1, std::memory_order_acq_rel) + 1;
    for (const std::string& u : units) looked_[u] = at;
  }
  // Off while a pass runs whose looks are not the report's (a rollback's
  // second pass: only the units it puts back, which it acts on, are merged).
  void set_looks_reported(bool reported) {
    std::lock_guard<std::mutex> lock(mu_);
    looks_reported_ = reported;
  }
  // Whether the last apply's own picture of `unit` is at least as new as
  // a look begun at `at` (Now()): it acted on the unit, or read it once
  // that look had begun.
  bool ApplysLookStands(const std::string& unit, uint64_t at) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (std::binary_search(acted_.begin(), acted_.end(), unit)) return true;
    auto it = looked_.find(unit);
    return it != looked_.end() && it->second > at;
  }

 private:
  std::atomic<uint64_t> steps_{0};
  std::atomic<uint64_t> clock_{0};
  mutable std::mutex mu_;
  // The units the apply under way (or the last) acted on, sorted; in hand
  // from its first Handle until Shown or the next Begin.
  std::vector<std::string> acted_;
  bool in_hand_ = false;                    // acted_ is still the apply's: not yet Shown
  std::map<std::string, uint64_t> looked_;  // by unit: the apply's last look
  bool looks_reported_ = true;
};

}  // namespace mesh::reconcile
