// Writing the record, one resource per line; reading it is record_read.cc.
#include "host/core/record.h"

#include <nlohmann/json.hpp>

namespace mesh::core {
namespace {

using json = nlohmann::json;

// Members are set one by one: nlohmann's initializer lists copy every value
// twice, and the record is written after every apply that changes anything.
json EntryJson(const RecordEntry& e) {
  json written(json::value_t::array);
  for (const WrittenPath& w : e.written) {
    json item(json::value_t::object);
    item["path"] = w.path;
    item["fingerprint"] = w.fingerprint;
    if (!w.content_digest.empty()) item["content_digest"] = w.content_digest;
    if (w.file_count != 0) item["files"] = w.file_count;
    if (w.preexisting) item["preexisting"] = true;
    written.push_back(std::move(item));
  }
  json entry(json::value_t::object);
  entry["kind"] = e.kind;
  entry["digest"] = e.digest;
  entry["written"] = std::move(written);
  entry["applied_at"] = e.applied_at;
  const UnitRecord& u = e.unit();
  if (!u.name.empty()) {
    entry["unit"] = u.name;
    if (!u.file_fingerprint.empty()) entry["unit_file"] = u.file_fingerprint;
    if (u.file_preexisting) entry["unit_file_preexisting"] = true;
  }
  if (e.position.has_value()) entry["position"] = *e.position;
  if (!u.state.empty()) entry["state"] = u.state;
  if (u.n_restarts.has_value()) entry["n_restarts"] = *u.n_restarts;
  if (u.finished) entry["finished"] = true;
  if (u.starting) entry["starting"] = true;
  if (u.run_began_us != 0) entry["run_began"] = u.run_began_us;
  if (u.reload_began_us != 0) entry["reload_began"] = u.reload_began_us;
  if (u.rollback) entry["rollback"] = true;
  if (u.enabled.has_value()) entry["enabled"] = *u.enabled;
  if (!u.drop_ins.empty()) {
    // "NAME=FINGERPRINT ...": names are of a plain alphabet (no "=" or
    // space), fingerprints are digits and colons.
    std::string text;
    for (const auto& [name, fp] : u.drop_ins) text += (text.empty() ? "" : " ") + name + "=" + fp;
    entry["drop_ins"] = text;
  }
  return entry;
}

}  // namespace

// JSON Lines: the file stays readable and greppable by id, each line is a
// document of its own (read one at a time, a large record is never held
// whole), and the head's count of entries makes a file cut short at a line
// boundary read as cut, not as a smaller record.
std::string SerializeRecordHead(const Record& header, size_t entries) {
  // Ordered: "version" first, for a reader that looks no further.
  nlohmann::ordered_json head(nlohmann::ordered_json::value_t::object);
  head["version"] = Record::kVersion;
  head["want_version"] = header.want_version;
  head["settled_declaration_digest"] = header.settled_declaration_digest;
  head["machine"] = header.machine;
  head["generation"] = header.generation;
  head["declaration_digest"] = header.declaration_digest;
  if (header.owners.has_value()) {
    auto& owners = head["owners"] = nlohmann::ordered_json::array();
    for (const auto& [names, ids] : *header.owners) {
      owners.push_back({names.first, names.second, ids.first, ids.second});
    }
  }
  head["entries"] = entries;
  std::string out = head.dump(-1, ' ', false, json::error_handler_t::replace);
  out += '\n';
  return out;
}

void AppendRecordEntry(std::string& out, const std::string& id, const RecordEntry& entry) {
  // The id first, where grep and a reader of the file look for it.
  out += "{\"id\":";
  out += json(id).dump(-1, ' ', false, json::error_handler_t::replace);
  out += ',';
  std::string fields = EntryJson(entry).dump(-1, ' ', false, json::error_handler_t::replace);
  out.append(fields, 1);  // less the opening brace: EntryJson always has fields
  out += '\n';
}

Status SerializeRecord(const Record& record, const std::function<Status(std::string_view)>& write,
                       size_t piece_bytes) {
  std::string piece;
  piece.reserve(std::min<size_t>(piece_bytes, 1 << 20) + 4096);
  piece += SerializeRecordHead(record, record.resources.size());
  for (const auto& [id, e] : record.resources) {
    AppendRecordEntry(piece, id, e);
    if (piece.size() >= piece_bytes) {
      if (auto st = write(piece); !st) return st;
      piece.clear();
    }
  }
  return piece.empty() ? Ok() : write(piece);
}

std::string SerializeRecord(const Record& record) {
  std::string out;
  (void)SerializeRecord(record, [&out](std::string_view piece) -> Status {
    out += piece;
    return Ok();
  });
  return out;
}

bool VisitRecord(const Record& record, RecordVisitor& visitor) {
  Record header;
  header.version = record.version;
  header.want_version = record.want_version;
  header.settled_declaration_digest = record.settled_declaration_digest;
  header.machine = record.machine;
  header.generation = record.generation;
  header.declaration_digest = record.declaration_digest;
  header.owners = record.owners;
  if (!visitor.Header(header)) return false;
  for (const auto& [id, entry] : record.resources) {
    if (!visitor.Entry(id, entry)) return false;
  }
  return true;
}

}  // namespace mesh::core
