#include "host/core/json_stream.h"

#include <simdjson.h>

#include <new>
#include <utility>
#include <vector>

#include "host/core/printable.h"

namespace mesh::core {
namespace {

using json = nlohmann::json;

class Handler final : public nlohmann::json_sax<json> {
 public:
  Handler(std::string_view key, bool want_array, const MemberCallback& on_member,
          const FlatObjectCallback* on_object)
      : key_(key), want_array_(want_array), on_member_(on_member), on_object_(on_object) {}

  bool null() override { return Scalar(json(nullptr)); }
  bool boolean(bool v) override { return Scalar(json(v)); }
  bool number_integer(number_integer_t v) override { return Scalar(json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return Scalar(json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return Scalar(json(v)); }
  // Copied, not moved: a moved-from token buffer makes the lexer grow a new
  // one char by char for the next token.
  bool string(string_t& v) override {
    if (!levels_.empty() && levels_.back().flat) {
      field_->is_string = true;
      field_->text.assign(v);
      return true;
    }
    return Scalar(json(v));
  }
  bool binary(binary_t& v) override { return Scalar(json::binary(std::move(v))); }
  bool start_object(std::size_t) override {
    if (on_object_ != nullptr && !levels_.empty() && levels_.back().streamed) {
      flat_.Clear();
      levels_.push_back(Level{nullptr, false, true, {}});
      return true;
    }
    return Open(json::object());
  }
  bool start_array(std::size_t) override { return Open(json::array()); }
  bool end_object() override { return Close(); }
  bool end_array() override { return Close(); }
  bool key(string_t& k) override {
    Level& top = levels_.back();
    if (top.flat) {
      field_ = &flat_.Begin(k);
    } else {
      (top.streamed ? member_key_ : top.key).assign(k);
    }
    return true;
  }
  // The parser's message names the place and quotes the token it read: the
  // token goes (it may be a credential's bytes), the member it was in stays.
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    error_ = JsonErrorWithoutBytes(e.what());
    if (levels_.size() >= 2 && levels_[1].streamed) {
      error_ += " (in " + std::string(key_) + "[" + std::to_string(members_) + "])";
    }
    return false;
  }

  StreamedJson Take() { return StreamedJson{std::move(root_), members_}; }
  const std::string& error() const { return error_; }

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
    return true;
  }

  bool Open(json&& container) {
    bool is_array = container.is_array();
    if (levels_.size() == 1 && levels_[0].value == &root_ && root_.is_object() &&
        levels_[0].key == key_ && is_array == want_array_) {
      // The streamed collection: an empty one stands in for it.
      Place(std::move(container));
      levels_.push_back(Level{nullptr, true, false, {}});
      members_ = 0;
      return true;
    }
    levels_.push_back(Level{Place(std::move(container)), false, false, {}});
    return true;
  }

  bool Close() {
    bool flat = levels_.back().flat;
    levels_.pop_back();
    if (flat) {
      (*on_object_)(members_++, flat_);
    } else if (!levels_.empty() && levels_.back().streamed) {
      Emit();
    }
    return true;
  }

  void Emit() {
    on_member_(member_key_, members_++, member_);
    member_ = json();
    member_key_.clear();
  }

