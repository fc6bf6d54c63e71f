#include "host/core/json_stream.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "host/core/json_depth.h"
#include "tests/host/core/json_stream_trace.h"

namespace mesh::core {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using json = nlohmann::json;
using testing_json::Trace;

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

// A consumer that has seen enough stops the parse: nothing more is handed
// over, the rest is not read (a syntax error after it is never met), and
// the parse says it stopped — with either parser.
TEST(JsonStreamTest, AStopEndsTheParseAfterTheMemberThatAskedForIt) {
  for (JsonEngine engine : {JsonEngine::kFast, JsonEngine::kReference}) {
    for (const char* text : {R"({"items": [1, 2, 3, 4], "b": [)",
                             R"({"items": [{"a": "1"}, "2", {"c": "3"}], "b": []})"}) {
      bool stop = false;
      std::vector<size_t> positions;
      MemberCallback cb = [&](std::string&, size_t position, json&) {
        positions.push_back(position);
        stop = position == 1;
      };
      FlatObjectCallback flat = [&](size_t position, FlatObject&) {
        positions.push_back(position);
        stop = position == 1;
      };
      auto r = ParseStreamed(text, "items", /*want_array=*/true, cb, flat,
                             {.engine = engine, .stop = &stop});
      ASSERT_FALSE(r.has_value());
      EXPECT_THAT(r.error().message, HasSubstr("parse stopped"));
      EXPECT_THAT(positions, ElementsAre(0, 1)) << text;
    }
  }
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

// Issue 39 (7): a repeated key was read as a whole parse reads it (the
// last wins): what one reader applies is not what another shows. Refused,
// by both parsers, naming the key and where.
TEST(JsonStreamTest, ARepeatedKeyIsRefused) {
  for (JsonEngine engine : {JsonEngine::kFast, JsonEngine::kReference}) {
    Seen seen;
    auto cb = seen.Callback();
    StreamOptions o;
    o.engine = engine;
    auto r = ParseStreamed(R"({"items": [1, 2], "items": [3]})", "items", true, cb, o);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().kind, ErrorKind::kDuplicateKey);
    EXPECT_EQ(r.error().message, "key \"items\" appears twice at the top level");
  }
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

// nlohmann's lexer read a NUL byte as the end of the input: a document
// with anything after one (another document, a resource the host would
// never see) was valid, and not the one JSON tools and a signature read.
TEST(JsonStreamTest, ANulByteAnywhereIsRefusedNamingItsPlace) {
  Seen seen;
  auto cb = seen.Callback();
  for (auto engine : {JsonEngine::kFast, JsonEngine::kReference}) {
    auto r = ParseStreamed(std::string("{\"items\": []}\0{\"items\": [1]}", 28), "items", true, cb,
                           StreamOptions{.engine = engine});
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().message,
              "line 1, column 14: syntax error: a NUL byte, which JSON holds nowhere (a string "
              "writes it \\u0000)");
    auto in_string = ParseStreamed(std::string("{\"items\": [\"a\0b\"]}", 18), "items", true, cb,
                                   StreamOptions{.engine = engine});
    ASSERT_FALSE(in_string.has_value());
    EXPECT_THAT(in_string.error().message, HasSubstr("a NUL byte"));
  }
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

TEST(JsonStreamTest, AFlatObjectRefusesARepeatedKey) {
  Seen seen;
  SeenFlat flat;
  auto cb = seen.Callback();
  auto fcb = flat.Callback();
  auto r = ParseStreamed(R"({"items": [{"a": "1", "b": "2", "a": [3]}]})", "items", true, cb, fcb);
  ASSERT_FALSE(r.has_value()) << "a member's repeated key is refused";
  EXPECT_EQ(r.error().message, "key \"a\" appears twice in items[0]");
  EXPECT_TRUE(flat.objects.empty());
  FlatObject object;
  object.Add("a")->text = "1";
  ASSERT_NE(object.Add("b"), nullptr);
  EXPECT_EQ(object.Add("a"), nullptr) << "a key given twice";
  EXPECT_EQ(object.fields().size(), 2u);
  EXPECT_EQ(object.fields()[0].text, "1");
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

TEST(JsonStreamTest, ADeclarationsShapeIsReadBySimdjson) {
  bool by_reference = true;
  std::string trace =
      Trace(R"({"machine": "m", "generation": 7, "items": [{"id": "a", "kind": "file",)"
            R"( "path": "/etc/a", "content": "x\ny\u00e9", "mode": "0644"}, {"id": "u", "kind":)"
            R"( "service", "enabled": true, "actions": ["restart"]}]})",
            JsonEngine::kFast, &by_reference);
  EXPECT_FALSE(by_reference) << trace;
  EXPECT_THAT(trace, HasSubstr(R"("content"="x\ny)"
                               "\xC3\xA9\""));
  EXPECT_THAT(trace, HasSubstr(R"("generation":u7)"));
}

// simdjson reads "-0" as the integer 0; nlohmann as a signed integer, and a
// declaration's generation must be unsigned.
TEST(JsonStreamTest, MinusZeroIsTypedAsTheReferenceTypesIt) {
  bool by_reference = false;
  EXPECT_THAT(Trace(R"({"generation": -0, "items": []})", JsonEngine::kFast, &by_reference),
              HasSubstr(R"("generation":i0)"));
  EXPECT_TRUE(by_reference);
  EXPECT_THAT(Trace(R"({"generation": 0, "items": [], "s": "a-0"})", JsonEngine::kFast),
              HasSubstr(R"("generation":u0)"));
  // A zero with no "-0" anywhere in the bytes needs no second parse.
  EXPECT_THAT(
      Trace(R"({"generation": 0, "items": [{"n": [0, -1, 2]}]})", JsonEngine::kFast, &by_reference),
      HasSubstr(R"("generation":u0)"));
  EXPECT_FALSE(by_reference);
}

// What simdjson refuses, nlohmann decides: its meaning, or its message.
TEST(JsonStreamTest, WhatSimdjsonRefusesTheReferenceDecides) {
  bool by_reference = false;
  // A byte-order mark, and an integer past 64 bits (a float to nlohmann).
  EXPECT_THAT(Trace("\xEF\xBB\xBF{\"items\": [1]}", JsonEngine::kFast, &by_reference),
              HasSubstr("members 1"));
  EXPECT_TRUE(by_reference);
  EXPECT_THAT(
      Trace(R"({"n": 18446744073709551616, "items": []})", JsonEngine::kFast, &by_reference),
      HasSubstr(R"("n":f1.8446744073709552e+19)"));
  EXPECT_TRUE(by_reference);
  // A syntax error is nlohmann's message, with the place and the member.
  std::string error = Trace(R"({"items": [{"a": "b"}, {"a": tru}]})", JsonEngine::kFast);
  EXPECT_THAT(error, HasSubstr("error "));
  EXPECT_THAT(error, HasSubstr("line 1"));
  EXPECT_THAT(error, HasSubstr("(in items[1])"));
}

TEST(JsonStreamTest, TheTwoParsersAgreeOnTheEdges) {
  for (
      std::string text : std::vector<std::string>{
          R"({"items": [{"a": "1", "a": [2], "b": -0.0, "c": 1e2, "d": -9223372036854775808}]})",
          R"({"items": [18446744073709551615, -1, 1.5e-400, 1e400, 0.1, 2.2250738585072011e-308]})",
          R"({"items": ["\ud83d\ude00", "\u0000", "\/\b\f\n\r\t\"\\"]})",
          R"({"items": ["\ud800"]})",
          R"({"items": ["\udc00\u0041"]})",
          "{\"items\": [\"a\tb\"]}",
          "{\"items\": [\"\xed\xa0\x80\"]}",
          "{\"items\": [\"\xc0\xaf\"]}",
          "{\"items\": [\"\xf4\x90\x80\x80\"]}",
          std::string("{\"items\": []}\0", 14),
          "{\"items\": []}  \n\t ",
          "",
          "   ",
          R"([{"items": [1]}])",
          R"("items")",
          R"(null)",
          R"(-0)",
          R"({})",
          R"({"items": {"a": 1}})",
          R"({"items": [1], "items": "x"})",
          R"({"items": [1, 2], "items": [{"k": "v"}]})",
          R"({"items": [{}, [], {"": ""}]})",
          R"({"items": [01]})",
          R"({"items": [1.]})",
          R"({"items": [+1]})",
          R"({"items": [.5]})",
          R"({"items": [1,]})",
          R"({"items": [1] )",
          R"({"items" [1]})",
          R"({'items': [1]})",
          R"({"items": [tru]})",
          R"({"items": [nulll]})",
          R"({"items": [NaN]})",
          R"({"items": [true, false, null]})",
          R"({"a": {"b": {"c": [[[[-0]]]]}}, "items": []})",
      }) {
    EXPECT_EQ(testing_json::Disagreement(text), "") << "input: " << testing_json::Quoted(text);
  }
}

