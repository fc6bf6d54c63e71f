// The web config's `rate_limit` (exporter-toolkit's limiter): a bucket of
// `burst` requests, refilled one per `interval`, shared by every client.
// A request that finds it empty is answered 429 before its password is
// checked. The time is given by the caller, so tests need not wait.
#pragma once

#include <chrono>
#include <mutex>

namespace mesh::http {

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  // A full bucket at `now`. An interval of 0 allows everything.
  RateLimiter(std::chrono::nanoseconds interval, int burst, Clock::time_point now);

  // Takes one request from the bucket; false when it is empty.
  bool Allow(Clock::time_point now);

 private:
  const std::chrono::nanoseconds interval_;
  const double burst_;
  std::mutex mu_;
  double tokens_;
  Clock::time_point at_;
};

}  // namespace mesh::http
