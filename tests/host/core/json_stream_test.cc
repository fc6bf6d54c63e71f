#include "host/core/json_stream.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace mesh::core {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using json = nlohmann::json;

struct Seen {
  std::vector<std::string> keys;
  std::vector<size_t> positions;
  std::vector<json> values;
  MemberCallback Callback() {
    return [this](std::string& key, size_t position, json& value) {
      keys.push_back(key);
      positions.push_back(position);
      values.push_back(std::move(value));
    };
  }
};

TEST(JsonStreamTest, HandsOverEachMemberAndKeepsTheRest) {
  Seen seen;
  auto cb = seen.Callback();
  auto r = ParseStreamed(R"({"a": 1, "items": [{"x": [1, {"y": 2}]}, "s", 3], "b": {"c": null}})",
                         "items", /*want_array=*/true, cb);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->members, 3u);
  EXPECT_THAT(seen.positions, ElementsAre(0, 1, 2));
  EXPECT_EQ(seen.values[0], json::parse(R"({"x": [1, {"y": 2}]})"));
  EXPECT_EQ(seen.values[1], "s");
  EXPECT_EQ(seen.values[2], 3);
  // The streamed list is an empty list in the document, the rest is whole.
  EXPECT_EQ(r->document, json::parse(R"({"a": 1, "items": [], "b": {"c": null}})"));
}

TEST(JsonStreamTest, ObjectMembersComeWithTheirKeys) {
  Seen seen;
  auto cb = seen.Callback();
  auto r = ParseStreamed(R"({"resources": {"p": {"k": 1}, "q": [2]}, "v": 1})", "resources",
                         /*want_array=*/false, cb);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_THAT(seen.keys, ElementsAre("p", "q"));
  EXPECT_EQ(seen.values[1], json::parse("[2]"));
  EXPECT_EQ(r->document, json::parse(R"({"resources": {}, "v": 1})"));
}

TEST(JsonStreamTest, OnlyTheTopLevelKeyOfTheWantedTypeIsStreamed) {
  Seen seen;
  auto cb = seen.Callback();
  // Nested "items" and a top-level "items" that is not a list stay whole.
  auto r = ParseStreamed(R"({"o": {"items": [1, 2]}, "items": {"n": 1}})", "items",
                         /*want_array=*/true, cb);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_TRUE(seen.values.empty());
  EXPECT_EQ(r->document, json::parse(R"({"o": {"items": [1, 2]}, "items": {"n": 1}})"));
}

TEST(JsonStreamTest, ARepeatedKeyStartsOverAsAWholeParseKeepsTheLast) {
  Seen seen;
  auto cb = seen.Callback();
  auto r = ParseStreamed(R"({"items": [1, 2], "items": [3]})", "items", true, cb);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_THAT(seen.positions, ElementsAre(0, 1, 0));
  EXPECT_EQ(r->members, 1u);
}

TEST(JsonStreamTest, SyntaxErrorsAreTheParsersMessageEvenAfterMembers) {
  Seen seen;
  auto cb = seen.Callback();
  auto r = ParseStreamed(R"({"items": [1, 2, }])", "items", true, cb);
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message, HasSubstr("syntax error"));
  auto trailing = ParseStreamed(R"({"items": []} x)", "items", true, cb);
  ASSERT_FALSE(trailing.has_value());
  EXPECT_THAT(trailing.error().message, HasSubstr("parse error"));
}

TEST(JsonStreamTest, ASyntaxErrorNamesThePlaceNeverTheBytes) {
  Seen seen;
  auto cb = seen.Callback();
  // A raw newline inside a credential, and a declaration cut off inside one.
  for (const char* text : {"{\"items\": [{\"a\": 1}, {\"content\": \"hunter2-AKIA\nrest\"}]}",
                           "{\"items\": [{\"a\": 1}, {\"content\": \"hunter2-AKIA"}) {
    auto r = ParseStreamed(text, "items", true, cb);
    ASSERT_FALSE(r.has_value());
    EXPECT_THAT(r.error().message, Not(HasSubstr("hunter2")));
    EXPECT_THAT(r.error().message, HasSubstr("line "));
    EXPECT_THAT(r.error().message, HasSubstr("(in items[1])"));
  }
}

