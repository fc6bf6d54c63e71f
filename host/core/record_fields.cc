// What the record's objects say: the head's fields and an entry's, each
// value checked for its kind, every refusal naming the field. How the text
// is cut into those objects, and which version it is, is record_read.cc.
#include "host/core/record_fields.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace mesh::core::record_reading {
namespace {

Status Text(dom::element v, const Place& at, std::string* out) {
  std::string_view text;
  if (v.get_string().get(text) != simdjson::SUCCESS) return at.Wrong("must be a string");
  out->assign(text);
  return Ok();
}

// A float or a negative number where a count belongs is refused, never cast.
Status Count(dom::element v, const Place& at, uint64_t* out) {
  if (v.get_uint64().get(*out) != simdjson::SUCCESS) {
    return at.Wrong("must be a non-negative integer");
  }
  return Ok();
}

Status Flag(dom::element v, const Place& at, bool* out) {
  if (v.get_bool().get(*out) != simdjson::SUCCESS) return at.Wrong("must be true or false");
  return Ok();
}

// [[owner, group, uid, gid], ...]: ids of at most 32 bits, as chown takes.
Status ReadOwners(dom::element value, const Place& at, std::optional<OwnerIds>* out) {
  dom::array list;
  if (value.get_array().get(list) != simdjson::SUCCESS) return at.Wrong("must be a list");
  OwnerIds owners;
  for (dom::element item : list) {
    dom::array four;
    std::string_view owner, group;
    uint64_t uid = 0, gid = 0;
    if (item.get_array().get(four) != simdjson::SUCCESS || four.size() != 4 ||
        four.at(0).get_string().get(owner) != simdjson::SUCCESS ||
        four.at(1).get_string().get(group) != simdjson::SUCCESS ||
        four.at(2).get_uint64().get(uid) != simdjson::SUCCESS ||
        four.at(3).get_uint64().get(gid) != simdjson::SUCCESS || uid > UINT32_MAX ||
        gid > UINT32_MAX) {
      return at.Wrong("must list [owner, group, uid, gid]");
    }
    owners.insert_or_assign({std::string(owner), std::string(group)},
                            std::pair{static_cast<uint32_t>(uid), static_cast<uint32_t>(gid)});
  }
  *out = std::move(owners);
  return Ok();
}

// A repeated "written" keeps its last list, as any repeated key does.
Status ReadWritten(dom::element value, const Place& at, std::vector<WrittenPath>* out) {
  dom::array list;
  if (value.get_array().get(list) != simdjson::SUCCESS) return at.Wrong("must be a list");
  out->clear();
  for (dom::element item : list) {
    dom::object object;
    if (item.get_object().get(object) != simdjson::SUCCESS) return at.Wrong("must list objects");
    WrittenPath& w = out->emplace_back();
    bool path = false, fingerprint = false;
    for (dom::key_value_pair field : object) {
      std::string_view key = field.key;
      Place in{at.id, key};
      Status read = Ok();
      if (key == "path") {
        read = Text(field.value, in, &w.path);
        path = true;
      } else if (key == "fingerprint") {
        read = Text(field.value, in, &w.fingerprint);
        fingerprint = true;
      } else if (key == "content_digest") {
        read = Text(field.value, in, &w.content_digest);
      } else if (key == "files") {
        read = Count(field.value, in, &w.file_count);
      } else if (key == "preexisting") {
        read = Flag(field.value, in, &w.preexisting);
      }
      if (!read) return read;
    }
    if (!path || !fingerprint) return at.Wrong("path and fingerprint are required");
  }
  return Ok();
}

// "NAME=FINGERPRINT ...", as record.cc writes it.
Status ReadDropIns(dom::element value, const Place& at, std::map<std::string, std::string>* out) {
  std::string text;
  if (auto read = Text(value, at, &text); !read) return read;
  out->clear();  // a repeated key keeps its last value
  for (size_t from = 0; from < text.size();) {
    size_t end = std::min(text.find(' ', from), text.size());
    std::string_view item = std::string_view(text).substr(from, end - from);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) return at.Wrong("not NAME=FINGERPRINT");
    (*out)[std::string(item.substr(0, eq))] = std::string(item.substr(eq + 1));
    from = end + 1;
  }
  return Ok();
}

// A time since the epoch in microseconds, as systemd stamps it.
Status Microseconds(dom::element value, const Place& at, int64_t* out) {
  uint64_t us = 0;
  Status read = Count(value, at, &us);
  if (read && us > static_cast<uint64_t>(INT64_MAX)) read = at.Wrong("out of range");
  if (read) *out = static_cast<int64_t>(us);
  return read;
}

