// "did you mean …": the known word nearest to a mistyped one, for the
// refusals of an unknown field, flag or verb.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mesh::core {

// The candidate at the smallest edit distance from `word` (insertions,
// deletions, substitutions and swaps of two neighbours), when that distance
// is at most 2 and below a third of the word's length plus one; ties go to
// the first. Empty when none is that near.
std::string Nearest(std::string_view word, const std::vector<std::string_view>& candidates);

// " (did you mean \"x\"?)", or nothing.
std::string DidYouMean(std::string_view word, const std::vector<std::string_view>& candidates);

}  // namespace mesh::core
