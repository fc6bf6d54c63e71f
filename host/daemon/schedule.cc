#include "host/daemon/schedule.h"

#include <algorithm>

namespace mesh::daemon {

Schedule::Schedule(std::chrono::nanoseconds interval, std::chrono::nanoseconds debounce,
                   std::chrono::nanoseconds pet_every, TimePoint now)
    : interval_(interval),
      debounce_(debounce),
      pet_every_(pet_every),
      next_apply_(now + interval),
      next_pet_(pet_every.count() > 0 ? now : TimePoint::max()) {}

void Schedule::Applied(TimePoint now, bool removal_waits, bool asked) {
  bool pushed = asked || change_seen_.has_value();
  retry_ = !removal_waits ? std::chrono::nanoseconds(0)
           : retry_.count() == 0 || pushed
               ? std::chrono::nanoseconds(kFirstRetry)
               : std::min<std::chrono::nanoseconds>(retry_ * 2, interval_);
  next_apply_ = now + (retry_.count() > 0 ? std::min(retry_, interval_) : interval_);
  // Changes are read only between applies, so every one seen so far came
  // before this apply read the declaration.
  change_seen_.reset();
}

void Schedule::ChangeSeen(TimePoint now) { change_seen_ = now; }

bool Schedule::PetDue(TimePoint now) {
  if (now < next_pet_) return false;
  next_pet_ = now + pet_every_;
  return true;
}

std::optional<std::string_view> Schedule::ApplyDue(TimePoint now) const {
  if (change_seen_ && now >= *change_seen_ + debounce_) return "declaration changed";
  if (now >= next_apply_) {
    return retry_.count() > 0 && retry_ < interval_ ? "a removal waits for a unit to stop"
                                                    : "interval";
  }
  return std::nullopt;
}

std::chrono::nanoseconds Schedule::WaitFrom(TimePoint now) const {
  TimePoint wake = std::min(next_apply_, next_pet_);
  if (change_seen_) wake = std::min(wake, *change_seen_ + debounce_);
  if (wake <= now) return std::chrono::nanoseconds(0);
  return std::min<std::chrono::nanoseconds>(wake - now, kMaxWait);
}

}  // namespace mesh::daemon
