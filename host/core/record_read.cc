// Reading the record: straight into the model or through a visitor, from a
// whole text (simdjson first, nlohmann for what it refuses), a stream, or a
// line at a time for a record too large to hold whole. Writing it is
// record.cc.
#include <algorithm>
#include <istream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <type_traits>

#include "host/core/json_stream.h"
#include "host/core/printable.h"
#include "host/core/record.h"

namespace mesh::core {
namespace {

using json = nlohmann::json;

}  // namespace

namespace {

// Reads the record straight into the model, event by event: no tree of the
// document or of an entry is built. The record is the one file every fresh
// `mesh-host apply` must parse before it can prove a no-op, and it holds an
// entry per resource (megabytes at 10,000 files). Unknown fields are skipped,
// so a newer host's record still reads.
class RecordReader final : public nlohmann::json_sax<json> {
 public:
  // With a visitor, entries are handed to it one at a time and not kept.
  explicit RecordReader(Record& record, RecordVisitor* visitor = nullptr)
      : rec_(record), visitor_(visitor) {}

  bool null() override { return Scalar(Value{}); }
  bool boolean(bool v) override { return Scalar(Value{.kind = Value::kBool, .flag = v}); }
  bool number_integer(number_integer_t) override { return Scalar(Value{.kind = Value::kOther}); }
  bool number_unsigned(number_unsigned_t v) override {
    return Scalar(Value{.kind = Value::kUnsigned, .number = v});
  }
  bool number_float(number_float_t, const string_t&) override {
    return Scalar(Value{.kind = Value::kOther});
  }
  bool string(string_t& v) override { return Scalar(Value{.kind = Value::kString, .text = &v}); }
  bool binary(binary_t&) override { return Scalar(Value{.kind = Value::kOther}); }

  bool start_object(std::size_t) override {
    if (skip_ > 0) return ++skip_, true;
    if (stack_.empty()) return Push(kRoot);
    switch (stack_.back()) {
      case kRoot:
        if (key_ == "resources") {
          rec_.resources.clear();
          if (visitor_ != nullptr && !visitor_->Header(rec_)) return Stop();
          return Push(kResources);
        }
        break;
      case kResources: {
        if (visitor_ != nullptr) {
          scratch_ = RecordEntry{};
          entry_ = &scratch_;
          entry_id_ = key_;
          seen_ = 0;
          return Push(kEntry);
        }
        // Sorted as written: the hint makes each insert constant time. A
        // repeated id starts over (the last wins, as in a whole parse).
        size_t before = rec_.resources.size();
        auto it = rec_.resources.try_emplace(rec_.resources.end(), key_);
        if (rec_.resources.size() == before) it->second = RecordEntry{};
        entry_ = &it->second;
        entry_id_ = key_;
        seen_ = 0;
        return Push(kEntry);
      }
      case kWritten:
        entry_->written.emplace_back();
        path_seen_ = 0;
        return Push(kWrittenItem);
      default:
        break;
    }
    return Unexpected("an object");
  }
  bool start_array(std::size_t) override {
    if (skip_ > 0) return ++skip_, true;
    if (stack_.empty()) return Fail("not a JSON object");
    if (stack_.back() == kEntry && key_ == "written") {
      seen_ |= kSeenWritten;
      return Push(kWritten);
    }
    return Unexpected("a list");
  }
  bool end_object() override { return End(); }
  bool end_array() override { return End(); }
  // Keys and values are copied, not moved: a moved-from token buffer makes
  // the lexer grow a new one char by char for the next token.
  bool key(string_t& k) override {
    key_.assign(k);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    if (error_.empty()) error_ = JsonErrorWithoutBytes(e.what());
    return false;
  }

  const std::string& error() const { return error_; }
  bool stopped() const { return stopped_; }
  // Called after the parse: what the whole document must have had.
  bool Finish(uint64_t* version) {
    if (root_seen_ & kSeenVersion) *version = version_;
    if (!(root_seen_ & kSeenVersion) || version_ != Record::kVersion) return false;
    for (auto [bit, name] : {std::pair{kSeenMachine, "machine"},
                             {kSeenGeneration, "generation"},
                             {kSeenDigest, "declaration_digest"},
                             {kSeenResources, "resources"}}) {
      if (!(root_seen_ & bit)) return Fail(std::string(name) + " missing");
    }
    return true;
  }

