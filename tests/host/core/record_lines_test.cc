// ScanRecordByLines: a large record read a line at a time by simdjson must
// hand its visitor exactly what nlohmann's stream hands it, or say it cannot
// (kNotByLines) — never something else. The record proof trusts what it is
// handed to call a machine unchanged.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "host/core/record.h"

namespace mesh::core {
namespace {

// What a visitor was handed, as text; it may stop after `stop_after` entries.
class Recording : public RecordVisitor {
 public:
  explicit Recording(size_t stop_after = SIZE_MAX) : stop_after_(stop_after) {}
  bool Header(const Record& h) override {
    seen.push_back("header " + h.machine + " " + std::to_string(h.generation) + " " +
                   h.declaration_digest + " " + h.settled_declaration_digest + " " +
                   std::to_string(h.want_version));
    return true;
  }
  bool Entry(const std::string& id, const RecordEntry& e) override {
    std::string text;
    AppendRecordEntry(text, id, e, true);
    seen.push_back(text);
    return ++entries_ < stop_after_;
  }
  bool Restart() override {
    seen.clear();
    entries_ = 0;
    ++restarts;
    return true;
  }
  std::vector<std::string> seen;
  int restarts = 0;

 private:
  size_t stop_after_;
  size_t entries_ = 0;
};

Record Varied() {
  Record r;
  r.want_version = Record::kWantVersion;
  r.machine = "edge-\"1\"";
  r.generation = 12;
  r.declaration_digest = r.settled_declaration_digest = "d";
  const char* ids[] = {"a", "quote\"d", "back\\slash", "new\nline", "ünï", "tab\there", "z"};
  int i = 0;
  for (const char* id : ids) {
    RecordEntry e;
    e.kind = i % 3 == 0 ? "service" : i % 3 == 1 ? "file" : "archive";
    e.digest = "sha256:" + std::to_string(i);
    e.applied_at = "2026-12-02T01:02:0" + std::to_string(i) + ".000Z";
    e.position = static_cast<uint64_t>(i);
    if (e.kind == "service") {
      e.mutable_unit().name = "u" + std::to_string(i) + ".service";
      e.mutable_unit().state = "running";
      e.mutable_unit().n_restarts = static_cast<uint32_t>(i);
      e.mutable_unit().enabled = i % 2 == 0;
      e.mutable_unit().drop_ins["10-a.conf"] = "pre:1:2";
    } else {
      e.written.push_back(
          {"/etc/x" + std::to_string(i), "1:2:3", "sha256:9", uint64_t(i), i % 2 == 0});
    }
    r.resources[id] = e;
    ++i;
  }
  return r;
}

struct Read {
  Result<bool> result;
  std::vector<std::string> seen;
};

Read ByLines(const std::string& text, size_t stop_after = SIZE_MAX) {
  std::istringstream in(text);
  Recording v(stop_after);
  auto result = ScanRecordByLines(in, v);
  return {result, v.seen};
}

Read ByReference(const std::string& text, size_t stop_after = SIZE_MAX) {
  std::istringstream in(text);
  Recording v(stop_after);
  auto result = ScanRecord(in, v);
  return {result, v.seen};
}

TEST(RecordLinesTest, ReadsWhatTheHostWritesAsTheStreamDoes) {
  for (const Record& r : {Varied(), Record{}}) {
    std::string text = SerializeRecord(r);
    Read lines = ByLines(text);
    Read reference = ByReference(text);
    ASSERT_TRUE(lines.result.has_value()) << lines.result.error().message << "\n" << text;
    ASSERT_TRUE(reference.result.has_value()) << reference.result.error().message;
    EXPECT_TRUE(*lines.result);
    EXPECT_EQ(lines.seen, reference.seen);
    EXPECT_EQ(lines.seen.size(), r.resources.size() + 1);
  }
}

TEST(RecordLinesTest, AVisitorThatStopsIsStoppedAlike) {
  std::string text = SerializeRecord(Varied());
  for (size_t k : {1, 3, 7}) {
    Read lines = ByLines(text, k);
    Read reference = ByReference(text, k);
    ASSERT_TRUE(lines.result.has_value());
    EXPECT_EQ(*lines.result, *reference.result) << k;
    EXPECT_EQ(lines.seen, reference.seen) << k;
  }
}

TEST(RecordLinesTest, AnotherLayoutIsNotReadByLines) {
  std::string text = SerializeRecord(Varied());
  std::string pretty = nlohmann::json::parse(text).dump(2);
  std::string one_line = nlohmann::json::parse(text).dump();
  for (const std::string& t :
       {pretty, one_line, text + " ", text.substr(0, text.size() - 1) + ",", std::string()}) {
    Read lines = ByLines(t);
    ASSERT_FALSE(lines.result.has_value()) << t;
    EXPECT_EQ(lines.result.error().kind, ErrorKind::kNotByLines) << t;
  }
  Read reference = ByReference(pretty);
  ASSERT_TRUE(reference.result.has_value());
  EXPECT_TRUE(*reference.result);
}

// Found in review: a head line that ends on an entry (or on an unknown
// field) left open would let the next line's entry in without its comma,
// where the stream refuses the text. And a record all on one line is not
// held whole to find out it is not laid out by lines.
TEST(RecordLinesTest, AHeadThatDoesNotEndOnResourcesIsNotReadByLines) {
  const std::string head =
      R"({"declaration_digest":"d","generation":1,"machine":"m",)"
      R"("settled_declaration_digest":"d","version":1,"want_version":2,"resources":{)";
  const std::string entry = R"("kind":"file","written":[],"applied_at":"t","digest":)";
  for (const std::string& t : {
           head + R"("a":{)" + entry + "\"x\"}\n\"b\":{" + entry + "\"y\"}\n}}\n",
           head + R"("a":{)" + entry + "\"x\"},\"x\":{\"k\":1\n\"b\":{" + entry + "\"y\"}\n}}\n",
           head.substr(0, head.size() - 15) + R"("x":{"k":1)" + "\n\"b\":{" + entry +
               "\"y\"}\n}}\n",
       }) {
    Read lines = ByLines(t);
    ASSERT_FALSE(lines.result.has_value()) << t;
    EXPECT_EQ(lines.result.error().kind, ErrorKind::kNotByLines) << t;
    EXPECT_FALSE(ByReference(t).result.has_value()) << "the stream refuses it: " << t;
  }
  Record big = Varied();
  for (int i = 0; i < 6000; ++i) big.resources["pad" + std::to_string(i)] = big.resources["a"];
  std::string one_line = nlohmann::json::parse(SerializeRecord(big)).dump();
  ASSERT_GT(one_line.size(), size_t{1} << 20);
  Read lines = ByLines(one_line);
  ASSERT_FALSE(lines.result.has_value());
  EXPECT_EQ(lines.result.error().kind, ErrorKind::kNotByLines);
  EXPECT_TRUE(lines.seen.empty());
}

// Read by lines, as the stream reads it, or not by lines at all.
void ExpectReadAlikeOrNotByLines(const std::string& t, int* read_by_lines = nullptr) {
  Read lines = ByLines(t);
  if (!lines.result.has_value() && lines.result.error().kind == ErrorKind::kNotByLines) return;
  Read reference = ByReference(t);
  if (lines.result.has_value()) {
    if (read_by_lines != nullptr) ++*read_by_lines;
    ASSERT_TRUE(reference.result.has_value()) << reference.result.error().message << "\n" << t;
    EXPECT_EQ(*lines.result, *reference.result) << t;
    EXPECT_EQ(lines.seen, reference.seen) << t;
  } else {
    ASSERT_FALSE(reference.result.has_value()) << t;
    EXPECT_EQ(lines.result.error().message, reference.result.error().message) << t;
  }
}

// Lines moved about whole: a comma added or taken away at the end of each,
// each doubled, dropped, blanked, joined to the next, swapped with it.
TEST(RecordLinesTest, LinesMovedAboutAreReadAsTheStreamReadsThemOrNotAtAll) {
  std::string text = SerializeRecord(Varied());
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  auto join = [](const std::vector<std::string>& ls) {
    std::string t;
    for (const std::string& l : ls) t += l + "\n";
    return t;
  };
  int read_by_lines = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    auto edit = [&](auto change) {
      std::vector<std::string> ls = lines;
      change(ls);
      ExpectReadAlikeOrNotByLines(join(ls), &read_by_lines);
    };
    edit([&](auto& ls) { ls[i] += ","; });
    edit([&](auto& ls) {
      if (!ls[i].empty() && ls[i].back() == ',') ls[i].pop_back();
    });
    edit([&](auto& ls) { ls.insert(ls.begin() + i, ls[i]); });
    edit([&](auto& ls) { ls.erase(ls.begin() + i); });
    edit([&](auto& ls) { ls.insert(ls.begin() + i, ""); });
    edit([&](auto& ls) { ls.insert(ls.begin() + i, "  "); });
    if (i + 1 < lines.size()) {
      edit([&](auto& ls) {
        ls[i] += ls[i + 1];
        ls.erase(ls.begin() + i + 1);
      });
      edit([&](auto& ls) { std::swap(ls[i], ls[i + 1]); });
    }
  }
  EXPECT_GT(read_by_lines, 5) << "a doubled entry, two entries swapped: still records";
}

// The property the proof relies on, over texts damaged byte by byte: what
// is read by lines (true, or stopped, or a refusal of its own) is what the
// stream reads, word for word; anything else is kNotByLines.
TEST(RecordLinesTest, ADamagedTextIsReadAsTheStreamReadsItOrNotAtAll) {
  std::string text = SerializeRecord(Varied());
  std::mt19937 random(11);
  const std::string bytes = "{}[]:,\"0-1e.tn \\\n";
  int read_by_lines = 0;
  for (int i = 0; i < 6000; ++i) {
    std::string t = text;
    size_t at = random() % t.size();
    switch (random() % 3) {
      case 0:
        t[at] = bytes[random() % bytes.size()];
        break;
      case 1:
        t.insert(t.begin() + at, bytes[random() % bytes.size()]);
        break;
      default:
        t.erase(at, 1);
    }
    ExpectReadAlikeOrNotByLines(t, &read_by_lines);
    if (HasFatalFailure()) return;
  }
  // The property is about something: many damaged texts are still records
  // (a changed digit, a changed letter in a string) and read by lines.
  EXPECT_GT(read_by_lines, 500);
  RecordProperty("read_by_lines", read_by_lines);
}

}  // namespace
}  // namespace mesh::core