  std::string_view key_;
  bool want_array_;
  const MemberCallback& on_member_;
  const FlatObjectCallback* on_object_;
  FlatObject flat_;
  FlatObject::Field* field_ = nullptr;  // where the flat member's next value goes
  json root_;
  std::vector<Level> levels_;
  json member_;
  std::string member_key_;
  size_t members_ = 0;
  std::string error_;
};

Result<StreamedJson> ParseByReference(std::string_view text, std::string_view key,
                                      bool want_array, const MemberCallback& on_member,
                                      const FlatObjectCallback* on_object) {
  Handler handler(key, want_array, on_member, on_object);
  try {
    if (!json::sax_parse(text.begin(), text.end(), &handler)) {
      return Fail(handler.error().empty() ? "parse stopped" : handler.error());
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

// The same walk as Handler's, over simdjson's parsed document, handing the
// same members to the same callbacks and building the same trees. Values
// are typed as nlohmann's lexer types them: a non-negative integer is
// unsigned, a negative one signed, one with a fraction or an exponent a
// float. simdjson reads "-0" as the integer 0, which nlohmann reads as
// signed: a zero integer in a document that has "-0" anywhere in its bytes
// is the one case it cannot tell, and the walk gives up (Run is false).
class FastWalk {
 public:
  FastWalk(std::string_view text, std::string_view key, bool want_array,
           const MemberCallback& on_member, const FlatObjectCallback* on_object)
      : text_(text),
        key_(key),
        want_array_(want_array),
        on_member_(on_member),
        on_object_(on_object) {}

  // Every accessor below is simdjson's error-code form: its conversion
  // operators throw.
  bool Run(dom::element root) {
    dom::object fields;
    if (root.get_object().get(fields) != simdjson::SUCCESS) return Convert(root, root_);
    root_ = json::object();
    for (dom::key_value_pair field : fields) {
      dom::element value = field.value;
      dom::array list;
      dom::object map;
      bool is_array = value.get_array().get(list) == simdjson::SUCCESS;
      bool is_object = !is_array && value.get_object().get(map) == simdjson::SUCCESS;
      if (field.key == key_ && (is_array || is_object) && is_array == want_array_) {
        root_[field.key] = is_array ? json::array() : json::object();
        members_ = 0;
        if (!(is_array ? StreamArray(list) : StreamObject(map))) return false;
      } else if (!Convert(value, root_[field.key])) {
        return false;
      }
    }
    return true;
  }

  StreamedJson Take() { return StreamedJson{std::move(root_), members_, false}; }

 private:
  bool StreamArray(dom::array members) {
    for (dom::element member : members) {
      if (!Member(member)) return false;
    }
    return true;
  }

  bool StreamObject(dom::object members) {
    for (dom::key_value_pair member : members) {
      member_key_.assign(member.key);
      if (!Member(member.value)) return false;
    }
    return true;
  }

  bool Member(dom::element member) {
    dom::object fields;
    if (on_object_ != nullptr && member.get_object().get(fields) == simdjson::SUCCESS) {
      flat_.Clear();
      for (dom::key_value_pair field : fields) {
        FlatObject::Field& slot = flat_.Begin(field.key);
        std::string_view text;
        if (field.value.get_string().get(text) == simdjson::SUCCESS) {
          slot.is_string = true;
          slot.text.assign(text);
        } else if (!Convert(field.value, slot.value)) {
          return false;
        }
      }
      (*on_object_)(members_++, flat_);
      return true;
    }
    if (!Convert(member, member_)) return false;
    on_member_(member_key_, members_++, member_);
    member_ = json();
    member_key_.clear();
    return true;
  }

  // Depth is bounded by simdjson's parse (1,024 levels; deeper documents
  // are refused and go to nlohmann, which does not recurse).
  bool Convert(dom::element e, json& out) {
    switch (e.type()) {
      case dom::element_type::ARRAY: {
        dom::array items;
        if (e.get_array().get(items) != simdjson::SUCCESS) return false;
        out = json::array();
        for (dom::element item : items) {
          out.push_back(json());
          if (!Convert(item, out.back())) return false;
        }
        return true;
      }
      case dom::element_type::OBJECT: {
        dom::object fields;
        if (e.get_object().get(fields) != simdjson::SUCCESS) return false;
        out = json::object();
        for (dom::key_value_pair field : fields) {
          if (!Convert(field.value, out[field.key])) return false;
        }
        return true;
      }
      case dom::element_type::STRING: {
        std::string_view text;
        if (e.get_string().get(text) != simdjson::SUCCESS) return false;
        out = text;
        return true;
      }
      case dom::element_type::INT64: {
        int64_t v = 0;
        if (e.get_int64().get(v) != simdjson::SUCCESS) return false;
        if (v < 0) {
          out = json::number_integer_t{v};
        } else if (v == 0 && MayHaveMinusZero()) {
          return false;
        } else {
          out = json::number_unsigned_t(v);
        }
        return true;
      }
      case dom::element_type::UINT64: {
        uint64_t v = 0;
        if (e.get_uint64().get(v) != simdjson::SUCCESS) return false;
        out = json::number_unsigned_t{v};
        return true;
      }
      case dom::element_type::DOUBLE: {
        double v = 0;
        if (e.get_double().get(v) != simdjson::SUCCESS) return false;
        out = json::number_float_t{v};
        return true;
      }
      case dom::element_type::BOOL: {
        bool v = false;
        if (e.get_bool().get(v) != simdjson::SUCCESS) return false;
        out = v;
        return true;
      }
      case dom::element_type::NULL_VALUE:
        out = nullptr;
        return true;
    }
    return false;
  }

  bool MayHaveMinusZero() {
    if (minus_zero_ < 0) minus_zero_ = text_.find("-0") != std::string_view::npos;
    return minus_zero_ != 0;
  }

  std::string_view text_;
  std::string_view key_;
  bool want_array_;
  const MemberCallback& on_member_;
  const FlatObjectCallback* on_object_;
  FlatObject flat_;
  json root_;
  json member_;
  std::string member_key_;
  size_t members_ = 0;
  int minus_zero_ = -1;  // unknown until a zero is met
};

Result<StreamedJson> Parse(std::string_view text, std::string_view key, bool want_array,
                           const MemberCallback& on_member, const FlatObjectCallback* on_object,
                           JsonEngine engine) {
  if (engine == JsonEngine::kFast) {
    try {
      // A parser per parse: a kept one would hold the last document's
      // buffers (several times its size) while the daemon idles.
      dom::parser parser;
      dom::element root;
      if (parser.parse(text.data(), text.size()).get(root) == simdjson::SUCCESS) {
        FastWalk walk(text, key, want_array, on_member, on_object);
        if (walk.Run(root)) return walk.Take();
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
  return ParseByReference(text, key, want_array, on_member, on_object);
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

FlatObject::Field& FlatObject::Begin(std::string_view key) {
  Field* field = Find(key);
  if (field == nullptr) {
    if (size_ == kMaxFields) {
      overflowed_ = true;
      field = &overflow_;
    } else {
      if (size_ == fields_.size()) fields_.emplace_back();
      field = &fields_[size_++];
      field->key.assign(key);
    }
  }
  field->is_string = false;
  field->value = nullptr;
  return *field;
}

Result<StreamedJson> ParseStreamed(std::string_view text, std::string_view key, bool want_array,
                                   const MemberCallback& on_member, JsonEngine engine) {
  return Parse(text, key, want_array, on_member, nullptr, engine);
}

Result<StreamedJson> ParseStreamed(std::string_view text, std::string_view key, bool want_array,
                                   const MemberCallback& on_member,
                                   const FlatObjectCallback& on_object, JsonEngine engine) {
  return Parse(text, key, want_array, on_member, &on_object, engine);
}

}  // namespace mesh::core
