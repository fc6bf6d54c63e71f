#include "host/daemon/keepalive.h"

#include <algorithm>

#include "host/core/time_format.h"

namespace mesh::daemon {

Keepalive::Keepalive(ports::Notifier& notifier, bool starting, std::chrono::nanoseconds stall_after,
                     uint64_t steps, TimePoint now,
                     std::function<void(const std::optional<std::string>&)> stalled,
                     std::function<bool()> stop_pending)
    : notifier_(notifier),
      starting_(starting),
      stop_pending_(std::move(stop_pending)),
      pet_(notifier.WatchdogInterval()),
      extend_until_(now + kExtendAtMost),
      stall_(stall_after, steps, now),
      stalled_(std::move(stalled)) {}

std::chrono::nanoseconds Keepalive::Every() const {
  std::chrono::nanoseconds every =
      std::min<std::chrono::nanoseconds>(kExtendEvery, stall_.allowance() / 2);
  if (pet_.count() > 0) every = std::min(every, pet_);
  return std::max<std::chrono::nanoseconds>(every, std::chrono::milliseconds(1));
}

void Keepalive::Tick(uint64_t steps, TimePoint now) {
  if (stall_.Progressing(steps, now)) {
    if ((starting_ || (stop_pending_ && stop_pending_())) && now < extend_until_) {
      notifier_.ExtendTimeout(kExtendBy);
    }
    if (pet_.count() > 0) notifier_.Watchdog();
    if (told_) stalled_(std::nullopt);
    told_ = false;
  } else if (!told_) {
    stalled_("the apply under way has made no progress for " +
             core::FormatSeconds(stall_.Still(now)) +
             (pet_.count() > 0 ? "; no longer telling systemd's watchdog the host is alive" : ""));
    told_ = true;
  }
}

}  // namespace mesh::daemon
