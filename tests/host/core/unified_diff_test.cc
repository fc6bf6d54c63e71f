#include "host/core/unified_diff.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <vector>

namespace mesh::core {
namespace {

TEST(UnifiedDiffTest, OneChangedLineWithThreeLinesOfContext) {
  std::string before = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";
  std::string after = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n";
  EXPECT_EQ(*UnifiedHunks(before, after), "@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n");
}

// As GNU diff -u: changes 6 common lines apart or closer share a hunk.
TEST(UnifiedDiffTest, NearbyChangesShareAHunkDistantOnesDoNot) {
  std::string before = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";
  EXPECT_EQ(*UnifiedHunks(before, before + "11\n"), "@@ -8,3 +8,4 @@\n 8\n 9\n 10\n+11\n");
  std::string after = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n11\n";
  EXPECT_EQ(*UnifiedHunks(before, after),
            "@@ -2,9 +2,10 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n 9\n 10\n+11\n");
  std::string longer, changed;
  for (int i = 1; i <= 20; ++i) {
    longer += std::to_string(i) + "\n";
    changed += (i == 2 || i == 18 ? "x" : std::to_string(i)) + "\n";
  }
  EXPECT_EQ(*UnifiedHunks(longer, changed),
            "@@ -1,5 +1,5 @@\n 1\n-2\n+x\n 3\n 4\n 5\n"
            "@@ -15,6 +15,6 @@\n 15\n 16\n 17\n-18\n+x\n 19\n 20\n");
}

TEST(UnifiedDiffTest, AddedAndRemovedFilesAsDiffWritesThem) {
  EXPECT_EQ(*UnifiedHunks("", "a\nb\n"), "@@ -0,0 +1,2 @@\n+a\n+b\n");
  EXPECT_EQ(*UnifiedHunks("a\n", ""), "@@ -1 +0,0 @@\n-a\n");
  EXPECT_EQ(*UnifiedHunks("same\n", "same\n"), "");
}

TEST(UnifiedDiffTest, AMissingNewlineAtTheEndIsShown) {
  EXPECT_EQ(*UnifiedHunks("a\nb\n", "a\nb"),
            "@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n");
}

TEST(UnifiedDiffTest, TerminalEscapesOnTheMachineAreNotPassedThrough) {
  std::string hunks = *UnifiedHunks("x\t= 1\n\x1b]0;owned\x07\n", "x\t= 2\n");
  EXPECT_EQ(hunks.find('\x1b'), std::string::npos) << hunks;
  EXPECT_THAT(hunks, ::testing::HasSubstr("-x\t= 1\n")) << "tabs stay tabs";
  EXPECT_THAT(hunks, ::testing::HasSubstr("\\x1b]0;owned\\x07"));
}

TEST(UnifiedDiffTest, BinaryAndHugeContentIsNotDiffed) {
  EXPECT_FALSE(UnifiedHunks(std::string("a\0b", 3), "ab").has_value());
  EXPECT_FALSE(UnifiedHunks("", std::string(kMaxDiffBytes + 1, 'x')).has_value());
  std::string many;
  for (size_t i = 0; i <= kMaxDiffLines; ++i) many += "\n";
  EXPECT_FALSE(UnifiedHunks(many, "").has_value());
}

// Applies hunks as patch(1) would, checking every context and removed line
// against `before`.
std::optional<std::string> Apply(const std::string& before, const std::string& hunks) {
  std::vector<std::string> a;
  std::istringstream in(before);
  for (std::string l; std::getline(in, l);) a.push_back(l);
  std::vector<std::string> out;
  size_t at = 0;  // lines of `a` consumed
  std::istringstream h(hunks);
  for (std::string l; std::getline(h, l);) {
    if (l.starts_with("@@ -")) {
      long start = std::stol(l.substr(4));
      size_t from = start == 0 ? 0 : static_cast<size_t>(start - 1);
      if (l.find(",0 +") != std::string::npos && l.find("@@ -0,0") == std::string::npos) {
        from = static_cast<size_t>(start);  // an empty range names the line before it
      }
      if (from < at) return std::nullopt;
      while (at < from && at < a.size()) out.push_back(a[at++]);
    } else if (l.starts_with("+")) {
      out.push_back(l.substr(1));
    } else if (l.starts_with("-") || l.starts_with(" ")) {
      if (at >= a.size() || a[at] != l.substr(1)) return std::nullopt;
      if (l[0] == ' ') out.push_back(a[at]);
      ++at;
    } else {
      return std::nullopt;
    }
  }
  while (at < a.size()) out.push_back(a[at++]);
  std::string joined;
  for (const std::string& l : out) joined += l + "\n";
  return joined;
}

TEST(UnifiedDiffTest, RandomEditsRoundTrip) {
  std::mt19937 rng(17);
  for (int round = 0; round < 300; ++round) {
    std::vector<std::string> lines;
    int n = static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) lines.push_back("l" + std::to_string(rng() % 8));
    std::vector<std::string> changed = lines;
    for (int e = static_cast<int>(rng() % 6); e > 0; --e) {
      size_t at = changed.empty() ? 0 : rng() % (changed.size() + 1);
      switch (rng() % 3) {
        case 0:
          changed.insert(changed.begin() + static_cast<long>(at), "new" + std::to_string(e));
          break;
        case 1:
          if (at < changed.size()) changed.erase(changed.begin() + static_cast<long>(at));
          break;
        default:
          if (at < changed.size()) changed[at] = "chg" + std::to_string(e);
      }
    }
    std::string before, after;
    for (const auto& l : lines) before += l + "\n";
    for (const auto& l : changed) after += l + "\n";
    auto hunks = UnifiedHunks(before, after);
    ASSERT_TRUE(hunks.has_value());
    auto applied = Apply(before, *hunks);
    ASSERT_TRUE(applied.has_value()) << "round " << round << ":\n" << before << "--\n" << *hunks;
    EXPECT_EQ(*applied, after) << "round " << round << ":\n" << *hunks;
  }
}

}  // namespace
}  // namespace mesh::core
