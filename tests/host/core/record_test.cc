#include "host/core/record.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tests/testing/record_json.h"

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

// The head's owner and group names with their ids: read back as written,
// absent in a record of an older host, refused when malformed (naming the
// field), and not recorded past kMaxOwnerPairs.
TEST(RecordTest, OwnersRoundTripAndAreChecked) {
  Record r;
  r.machine = "edge-1";
  r.declaration_digest = "abc";
  auto none = ParseRecord(SerializeRecord(r));
  ASSERT_TRUE(none.has_value()) << none.error().message;
  EXPECT_FALSE(none->owners.has_value()) << "an older host's record";
  r.owners = OwnerIds{{{"app", "www-data"}, {1001, 33}}, {{"root", "root"}, {0, 0}}};
  auto back = ParseRecord(SerializeRecord(r));
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(back->owners, r.owners);
  r.owners = OwnerIds{};
  back = ParseRecord(SerializeRecord(r));
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(back->owners, OwnerIds{}) << "none named: present, and empty";

  std::string text = SerializeRecord(r);
  for (const char* bad : {R"("owners":[["app","app",1001]])", R"("owners":[["app","app",-1,0]])",
                          R"("owners":[["app","app",4294967296,0]])", R"("owners":"app")",
                          R"("owners":[[1,"app",1,1]])"}) {
    std::string hostile = text;
    hostile.replace(hostile.find(R"("owners":[])"), 11, bad);
    auto refused = ParseRecord(hostile);
    ASSERT_FALSE(refused.has_value()) << bad;
    EXPECT_THAT(refused.error().message, ::testing::HasSubstr("owners")) << bad;
  }

  OwnerIds many;
  for (uint32_t i = 0; i <= kMaxOwnerPairs; ++i) many[{"u" + std::to_string(i), "g"}] = {i, 0};
  EXPECT_FALSE(RecordableOwners(many).has_value());
  many.erase(many.begin());
  EXPECT_EQ(RecordableOwners(many), many);
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
      EXPECT_EQ(writes, 50);  // one per entry, the head with the first
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

// A record's text: the head's fields (after "version":2 and with "entries"
// counted), then each entry's line.
std::string Lines(const std::string& head, std::vector<std::string> entries) {
  std::string text =
      R"({"version":2,)" + head + R"(,"entries":)" + std::to_string(entries.size()) + "}\n";
  for (const std::string& e : entries) text += e + "\n";
  return text;
}
const std::string kHead = R"("machine":"m","generation":1,"declaration_digest":"")";

// Only a unit's entry holds a unit part (record.h): a file's, read back,
// holds none.
TEST(RecordTest, AFileEntryReadBackHoldsNoUnitPart) {
  auto back = ParseRecord(Lines(
      kHead,
      {R"({"id":"f","kind":"file","digest":"d","applied_at":"t","written":[{"path":"/a","fingerprint":"1"}]})",
       R"({"id":"s","kind":"service","digest":"d","applied_at":"t","written":[],"unit":"s.service"})"}));
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_FALSE(back->resources.at("f").unit_record.has_value());
  EXPECT_EQ(back->resources.at("s").unit().name, "s.service");
  EXPECT_EQ(back->resources.at("f").unit().name, "");
  // Unit keys that say nothing make none either: the entry must equal the
  // one the plan makes, or the record is rewritten.
  auto quiet = ParseRecord(
      Lines(kHead, {R"({"id":"f","kind":"file","digest":"d","applied_at":"t","written":[],)"
                    R"("finished":false,"unit_file_preexisting":false,"state":"","unit":""})"}));
  ASSERT_TRUE(quiet.has_value()) << quiet.error().message;
  EXPECT_FALSE(quiet->resources.at("f").unit_record.has_value());
}

TEST(RecordTest, CorruptIsAnErrorNotACrash) {
  for (const std::string& bad :
       {std::string(""), std::string("{"), std::string("[]"), std::string("{\"version\": 99}"),
        std::string("{\"version\":2,\"machine\":3}"), std::string("\n\n"),
        Lines(kHead, {R"({"id":"a","kind":"file"})"}), Lines(kHead, {"{}"}),
        Lines(kHead, {R"({"id":7})"}), Lines(kHead, {"[]"}), Lines(kHead, {""})}) {
    EXPECT_FALSE(ParseRecord(bad).has_value()) << bad;
  }
}

// Found by tools/fuzz: a huge float where an integer belongs made nlohmann
// cast it to int, undefined behaviour (caught by --config=ubsan).
TEST(RecordTest, HugeNumbersAreErrorsNotUndefinedBehaviour) {
  const std::string entry = R"({"id":"a","kind":"service","digest":"d","applied_at":"t",)";
  for (
      const std::string& bad : {
          std::string(R"({"version":10080802379.81177,"x":"abc"})"),
          std::string(R"({"version":-1})"),
          Lines(kHead + R"(,"want_version":1e300)", {}),
          Lines(R"("machine":"m","generation":-5e40,"declaration_digest":"")", {}),
          Lines(kHead, {entry + R"("written":[{"path":"/a","fingerprint":"f","files":1e99}]})"}),
          Lines(kHead, {entry + R"("written":[],"n_restarts":4294967296})"}),
          Lines(kHead, {entry + R"("written":[],"finished":1})"}),
          Lines(kHead, {entry + R"("written":[],"run_began":9223372036854775808})"}),
          Lines(kHead, {entry + R"("written":[],"reload_began":9223372036854775808})"}),
          Lines(kHead, {entry + R"("written":[],"reload_began":-1})"}),
          std::string(
              R"({"version":2,"machine":"m","generation":1,"declaration_digest":"","entries":1e3})"),
      }) {
    EXPECT_FALSE(ParseRecord(bad).has_value()) << bad;
  }
}

TEST(RecordTest, EveryBadShapeNamesWhatIsWrong) {
  const std::string entry = R"({"id":"a","kind":"file","digest":"d","applied_at":"t",)";
  struct Case {
    std::string text;
    std::string says;
  } cases[] = {
      {"[]", "not a JSON object"},
      {R"({"version":3})", "unknown version 3"},
      {R"({"version":2,"machine":"m","generation":1,"declaration_digest":"d"})",
       "line 1: entries missing"},
      {R"({"version":2,"machine":{},"generation":1})", "line 1: field machine: must be a string"},
      {R"({"version":1,"machine":"m","generation":1,"declaration_digest":"d"})",
       "resources missing"},
      {R"({"version":1,"machine":"m","generation":1,"declaration_digest":"d","resources":[]})",
       "field resources: must be an object"},
      {R"({"version":1,"machine":"m","generation":1,"declaration_digest":"d","resources":{"a":1}})",
       "resource a: must be an object"},
      {Lines(kHead, {R"(["a"])"}), "line 2: not a JSON object"},
      {Lines(kHead, {R"({"kind":"file"})"}), "line 2: field id: missing, or not a string"},
      {Lines(kHead, {entry + R"("written":[1]})"}),
       "line 2: resource a, field written: must list objects"},
      {Lines(kHead, {R"({"id":"a","kind":"file","digest":"d","applied_at":"t"})"}),
       "line 2: resource a, field written: missing"},
      {Lines(kHead, {entry + R"("written":[{"path":"/a"}]})"}),
       "path and fingerprint are required"},
      {Lines(kHead, {R"({"id":"a","kind":7,"digest":"d","applied_at":"t","written":[]})"}),
       "line 2: resource a, field kind: must be a string"},
      {Lines(kHead, {entry + R"("written":[],"position":-1})"}),
       "resource a, field position: must be a non-negative integer"},
      {Lines(kHead, {entry + R"("written":[]})", R"({"id":"b",)"}), "line 3: not JSON"},
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

// The head counts the entries: a record cut short at a line's end, or
// with a line more, is refused, not read as another record. Fails on a
// reader that takes whatever lines there are.
TEST(RecordTest, ARecordCutAtALineOrGrownByOneIsRefused) {
  const std::string entry = R"(,"kind":"file","digest":"d","applied_at":"t","written":[]})";
  std::string whole = Lines(kHead, {R"({"id":"a")" + entry, R"({"id":"b")" + entry});
  ASSERT_TRUE(ParseRecord(whole).has_value());
  std::string cut = whole.substr(0, whole.rfind("{\"id\":\"b\""));
  for (const auto& [text, says] :
       {std::pair{cut, "state: 1 of the 2 entries its head names: cut short"},
        {whole + R"({"id":"c")" + entry + "\n", "state: line 4: past the 2 entries its head"}}) {
    auto r = ParseRecord(text);
    ASSERT_FALSE(r.has_value()) << text;
    EXPECT_THAT(r.error().message, ::testing::StartsWith(says));
    std::istringstream in(text);
    auto streamed = ParseRecord(in);
    ASSERT_FALSE(streamed.has_value());
    EXPECT_EQ(streamed.error().message, r.error().message);
  }
}

// A line is held whole to be parsed: past 1 MiB it is refused by its
// length, read whole or streamed alike.
// At the bound and one byte past it, with and without a last newline: the
// whole text and the stream cut lines alike.
TEST(RecordTest, ALineAtTheBoundIsReadAndOneBytePastItRefusedAlike) {
  const std::string open = R"({"id":"a","kind":"file","digest":")";
  const std::string close = R"(","applied_at":"t","written":[]})";
  for (size_t bytes : {size_t{1} << 20, (size_t{1} << 20) + 1}) {
    std::string line = open + std::string(bytes - open.size() - close.size(), 'x') + close;
    ASSERT_EQ(line.size(), bytes);
    std::string text = Lines(kHead, {line});
    for (const std::string& t : {text, text.substr(0, text.size() - 1)}) {
      auto whole = ParseRecord(t);
      std::istringstream in(t);
      auto streamed = ParseRecord(in);
      ASSERT_EQ(whole.has_value(), streamed.has_value()) << bytes;
      EXPECT_EQ(whole.has_value(), bytes == size_t{1} << 20) << bytes;
      if (!whole) {
        EXPECT_EQ(whole.error().message, streamed.error().message);
      }
    }
  }
}