 private:
  enum Context { kRoot, kResources, kEntry, kWritten, kWrittenItem };
  enum Seen : unsigned {
    kSeenVersion = 1,
    kSeenMachine = 2,
    kSeenGeneration = 4,
    kSeenDigest = 8,
    kSeenResources = 16,
    kSeenKind = 1,
    kSeenEntryDigest = 2,
    kSeenAppliedAt = 4,
    kSeenWritten = 8,
    kSeenPath = 1,
    kSeenFingerprint = 2,
  };
  struct Value {
    enum Kind { kNull, kBool, kUnsigned, kString, kOther } kind = kNull;
    bool flag = false;
    uint64_t number = 0;
    std::string* text = nullptr;
  };

  bool Push(Context c) {
    if (c == kRoot) root_open_ = true;
    if (c == kResources) root_seen_ |= kSeenResources;
    stack_.push_back(c);
    return true;
  }

  bool End() {
    if (skip_ > 0) return --skip_, true;
    Context c = stack_.back();
    stack_.pop_back();
    if (c == kEntry) {
      for (auto [bit, name] : {std::pair{kSeenKind, "kind"},
                               {kSeenEntryDigest, "digest"},
                               {kSeenAppliedAt, "applied_at"},
                               {kSeenWritten, "written"}}) {
        if (!(seen_ & bit)) return Fail("resource " + entry_id_ + ", field " + name + ": missing");
      }
      // Unit keys that say nothing ("finished": false) make no unit part:
      // the entry reads as it serializes, and equals its planned self.
      if (entry_->unit_record && *entry_->unit_record == UnitRecord{}) {
        entry_->unit_record = std::nullopt;
      }
      if (visitor_ != nullptr && !visitor_->Entry(entry_id_, *entry_)) return Stop();
    }
    if (c == kWrittenItem &&
        (path_seen_ & (kSeenPath | kSeenFingerprint)) != (kSeenPath | kSeenFingerprint)) {
      return Fail("resource " + entry_id_ + ", field written: path and fingerprint are required");
    }
    return true;
  }