// Small mutations of declaration-shaped documents: wherever simdjson says
// yes, it says what nlohmann says. (tools/fuzz runs the same comparison
// without bounds: tests/fuzz/json_stream_fuzzer.cc.)
TEST(JsonStreamTest, TheTwoParsersAgreeOnMutatedDocuments) {
  const std::vector<std::string> seeds = {
      R"({"machine": "m", "generation": 3, "items": [{"id": "a", "kind": "file", "path": "/a",)"
      R"( "content": "k = v\n", "mode": "0600"}, {"id": "b", "kind": "service", "enabled": true,)"
      R"( "after": ["a"], "n": [1, -2, 3.5e1]}], "extra": {"x": null}})",
      R"({"items": [{"c": "\u00e9\ud83d\ude00\\\"", "d": [{"e": -0}]}, "s", 0, []]})",
  };
  const std::string alphabet = "{}[]:,\"\\-0123456789.eE+tfnul \n\xc3\xa9\xff\x01u";
  std::mt19937 random(18);
  int fast_accepted = 0;
  for (int i = 0; i < 10000; ++i) {
    std::string text = seeds[i % seeds.size()];
    for (int m = 1 + random() % 3; m > 0; --m) {
      size_t at = random() % (text.size() + 1);
      char c = alphabet[random() % alphabet.size()];
      switch (random() % 3) {
        case 0:
          if (at < text.size()) text[at] = c;
          break;
        case 1:
          text.insert(at, 1, c);
          break;
        default:
          if (at < text.size()) text.erase(at, 1 + random() % 4);
      }
    }
    bool by_reference = true;
    std::string fast = Trace(text, JsonEngine::kFast, &by_reference);
    if (!by_reference && fast.find("document ") != std::string::npos) ++fast_accepted;
    EXPECT_EQ(testing_json::Disagreement(text), "") << "input: " << testing_json::Quoted(text);
    if (HasFailure()) break;
  }
  // The comparison is empty unless simdjson accepts a good share itself.
  EXPECT_GT(fast_accepted, 500);
}

