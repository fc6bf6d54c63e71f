#include "host/core/record.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "host/core/json_depth.h"

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

}  // namespace

std::string SerializeRecord(const Record& record) {
  json resources = json::object();
  for (const auto& [id, e] : record.resources) {
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
    resources[id] = std::move(entry);
  }
  json doc = {{"version", Record::kVersion},
              {"want_version", record.want_version},
              {"settled_declaration_digest", record.settled_declaration_digest},
              {"machine", record.machine},
              {"generation", record.generation},
              {"declaration_digest", record.declaration_digest},
              {"resources", std::move(resources)}};
  return doc.dump(1) + "\n";
}

Result<Record> ParseRecord(std::string_view text) {
  try {
    if (!JsonDepthWithin(text, 8)) return Fail("state: nested too deep");
    json doc = json::parse(text);
    if (!doc.is_object()) return Fail("state: not a JSON object");
    if (!doc.contains("version") || !doc["version"].is_number_unsigned() ||
        doc["version"].get<uint64_t>() != Record::kVersion) {
      return Fail("state: unknown version " + doc.value("version", json()).dump());
    }
    Record record;
    record.want_version =
        static_cast<int>(std::min<uint64_t>(Unsigned(doc, "want_version", 0, false), 1u << 20));
    record.settled_declaration_digest = doc.value("settled_declaration_digest", "");
    record.machine = doc.at("machine").get<std::string>();
    record.generation = Unsigned(doc, "generation", 0, true);
    record.declaration_digest = doc.at("declaration_digest").get<std::string>();
    for (const auto& [id, e] : doc.at("resources").items()) {
      RecordEntry entry;
      entry.kind = e.at("kind").get<std::string>();
      entry.digest = e.at("digest").get<std::string>();
      entry.applied_at = e.at("applied_at").get<std::string>();
      entry.unit = e.value("unit", "");
      entry.unit_file_fingerprint = e.value("unit_file", "");
      for (const json& w : e.at("written")) {
        WrittenPath path;
        path.path = w.at("path").get<std::string>();
        path.fingerprint = w.at("fingerprint").get<std::string>();
        path.content_digest = w.value("content_digest", "");
        path.file_count = Unsigned(w, "files", 0, false);
        path.preexisting = w.value("preexisting", false);
        entry.written.push_back(std::move(path));
      }
      record.resources.emplace(id, std::move(entry));
    }
    return record;
  } catch (const json::exception& e) {
    return Fail(std::string("state: ") + e.what());
  }
}

}  // namespace mesh::core
