#include "host/core/json_depth.h"

#include <array>
#include <cstddef>

namespace mesh::core {
namespace {

// The bytes a scan stops at; every other byte is skipped in a tight loop
// (the bulk of a declaration is string content, read here before the parser
// reads it again).
constexpr std::array<bool, 256> Stops(std::string_view bytes) {
  std::array<bool, 256> table{};
  for (char c : bytes) table[static_cast<unsigned char>(c)] = true;
  return table;
}
constexpr std::array<bool, 256> kOutside = Stops("\"[]{}");
// With values counted: the commas too (a declaration's own check, on the
// apply's path, does not stop at them).
constexpr std::array<bool, 256> kOutsideCounting = Stops("\"[]{},");
constexpr std::array<bool, 256> kInside = Stops("\"\\");

}  // namespace

bool JsonWithin(std::string_view text, int max_depth, size_t max_values) {
  const size_t n = text.size();
  auto skip = [&](size_t i, const std::array<bool, 256>& stops) {
    while (i < n && !stops[static_cast<unsigned char>(text[i])]) ++i;
    return i;
  };
  const std::array<bool, 256>& outside = max_values == SIZE_MAX ? kOutside : kOutsideCounting;
  int depth = 0;
  size_t values = 0;
  for (size_t i = skip(0, outside); i < n; i = skip(i, outside)) {
    char c = text[i++];
    if (c == '"') {
      // To the string's closing quote; an escape takes the byte after it.
      for (i = skip(i, kInside); i < n && text[i] == '\\'; i = skip(i, kInside)) i += 2;
      ++i;  // the closing quote (past the end when the string never closes)
    } else if (c == ',') {
      if (++values > max_values) return false;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth || ++values > max_values) return false;
    } else {
      --depth;
    }
  }
  return true;
}

}  // namespace mesh::core
