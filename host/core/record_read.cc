// Reading the record (record.h): one reader, a line at a time, each line
// parsed by simdjson and its fields read straight into the model
// (record_fields.h); which version a text is, and how each cuts into
// objects, is decided here. Writing it is record.cc.
#include <simdjson.h>

#include <algorithm>
#include <istream>
#include <memory>
#include <optional>
#include <string>

#include "host/core/record.h"
#include "host/core/record_fields.h"

namespace mesh::core {
namespace {

namespace dom = simdjson::dom;
using record_reading::CheckHead;
using record_reading::Head;
using record_reading::Place;
using record_reading::ReadEntry;
using record_reading::ReadHead;

// "1 MiB", or "1000 bytes" for a bound that is no whole number of MiB.
std::string Bytes(size_t n) {
  if (n % (1 << 20) == 0) return std::to_string(n >> 20) + " MiB";
  return std::to_string(n) + " bytes";
}

// Hands each entry to the visitor, or keeps it in the record.
class Entries {
 public:
  Entries(Record& record, RecordVisitor* visitor) : record_(record), visitor_(visitor) {}

  // The entry to read `id` into, empty (a repeated id starts over: the
  // last wins).
  RecordEntry& Begin(std::string_view id) {
    if (visitor_ != nullptr) {
      scratch_ = RecordEntry{};
      scratch_id_.assign(id);
      return scratch_;
    }
    // Sorted as written: the hint makes each insert constant time.
    size_t before = record_.resources.size();
    auto it = record_.resources.try_emplace(record_.resources.end(), std::string(id));
    if (record_.resources.size() == before) it->second = RecordEntry{};
    return it->second;
  }
  // False: the visitor stopped the reading.
  bool End() { return visitor_ == nullptr || visitor_->Entry(scratch_id_, scratch_); }
  bool Header() { return visitor_ == nullptr || visitor_->Header(record_); }

 private:
  Record& record_;
  RecordVisitor* visitor_;
  RecordEntry scratch_;
  std::string scratch_id_;
};

std::string NotJson(simdjson::error_code error) {
  if (error == simdjson::INCORRECT_TYPE) return "not a JSON object";
  return std::string("not JSON (") + simdjson::error_message(error) + ")";
}

// The last value of `key` (a repeated key keeps its last, as everywhere in
// the record); false when there is none.
bool LastValue(dom::object object, std::string_view key, dom::element* out) {
  bool found = false;
  for (dom::key_value_pair field : object) {
    if (field.key == key) {
      *out = field.value;
      found = true;
    }
  }
  return found;
}

// Whether `prefix` begins as a record of version 1: an object whose
// "version" is 1, spaces aside.
bool LooksLikeVersion1(std::string_view prefix) {
  std::string bare;
  bare.reserve(prefix.size());
  for (char c : prefix) {
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') bare += c;
  }
  if (!bare.starts_with('{')) return false;
  constexpr std::string_view kVersion1 = "\"version\":1";
  for (size_t at = bare.find(kVersion1); at != std::string::npos;
       at = bare.find(kVersion1, at + 1)) {
    size_t next = at + kVersion1.size();
    if (next < bare.size() && (bare[next] == ',' || bare[next] == '}')) return true;
  }
  return false;
}

std::unexpected<Error> TooLarge(const std::string& why) {
  return Fail(ErrorKind::kTooLarge,
              why +
                  ": it is not read as corrupt, and nothing is changed until it is laid out one "
                  "entry per line (as the host writes it) or removed (the next apply then "
                  "adopts what is on disk)");
}

// A record of version 1: one object, the entries under "resources".
Result<bool> ReadVersion1(dom::element document, Record& record, RecordVisitor* visitor) {
  dom::object root;
  if (document.get_object().get(root) != simdjson::SUCCESS) return Fail("not a JSON object");
  Head head;
  if (auto read = ReadHead(root, record, head); !read) return std::unexpected(read.error());
  if (auto checked = CheckHead(head, 1); !checked) return std::unexpected(checked.error());
  record.version = 1;
  dom::element resources;
  if (!LastValue(root, "resources", &resources)) return Fail("resources missing");
  dom::object entries;
  if (resources.get_object().get(entries) != simdjson::SUCCESS) {
    return Place{{}, "resources"}.Wrong("must be an object");
  }
  Entries out(record, visitor);
  if (!out.Header()) return false;
  for (dom::key_value_pair member : entries) {
    dom::object fields;
    if (member.value.get_object().get(fields) != simdjson::SUCCESS) {
      return Fail("resource " + std::string(member.key) + ": must be an object");
    }
    if (auto read = ReadEntry(fields, member.key, out.Begin(member.key)); !read) {
      return std::unexpected(read.error());
    }
    if (!out.End()) return false;
  }
  return true;
}

// The lines of a whole text.
class TextLines {
 public:
  TextLines(std::string_view text, const RecordLimits& limits) : text_(text), limits_(limits) {}
  const RecordLimits& limits() const { return limits_; }

