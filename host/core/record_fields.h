// The record's objects read into the model (record.h): the head's fields
// and an entry's, from simdjson's DOM, every refusal naming the field. The
// part of reading the record that does not depend on how the text is laid
// out (record_read.cc). Internal to //host/core:record.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

#include "host/core/record.h"
#include "host/core/result.h"

namespace mesh::core::record_reading {

namespace dom = simdjson::dom;

// Where a value is, in the words of a refusal: "resource ID, field KEY: ".
struct Place {
  std::string_view id;  // empty: the head
  std::string_view key;

  std::unexpected<Error> Wrong(std::string_view what) const {
    std::string where = id.empty() ? "" : "resource " + std::string(id) + ", ";
    return Fail(where + "field " + std::string(key) + ": " + std::string(what));
  }
};

// What the head says beside the header's own fields.
struct Head {
  enum Seen : unsigned {
    kMachine = 1,
    kGeneration = 2,
    kDigest = 4,
    kEntries = 8,
  };
  unsigned seen = 0;
  uint64_t version = 0;
  uint64_t entries = 0;
};

// The head's fields into `header` and `head`; any other field is skipped (a
// newer host's, or version 1's "resources", read apart).
Status ReadHead(dom::object object, Record& header, Head& head);

// The head is of `version` and has every field that version must have.
Status CheckHead(const Head& head, uint64_t version);

// An entry's fields into `e`, which starts empty; "id" and unknown fields
// are skipped. Unit keys that say nothing make no unit part.
Status ReadEntry(dom::object object, std::string_view id, RecordEntry& e);

}  // namespace mesh::core::record_reading
