// Parses a JSON document whose bulk is one collection under a top-level key
// (the declaration's "resources" list), handing that collection's members to
// a callback one at a time. (The record, whose shape is fixed, has its own
// reader straight into the model: record.cc.)
//
// A whole-document parse holds every member's tree at once: for a
// declaration of 10,000 files that is tens of MiB of fresh pages, and a
// fresh process (`mesh-host apply`) spent more time faulting them in than
// reading the bytes. Here each member's tree is built, handed over and
// dropped, so the allocator reuses the same few pages; the rest of the
// document is kept whole and returned, with an empty collection standing in
// for the streamed one so that type checks read as before.
#pragma once

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "host/core/result.h"

namespace mesh::core {

struct StreamedJson {
  nlohmann::json document;  // the document, the streamed collection empty
  size_t members = 0;       // members the streamed collection had
};

// `key` names the top-level member to stream; it is streamed only when it
// is an array (`want_array`) or an object (otherwise), else kept whole. The
// callback gets the member's key (empty for an array), its position, and
// its tree, which it may move from; position 0 means the collection started
// (again, for a document that repeats the key: the last one wins, as in a
// whole parse). Throws nothing: a syntax error comes back as the parser's
// message (as a whole parse would have thrown it).
using MemberCallback =
    std::function<void(std::string& key, size_t position, nlohmann::json& value)>;

Result<StreamedJson> ParseStreamed(std::string_view text, std::string_view key, bool want_array,
                                   const MemberCallback& on_member);

}  // namespace mesh::core
