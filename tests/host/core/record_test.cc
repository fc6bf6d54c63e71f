#include "host/core/record.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "host/core/json_stream.h"

namespace mesh::core {
namespace {

TEST(RecordTest, RoundTrips) {
  Record r;
  r.machine = "edge-1";
  r.generation = 7;
  r.declaration_digest = "abc";
  RecordEntry e;
  e.kind = "process";
  e.digest = "sha256:1";
  e.applied_at = "2026-11-30T00:00:00.000Z";
  e.mutable_unit().name = "node-tools.service";
  e.mutable_unit().file_fingerprint = "1:2:3:4";
  e.written.push_back({"/opt/node-tools", "tree:9", "sha256:2", 239, true});
  r.resources["node-tools.runtime"] = e;
  auto back = ParseRecord(SerializeRecord(r));
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(back->generation, 7u);
  const RecordEntry& b = back->resources.at("node-tools.runtime");
  EXPECT_EQ(b.digest, "sha256:1");
  EXPECT_EQ(b.unit().file_fingerprint, "1:2:3:4");
  ASSERT_EQ(b.written.size(), 1u);
  EXPECT_EQ(b.written[0].file_count, 239u);
  EXPECT_TRUE(b.written[0].preexisting);
}

// The record store streams the text to disk in pieces: they must make the
// same text as the whole, and the first failed write ends it.
TEST(RecordTest, ThePiecesMakeTheWholeText) {
  Record r;
  r.machine = "m";
  r.generation = 3;
  r.declaration_digest = "d";
  for (int i = 0; i < 50; ++i) {
    RecordEntry e;
    e.kind = "file";
    e.digest = "sha256:" + std::to_string(i);
    e.applied_at = "t";
    e.written.push_back({"/etc/f" + std::to_string(i), "1:2:3:4", "", 0, false});
    r.resources["f" + std::to_string(i)] = e;
  }
  Record empty = r;
  empty.resources.clear();
  std::string empty_text;
  ASSERT_TRUE(SerializeRecord(
                  empty,
                  [&](std::string_view p) -> Status {
                    empty_text += p;
                    return Ok();
                  },
                  1)
                  .has_value());
  EXPECT_EQ(empty_text, SerializeRecord(empty));
  std::string whole = SerializeRecord(r);
  for (size_t piece : {size_t{1}, size_t{100}, size_t{64} << 10}) {
    std::string joined;
    int writes = 0;
    auto st = SerializeRecord(
        r,
        [&](std::string_view p) -> Status {
          ++writes;
          joined += p;
          return Ok();
        },
        piece);
    ASSERT_TRUE(st.has_value());
    EXPECT_EQ(joined, whole) << piece;
    if (piece == 1) {
      EXPECT_EQ(writes, 51);  // one per entry and the tail
    }
  }
  int writes = 0;
  auto st = SerializeRecord(
      r,
      [&](std::string_view) -> Status {
        ++writes;
        return Fail("disk full");
      },
      1);
  ASSERT_FALSE(st.has_value());
  EXPECT_EQ(st.error().message, "disk full");
  EXPECT_EQ(writes, 1);
}

// Only a unit's entry holds a unit part (record.h): a file's, read back,
// holds none.
TEST(RecordTest, AFileEntryReadBackHoldsNoUnitPart) {
  auto back = ParseRecord(
      R"({"version":1,"machine":"m","generation":1,"declaration_digest":"","resources":{)"
      R"("f":{"kind":"file","digest":"d","applied_at":"t","written":[{"path":"/a","fingerprint":"1"}]},)"
      R"("s":{"kind":"service","digest":"d","applied_at":"t","written":[],"unit":"s.service"}}})");
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_FALSE(back->resources.at("f").unit_record.has_value());
  EXPECT_EQ(back->resources.at("s").unit().name, "s.service");
  EXPECT_EQ(back->resources.at("f").unit().name, "");
  // Unit keys that say nothing make none either: the entry must equal the
  // one the plan makes, or the record is rewritten.
  auto quiet = ParseRecord(
      R"({"version":1,"machine":"m","generation":1,"declaration_digest":"","resources":{)"
      R"("f":{"kind":"file","digest":"d","applied_at":"t","written":[],)"
      R"("finished":false,"unit_file_preexisting":false,"state":"","unit":""}}})");
  ASSERT_TRUE(quiet.has_value()) << quiet.error().message;
  EXPECT_FALSE(quiet->resources.at("f").unit_record.has_value());
}

TEST(RecordTest, CorruptIsAnErrorNotACrash) {
  for (const char* bad :
       {"", "{", "[]", "{\"version\": 99}", "{\"version\":1,\"machine\":3}",
        "{\"version\":1,\"machine\":\"m\",\"generation\":1,\"declaration_digest\":\"\","
        "\"resources\":{\"a\":{\"kind\":\"file\"}}}"}) {
    EXPECT_FALSE(ParseRecord(bad).has_value()) << bad;
  }
}

// Found by tools/fuzz: a huge float where an integer belongs made nlohmann
// cast it to int, undefined behaviour (caught by --config=ubsan).
TEST(RecordTest, HugeNumbersAreErrorsNotUndefinedBehaviour) {
  for (
      const char* bad :
      {R"({"version":10080802379.81177,"x":"abc"})", R"({"version":-1})",
       R"({"version":1,"want_version":1e300,"machine":"m","generation":1,"declaration_digest":"","resources":{}})",
       R"({"version":1,"machine":"m","generation":-5e40,"declaration_digest":"","resources":{}})",
       R"({"version":1,"machine":"m","generation":1,"declaration_digest":"","resources":{"a":{"kind":"file","digest":"d","applied_at":"t","written":[{"path":"/a","fingerprint":"f","files":1e99}]}}})",
       R"({"version":1,"machine":"m","generation":1,"declaration_digest":"","resources":{"a":{"kind":"service","digest":"d","applied_at":"t","written":[],"n_restarts":4294967296}}})",
       R"({"version":1,"machine":"m","generation":1,"declaration_digest":"","resources":{"a":{"kind":"service","digest":"d","applied_at":"t","written":[],"finished":1}}})"}) {
    EXPECT_FALSE(ParseRecord(bad).has_value()) << bad;
  }
}

TEST(RecordTest, EveryBadShapeNamesWhatIsWrong) {
  const std::string head =
      R"({"version":1,"machine":"m","generation":1,"declaration_digest":"d","resources":)";
  struct Case {
    std::string text;
    std::string says;
  } cases[] = {
      {"[]", "not a JSON object"},
      {R"({"version":2})", "unknown version 2"},
      {R"({"version":1,"machine":"m","generation":1,"declaration_digest":"d"})",
       "resources missing"},
      {R"({"version":1,"machine":{},"generation":1})", "field machine: must not be an object"},
      {head + "[]}", "field resources: must not be a list"},
      {head + R"({"a":1}})", "resource a: must be an object"},
      {head + R"({"a":{"kind":"file","digest":"d","applied_at":"t","written":[1]}}})",
       "resource a, field written: must list objects"},
      {head + R"({"a":{"kind":"file","digest":"d","applied_at":"t"}}})",
       "resource a, field written: missing"},
      {head + R"({"a":{"kind":"file","digest":"d","applied_at":"t","written":[{"path":"/a"}]}}})",
       "path and fingerprint are required"},
      {head + R"({"a":{"kind":7,"digest":"d","applied_at":"t","written":[]}}})",
       "resource a, field kind: must be a string"},
      {head + R"({"a":{"kind":"f","digest":"d","applied_at":"t","written":[],"position":-1}}})",
       "resource a, field position: must be a non-negative integer"},
  };
  for (const Case& c : cases) {
    auto r = ParseRecord(c.text);
    ASSERT_FALSE(r.has_value()) << c.text;
    EXPECT_THAT(r.error().message, ::testing::HasSubstr(c.says)) << c.text;
    EXPECT_EQ(r.error().message.rfind("state: ", 0), 0u) << r.error().message;
    // The store streams the record: the same words from a stream.
    std::istringstream in(c.text);
    auto streamed = ParseRecord(in);
    ASSERT_FALSE(streamed.has_value()) << c.text;
    EXPECT_EQ(streamed.error().message, r.error().message);
  }
}

// A newer host may add fields; this one reads what it knows and skips the
// rest, containers included. A repeated key keeps the last, as JSON readers do.
TEST(RecordTest, UnknownFieldsAreSkippedAndTheLastOfARepeatedKeyWins) {
  auto r = ParseRecord(
      R"({"version":1,"future":{"x":[1,{"y":2}]},"machine":"m","generation":3,)"
      R"("declaration_digest":"d","resources":{"a":{"kind":"file","digest":"old",)"
      R"("applied_at":"t","written":[],"labels":["l"]},"a":{"kind":"file","digest":"new",)"
      R"("applied_at":"t","written":[{"path":"/a","fingerprint":"f","extra":{}}],)"
      R"("position":4,"state":"running"}}})");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->generation, 3u);
  ASSERT_EQ(r->resources.size(), 1u);
  const RecordEntry& a = r->resources.at("a");
  EXPECT_EQ(a.digest, "new");
  EXPECT_EQ(a.position, 4u);
  EXPECT_EQ(a.unit().state, "running");
  ASSERT_EQ(a.written.size(), 1u);
  EXPECT_EQ(a.written[0].fingerprint, "f");
}

// One entry per line: readable, greppable by id, and what the parser reads
// back (round trip of every field, the new ones included).
TEST(RecordTest, OneResourcePerLineAndEveryFieldRoundTrips) {
  Record r;
  r.want_version = Record::kWantVersion;
  r.machine = "m";
  r.generation = 2;
  r.declaration_digest = "d";
  r.settled_declaration_digest = "d";
  for (int i = 0; i < 3; ++i) {
    RecordEntry e;
    e.kind = "service";
    e.digest = "x" + std::to_string(i);
    e.applied_at = "t";
    e.mutable_unit().name = "u" + std::to_string(i) + ".service";
    e.position = static_cast<uint64_t>(i);
    e.mutable_unit().state = i == 1 ? "stopped" : "running";
    if (i != 1) e.mutable_unit().n_restarts = static_cast<uint32_t>(3 * i);
    e.mutable_unit().finished = i == 2;
    if (i == 0) e.mutable_unit().file_fingerprint = "1:2:3:4";
    e.mutable_unit().file_preexisting = i == 0;
    r.resources["s" + std::to_string(i)] = e;
  }
  std::string text = SerializeRecord(r);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 5) << text;
  auto back = ParseRecord(text);
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(*back, r);
  std::istringstream in(text);
  auto streamed = ParseRecord(in);
  ASSERT_TRUE(streamed.has_value()) << streamed.error().message;
  EXPECT_EQ(*streamed, r);
}

