// What of a credential a journal line may not show, and that the rest of
// the line is left as it was.
#include "host/core/redact.h"

#include <gtest/gtest.h>

#include <string>

namespace mesh::core {
namespace {

std::string Redacted(const std::string& id, const std::string& content, const std::string& line) {
  Secrets secrets{{id, content}};
  return Redactor(secrets)(line);
}

// A separator inside a quoted value split it, and neither part was a
// value: "hunter2,hunter2" was shown whole.
TEST(RedactTest, ASeparatorInsideQuotesDoesNotSplitTheValue) {
  EXPECT_EQ(Redacted("db", R"({"user":"svc","password":"hunter2,hunter2"})",
                     "bad password hunter2,hunter2 for svc"),
            "bad password [credential db] for svc");
}

// Daemons log a JSON value decoded: the escaped text never appears.
TEST(RedactTest, AJsonStringIsLookedForAsDecoded) {
  EXPECT_EQ(Redacted("api", R"({"token": "ab\"cd\\ef\u00e9gh"})", "rejected ab\"cd\\ef\xc3\xa9gh"),
            "rejected [credential api]");
  EXPECT_EQ(Redacted("list", R"(["first-secret", {"k": ["second-secret"]}])",
                     "first-secret then second-secret"),
            "[credential list] then [credential list]");
}

TEST(RedactTest, AYamlCommentIsNotPartOfTheValue) {
  EXPECT_EQ(
      Redacted("y", "password: pass-phrase-42 # rotated monthly\n", "login failed: pass-phrase-42"),
      "login failed: [credential y]");
}

// What the field split must not lose: a value holding a separator, a
// quote left open, " #" inside a password. Each was redacted before the
// split, as the line's value.
TEST(RedactTest, AValueIsAlsoLookedForWhole) {
  EXPECT_EQ(Redacted("p", "PASSWORD=Ab1;xy9!Qz\n", "auth Ab1;xy9!Qz failed"),
            "auth [credential p] failed");
  EXPECT_EQ(Redacted("p", "PASSWORD=it'sasecret\n", "auth it'sasecret failed"),
            "auth [credential p] failed");
  EXPECT_EQ(Redacted("p", "USER=x, PASSWORD=it'sasecret, MODE=1\n", "auth it'sasecret failed"),
            "auth [credential p] failed");
  EXPECT_EQ(Redacted("p", "PASSWORD=Tr0ub4dor #3horse\n", "auth Tr0ub4dor #3horse failed"),
            "auth [credential p] failed");
}

// A quoted value that is a line of fields itself: a connection string, or
// JSON in an env file. Its fields' values were lost in the quotes.
TEST(RedactTest, TheFieldsOfAQuotedValue) {
  EXPECT_EQ(Redacted("db", "DB=\"Server=db;User Id=sa;Password=Str0ngPassw0rd;Encrypt=true\"\n",
                     "login failed: Str0ngPassw0rd"),
            "login failed: [credential db]");
  EXPECT_EQ(Redacted("c", R"(CONFIG='{"user":"x","password":"Str0ngPassw0rd"}')",
                     "login failed: Str0ngPassw0rd"),
            "login failed: [credential c]");
}

// Two secrets that overlap in a line are replaced as one run: replacing
// the longer first left the start of the shorter beside its name.
TEST(RedactTest, OverlappingMatchesAreOneRun) {
  Secrets secrets{{"a", "abcdef12"}, {"b", "ef123456789"}};
  EXPECT_EQ(Redactor(secrets)("x abcdef123456789 y"), "x [credential a] y");
}

TEST(RedactTest, WhatIsNoSecretIsLeftAsItWas) {
  EXPECT_EQ(Redacted("t", "API_TOKEN=abcdef0123456789\n", "token abcdef012345678 is short"),
            "token abcdef012345678 is short");
  EXPECT_EQ(Redacted("t", "abc", "abc is too short to look for"), "abc is too short to look for");
  EXPECT_EQ(Redactor(Secrets{})("nothing to hide"), "nothing to hide");
  EXPECT_EQ(Redacted("t", "x=12345678", "ab"), "ab");
}

// A credential of many fields is read once into its pieces, and each line
// is matched against all of them: every value of 10,000 is found.
TEST(RedactTest, EachFieldOfALargeCredential) {
  std::string content, line;
  for (int i = 0; i < 10000; ++i) {
    content += "k" + std::to_string(i) + "=value-" + std::to_string(1000000 + i) + ",";
  }
  Secrets secrets{{"big", content}};
  Redactor redact(secrets);
  for (int i : {0, 4999, 9999}) {
    std::string shown = redact("refused value-" + std::to_string(1000000 + i) + ".");
    EXPECT_EQ(shown, "refused [credential big].");
  }
}

}  // namespace
}  // namespace mesh::core