  // False past the last line; a last line without its newline is a line.
  bool Next(std::string_view* line) {
    if (at_ >= text_.size()) return false;
    size_t end = std::min(text_.find('\n', at_), text_.size());
    *line = text_.substr(at_, end - at_);
    at_ = end + 1;
    return true;
  }
  // The whole text, the first line included; none past max_version1_bytes.
  std::optional<std::string_view> Whole() {
    if (text_.size() > limits_.max_version1_bytes) return std::nullopt;
    return text_;
  }
  // The text's first bytes, after Whole().
  std::string_view Prefix() const { return text_.substr(0, limits_.max_line_bytes); }

 private:
  std::string_view text_;
  RecordLimits limits_;
  size_t at_ = 0;
};

// The lines of a stream, each read into one buffer: never more than a line
// is held.
class StreamLines {
 public:
  StreamLines(std::istream& in, const RecordLimits& limits)
      : in_(in),
        limits_(limits),
        buffer_(std::make_unique_for_overwrite<char[]>(limits.max_line_bytes + 2)) {}
  const RecordLimits& limits() const { return limits_; }

  // A line longer than max_line_bytes comes cut to max_line_bytes + 1 (the
  // reader refuses it by its length); the rest of it is the next line.
  bool Next(std::string_view* line) {
    in_.getline(buffer_.get(), static_cast<std::streamsize>(limits_.max_line_bytes + 2));
    auto got = static_cast<size_t>(in_.gcount());
    if (got == 0 && in_.eof()) return false;
    bool newline = !in_.fail() && !in_.eof();
    if (in_.fail()) in_.clear(in_.rdstate() & ~std::ios::failbit);
    *line = std::string_view(buffer_.get(), newline ? got - 1 : got);
    if (lines_++ == 0) whole_.assign(*line).append(newline ? "\n" : "");
    return true;
  }
  // The whole text, when only the first line was read; none past
  // max_version1_bytes.
  std::optional<std::string_view> Whole() {
    char chunk[64 << 10];
    while (in_.read(chunk, sizeof chunk) || in_.gcount() > 0) {
      whole_.append(chunk, static_cast<size_t>(in_.gcount()));
      if (whole_.size() > limits_.max_version1_bytes) return std::nullopt;
    }
    return std::string_view(whole_);
  }
  // The text's first bytes, after Whole().
  std::string_view Prefix() const {
    return std::string_view(whole_).substr(0, limits_.max_line_bytes);
  }