// The store reads a small record whole (simdjson) and a large one as a
// stream (nlohmann): both must read every text alike, refusals word for word.
TEST(RecordTest, TheWholeTextAndTheStreamReadAlike) {
  Record r;
  r.want_version = Record::kWantVersion;
  r.machine = "m";
  r.generation = 0;
  r.declaration_digest = "d";
  for (int i = 0; i < 4; ++i) {
    RecordEntry e;
    e.kind = i % 2 ? "service" : "file";
    e.digest = "sha256:" + std::to_string(i);
    e.applied_at = "2026-12-02T01:02:0" + std::to_string(i) + ".000Z";
    if (i % 2) {
      e.mutable_unit().name = "u" + std::to_string(i) + "-0.service";
      e.position = 0;
      e.mutable_unit().n_restarts = 0;
      e.mutable_unit().enabled = false;
      e.mutable_unit().drop_ins["10-a.conf"] = "pre:1:2";
    } else {
      e.written.push_back({"/etc/a-" + std::to_string(i), "1:2:3", "sha256:9", 0, i == 2});
    }
    r.resources["r" + std::to_string(i)] = e;
  }
  std::string text = SerializeRecord(r);
  // The comparison is empty unless simdjson reads the record itself.
  struct Ignore : nlohmann::json_sax<nlohmann::json> {
    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t) override { return true; }
    bool number_unsigned(number_unsigned_t) override { return true; }
    bool number_float(number_float_t, const string_t&) override { return true; }
    bool string(string_t&) override { return true; }
    bool binary(binary_t&) override { return true; }
    bool start_object(std::size_t) override { return true; }
    bool end_object() override { return true; }
    bool start_array(std::size_t) override { return true; }
    bool end_array() override { return true; }
    bool key(string_t&) override { return true; }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
      return false;
    }
  } ignore;
  ASSERT_TRUE(SaxParseFast(text, ignore).has_value());
  auto first = ParseRecord(std::string_view(text));
  ASSERT_TRUE(first.has_value()) << first.error().message;
  EXPECT_EQ(*first, r);
  // Read in place from a buffer with just the slack past the text's end (as
  // the store reads it), and copied when the slack is one byte short.
  for (size_t slack : {kFastParseSlack, kFastParseSlack - 1}) {
    std::vector<char> buffer(text.begin(), text.end());
    buffer.resize(text.size() + slack, '\0');
    auto in_place = ParseRecord(std::string_view(buffer.data(), text.size()), slack);
    ASSERT_TRUE(in_place.has_value()) << in_place.error().message;
    EXPECT_EQ(*in_place, r) << slack;
  }
  std::mt19937 random(7);
  for (int i = 0; i < 3000; ++i) {
    std::string t = text;
    if (i > 0) {
      size_t at = random() % t.size();
      const char* bytes = "{}[]:,\"0-1e.tn \\";
      t[at] = bytes[random() % 16];
    }
    auto whole = ParseRecord(std::string_view(t));
    std::istringstream in(t);
    auto streamed = ParseRecord(in);
    ASSERT_EQ(whole.has_value(), streamed.has_value()) << t;
    if (whole) {
      EXPECT_EQ(*whole, *streamed) << t;
    } else {
      EXPECT_EQ(whole.error().message, streamed.error().message) << t;
    }
  }
}

}  // namespace
}  // namespace mesh::core
