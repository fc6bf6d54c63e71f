#include "host/core/printable.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace mesh::core {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(PrintableTest, ALineStaysOneLine) {
  std::string forged = "x\nfailed fake.service (service): forged\r\x1b[2J";
  std::string out = Printable(forged);
  EXPECT_EQ(out, "x\\x0afailed fake.service (service): forged\\x0d\\x1b[2J");
  EXPECT_FALSE(IsPrintable(forged));
  EXPECT_TRUE(IsPrintable(out));
}

TEST(PrintableTest, ValidUtf8StaysAndMalformedBytesAreEscaped) {
  EXPECT_EQ(Printable("caf\xc3\xa9 \xe2\x9c\x93"), "caf\xc3\xa9 \xe2\x9c\x93");
  EXPECT_EQ(Printable("x\xff"), "x\\xff");
  EXPECT_EQ(Printable("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(Printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(Printable("\xc2\x9b"
                      "31m"),
            "\\xc2\\x9b31m");                      // C1 CSI
  EXPECT_EQ(Printable("\xe2\x9c"), "\\xe2\\x9c");  // cut short
  EXPECT_EQ(Printable(std::string("a\0b", 3)), "a\\x00b");
}

// Valid UTF-8 that changes what a reader sees of the line around it:
// U+202E turns "failed" after it around on a terminal or a page, U+2028
// ends a line in a viewer, U+200B hides between letters of a name.
TEST(PrintableTest, CharactersThatReorderOrHideTextAreEscaped) {
  EXPECT_EQ(Printable("a\xe2\x80\xae"
                      "deliaf"),
            "a\\xe2\\x80\\xaedeliaf");                        // U+202E RLO
  EXPECT_EQ(Printable("\xe2\x81\xa6x"), "\\xe2\\x81\\xa6x");  // U+2066 LRI
  EXPECT_EQ(Printable("a\xe2\x80\xa8"
                      "b"),
            "a\\xe2\\x80\\xa8b");  // U+2028 LS
  EXPECT_EQ(Printable("we\xe2\x80\x8b"
                      "b"),
            "we\\xe2\\x80\\x8bb");                            // U+200B ZWSP
  EXPECT_EQ(Printable("\xef\xbb\xbfx"), "\\xef\\xbb\\xbfx");  // U+FEFF BOM
  EXPECT_EQ(Printable("\xd8\x9c"), "\\xd8\\x9c");             // U+061C ALM
  EXPECT_FALSE(IsPrintable("\xe2\x80\xae"));
  EXPECT_EQ(Printable("\xe2\x80\x94 \xe2\x80\x99"), "\xe2\x80\x94 \xe2\x80\x99")
      << "a dash and an apostrophe are text";
}

TEST(PrintableTest, EscapingTwiceChangesNothing) {
  std::string once = Printable("a\\x\n\xff");
  EXPECT_EQ(Printable(once), once);
}

TEST(PrintableTest, LongTextIsCut) {
  EXPECT_EQ(Printable(std::string(10, 'a'), 4), "aaaa...");
  EXPECT_EQ(Printable("abc", 4), "abc");
}

TEST(PrintableTest, AParseErrorKeepsThePlaceAndDropsTheToken) {
  std::string what;
  try {
    [[maybe_unused]] auto parsed = nlohmann::json::parse("{\"content\": \"hunter2-AKIA\nrest\"}");
  } catch (const nlohmann::json::exception& e) {
    what = e.what();
  }
  ASSERT_THAT(what, HasSubstr("hunter2"));  // the parser quotes it
  std::string out = JsonErrorWithoutBytes(what);
  EXPECT_THAT(out, Not(HasSubstr("hunter2")));
  EXPECT_THAT(out, Not(HasSubstr("json.exception")));
  EXPECT_THAT(out, HasSubstr("line 2, column 0"));
  EXPECT_THAT(out, HasSubstr("control character U+000A (LF) must be escaped"));
}

TEST(PrintableTest, ATokenThatLooksLikeTheMessageEndIsDroppedToo) {
  std::string what;
  try {
    [[maybe_unused]] auto parsed =
        nlohmann::json::parse("{\"k\": \"secret'; expected end of input\n\"}");
  } catch (const nlohmann::json::exception& e) {
    what = e.what();
  }
  EXPECT_THAT(JsonErrorWithoutBytes(what), Not(HasSubstr("secret")));
}

}  // namespace
}  // namespace mesh::core
