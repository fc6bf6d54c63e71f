// What a streamed parse hands over, written out so that two parsers can be
// compared byte for byte: json_stream_test and the json_stream fuzzer
// (tests/fuzz/json_stream_fuzzer.cc) hold simdjson's walk against
// nlohmann's with it. Header-only: the fuzzer is built outside Bazel.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "host/core/json_stream.h"

namespace mesh::core::testing_json {

using json = nlohmann::json;

// A tree written out with every number's type: nlohmann's == and dump()
// both take the unsigned 0 for the signed 0, and the declaration does not.
inline std::string Typed(const json& j) {
  switch (j.type()) {
    case json::value_t::number_integer:
      return "i" + std::to_string(j.get<int64_t>());
    case json::value_t::number_unsigned:
      return "u" + std::to_string(j.get<uint64_t>());
    case json::value_t::number_float:
      return "f" + j.dump();
    case json::value_t::array: {
      std::string out = "[";
      for (const json& item : j) out += Typed(item) + ",";
      return out + "]";
    }
    case json::value_t::object: {
      std::string out = "{";
      for (const auto& [k, v] : j.items()) out += json(k).dump() + ":" + Typed(v) + ",";
      return out + "}";
    }
    default:
      return j.dump();
  }
}

// Everything a parse hands over, in order, then its result.
inline std::string Trace(std::string_view text, JsonEngine engine, bool* by_reference = nullptr,
                         int max_depth = 0) {
  std::string trace;
  MemberCallback on_member = [&](std::string& key, size_t position, json& value) {
    trace +=
        "member " + json(key).dump() + " #" + std::to_string(position) + " " + Typed(value) + "\n";
  };
  FlatObjectCallback on_object = [&](size_t position, FlatObject& object) {
    trace += "object #" + std::to_string(position) + (object.overflowed() ? " overflowed" : "");
    for (const FlatObject::Field& f : object.fields()) {
      trace +=
          " " + json(f.key).dump() + "=" + (f.is_string ? json(f.text).dump() : Typed(f.value));
    }
    trace += "\n";
  };
  // Only that the collection started: simdjson knows its size, nlohmann not.
  auto on_start = [&](std::optional<size_t>) { trace += "start\n"; };
  auto r = ParseStreamed(text, "items", /*want_array=*/true, on_member, on_object,
                         {.max_depth = max_depth, .engine = engine, .on_start = on_start});
  if (by_reference != nullptr) *by_reference = r.has_value() && r->by_reference;
  if (!r) return trace + "error " + r.error().message;
  return trace + "document " + Typed(r->document) + " members " + std::to_string(r->members);
}

// A trace from its last start: when simdjson gave up part way, nlohmann
// starts the collection over, and the consumers with it (json_stream.h).
inline std::string FromLastStart(const std::string& trace) {
  size_t p = trace.rfind("start\n");
  while (p != std::string::npos && p != 0 && trace[p - 1] != '\n') {
    p = trace.rfind("start\n", p - 1);
  }
  return p == std::string::npos ? trace : trace.substr(p);
}

// Empty when the host's parse of `text` hands over exactly what nlohmann's
// does; otherwise both traces.
inline std::string Disagreement(std::string_view text, int max_depth = 0) {
  bool by_reference = false;
  std::string fast = Trace(text, JsonEngine::kFast, &by_reference, max_depth);
  std::string reference = Trace(text, JsonEngine::kReference, nullptr, max_depth);
  if (by_reference) {
    fast = FromLastStart(fast);
    reference = FromLastStart(reference);
  }
  return fast == reference ? "" : "simdjson:\n" + fast + "\nnlohmann:\n" + reference;
}

// The input as a JSON string, whatever its bytes.
inline std::string Quoted(std::string_view text) {
  return json(std::string(text)).dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace mesh::core::testing_json