TEST(RecordTest, ALineOverOneMebibyteIsRefused) {
  std::string huge = R"({"id":"a","kind":"file","digest":")" + std::string(1 << 20, 'x') +
                     R"(","applied_at":"t","written":[]})";
  std::string text = Lines(kHead, {huge});
  auto r = ParseRecord(text);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message, "state: line 2: longer than 1 MiB");
  std::istringstream in(text);
  auto streamed = ParseRecord(in);
  ASSERT_FALSE(streamed.has_value());
  EXPECT_EQ(streamed.error().message, r.error().message);
}

// A newer host may add fields; this one reads what it knows and skips the
// rest, containers included. A repeated key or id keeps the last, as JSON
// readers do.
TEST(RecordTest, UnknownFieldsAreSkippedAndTheLastOfARepeatedKeyWins) {
  auto r = ParseRecord(Lines(
      R"("future":{"x":[1,{"y":2}]},"machine":"m","generation":3,"declaration_digest":"d")",
      {R"({"id":"a","kind":"file","digest":"old","applied_at":"t","written":[],"labels":["l"]})",
       R"({"id":"a","kind":"file","digest":"new","applied_at":"t","drop_ins":"a.conf=1",)"
       R"("drop_ins":"b.conf=2",)"
       R"("written":[{"path":"/a","fingerprint":"f","extra":{}}],"position":4,"state":"running"})"}));
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->generation, 3u);
  ASSERT_EQ(r->resources.size(), 1u);
  const RecordEntry& a = r->resources.at("a");
  EXPECT_EQ(a.digest, "new");
  EXPECT_EQ(a.position, 4u);
  EXPECT_EQ(a.unit().state, "running");
  EXPECT_EQ(a.unit().drop_ins, (std::map<std::string, std::string>{{"b.conf", "2"}}))
      << "a repeated drop_ins keeps its last list, not both";
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
    e.mutable_unit().run_began_us = i == 2 ? 0 : 1'700'000'000'000'000 + i;
    e.mutable_unit().reload_began_us = i == 0 ? 1'700'000'000'500'000 : 0;
    r.resources["s" + std::to_string(i)] = e;
  }
  std::string text = SerializeRecord(r);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4) << text;
  EXPECT_THAT(text, ::testing::HasSubstr("\n{\"id\":\"s1\",\"applied_at\":")) << text;
  auto back = ParseRecord(text);
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(*back, r);
  std::istringstream in(text);
  auto streamed = ParseRecord(in);
  ASSERT_TRUE(streamed.has_value()) << streamed.error().message;
  EXPECT_EQ(*streamed, r);
}

