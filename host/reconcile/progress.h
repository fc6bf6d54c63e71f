// Progress: how a long apply shows, to another thread, that it is getting
// somewhere. The apply advances it at every step it completes (a phase, a
// resource observed or written, a look at a unit while it waits on
// systemd); the daemon's keepalive tells systemd's watchdog the process is
// alive only while it moves, so an apply stuck in one call is not kept
// alive for ever.
#pragma once

#include <atomic>
#include <cstdint>

namespace mesh::reconcile {

class Progress {
 public:
  void Step() noexcept { steps_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t steps() const noexcept { return steps_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> steps_{0};
};

}  // namespace mesh::reconcile
