#include "host/core/time_format.h"

#include <charconv>
#include <cstdio>
#include <ctime>

namespace mesh::core {

Result<std::chrono::nanoseconds> ParseDuration(std::string_view text) {
  size_t split = 0;
  while (split < text.size() &&
         ((text[split] >= '0' && text[split] <= '9') || text[split] == '.')) {
    ++split;
  }
  std::string_view number = text.substr(0, split);
  std::string_view unit = text.substr(split);
  double value = 0;
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (number.empty() || ec != std::errc() || end != number.data() + number.size()) {
    return Fail("\"" + std::string(text) + "\" is not a duration such as 250ms, 1s, 5m");
  }
  double scale = 0;
  if (unit == "ms")
    scale = 1e6;
  else if (unit == "s")
    scale = 1e9;
  else if (unit == "m")
    scale = 60e9;
  else if (unit == "h")
    scale = 3600e9;
  else
    return Fail("\"" + std::string(text) + "\" needs a unit: ms, s, m or h");
  double ns = value * scale;
  if (ns > 1e18) return Fail("\"" + std::string(text) + "\" is too long");
  return std::chrono::nanoseconds(static_cast<int64_t>(ns));
}

std::string FormatTimestamp(std::chrono::system_clock::time_point t) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[80];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms % 1000));
  return buf;
}

std::string FormatSeconds(std::chrono::nanoseconds d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(d.count()) / 1e9);
  return buf;
}

}  // namespace mesh::core