 private:
  std::istream& in_;
  RecordLimits limits_;
  std::unique_ptr<char[]> buffer_;
  size_t lines_ = 0;
  std::string whole_;
};

// One line into `object`: an error's words, or nothing.
std::optional<std::string> ParseLine(dom::parser& parser, std::string_view line,
                                     const RecordLimits& limits, dom::object* object) {
  if (line.size() > limits.max_line_bytes) return "longer than " + Bytes(limits.max_line_bytes);
  auto error = parser.parse(line.data(), line.size()).get_object().get(*object);
  if (error != simdjson::SUCCESS) return NotJson(error);
  return std::nullopt;
}

// "line N: " before a refusal.
struct LineNumber {
  size_t number = 1;
  std::unexpected<Error> operator()(const std::string& what) const {
    return Fail("line " + std::to_string(number) + ": " + what);
  }
};

// Version 2 past its head: an entry a line, as many as the head says.
template <typename Lines>
Result<bool> ReadEntryLines(Lines& lines, dom::parser& parser, uint64_t entries, Entries& out) {
  LineNumber on_line;
  std::string_view line;
  dom::object object;
  uint64_t read = 0;
  while (lines.Next(&line)) {
    ++on_line.number;
    if (read == entries) {
      return on_line("past the " + std::to_string(entries) +
                     " entries its head names: not as the host wrote it");
    }
    if (auto error = ParseLine(parser, line, lines.limits(), &object)) return on_line(*error);
    dom::element id_value;
    std::string_view id;
    if (!LastValue(object, "id", &id_value) || id_value.get_string().get(id) != simdjson::SUCCESS) {
      return on_line("field id: missing, or not a string");
    }
    if (auto entry = ReadEntry(object, id, out.Begin(id)); !entry) {
      return on_line(entry.error().message);
    }
    if (!out.End()) return false;
    ++read;
  }
  if (read != entries) {
    return Fail(std::to_string(read) + " of the " + std::to_string(entries) +
                " entries its head names: cut short");
  }
  return true;
}

// The end of the head line of version 1 as its hosts laid it out.
constexpr std::string_view kVersion1ListOpens = "\"resources\":{";

// Version 1 as its hosts laid it out: the head on the first line, ending
// in "resources":{, then an entry ("ID":{...}) a line, each but the last
// followed by a comma, then "}}" alone. Read a line at a time as version 2
// is, each line made a document of its own: no size is too large.
template <typename Lines>
Result<bool> ReadVersion1Lines(Lines& lines, std::string_view first, dom::parser& parser,
                               Record& record, RecordVisitor* visitor) {
  LineNumber on_line;
  std::string doc(first.substr(0, first.size() - kVersion1ListOpens.size()));
  if (doc.ends_with(',')) doc.pop_back();
  doc += '}';
  dom::object object;
  if (auto error = ParseLine(parser, doc, lines.limits(), &object)) return on_line(*error);
  Head head;
  if (auto read = ReadHead(object, record, head); !read) return on_line(read.error().message);
  if (auto checked = CheckHead(head, 1); !checked) return on_line(checked.error().message);
  record.version = 1;
  Entries out(record, visitor);
  if (!out.Header()) return false;
  std::string_view line;
  bool first_entry = true, comma = false;
  while (true) {
    if (!lines.Next(&line)) return Fail("cut short: no \"}}\" closes it");
    ++on_line.number;
    if (line == "}}") break;
    if (!first_entry && !comma) return on_line("no comma after the entry before");
    first_entry = false;
    comma = line.ends_with(',');
    doc.assign("{").append(line.substr(0, line.size() - comma)).append("}");
    if (auto error = ParseLine(parser, doc, lines.limits(), &object)) return on_line(*error);
    size_t members = 0;
    for ([[maybe_unused]] dom::key_value_pair member : object) ++members;
    if (members != 1) return on_line("not one entry");
    dom::key_value_pair member = *object.begin();
    dom::object fields;
    if (member.value.get_object().get(fields) != simdjson::SUCCESS) {
      return on_line("resource " + std::string(member.key) + ": must be an object");
    }
    if (auto entry = ReadEntry(fields, member.key, out.Begin(member.key)); !entry) {
      return on_line(entry.error().message);
    }
    if (!out.End()) return false;
  }
  if (comma) return on_line("a comma after the last entry");
  if (lines.Next(&line)) return Fail("text after the closing \"}}\"");
  return true;
}

// Version 1 laid out otherwise (indented, on one line): one document, read
// whole, up to max_version1_bytes. `first_error`: why the first line alone
// is no head, said if the whole is no JSON either.
template <typename Lines>
Result<bool> ReadVersion1Whole(Lines& lines, const std::optional<std::string>& first_error,
                               dom::parser& parser, Record& record, RecordVisitor* visitor) {
  auto whole = lines.Whole();
  // Too large to read whole is said only of what begins as a record of
  // version 1 does: anything else is corrupt, and adopted from.
  auto corrupt = [&](simdjson::error_code error) {
    return first_error ? LineNumber{}(*first_error) : Fail(NotJson(error));
  };
  if (!whole) {
    if (!LooksLikeVersion1(lines.Prefix())) return corrupt(simdjson::CAPACITY);
    return TooLarge("a record of version 1 over " + Bytes(lines.limits().max_version1_bytes) +
                    ", not laid out one entry per line");
  }
  record = Record{};
  dom::element document;
  auto error = parser.parse(whole->data(), whole->size()).get(document);
  if (error == simdjson::MEMALLOC && LooksLikeVersion1(lines.Prefix())) {
    return TooLarge("not enough memory to read a record of version 1 whole");
  }
  if (error != simdjson::SUCCESS) return corrupt(error);
  return ReadVersion1(document, record, visitor);
}

template <typename Lines>
Result<bool> ReadLines(Lines& lines, Record& record, RecordVisitor* visitor) {
  dom::parser parser;
  std::string_view first;
  if (!lines.Next(&first)) return Fail("empty");
  dom::object object;
  std::optional<std::string> not_head = ParseLine(parser, first, lines.limits(), &object);
  if (not_head) {
    if (first.size() <= lines.limits().max_line_bytes && first.starts_with('{') &&
        first.ends_with(kVersion1ListOpens)) {
      return ReadVersion1Lines(lines, first, parser, record, visitor);
    }
    return ReadVersion1Whole(lines, not_head, parser, record, visitor);
  }
  Head head;
  if (auto read = ReadHead(object, record, head); !read) return LineNumber{}(read.error().message);
  if (head.version == 1) return ReadVersion1Whole(lines, std::nullopt, parser, record, visitor);
  if (auto checked = CheckHead(head, Record::kVersion); !checked) {
    return LineNumber{}(checked.error().message);
  }
  Entries out(record, visitor);
  if (!out.Header()) return false;
  return ReadEntryLines(lines, parser, head.entries, out);
}

// Every refusal begins "state: ".
template <typename Lines>
Result<bool> Read(Lines lines, Record& record, RecordVisitor* visitor) {
  auto read = ReadLines(lines, record, visitor);
  if (!read) {
    ErrorKind kind = read.error().kind;
    return Fail(kind == ErrorKind::kOther ? ErrorKind::kCorrupt : kind,
                "state: " + read.error().message);
  }
  return read;
}

}  // namespace

Result<Record> ParseRecord(std::string_view text, const RecordLimits& limits) {
  Record record;
  if (auto read = Read(TextLines(text, limits), record, nullptr); !read) {
    return std::unexpected(read.error());
  }
  return record;
}

Result<Record> ParseRecord(std::istream& text, const RecordLimits& limits) {
  Record record;
  if (auto read = Read(StreamLines(text, limits), record, nullptr); !read) {
    return std::unexpected(read.error());
  }
  return record;
}

Result<bool> ScanRecord(std::istream& text, RecordVisitor& visitor, const RecordLimits& limits) {
  Record header;
  return Read(StreamLines(text, limits), header, &visitor);
}

Result<bool> ScanRecord(std::string_view text, RecordVisitor& visitor, const RecordLimits& limits) {
  Record header;
  return Read(TextLines(text, limits), header, &visitor);
}

}  // namespace mesh::core
