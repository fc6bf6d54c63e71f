// Parses a JSON document whose bulk is one collection under a top-level key
// (the declaration's "resources" list), handing that collection's members to
// a callback one at a time. (The record, JSON Lines of a fixed shape, has
// its own reader straight into the model: record_read.cc.)
//
// A whole-document parse holds every member's tree at once: for a
// declaration of 10,000 files that is tens of MiB of fresh pages, and a
// fresh process (`mesh-host apply`) spent more time faulting them in than
// reading the bytes. Here each member's tree is built, handed over and
// dropped, so the allocator reuses the same few pages; the rest of the
// document is kept whole and returned, with an empty collection standing in
// for the streamed one so that type checks read as before.
//
// Two parsers read the bytes (docs/architecture.md says why). simdjson reads
// them first: nlohmann's lexer reads a character at a time, about twenty
// times slower, and the full pass cannot afford it. nlohmann is the
// reference: whatever simdjson refuses, and a text whose numbers it would
// type otherwise, is parsed by nlohmann, whose result and message then
// stand. So what a document means, and every refusal's wording, are
// nlohmann's either way.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/result.h"

namespace mesh::core {

struct StreamedJson {
  nlohmann::json document;    // the document, the streamed collection empty
  size_t members = 0;         // members the streamed collection had
  bool by_reference = false;  // nlohmann's parse, not simdjson's
};

// Which parser ParseStreamed starts with. kFast is what the host uses;
// kReference (nlohmann alone) is there so that tests can hold the two
// side by side.
enum class JsonEngine { kFast, kReference };

struct StreamOptions {
  // A document with an array or object nested deeper than this is refused
  // (ErrorKind::kTooDeep) before anything is handed over, as
  // JsonDepthWithin counts it. 0: no limit of its own (nlohmann's parse
  // does not recurse; simdjson's stops at 1,024 and hands over to it).
  int max_depth = 0;
  JsonEngine engine = JsonEngine::kFast;
  // Called whenever the streamed collection opens, before its first member:
  // again for a document that repeats the key (the last wins, as in a whole
  // parse, even when it is empty) and again when simdjson gave up part way
  // and nlohmann starts over. A consumer starts over here. `members` is the
  // collection's size when the parser knows it (simdjson does, nlohmann
  // does not): a hint to reserve for, within the consumer's own limits.
  std::function<void(std::optional<size_t> members)> on_start;
  // Read after each member of the collection is handed over: once it
  // points to true, nothing more is handed over and the parse fails
  // ("parse stopped") without reading the rest.
  const bool* stop = nullptr;
};

// `key` names the top-level member to stream; it is streamed only when it
// is an array (`want_array`) or an object (otherwise), else kept whole. The
// callback gets the member's key (empty for an array), its position, and
// its tree, which it may move from; StreamOptions::on_start says when the
// collection started (again). Throws nothing: a syntax error comes back as
// nlohmann's message (as a whole parse would have thrown it).
using MemberCallback =
    std::function<void(std::string& key, size_t position, nlohmann::json& value)>;

Result<StreamedJson> ParseStreamed(std::string_view text, std::string_view key, bool want_array,
                                   const MemberCallback& on_member,
                                   const StreamOptions& options = {});

// A streamed member that is an object, held as its fields rather than as a
// tree: a declaration's resources are small objects of strings, and a tree
// costs a map node and a string object per field, allocated and freed again
// for every resource. A string value is kept as the string itself; any
// other value (a list, an object, a number) as its tree. A key given twice
// is refused by the parser (Add). The same FlatObject is
// refilled for every member, so its strings keep their capacity.
class FlatObject {
 public:
  // Every declared kind has a dozen fields at most. Beyond this many
  // distinct keys the rest are not kept (a hostile object of a million keys
  // would otherwise make each key a scan of all the others): overflowed()
  // says so, and the reader refuses the object.
  static constexpr size_t kMaxFields = 64;

  struct Field {
    std::string key;
    bool is_string = false;
    std::string text;      // the value, when it is a string
    nlohmann::json value;  // the value, when it is not
  };

  const Field* Find(std::string_view key) const;
  Field* Find(std::string_view key);
  // The fields, in the order their keys first came.
  std::span<Field> fields() { return {fields_.data(), size_}; }
  std::span<const Field> fields() const { return {fields_.data(), size_}; }
  bool overflowed() const { return overflowed_; }

  // For the parser: empties the object, keeping the strings' capacity.
  void Clear();
  // For the parser: the field that `key`'s value goes to, emptied (a
  // scratch one past kMaxFields); null when `key` was given already.
  Field* Add(std::string_view key);

 private:
  std::vector<Field> fields_;
  size_t size_ = 0;
  bool overflowed_ = false;
  Field overflow_;
};

// The members of the streamed collection that are objects go to
// `on_object` as FlatObjects (which it may move strings from); any other
// member goes to `on_member` as before.
using FlatObjectCallback = std::function<void(size_t position, FlatObject& object)>;

Result<StreamedJson> ParseStreamed(std::string_view text, std::string_view key, bool want_array,
                                   const MemberCallback& on_member,
                                   const FlatObjectCallback& on_object,
                                   const StreamOptions& options = {});

}  // namespace mesh::core