// The depth limit is JsonDepthWithin's whichever parser reads: simdjson's
// own is as strict or stricter, and what it refuses is counted again.
TEST(JsonStreamTest, TheDepthLimitIsTheSameForBothParsers) {
  for (int levels = 1; levels <= 6; ++levels) {
    std::string arrays =
        R"({"items": [)" + std::string(levels, '[') + std::string(levels, ']') + "]}";
    std::string objects = R"({"items": [)";
    for (int i = 0; i < levels; ++i) objects += R"({"k": )";
    objects += "1" + std::string(levels, '}') + "]}";
    for (const std::string& text : {arrays, objects}) {
      for (int max_depth : {3, 4, 5}) {
        EXPECT_EQ(testing_json::Disagreement(text, max_depth), "") << text << " " << max_depth;
        bool deep = !JsonDepthWithin(text, max_depth);
        std::string trace = Trace(text, JsonEngine::kFast, nullptr, max_depth);
        EXPECT_EQ(trace.starts_with("error nested deeper than " + std::to_string(max_depth)), deep)
            << text << " " << max_depth << ": " << trace;
      }
    }
  }
}

TEST(JsonStreamTest, BothParsersSayWhenTheCollectionStartsTheFastOneItsSize) {
  std::vector<std::string> heard;
  Seen seen;
  auto cb = seen.Callback();
  auto options = [&](JsonEngine engine) {
    StreamOptions o;
    o.engine = engine;
    o.on_start = [&](std::optional<size_t> n) {
      heard.push_back((n ? std::to_string(*n) : "?") + " before " +
                      std::to_string(seen.values.size()));
    };
    return o;
  };
  const char* text = R"({"items": [1, 2, 3], "x": [4]})";
  ASSERT_TRUE(ParseStreamed(text, "items", true, cb, options(JsonEngine::kFast)).has_value());
  EXPECT_THAT(heard, ElementsAre("3 before 0"));
  heard.clear();
  ASSERT_TRUE(ParseStreamed(text, "items", true, cb, options(JsonEngine::kReference)).has_value());
  EXPECT_THAT(heard, ElementsAre("? before 3"));
}

}  // namespace
}  // namespace mesh::core