  bool Scalar(Value v) {
    if (skip_ > 0) return true;
    if (stack_.empty()) return Fail("not a JSON object");
    switch (stack_.back()) {
      case kRoot:
        return RootScalar(v);
      case kEntry:
        return EntryScalar(v);
      case kWrittenItem:
        return WrittenScalar(v);
      default:
        return Unexpected("a scalar");
    }
  }
  bool RootScalar(const Value& v) {
    if (key_ == "version") return Unsigned(v, &version_, &root_seen_, kSeenVersion);
    if (key_ == "want_version") {
      uint64_t w = 0;
      if (!Unsigned(v, &w, nullptr, 0)) return false;
      rec_.want_version = static_cast<int>(std::min<uint64_t>(w, 1u << 20));
      return true;
    }
    if (key_ == "generation") {
      return Unsigned(v, &rec_.generation, &root_seen_, kSeenGeneration);
    }
    if (key_ == "machine") return Text(v, &rec_.machine, &root_seen_, kSeenMachine);
    if (key_ == "declaration_digest") {
      return Text(v, &rec_.declaration_digest, &root_seen_, kSeenDigest);
    }
    if (key_ == "settled_declaration_digest") {
      return Text(v, &rec_.settled_declaration_digest, nullptr, 0);
    }
    if (key_ == "resources") return Unexpected("a scalar");
    return true;  // an unknown field
  }
  bool EntryScalar(const Value& v) {
    if (key_ == "kind") return Text(v, &entry_->kind, &seen_, kSeenKind);
    if (key_ == "digest") return Text(v, &entry_->digest, &seen_, kSeenEntryDigest);
    if (key_ == "applied_at") return Text(v, &entry_->applied_at, &seen_, kSeenAppliedAt);
    if (key_ == "unit") return Text(v, &entry_->mutable_unit().name, nullptr, 0);
    if (key_ == "unit_file") {
      return Text(v, &entry_->mutable_unit().file_fingerprint, nullptr, 0);
    }
    if (key_ == "state") return Text(v, &entry_->mutable_unit().state, nullptr, 0);
    if (key_ == "position") {
      uint64_t at = 0;
      if (!Unsigned(v, &at, nullptr, 0)) return false;
      entry_->position = at;
      return true;
    }
    if (key_ == "n_restarts") {
      uint64_t n = 0;
      if (!Unsigned(v, &n, nullptr, 0)) return false;
      if (n > UINT32_MAX) return Fail(Where() + "out of range");
      entry_->mutable_unit().n_restarts = static_cast<uint32_t>(n);
      return true;
    }
    if (key_ == "drop_ins") {
      std::string text;
      if (!Text(v, &text, nullptr, 0)) return false;
      for (size_t at = 0; at < text.size();) {
        size_t end = text.find(' ', at);
        if (end == std::string::npos) end = text.size();
        std::string item = text.substr(at, end - at);
        size_t eq = item.find('=');
        if (eq == std::string::npos || eq == 0) return Fail(Where() + "not NAME=FINGERPRINT");
        entry_->mutable_unit().drop_ins[item.substr(0, eq)] = item.substr(eq + 1);
        at = end + 1;
      }
      return true;
    }
    if (key_ == "enabled") {
      if (v.kind != Value::kBool) return Fail(Where() + "must be true or false");
      entry_->mutable_unit().enabled = v.flag;
      return true;
    }
    if (key_ == "finished" || key_ == "starting" || key_ == "unit_file_preexisting" ||
        key_ == "rollback") {
      if (v.kind != Value::kBool) return Fail(Where() + "must be true or false");
      UnitRecord& u = entry_->mutable_unit();
      (key_ == "finished"   ? u.finished
       : key_ == "starting" ? u.starting
       : key_ == "rollback" ? u.rollback
                            : u.file_preexisting) = v.flag;
      return true;
    }
    if (key_ == "written") return Unexpected("a scalar");
    return true;
  }
  bool WrittenScalar(const Value& v) {
    WrittenPath& w = entry_->written.back();
    if (key_ == "path") return Text(v, &w.path, &path_seen_, kSeenPath);
    if (key_ == "fingerprint") return Text(v, &w.fingerprint, &path_seen_, kSeenFingerprint);
    if (key_ == "content_digest") return Text(v, &w.content_digest, nullptr, 0);
    if (key_ == "files") return Unsigned(v, &w.file_count, nullptr, 0);
    if (key_ == "preexisting") {
      if (v.kind != Value::kBool) return Fail(Where() + "must be true or false");
      w.preexisting = v.flag;
      return true;
    }
    return true;
  }

  std::string Where() const {
    if (stack_.back() == kRoot) return "field " + key_ + ": ";
    return "resource " + entry_id_ + ", field " + key_ + ": ";
  }
  bool Text(const Value& v, std::string* out, unsigned* seen, unsigned bit) {
    if (v.kind != Value::kString) return Fail(Where() + "must be a string");
    out->assign(*v.text);
    if (seen != nullptr) *seen |= bit;
    return true;
  }
  // Numbers are checked for kind: a float or a negative number where a
  // count belongs is an error (the record fuzzer once found a huge float
  // cast to an integer: undefined behaviour).
  bool Unsigned(const Value& v, uint64_t* out, unsigned* seen, unsigned bit) {
    if (v.kind != Value::kUnsigned) return Fail(Where() + "must be a non-negative integer");
    *out = v.number;
    if (seen != nullptr) *seen |= bit;
    return true;
  }
  // A value of a shape the record does not have there: skipped when it is
  // a container under an unknown field (a newer host's), else an error.
  bool Unexpected(const char* what) {
    static constexpr std::string_view kKnown[] = {"version",
                                                  "want_version",
                                                  "generation",
                                                  "machine",
                                                  "declaration_digest",
                                                  "settled_declaration_digest",
                                                  "resources",
                                                  "kind",
                                                  "digest",
                                                  "applied_at",
                                                  "unit",
                                                  "unit_file",
                                                  "state",
                                                  "position",
                                                  "n_restarts",
                                                  "finished",
                                                  "starting",
                                                  "enabled",
                                                  "drop_ins",
                                                  "unit_file_preexisting",
                                                  "rollback",
                                                  "written",
                                                  "path",
                                                  "fingerprint",
                                                  "content_digest",
                                                  "files",
                                                  "preexisting"};
    switch (stack_.back()) {
      case kResources:
        return Fail("resource " + key_ + ": must be an object");
      case kWritten:
        return Fail("resource " + entry_id_ + ", field written: must list objects");
      default:
        break;
    }
    bool known = std::find(std::begin(kKnown), std::end(kKnown), key_) != std::end(kKnown);
    if (!known) {
      skip_ = 1;
      return true;
    }
    return Fail(Where() + "must not be " + what);
  }
  bool Fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
    return false;
  }
  bool Stop() {
    stopped_ = true;
    return false;
  }

