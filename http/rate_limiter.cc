#include "http/rate_limiter.h"

#include <algorithm>

namespace mesh::http {

RateLimiter::RateLimiter(std::chrono::nanoseconds interval, int burst, Clock::time_point now)
    : interval_(interval), burst_(burst), tokens_(burst), at_(now) {}

bool RateLimiter::Allow(Clock::time_point now) {
  if (interval_.count() <= 0) return true;
  std::lock_guard<std::mutex> lock(mu_);
  if (now > at_) {
    double earned = std::chrono::duration<double>(now - at_) / interval_;
    tokens_ = std::min(burst_, tokens_ + earned);
    at_ = now;
  }
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}

}  // namespace mesh::http
