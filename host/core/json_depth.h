// A linear pre-check of JSON nesting depth.
//
// nlohmann's parser recurses per level, so a hostile "[[[[..." must be
// refused before it is parsed. Its callback parser could count levels but
// rescans each parent object at every close (quadratic: 10,000 resources
// took seconds), so the depth is counted here, in one pass over the bytes,
// and the parse itself runs without a callback.
#pragma once

#include <string_view>

namespace mesh::core {

// True when no array or object in `text` nests deeper than `max_depth`.
// Brackets inside strings (escapes included) do not count.
bool JsonDepthWithin(std::string_view text, int max_depth);

}  // namespace mesh::core