  Record& rec_;
  RecordVisitor* visitor_;
  RecordEntry scratch_;  // the entry being read, when a visitor takes them
  bool stopped_ = false;
  std::vector<Context> stack_;
  std::string key_;
  int skip_ = 0;  // depth inside a skipped (unknown) container
  bool root_open_ = false;
  unsigned root_seen_ = 0;
  uint64_t version_ = 0;
  RecordEntry* entry_ = nullptr;
  std::string entry_id_;
  unsigned seen_ = 0;
  unsigned path_seen_ = 0;
  std::string error_;
};

// The record read to its end: whole, and of a version this host reads.
Result<bool> Finished(RecordReader& reader) {
  uint64_t version = 0;
  if (!reader.Finish(&version)) {
    if (!reader.error().empty()) return Fail("state: " + reader.error());
    return Fail("state: unknown version " + std::to_string(version));
  }
  return true;
}

}  // namespace

// No depth pre-check: the SAX parser keeps its own stack, and the reader
// refuses nesting where the record has none and counts it where it skips.
namespace {

// Into `record`, or, with a visitor, through it. True: read whole and well
// formed; false: the visitor stopped it.
template <typename Input>
Result<bool> ReadRecord(Input& input, Record& record, RecordVisitor* visitor, size_t slack = 0) {
  RecordReader reader(record, visitor);
  bool parsed = false;
  try {
    // A whole text goes to simdjson first; what it cannot read as nlohmann
    // would reaches the reader from nlohmann, as a stream always does.
    std::optional<bool> fast;
    if constexpr (std::is_same_v<Input, std::string_view>) {
      fast = SaxParseFast(input, reader, slack);
    }
    parsed = fast.has_value() ? *fast : json::sax_parse(input, &reader);
  } catch (const json::exception& e) {
    return Fail("state: " + JsonErrorWithoutBytes(e.what()));
  }
  if (reader.stopped()) return false;
  if (!parsed) return Fail("state: " + (reader.error().empty() ? "unreadable" : reader.error()));
  return Finished(reader);
}

template <typename Input>
Result<Record> ParseRecordFrom(Input& input, size_t slack = 0) {
  Record record;
  auto read = ReadRecord(input, record, nullptr, slack);
  if (!read) return std::unexpected(read.error());
  return record;
}

}  // namespace

Result<Record> ParseRecord(std::string_view text, size_t slack) {
  return ParseRecordFrom(text, slack);
}

Result<Record> ParseRecord(std::istream& text) { return ParseRecordFrom(text); }

Result<bool> ScanRecord(std::istream& text, RecordVisitor& visitor) {
  Record header;
  return ReadRecord(text, header, &visitor);
}

Result<bool> ScanRecord(std::string_view text, RecordVisitor& visitor, size_t slack) {
  Record header;
  return ReadRecord(text, header, &visitor, slack);
}

namespace {

// Hands a line of the record, read as a document of its own, to the reader,
// less what was put around it to make it one: the two braces closing the
// head (the last two end_objects: held until another event or the end
// shows which they are), or the braces around an entry's line (its first
// start_object and the end_object matching it).
class LineHandler final : public nlohmann::json_sax<json> {
 public:
  enum class Line { kHead, kEntries };
  LineHandler(nlohmann::json_sax<json>& to, Line line) : to_(to), line_(line) {}

