// state.json (JSON Lines, host/core/record.h) as one JSON value for tests
// to look into: the head's fields, and "resources" mapping each id to its
// entry, as a record of version 1 held them. And back: a record of version
// 1's text, as an older host wrote it.
#pragma once

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace mesh::testing {

inline nlohmann::json RecordJson(const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  std::getline(lines, line);
  nlohmann::json record = nlohmann::json::parse(line);
  record["resources"] = nlohmann::json::object();
  while (std::getline(lines, line)) {
    nlohmann::json entry = nlohmann::json::parse(line);
    std::string id = entry.at("id");
    entry.erase("id");
    record["resources"][id] = std::move(entry);
  }
  return record;
}

// `record` as RecordJson makes it, written as version 1 (one document,
// indented by `indent`; -1: on one line).
inline std::string Version1Text(nlohmann::json record, int indent = -1) {
  record["version"] = 1;
  record.erase("entries");
  return record.dump(indent);
}

}  // namespace mesh::testing