// A record of version 1, the one document the hosts before JSON Lines
// wrote (the head on a line ending in "resources", an entry a line, or any
// other layout), reads as the same record, whole or streamed.
TEST(RecordTest, ARecordOfVersion1ReadsAsTheSameRecord) {
  Record r;
  r.want_version = Record::kWantVersion;
  r.machine = "m";
  r.generation = 4;
  r.declaration_digest = "d";
  for (int i = 0; i < 3; ++i) {
    RecordEntry e;
    e.kind = i == 1 ? "service" : "file";
    e.digest = "sha256:" + std::to_string(i);
    e.applied_at = "t";
    if (i == 1) {
      e.mutable_unit().name = "s.service";
      e.mutable_unit().n_restarts = 2;
    } else {
      e.written.push_back({"/etc/f" + std::to_string(i), "1:2:3", "", 0, false});
    }
    r.resources["r" + std::to_string(i)] = e;
  }
  nlohmann::json old = testing::RecordJson(SerializeRecord(r));
  // As the last host of version 1 laid it out.
  nlohmann::json head = old;
  head.erase("resources");
  head.erase("entries");
  head["version"] = 1;
  std::string by_lines = head.dump();
  by_lines.pop_back();
  by_lines += R"(,"resources":{)";
  for (const auto& [id, entry] : old["resources"].items()) {
    by_lines +=
        (by_lines.back() == '{' ? "\n" : ",\n") + nlohmann::json(id).dump() + ":" + entry.dump();
  }
  by_lines += "\n}}\n";
  Record read_as = r;
  read_as.version = 1;  // what makes the next full pass write it anew
  for (const std::string& text :
       {by_lines, testing::Version1Text(old), testing::Version1Text(old, 2)}) {
    auto back = ParseRecord(text);
    ASSERT_TRUE(back.has_value()) << back.error().message << "\n" << text;
    EXPECT_EQ(*back, read_as) << text;
    std::istringstream in(text);
    auto streamed = ParseRecord(in);
    ASSERT_TRUE(streamed.has_value()) << streamed.error().message;
    EXPECT_EQ(*streamed, read_as);
  }
}