// A unit's field of the entry; any other key is skipped.
Status ReadUnitField(std::string_view key, dom::element value, const Place& at, RecordEntry& e) {
  Status read = Ok();
  if (key == "unit") {
    read = Text(value, at, &e.mutable_unit().name);
  } else if (key == "unit_file") {
    read = Text(value, at, &e.mutable_unit().file_fingerprint);
  } else if (key == "state") {
    read = Text(value, at, &e.mutable_unit().state);
  } else if (key == "n_restarts") {
    uint64_t n = 0;
    read = Count(value, at, &n);
    if (read && n > UINT32_MAX) read = at.Wrong("out of range");
    if (read) e.mutable_unit().n_restarts = static_cast<uint32_t>(n);
  } else if (key == "enabled") {
    bool enabled = false;
    read = Flag(value, at, &enabled);
    if (read) e.mutable_unit().enabled = enabled;
  } else if (key == "finished") {
    read = Flag(value, at, &e.mutable_unit().finished);
  } else if (key == "starting") {
    read = Flag(value, at, &e.mutable_unit().starting);
  } else if (key == "run_began") {
    read = Microseconds(value, at, &e.mutable_unit().run_began_us);
  } else if (key == "reload_began") {
    read = Microseconds(value, at, &e.mutable_unit().reload_began_us);
  } else if (key == "rollback") {
    read = Flag(value, at, &e.mutable_unit().rollback);
  } else if (key == "unit_file_preexisting") {
    read = Flag(value, at, &e.mutable_unit().file_preexisting);
  } else if (key == "drop_ins") {
    read = ReadDropIns(value, at, &e.mutable_unit().drop_ins);
  }
  return read;
}

}  // namespace

Status ReadHead(dom::object object, Record& header, Head& head) {
  for (dom::key_value_pair field : object) {
    std::string_view key = field.key;
    Place at{{}, key};
    Status read = Ok();
    if (key == "version") {
      read = Count(field.value, at, &head.version);
    } else if (key == "want_version") {
      uint64_t w = 0;
      read = Count(field.value, at, &w);
      header.want_version = static_cast<int>(std::min<uint64_t>(w, 1u << 20));
    } else if (key == "generation") {
      read = Count(field.value, at, &header.generation);
      head.seen |= Head::kGeneration;
    } else if (key == "machine") {
      read = Text(field.value, at, &header.machine);
      head.seen |= Head::kMachine;
    } else if (key == "declaration_digest") {
      read = Text(field.value, at, &header.declaration_digest);
      head.seen |= Head::kDigest;
    } else if (key == "settled_declaration_digest") {
      read = Text(field.value, at, &header.settled_declaration_digest);
    } else if (key == "owners") {
      read = ReadOwners(field.value, at, &header.owners);
    } else if (key == "entries") {
      read = Count(field.value, at, &head.entries);
      head.seen |= Head::kEntries;
    }
    if (!read) return read;
  }
  return Ok();
}

Status CheckHead(const Head& head, uint64_t version) {
  if (head.version != version) return Fail("unknown version " + std::to_string(head.version));
  for (auto [bit, name] : {std::pair{Head::kMachine, "machine"},
                           {Head::kGeneration, "generation"},
                           {Head::kDigest, "declaration_digest"}}) {
    if (!(head.seen & bit)) return Fail(std::string(name) + " missing");
  }
  if (version == Record::kVersion && !(head.seen & Head::kEntries)) {
    return Fail("entries missing");
  }
  return Ok();
}

Status ReadEntry(dom::object object, std::string_view id, RecordEntry& e) {
  enum Seen : unsigned { kKind = 1, kDigest = 2, kAppliedAt = 4, kWritten = 8 };
  unsigned seen = 0;
  for (dom::key_value_pair field : object) {
    std::string_view key = field.key;
    Place at{id, key};
    Status read = Ok();
    if (key == "kind") {
      read = Text(field.value, at, &e.kind);
      seen |= kKind;
    } else if (key == "digest") {
      read = Text(field.value, at, &e.digest);
      seen |= kDigest;
    } else if (key == "applied_at") {
      read = Text(field.value, at, &e.applied_at);
      seen |= kAppliedAt;
    } else if (key == "written") {
      read = ReadWritten(field.value, at, &e.written);
      seen |= kWritten;
    } else if (key == "position") {
      uint64_t position = 0;
      read = Count(field.value, at, &position);
      e.position = position;
    } else {
      read = ReadUnitField(key, field.value, at, e);
    }
    if (!read) return read;
  }
  for (auto [bit, name] : {std::pair{kKind, "kind"},
                           {kDigest, "digest"},
                           {kAppliedAt, "applied_at"},
                           {kWritten, "written"}}) {
    if (!(seen & bit)) return Place{id, name}.Wrong("missing");
  }
  // Unit keys that say nothing ("finished": false) make no unit part: the
  // entry reads as it serializes, and equals its planned self.
  if (e.unit_record && *e.unit_record == UnitRecord{}) e.unit_record = std::nullopt;
  return Ok();
}

}  // namespace mesh::core::record_reading
