#include "host/core/sha256.h"

#include <gtest/gtest.h>

#include <string>

namespace mesh::core {
namespace {

// RFC 4648 section 10: every padding case.
TEST(EncodeBase64, MatchesTheRfcVectors) {
  EXPECT_EQ(EncodeBase64(""), "");
  EXPECT_EQ(EncodeBase64("f"), "Zg==");
  EXPECT_EQ(EncodeBase64("fo"), "Zm8=");
  EXPECT_EQ(EncodeBase64("foo"), "Zm9v");
  EXPECT_EQ(EncodeBase64("foob"), "Zm9vYg==");
  EXPECT_EQ(EncodeBase64("fooba"), "Zm9vYmE=");
  EXPECT_EQ(EncodeBase64("foobar"), "Zm9vYmFy");
}

TEST(EncodeBase64, EveryByteValueRoundTrips) {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(i));
  auto back = DecodeBase64(EncodeBase64(bytes));
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(*back, bytes);
}

// The encoder works in steps of 3 MiB: a text of one step exactly has no
// padding, one or two bytes past it pads only at its very end.
TEST(EncodeBase64, ATextOfOneStepOrMorePadsOnlyAtItsEnd) {
  for (size_t extra : {0, 1, 2}) {
    std::string bytes((size_t{3} << 20) + extra, '\0');
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7 + 3);
    std::string text = EncodeBase64(bytes);
    EXPECT_EQ(text.size(), (bytes.size() + 2) / 3 * 4);
    size_t pad = (3 - extra) % 3;
    EXPECT_EQ(text.find('='), pad == 0 ? std::string::npos : text.size() - pad);
    auto back = DecodeBase64(text);
    ASSERT_TRUE(back.has_value()) << back.error().message;
    EXPECT_EQ(*back, bytes);
  }
}

// One content, one spelling (RFC 4648 3.5): bits left over before the
// padding must be zero, as every encoder writes them. Before, "YR==" read
// as "a" beside the canonical "YQ==".
TEST(DecodeBase64, RefusesBitsSetBeforeThePadding) {
  EXPECT_EQ(*DecodeBase64("YQ=="), "a");
  EXPECT_EQ(*DecodeBase64("YWI="), "ab");
  for (std::string_view text : {"YR==", "YZ==", "YWJ=", "YWL="}) {
    auto decoded = DecodeBase64(text);
    ASSERT_FALSE(decoded.has_value()) << text;
    EXPECT_EQ(decoded.error().message,
              "base64 is not canonical: bits set past the last byte, before the padding");
  }
  for (unsigned c = 0; c < 256; ++c) {
    for (size_t n : {1, 2}) {
      std::string bytes(n, static_cast<char>(c));
      EXPECT_EQ(*DecodeBase64(EncodeBase64(bytes)), bytes);
    }
  }
}

}  // namespace
}  // namespace mesh::core