// Version 1 as its hosts laid it out is read a line at a time, and its
// damage is named by line: a lost tail, a missing comma, a comma after the
// last entry, text after the end, a damaged entry.
TEST(RecordTest, ARecordOfVersion1ByLinesThatIsDamagedIsRefusedByLine) {
  const std::string head =
      R"({"declaration_digest":"d","generation":1,"machine":"m","version":1,"resources":{)";
  const std::string a = R"("a":{"kind":"file","digest":"d","applied_at":"t","written":[]})";
  const std::string b = R"("b":{"kind":"file","digest":"e","applied_at":"t","written":[]})";
  std::string good = head + "\n" + a + ",\n" + b + "\n}}\n";
  auto read = ParseRecord(good);
  ASSERT_TRUE(read.has_value()) << read.error().message;
  EXPECT_EQ(read->version, 1);
  EXPECT_EQ(read->resources.size(), 2u);
  for (const auto& [text, says] : std::vector<std::pair<std::string, std::string>>{
           {head + "\n" + a + ",\n" + b + "\n", "state: cut short"},
           {head + "\n" + a + "\n" + b + "\n}}\n", "state: line 3: no comma"},
           {head + "\n" + a + ",\n" + b + ",\n}}\n", "state: line 4: a comma after the last"},
           {good + "{}\n", "state: text after"},
           {head + "\n" + a + ",\n" + b.substr(0, 20) + "\n}}\n", "state: line 3: not JSON"},
           {head + "\n" + R"("a":1)" + "\n}}\n", "state: line 2: resource a: must be an object"},
       }) {
    auto r = ParseRecord(text);
    ASSERT_FALSE(r.has_value()) << text;
    EXPECT_THAT(r.error().message, ::testing::StartsWith(says));
    std::istringstream in(text);
    auto streamed = ParseRecord(in);
    ASSERT_FALSE(streamed.has_value());
    EXPECT_EQ(streamed.error().message, r.error().message);
  }
}

