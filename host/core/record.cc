#include "host/core/record.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

#include "host/core/json_depth.h"
#include "host/core/json_stream.h"

namespace mesh::core {
namespace {

using json = nlohmann::json;

// Numbers are checked for kind before conversion: nlohmann converts a
// double like 1e10 to int by a cast, which is undefined behaviour (found by
// the record fuzzer).
uint64_t Unsigned(const json& obj, const char* key, uint64_t fallback, bool required) {
  if (!obj.contains(key)) {
    if (required)
      throw json::out_of_range::create(403, std::string("key '") + key + "' not found", &obj);
    return fallback;
  }
  const json& v = obj.at(key);
  if (!v.is_number_unsigned()) {
    throw json::type_error::create(302, std::string(key) + " must be a non-negative integer", &v);
  }
  return v.get<uint64_t>();
}

json EntryJson(const RecordEntry& e) {
  json written = json::array();
  for (const WrittenPath& w : e.written) {
    json item = {{"path", w.path}, {"fingerprint", w.fingerprint}};
    if (!w.content_digest.empty()) item["content_digest"] = w.content_digest;
    if (w.file_count != 0) item["files"] = w.file_count;
    if (w.preexisting) item["preexisting"] = true;
    written.push_back(std::move(item));
  }
  json entry = {{"kind", e.kind},
                {"digest", e.digest},
                {"written", std::move(written)},
                {"applied_at", e.applied_at}};
  if (!e.unit.empty()) {
    entry["unit"] = e.unit;
    if (!e.unit_file_fingerprint.empty()) entry["unit_file"] = e.unit_file_fingerprint;
  }
  if (e.position.has_value()) entry["position"] = *e.position;
  if (!e.state.empty()) entry["state"] = e.state;
  return entry;
}

RecordEntry EntryFromJson(const json& e) {
  RecordEntry entry;
  entry.kind = e.at("kind").get<std::string>();
  entry.digest = e.at("digest").get<std::string>();
  entry.applied_at = e.at("applied_at").get<std::string>();
  entry.unit = e.value("unit", "");
  entry.unit_file_fingerprint = e.value("unit_file", "");
  if (e.contains("position")) entry.position = Unsigned(e, "position", 0, true);
  entry.state = e.value("state", "");
  for (const json& w : e.at("written")) {
    WrittenPath path;
    path.path = w.at("path").get<std::string>();
    path.fingerprint = w.at("fingerprint").get<std::string>();
    path.content_digest = w.value("content_digest", "");
    path.file_count = Unsigned(w, "files", 0, false);
    path.preexisting = w.value("preexisting", false);
    entry.written.push_back(std::move(path));
  }
  return entry;
}

}  // namespace

// One resource per line: the file stays readable and greppable by id, and
// is a third smaller than an indented dump, which a fresh `mesh-host apply`
// must read and parse before it can know that nothing changed.
std::string SerializeRecord(const Record& record) {
  json head = {{"version", Record::kVersion},
               {"want_version", record.want_version},
               {"settled_declaration_digest", record.settled_declaration_digest},
               {"machine", record.machine},
               {"generation", record.generation},
               {"declaration_digest", record.declaration_digest}};
  std::string out = head.dump();
  out.pop_back();  // the closing brace: "resources" comes last
  out += ",\"resources\":{";
  const char* sep = "\n";
  for (const auto& [id, e] : record.resources) {
    out += sep;
    out += json(id).dump();
    out += ':';
    out += EntryJson(e).dump();
    sep = ",\n";
  }
  out += "\n}}\n";
  return out;
}

Result<Record> ParseRecord(std::string_view text) {
  if (!JsonDepthWithin(text, 8)) return Fail("state: nested too deep");
  // Entries are converted as they stream by (one entry's tree in memory at
  // a time); a bad one is reported after the version check, as before.
  Record record;
  std::optional<std::string> entry_error;
  auto on_entry = [&](std::string& id, size_t position, json& e) {
    if (position == 0) {
      record.resources.clear();
      entry_error.reset();
    }
    if (entry_error) return;
    try {
      record.resources.insert_or_assign(record.resources.end(), std::move(id), EntryFromJson(e));
    } catch (const json::exception& ex) {
      entry_error = std::string("state: ") + ex.what();
    }
  };
  auto streamed = ParseStreamed(text, "resources", /*want_array=*/false, on_entry);
  if (!streamed) return Fail("state: " + streamed.error().message);
  try {
    json& doc = streamed->document;
    if (!doc.is_object()) return Fail("state: not a JSON object");
    if (!doc.contains("version") || !doc["version"].is_number_unsigned() ||
        doc["version"].get<uint64_t>() != Record::kVersion) {
      return Fail("state: unknown version " + doc.value("version", json()).dump());
    }
    record.want_version =
        static_cast<int>(std::min<uint64_t>(Unsigned(doc, "want_version", 0, false), 1u << 20));
    record.settled_declaration_digest = doc.value("settled_declaration_digest", "");
    record.machine = doc.at("machine").get<std::string>();
    record.generation = Unsigned(doc, "generation", 0, true);
    record.declaration_digest = doc.at("declaration_digest").get<std::string>();
    if (!doc.at("resources").is_object()) {
      return Fail("state: resources must be an object");
    }
    if (entry_error) return Fail(*entry_error);
    return record;
  } catch (const json::exception& e) {
    return Fail(std::string("state: ") + e.what());
  }
}

}  // namespace mesh::core