TEST(JsonStreamTest, AWholeDocumentThatIsNotAnObject) {
  Seen seen;
  auto cb = seen.Callback();
  auto r = ParseStreamed(R"([{"items": [1]}])", "items", true, cb);
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(seen.values.empty());
  EXPECT_EQ(r->document, json::parse(R"([{"items": [1]}])"));
}

// What the flat callback saw of each object member, as a tree again.
struct SeenFlat {
  std::vector<size_t> positions;
  std::vector<json> objects;
  std::vector<bool> overflowed;
  FlatObjectCallback Callback() {
    return [this](size_t position, FlatObject& object) {
      positions.push_back(position);
      json tree = json::object();
      for (const FlatObject::Field& f : object.fields()) {
        tree[f.key] = f.is_string ? json(f.text) : f.value;
      }
      objects.push_back(tree);
      overflowed.push_back(object.overflowed());
    };
  }
};

TEST(JsonStreamTest, ObjectMembersComeFlatAndTheOthersAsTrees) {
  Seen seen;
  SeenFlat flat;
  auto cb = seen.Callback();
  auto fcb = flat.Callback();
  const char* text =
      R"({"items": [{"a": "x", "n": 1, "l": ["p", {"q": "r"}], "o": {"s": "t"}}, "s", {}, 3,)"
      R"( {"b": "y"}], "k": {"v": "w"}})";
  auto r = ParseStreamed(text, "items", /*want_array=*/true, cb, fcb);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->members, 5u);
  EXPECT_THAT(flat.positions, ElementsAre(0, 2, 4));
  EXPECT_EQ(flat.objects[0],
            json::parse(R"({"a": "x", "n": 1, "l": ["p", {"q": "r"}], "o": {"s": "t"}})"));
  EXPECT_EQ(flat.objects[1], json::object());
  // A field the last member did not have is not left over from the first.
  EXPECT_EQ(flat.objects[2], json::parse(R"({"b": "y"})"));
  EXPECT_THAT(seen.positions, ElementsAre(1, 3));
  EXPECT_EQ(seen.values[0], "s");
  EXPECT_EQ(r->document, json::parse(R"({"items": [], "k": {"v": "w"}})"));
}

TEST(JsonStreamTest, AFlatObjectKeepsARepeatedKeysLastValueInItsFirstPlace) {
  Seen seen;
  SeenFlat flat;
  auto cb = seen.Callback();
  auto fcb = flat.Callback();
  auto r = ParseStreamed(R"({"items": [{"a": "1", "b": "2", "a": [3]}]})", "items", true, cb, fcb);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(flat.objects.size(), 1u);
  EXPECT_EQ(flat.objects[0], json::parse(R"({"a": [3], "b": "2"})"));
  FlatObject object;
  object.Begin("a").text = "1";
  object.Begin("b");
  FlatObject::Field& again = object.Begin("a");
  EXPECT_EQ(&again, &object.fields()[0]);
  EXPECT_FALSE(again.is_string);
  EXPECT_EQ(object.fields().size(), 2u);
}

TEST(JsonStreamTest, AFlatObjectPastItsFieldLimitSaysSo) {
  Seen seen;
  SeenFlat flat;
  auto cb = seen.Callback();
  auto fcb = flat.Callback();
  std::string text = R"({"items": [{)";
  for (size_t i = 0; i < FlatObject::kMaxFields + 10; ++i) {
    text += (i ? ", " : "") + ("\"k" + std::to_string(i) + "\": \"v\"");
  }
  text += R"(}, {"k": "v"}]})";
  auto r = ParseStreamed(text, "items", true, cb, fcb);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(flat.objects.size(), 2u);
  EXPECT_EQ(flat.objects[0].size(), FlatObject::kMaxFields);
  EXPECT_THAT(flat.overflowed, ElementsAre(true, false));
}

}  // namespace
}  // namespace mesh::core
