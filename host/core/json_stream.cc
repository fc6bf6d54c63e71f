#include "host/core/json_stream.h"

#include <simdjson.h>

#include <algorithm>
#include <new>
#include <utility>
#include <vector>

#include "host/core/json_depth.h"
#include "host/core/printable.h"

namespace mesh::core {
namespace {

using json = nlohmann::json;

// What nlohmann's lexer gives as a container's size: it does not know it.
constexpr std::size_t kUnknownSize = static_cast<std::size_t>(-1);

// Where the streamed collection's members go.
struct Sinks {
  std::string_view key;
  bool want_array;
  const MemberCallback& on_member;
  const FlatObjectCallback* on_object;  // null: object members as trees too
  const std::function<void(std::optional<size_t>)>& on_start;
  const bool* stop;
};

class Handler final : public nlohmann::json_sax<json> {
 public:
  explicit Handler(const Sinks& sinks) : s_(sinks) {}

  bool null() override { return Scalar(json(nullptr)); }
  bool boolean(bool v) override { return Scalar(json(v)); }
  bool number_integer(number_integer_t v) override { return Scalar(json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return Scalar(json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return Scalar(json(v)); }
  // Copied, not moved: a moved-from token buffer makes the lexer grow a new
  // one char by char for the next token.
  bool string(string_t& v) override { return String(v); }
  bool String(std::string_view v) {
    if (!levels_.empty() && levels_.back().flat) {
      field_->is_string = true;
      field_->text.assign(v);
      return true;
    }
    return Scalar(json(std::string(v)));
  }
  bool binary(binary_t& v) override { return Scalar(json::binary(std::move(v))); }
  bool start_object(std::size_t size) override {
    if (s_.on_object != nullptr && !levels_.empty() && levels_.back().streamed) {
      flat_.Clear();
      levels_.push_back(Level{nullptr, false, true, {}});
      return true;
    }
    return Open(json::object(), size);
  }
  bool start_array(std::size_t size) override { return Open(json::array(), size); }
  bool end_object() override { return Close(); }
  bool end_array() override { return Close(); }
  bool key(string_t& k) override { return Key(k); }
  bool Key(std::string_view k) {
    Level& top = levels_.back();
    if (top.flat) {
      field_ = flat_.Add(k);
      return field_ != nullptr || Duplicate(k);
    }
    std::string& to = top.streamed ? member_key_ : top.key;
    to.assign(k);
    if (!top.streamed && top.value->is_object() && top.value->contains(to)) return Duplicate(k);
    return true;
  }
  // The parser's message names the place and quotes the token it read: the
  // token goes (it may be a credential's bytes), the member it was in stays.
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    error_ = JsonErrorWithoutBytes(e.what());
    if (levels_.size() >= 2 && levels_[1].streamed) {
      error_ += " (in " + std::string(s_.key) + "[" + std::to_string(members_) + "])";
    }
    return false;
  }

  StreamedJson Take() { return StreamedJson{std::move(root_), members_}; }
  const std::string& error() const { return error_; }
  ErrorKind error_kind() const { return error_kind_; }

 private:
  struct Level {
    json* value = nullptr;  // the container being built; null for the streamed one
    bool streamed = false;
    bool flat = false;  // a member of the streamed collection, built as a FlatObject
    std::string key;    // the key whose value comes next (objects)
  };

  // Where a new value goes: the root, the current member, or its container.
  json* Place(json&& v) {
    if (levels_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Level& top = levels_.back();
    if (top.flat) {
      field_->value = std::move(v);
      return &field_->value;
    }
    if (top.streamed) {
      member_ = std::move(v);
      return &member_;
    }
    if (top.value->is_array()) {
      top.value->push_back(std::move(v));
      return &top.value->back();
    }
    json& slot = (*top.value)[top.key];
    slot = std::move(v);
    return &slot;
  }

  bool Scalar(json&& v) {
    Place(std::move(v));
    if (!levels_.empty() && levels_.back().streamed) Emit();
    return !Stopped();
  }

  // `size`: the container's members, or kUnknownSize (nlohmann's lexer).
  bool Open(json&& container, std::size_t size) {
    bool is_array = container.is_array();
    if (levels_.size() == 1 && levels_[0].value == &root_ && root_.is_object() &&
        levels_[0].key == s_.key && is_array == s_.want_array) {
      // The streamed collection: an empty one stands in for it.
      Place(std::move(container));
      levels_.push_back(Level{nullptr, true, false, {}});
      members_ = 0;
      if (s_.on_start) {
        s_.on_start(size == kUnknownSize ? std::nullopt : std::optional<size_t>(size));
      }
      return true;
    }
    levels_.push_back(Level{Place(std::move(container)), false, false, {}});
    return true;
  }

  bool Close() {
    bool flat = levels_.back().flat;
    levels_.pop_back();
    if (flat) {
      (*s_.on_object)(members_++, flat_);
    } else if (!levels_.empty() && levels_.back().streamed) {
      Emit();
    }
    return !Stopped();
  }

  // Names the key and where it is: the streamed member by its place and,
  // when it has one already, its id. Never a value: it may be a secret.
  bool Duplicate(std::string_view k) {
    error_kind_ = ErrorKind::kDuplicateKey;
    error_ = "key \"" + Printable(k, 64) + "\" appears twice";
    if (levels_.size() >= 2 && levels_[1].streamed) {
      error_ += " in " + std::string(s_.key) + "[" + std::to_string(members_) + "]";
      const FlatObject::Field* id =
          levels_.size() >= 3 && levels_[2].flat ? flat_.Find("id") : nullptr;
      if (id != nullptr && id->is_string) error_ += " (id \"" + Printable(id->text, 64) + "\")";
    } else if (levels_.size() == 1) {
      error_ += " at the top level";
    }
    return false;
  }

  // The consumer asked for no more members (StreamOptions::stop).
  bool Stopped() const { return s_.stop != nullptr && *s_.stop; }

  void Emit() {
    s_.on_member(member_key_, members_++, member_);
    member_ = json();
    member_key_.clear();
  }

  const Sinks s_;
  FlatObject flat_;
  FlatObject::Field* field_ = nullptr;  // where the flat member's next value goes
  json root_;
  std::vector<Level> levels_;
  json member_;
  std::string member_key_;
  size_t members_ = 0;
  std::string error_;
  ErrorKind error_kind_ = ErrorKind::kOther;
};

Result<StreamedJson> ParseByReference(std::string_view text, std::string_view key, bool want_array,
                                      const MemberCallback& on_member,
                                      const FlatObjectCallback* on_object,
                                      const StreamOptions& options) {
  // nlohmann's lexer reads a NUL byte as the end of the input: what follows
  // would go unread, and the host would apply another document than JSON
  // tools and a signature read. JSON holds no raw NUL anywhere.
  if (size_t nul = text.find('\0'); nul != std::string_view::npos) {
    size_t line_start = text.rfind('\n', nul);
    line_start = line_start == std::string_view::npos ? 0 : line_start + 1;
    return Fail("line " + std::to_string(1 + std::count(text.begin(), text.begin() + nul, '\n')) +
                ", column " + std::to_string(nul - line_start + 1) +
                ": syntax error: a NUL byte, which JSON holds nowhere (a string writes it "
                "\\u0000)");
  }
  Handler handler(Sinks{key, want_array, on_member, on_object, options.on_start, options.stop});
  try {
    if (!json::sax_parse(text.begin(), text.end(), &handler)) {
      return Fail(handler.error_kind(),
                  handler.error().empty() ? "parse stopped" : handler.error());
    }
  } catch (const json::exception& e) {
    return Fail(JsonErrorWithoutBytes(e.what()));
  } catch (const std::bad_alloc&) {
    return Fail("out of memory");
  }
  StreamedJson out = handler.Take();
  out.by_reference = true;
  return out;
}

namespace dom = simdjson::dom;

// simdjson reads "-0" as the integer 0, which nlohmann reads as a signed
// integer (and the host's readers refuse where a count belongs). Such a
// token stands where a value starts: after ':', ',' or '[' (and any
// whitespace), or at the very start, and ends there. A text with no such
// "-0" has none, and simdjson's zeros are all unsigned; one that has it (or
// a string that looks like it) is read by nlohmann.
bool MayHaveMinusZero(std::string_view text) {
  for (size_t at = text.find("-0"); at != std::string_view::npos; at = text.find("-0", at + 2)) {
    // "-0.5" and "-0e1" are floats to both; a digit after "-0" is no JSON.
    if (at + 2 < text.size() &&
        (text[at + 2] == '.' || text[at + 2] == 'e' || text[at + 2] == 'E')) {
      continue;
    }
    size_t before = at;
    while (before > 0 && (text[before - 1] == ' ' || text[before - 1] == '\t' ||
                          text[before - 1] == '\n' || text[before - 1] == '\r')) {
      --before;
    }
    if (before == 0 || text[before - 1] == ':' || text[before - 1] == ',' ||
        text[before - 1] == '[') {
      return true;
    }
  }
  return false;
}

// Past this, a text is left to nlohmann: simdjson's buffers are reserved
// at about fifteen times the text (a few times it touched), and a
// declaration of 100,000 files is 23 MB.
constexpr size_t kMaxFastBytes = 32u << 20;

// simdjson's document of `text`, when it reads it as nlohmann would.
bool ParseFast(std::string_view text, int max_depth, dom::parser& parser, dom::element& root) {
  if (text.size() > kMaxFastBytes || MayHaveMinusZero(text)) return false;
  // simdjson's depth is at least as strict as JsonDepthWithin's (a
  // non-empty container at the limit is refused, an empty one is not): a
  // document it reads needs no check of its own, one it refuses is counted
  // again by the caller.
  size_t depth = max_depth > 0 ? size_t(max_depth) : simdjson::DEFAULT_MAX_DEPTH;
  // Copied: simdjson reads SIMDJSON_PADDING bytes past the end of its input.
  return parser.allocate(text.size(), depth) == simdjson::SUCCESS &&
         parser.parse(text.data(), text.size(), true).get(root) == simdjson::SUCCESS;
}

// simdjson's document as the events nlohmann's parser would send, with
// each container's size, which simdjson knows and nlohmann does not. Keys
// and strings go over as views of simdjson's copy, not copied again.
class SaxWalk {
 public:
  explicit SaxWalk(Handler& handler) : handler_(handler) {}

  bool Value(dom::element e) {
    switch (e.type()) {
      case dom::element_type::ARRAY: {
        dom::array items;
        if (e.get_array().get(items) != simdjson::SUCCESS) return false;
        if (!handler_.start_array(items.size())) return false;
        for (dom::element item : items) {
          if (!Value(item)) return false;
        }
        return handler_.end_array();
      }
      case dom::element_type::OBJECT: {
        dom::object fields;
        if (e.get_object().get(fields) != simdjson::SUCCESS) return false;
        if (!handler_.start_object(fields.size())) return false;
        for (dom::key_value_pair field : fields) {
          if (!handler_.Key(field.key) || !Value(field.value)) return false;
        }
        return handler_.end_object();
      }
      case dom::element_type::STRING: {
        std::string_view text;
        if (e.get_string().get(text) != simdjson::SUCCESS) return false;
        return handler_.String(text);
      }
      case dom::element_type::INT64: {
        int64_t v = 0;
        if (e.get_int64().get(v) != simdjson::SUCCESS) return false;
        return v < 0 ? handler_.number_integer(v) : handler_.number_unsigned(uint64_t(v));
      }
      case dom::element_type::UINT64: {
        uint64_t v = 0;
        if (e.get_uint64().get(v) != simdjson::SUCCESS) return false;
        return handler_.number_unsigned(v);
      }
      case dom::element_type::DOUBLE: {
        double v = 0;
        if (e.get_double().get(v) != simdjson::SUCCESS) return false;
        text_.clear();
        return handler_.number_float(v, text_);
      }
      case dom::element_type::BOOL: {
        bool v = false;
        if (e.get_bool().get(v) != simdjson::SUCCESS) return false;
        return handler_.boolean(v);
      }
      case dom::element_type::NULL_VALUE:
        return handler_.null();
    }
    return false;
  }

 private:
  Handler& handler_;
  std::string text_;  // a float's text (empty: the handler does not read it)
};

Result<StreamedJson> Parse(std::string_view text, std::string_view key, bool want_array,
                           const MemberCallback& on_member, const FlatObjectCallback* on_object,
                           const StreamOptions& options) {
  if (options.engine == JsonEngine::kFast) {
    try {
      // A parser per parse: a kept one would hold the last document's
      // buffers (several times its size) while the daemon idles.
      dom::parser parser;
      dom::element root;
      if (ParseFast(text, options.max_depth, parser, root)) {
        // The reference's own handler, fed by simdjson: the same members,
        // trees and number types by construction.
        Handler handler(
            Sinks{key, want_array, on_member, on_object, options.on_start, options.stop});
        if (SaxWalk(handler).Value(root)) return handler.Take();
        if (options.stop != nullptr && *options.stop) return Fail("parse stopped");
        // nlohmann would refuse the same key at the same place.
        if (handler.error_kind() == ErrorKind::kDuplicateKey) {
          return Fail(ErrorKind::kDuplicateKey, handler.error());
        }
      }
    } catch (const json::exception& e) {
      return Fail(JsonErrorWithoutBytes(e.what()));
    } catch (const simdjson::simdjson_error&) {
      // Not thrown by the error-code accessors used here; if it were, the
      // reference parses the document.
    } catch (const std::bad_alloc&) {
      return Fail("out of memory");
    }
  }
  if (options.max_depth > 0 && !JsonDepthWithin(text, options.max_depth)) {
    return Fail(ErrorKind::kTooDeep,
                "nested deeper than " + std::to_string(options.max_depth) + " levels");
  }
  return ParseByReference(text, key, want_array, on_member, on_object, options);
}

}  // namespace

const FlatObject::Field* FlatObject::Find(std::string_view key) const {
  for (size_t i = 0; i < size_; ++i) {
    if (fields_[i].key == key) return &fields_[i];
  }
  return nullptr;
}

FlatObject::Field* FlatObject::Find(std::string_view key) {
  return const_cast<Field*>(std::as_const(*this).Find(key));
}

void FlatObject::Clear() {
  size_ = 0;
  overflowed_ = false;
}

FlatObject::Field* FlatObject::Add(std::string_view key) {
  if (Find(key) != nullptr) return nullptr;
  Field* field = &overflow_;
  if (size_ == kMaxFields) {
    overflowed_ = true;
  } else {
    if (size_ == fields_.size()) fields_.emplace_back();
    field = &fields_[size_++];
    field->key.assign(key);
  }
  field->is_string = false;
  field->value = nullptr;
  return field;
}

Result<StreamedJson> ParseStreamed(std::string_view text, std::string_view key, bool want_array,
                                   const MemberCallback& on_member, const StreamOptions& options) {
  return Parse(text, key, want_array, on_member, nullptr, options);
}

Result<StreamedJson> ParseStreamed(std::string_view text, std::string_view key, bool want_array,
                                   const MemberCallback& on_member,
                                   const FlatObjectCallback& on_object,
                                   const StreamOptions& options) {
  return Parse(text, key, want_array, on_member, &on_object, options);
}

}  // namespace mesh::core
