#include "host/core/did_you_mean.h"

#include <algorithm>

namespace mesh::core {
namespace {

// Optimal string alignment distance; `limit` bounds the work (a longer
// word is far from every candidate anyway).
size_t Distance(std::string_view a, std::string_view b) {
  if (a.size() > 64 || b.size() > 64) return 1000;
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::string Nearest(std::string_view word, const std::vector<std::string_view>& candidates) {
  size_t best = 1000;
  std::string_view found;
  for (std::string_view c : candidates) {
    size_t dist = Distance(word, c);
    if (dist < best) {
      best = dist;
      found = c;
    }
  }
  if (best == 0 || best > 2 || best > word.size() / 3 + 1) return "";
  return std::string(found);
}

std::string DidYouMean(std::string_view word, const std::vector<std::string_view>& candidates) {
  std::string near = Nearest(word, candidates);
  return near.empty() ? "" : " (did you mean \"" + near + "\"?)";
}

}  // namespace mesh::core
