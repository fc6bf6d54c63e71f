#include "host/core/json_depth.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace mesh::core {
namespace {

// The rule, byte by byte: what JsonDepthWithin must agree with.
bool Reference(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

TEST(JsonDepthTest, CountsNestingUpToTheLimit) {
  EXPECT_TRUE(JsonDepthWithin("[[[]]]", 3));
  EXPECT_FALSE(JsonDepthWithin("[[[[]]]]", 3));
  EXPECT_TRUE(JsonDepthWithin("[{},{},{}]", 2));
  EXPECT_FALSE(JsonDepthWithin(std::string(10000, '['), 32));
}

TEST(JsonDepthTest, BracketsInStringsDoNotCount) {
  EXPECT_TRUE(JsonDepthWithin(R"(["[[[[", "{{{{"])", 1));
  // An escaped quote does not end the string; an escaped backslash does not
  // escape the quote after it.
  EXPECT_TRUE(JsonDepthWithin(R"(["\"[[[["])", 1));
  EXPECT_FALSE(JsonDepthWithin(R"(["\\", [[]]])", 2));
  EXPECT_TRUE(JsonDepthWithin(R"(["\\\"[[", []])", 2));
}

// Values are counted outside strings only: each ',' and each opening
// bracket is one (the tree a parser makes is bounded by them).
TEST(JsonDepthTest, ValuesAreCountedOutsideStrings) {
  EXPECT_TRUE(JsonWithin("[{},{},{}]", 2, 6));
  EXPECT_FALSE(JsonWithin("[{},{},{}]", 2, 5));
  EXPECT_TRUE(JsonWithin(R"(["a,b,c,{[", 1])", 1, 2));
  EXPECT_FALSE(JsonWithin(R"(["a", 1, 2])", 1, 2));
  EXPECT_TRUE(JsonWithin("[{},{},{}]", 2, SIZE_MAX));
}

TEST(JsonDepthTest, EndsInsideAStringOrAnEscape) {
  EXPECT_TRUE(JsonDepthWithin(R"(["[[[[)", 1));
  EXPECT_TRUE(JsonDepthWithin("[\"\\", 1));
  EXPECT_TRUE(JsonDepthWithin("\\", 0));
}

TEST(JsonDepthTest, AgreesWithTheRuleOnRandomText) {
  const std::string alphabet = "[]{}\"\\ab";
  std::mt19937 rng(18);
  for (int round = 0; round < 20000; ++round) {
    std::string text(rng() % 40, ' ');
    for (char& c : text) c = alphabet[rng() % alphabet.size()];
    int max_depth = static_cast<int>(rng() % 5);
    ASSERT_EQ(JsonDepthWithin(text, max_depth), Reference(text, max_depth))
        << text << " at " << max_depth;
  }
}

}  // namespace
}  // namespace mesh::core
