// Progress: how a long apply shows, to another thread, that it is getting
// somewhere, and which units it has in hand. The apply advances it at every
// step it completes (a phase, a resource observed or written, a look at a
// unit while it waits on systemd); the daemon's keepalive tells systemd's
// watchdog the process is alive only while it moves, so an apply stuck in
// one call is not kept alive for ever. The daemon's live watch follows
// every declared unit the apply has not in hand while it runs, so a death
// elsewhere shows while an apply waits minutes on one unit's stop.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace mesh::reconcile {

class Progress {
 public:
  void Step() noexcept { steps_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t steps() const noexcept { return steps_.load(std::memory_order_relaxed); }

  // The apply is about to change the state of `units` (its plan's starts,
  // restarts, reloads and stops, its removals' stops): added to those it
  // has in hand. Told before its first write; nothing it does before
  // touches a unit's state.
  void Handle(const std::vector<std::string>& units) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!in_hand_.has_value()) in_hand_.emplace();
    in_hand_->insert(in_hand_->end(), units.begin(), units.end());
    std::sort(in_hand_->begin(), in_hand_->end());
    in_hand_->erase(std::unique(in_hand_->begin(), in_hand_->end()), in_hand_->end());
  }
  // At an apply's start and end: nothing known in hand.
  void Forget() {
    std::lock_guard<std::mutex> lock(mu_);
    in_hand_.reset();
  }
  // Sorted. None: the apply under way has not said yet (or none runs), so
  // what it will touch is not known.
  std::optional<std::vector<std::string>> InHand() const {
    std::lock_guard<std::mutex> lock(mu_);
    return in_hand_;
  }
  // Told just before the apply looks again at the units it did not act on
  // (its second look): a look of the watch's taken before that is older
  // than the apply's own. Counted up, never reset.
  void LookingAgain() noexcept { looks_again_.fetch_add(1, std::memory_order_acq_rel); }
  uint64_t looks_again() const noexcept { return looks_again_.load(std::memory_order_acquire); }

 private:
  std::atomic<uint64_t> steps_{0};
  std::atomic<uint64_t> looks_again_{0};
  mutable std::mutex mu_;
  std::optional<std::vector<std::string>> in_hand_;
};

}  // namespace mesh::reconcile
