// A linear pre-check of JSON nesting depth.
//
// nlohmann's parser recurses per level, so a hostile "[[[[..." must be
// refused before it is parsed. Its callback parser could count levels but
// rescans each parent object at every close (quadratic: 10,000 resources
// took seconds), so the depth is counted here, in one pass over the bytes,
// and the parse itself runs without a callback.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace mesh::core {

// True when no array or object in `text` nests deeper than `max_depth`,
// and the text holds at most about `max_values` values: each ',' and each
// '[' or '{' counts one (a parser's tree costs some 30 bytes for each byte
// of "[{},{},...]", so a cap on the text alone does not bound it).
// Brackets and commas inside strings (escapes included) do not count.
bool JsonWithin(std::string_view text, int max_depth, size_t max_values);

inline bool JsonDepthWithin(std::string_view text, int max_depth) {
  return JsonWithin(text, max_depth, SIZE_MAX);
}

}  // namespace mesh::core
