// Durations and timestamps as operators type and read them.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "host/core/result.h"

namespace mesh::core {

// "250ms", "1s", "1.5s", "5m", "2h"; a bare number is refused (unit needed).
Result<std::chrono::nanoseconds> ParseDuration(std::string_view text);

// RFC 3339 in UTC with milliseconds: "2026-11-30T04:00:00.123Z".
std::string FormatTimestamp(std::chrono::system_clock::time_point t);

// "1.0 s", the form the two-look details use.
std::string FormatSeconds(std::chrono::nanoseconds d);

}  // namespace mesh::core
