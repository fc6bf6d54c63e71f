// What the benchmarks share: a median of repeated timings, and reading the
// `--name value` flags each takes. Figures only; nothing here asserts time.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

namespace mesh::bench {

using Clock = std::chrono::steady_clock;

inline double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// The median of `repeat` runs of f(), in milliseconds.
template <typename F>
double MedianMs(int repeat, F f) {
  std::vector<double> runs;
  for (int i = 0; i < repeat; ++i) {
    auto t0 = Clock::now();
    f();
    runs.push_back(Ms(Clock::now() - t0));
  }
  std::sort(runs.begin(), runs.end());
  return runs[runs.size() / 2];
}

// The integer after `--name` on the command line, or `fallback`.
inline int IntFlag(int argc, char** argv, const std::string& name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (argv[i] == name) return std::atoi(argv[i + 1]);
  }
  return fallback;
}

}  // namespace mesh::bench