  bool null() override { return Flush() && to_.null(); }
  bool boolean(bool v) override { return Flush() && to_.boolean(v); }
  bool number_integer(number_integer_t v) override { return Flush() && to_.number_integer(v); }
  bool number_unsigned(number_unsigned_t v) override { return Flush() && to_.number_unsigned(v); }
  bool number_float(number_float_t v, const string_t& s) override {
    return Flush() && to_.number_float(v, s);
  }
  bool string(string_t& v) override { return Flush() && to_.string(v); }
  bool binary(binary_t& v) override { return Flush() && to_.binary(v); }
  bool start_array(std::size_t n) override { return Flush() && to_.start_array(n); }
  bool end_array() override { return Flush() && to_.end_array(); }
  bool key(string_t& k) override {
    if (line_ == Line::kEntries && objects_ == 1) ++members_;
    return Flush() && to_.key(k);
  }
  bool start_object(std::size_t n) override {
    if (line_ == Line::kEntries && objects_++ == 0) return true;
    return Flush() && to_.start_object(n);
  }
  bool end_object() override {
    if (line_ == Line::kHead) return ++held_, true;
    if (--objects_ == 0) return true;
    return to_.end_object();
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;  // not reached: simdjson read the line
  }

  // After the line: true when it was what it must be (the head, closed by
  // the two braces put after it; entries, at least one).
  bool Done() {
    if (line_ == Line::kEntries) return members_ > 0;
    if (held_ != 2) return false;  // the line ended on an opened object
    held_ -= 2;
    return Flush();
  }

 private:
  bool Flush() {
    for (; held_ > 0; --held_) {
      if (!to_.end_object()) return false;
    }
    return true;
  }

  nlohmann::json_sax<json>& to_;
  Line line_;
  int objects_ = 0;
  int held_ = 0;
  size_t members_ = 0;
};

}  // namespace

Result<bool> ScanRecordByLines(std::istream& text, RecordVisitor& visitor) {
  Record header;
  RecordReader reader(header, &visitor);
  FastSax sax;
  auto not_by_lines = [] {
    return Fail(ErrorKind::kNotByLines, "state: not laid out one entry per line");
  };
  std::string line, doc;
  // A line, up to kMaxLineBytes: what the host writes is far shorter, and a
  // longer one (a record all on one line) would be held whole.
  constexpr size_t kMaxLineBytes = 1 << 20;
  auto buffer = std::make_unique_for_overwrite<char[]>(kMaxLineBytes + 1);  // not zeroed
  auto next_line = [&] {
    text.getline(buffer.get(), static_cast<std::streamsize>(kMaxLineBytes + 1));
    auto got = static_cast<size_t>(text.gcount());
    if (text.fail()) return false;                          // no more lines, or one too long
    line.assign(buffer.get(), text.eof() ? got : got - 1);  // less the newline taken
    return true;
  };
  // One line as a document: simdjson must read it as nlohmann would, and it
  // must be what its place asks for. nullopt: the reader stopped.
  auto read = [&](std::string_view open, std::string_view close,
                  LineHandler::Line kind) -> std::optional<bool> {
    doc.assign(open);
    doc += line;
    doc += close;
    LineHandler handler(reader, kind);
    std::optional<bool> parsed;
    try {
      parsed = sax.Parse(doc, handler);
    } catch (const json::exception&) {
      return false;
    }
    if (!parsed.has_value()) return false;
    if (!*parsed) return reader.stopped() ? std::nullopt : std::optional<bool>(false);
    bool done = handler.Done();
    if (reader.stopped()) return std::nullopt;
    return done;
  };
  // The head: every field but the entries, "resources" opened last and
  // nothing of it on this line (the next line's entry needs no comma).
  if (!next_line() || !line.ends_with("\"resources\":{")) return not_by_lines();
  if (auto ok = read("", "}}", LineHandler::Line::kHead); !ok.has_value()) {
    return false;
  } else if (!*ok) {
    return not_by_lines();
  }
  // Entries, each line but the last one before the tail ending in a comma;
  // then the tail, and nothing after it.
  bool comma = false;
  bool first = true;
  while (true) {
    if (!next_line()) return not_by_lines();
    if (line == "}}") {
      if (comma) return not_by_lines();
      break;
    }
    if ((!first && !comma) || line.empty() || line.front() != '"') return not_by_lines();
    first = false;
    comma = line.back() == ',';
    if (comma) line.pop_back();
    if (auto ok = read("{", "}", LineHandler::Line::kEntries); !ok.has_value()) {
      return false;
    } else if (!*ok) {
      return not_by_lines();
    }
  }
  if (text.peek() != std::char_traits<char>::eof()) return not_by_lines();
  if (!reader.end_object() || !reader.end_object()) {
    return reader.stopped() ? Result<bool>(false) : not_by_lines();
  }
  if (reader.stopped()) return false;
  return Finished(reader);
}

}  // namespace mesh::core