// Counts what a scan hands over, keeping nothing.
class Count : public RecordVisitor {
 public:
  bool Header(const Record&) override { return true; }
  bool Entry(const std::string&, const RecordEntry&) override { return ++entries, true; }
  size_t entries = 0;
};

// Past its bound (64 MiB; 4 KiB here), version 1 is read a line at a time
// when laid out as its hosts wrote it, and refused as too large (never as
// corrupt: the host would start over from an empty record and save over
// it) when not. What does not begin as a record of version 1 is corrupt,
// whatever its size: too large would block every apply, corrupt is
// adopted from.
TEST(RecordTest, ALargeRecordOfVersion1IsReadByLinesOrRefusedAsTooLarge) {
  const RecordLimits small{.max_line_bytes = 512, .max_version1_bytes = 4096};
  std::string text =
      R"({"declaration_digest":"d","generation":1,"machine":"m","version":1,"resources":{)";
  const std::string entry = R"(":{"kind":"file","digest":"sha256:)" + std::string(64, 'f') +
                            R"(","applied_at":"2026-12-05T00:00:00.000Z","written":[]})";
  size_t n = 0;
  while (text.size() <= 3 * small.max_version1_bytes) {
    text += n == 0 ? "\n\"" : ",\n\"";
    text += std::to_string(n) + entry;
    ++n;
  }
  text += "\n}}\n";
  Count whole, streamed;
  auto scanned = ScanRecord(text, whole, small);
  ASSERT_TRUE(scanned.has_value()) << scanned.error().message;
  std::istringstream in(text);
  auto by_stream = ScanRecord(in, streamed, small);
  ASSERT_TRUE(by_stream.has_value()) << by_stream.error().message;
  EXPECT_EQ(whole.entries, n);
  EXPECT_EQ(streamed.entries, n);

  std::string indented = R"({"version": 1, "machine": "m", "generation": 1,)" +
                         std::string(small.max_version1_bytes, ' ') +
                         R"("declaration_digest": "d", "resources": {}})";
  ASSERT_TRUE(ParseRecord(indented).has_value()) << "read whole under the default bound";
  auto too_large = ParseRecord(indented, small);
  ASSERT_FALSE(too_large.has_value());
  EXPECT_EQ(too_large.error().kind, ErrorKind::kTooLarge);
  EXPECT_THAT(too_large.error().message, ::testing::HasSubstr("over 4096 bytes"));
  EXPECT_THAT(too_large.error().message, ::testing::HasSubstr("not read as corrupt"));
  std::istringstream big(indented);
  auto too_large_streamed = ParseRecord(big, small);
  ASSERT_FALSE(too_large_streamed.has_value());
  EXPECT_EQ(too_large_streamed.error().kind, ErrorKind::kTooLarge);

  for (const std::string& junk : {std::string(2 * small.max_version1_bytes, 'x'),
                                  R"({"version":2,"machine":"m",)" +
                                      std::string(2 * small.max_version1_bytes, ' ') + "\n{}\n"}) {
    auto corrupt = ParseRecord(junk, small);
    ASSERT_FALSE(corrupt.has_value());
    EXPECT_EQ(corrupt.error().kind, ErrorKind::kCorrupt) << corrupt.error().message;
    std::istringstream in_junk(junk);
    auto streamed_junk = ParseRecord(in_junk, small);
    ASSERT_FALSE(streamed_junk.has_value());
    EXPECT_EQ(streamed_junk.error().kind, ErrorKind::kCorrupt);
  }
}

// The store reads a small record whole and a large one as a stream: both
// must read every text alike, refusals word for word.
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
  auto first = ParseRecord(std::string_view(text));
  ASSERT_TRUE(first.has_value()) << first.error().message;
  EXPECT_EQ(*first, r);
  std::mt19937 random(7);
  for (int i = 0; i < 3000; ++i) {
    std::string t = text;
    if (i > 0) {
      size_t at = random() % t.size();
      // Line ends, carriage returns and NULs too: where the two readers
      // split lines is where they could differ.
      const char bytes[] = "{}[]:,\"0-1e.tn \\\n\r";
      t[at] = random() % 50 == 0 ? '\0' : bytes[random() % (sizeof bytes - 1)];
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
