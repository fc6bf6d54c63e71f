#include "host/core/declaration.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <vector>

#include "host/core/json_depth.h"
#include "host/core/json_stream.h"
#include "host/core/printable.h"
#include "host/core/sha256.h"

namespace mesh::core {
namespace {

using json = nlohmann::json;

struct KindSpec {
  Kind kind;
  std::string_view name;
  std::set<std::string_view> fields;
  std::set<std::string_view> required;
};

const std::vector<KindSpec>& Kinds() {
  static const auto* specs = new std::vector<KindSpec>{
      {Kind::kFile,
       "file",
       {"id", "kind", "path", "content", "content_base64", "mode", "owner", "group"},
       {"path"}},
      {Kind::kCredential,
       "credential",
       {"id", "kind", "path", "content", "content_base64", "mode", "owner", "group"},
       {"path"}},
      {Kind::kArchive,
       "archive",
       {"id", "kind", "path", "source", "sha256"},
       {"path", "source", "sha256"}},
      {Kind::kService,
       "service",
       {"id", "kind", "unit", "state", "unit_text", "restart_on", "reload_on", "enabled",
        "drop_ins"},
       {"unit", "state"}},
      {Kind::kDirectory, "directory", {"id", "kind", "path", "mode", "owner", "group"}, {"path"}},
      {Kind::kSymlink, "symlink", {"id", "kind", "path", "target"}, {"path", "target"}},
      {Kind::kProcess,
       "process",
       {"id", "kind", "path", "source", "sha256", "unit", "unit_text", "restart_on", "enabled",
        "drop_ins"},
       {"path", "source", "sha256", "unit", "unit_text"}},
  };
  return *specs;
}

// Every refusal reads "resource ID, field F: what is wrong".
std::string Where(const std::string& id, size_t index, std::string_view field) {
  std::string who = id.empty() ? "resource #" + std::to_string(index) : "resource " + id;
  if (field.empty()) return who + ": ";
  return who + ", field " + std::string(field) + ": ";
}

Result<std::string> GetString(const json& obj, std::string_view field, const std::string& where) {
  const json& v = obj.at(std::string(field));
  if (!v.is_string()) return Fail(where + "must be a string");
  return v.get<std::string>();
}

Result<std::vector<std::string>> GetIdList(const json& obj, std::string_view field,
                                           const std::string& where) {
  const json& v = obj.at(std::string(field));
  if (!v.is_array()) return Fail(where + "must be a list of resource ids");
  std::vector<std::string> out;
  for (const json& item : v) {
    if (!item.is_string()) return Fail(where + "must list resource ids as strings");
    out.push_back(item.get<std::string>());
  }
  return out;
}

bool IsHexDigest(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// A drop-in's name is a file name systemd reads from UNIT.d/: it must end
// in ".conf", and it is kept to a plain alphabet (no "/", no "..", nothing
// a shell or a log would misread).
Status CheckDropInName(std::string_view name) {
  if (name.size() > 255 || !name.ends_with(".conf") || name.size() == 5 || name.front() == '.') {
    return Fail(
        "a drop-in name ends in \".conf\", does not start with \".\", and has at most "
        "255 characters");
  }
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-' || c == '@';
    if (!ok) return Fail("a drop-in name has only letters, digits and \"._-@\"");
  }
  if (name.find("..") != std::string_view::npos) return Fail("a drop-in name has no \"..\"");
  return Ok();
}

Result<std::map<std::string, std::string>> ParseDropIns(const json& v, const std::string& where) {
  if (!v.is_object()) return Fail(where + "must map drop-in file names to their text");
  if (v.size() > kMaxDropIns) {
    return Fail(where + "more than " + std::to_string(kMaxDropIns) + " drop-ins");
  }
  std::map<std::string, std::string> out;
  for (const auto& [name, text] : v.items()) {
    if (auto st = CheckDropInName(name); !st) {
      return Fail(where + "\"" + Printable(name, 80) + "\": " + st.error().message);
    }
    if (!text.is_string()) return Fail(where + name + ": must be the drop-in's text");
    const std::string& t = text.get_ref<const std::string&>();
    if (t.size() > kMaxContentBytes) return Fail(where + name + ": exceeds the content limit");
    if (t.find('\0') != std::string::npos) return Fail(where + name + ": contains a NUL byte");
    out.emplace(name, t);
  }
  return out;
}

Result<Resource> ParseResource(const json& obj, size_t index) {
  if (!obj.is_object()) {
    return Fail("resource #" + std::to_string(index) + ": must be an object");
  }
  Resource r;
  std::string id;
  if (obj.contains("id") && obj.at("id").is_string()) id = obj.at("id");
  if (!obj.contains("id")) return Fail(Where(id, index, "id") + "missing");
  if (!obj.at("id").is_string()) return Fail(Where(id, index, "id") + "must be a string");
  if (auto st = CheckId(id); !st) return Fail(Where(id, index, "id") + st.error().message);
  r.id = id;

  if (!obj.contains("kind")) return Fail(Where(id, index, "kind") + "missing");
  if (!obj.at("kind").is_string()) return Fail(Where(id, index, "kind") + "must be a string");
  std::string kind = obj.at("kind");
  const KindSpec* spec = nullptr;
  for (const KindSpec& k : Kinds()) {
    if (k.name == kind) spec = &k;
  }
  if (spec == nullptr) {
    return Fail(Where(id, index, "kind") + "unknown kind \"" + kind +
                "\" (expected file, credential, directory, symlink, archive, service or process)");
  }
  r.kind = spec->kind;

  for (const auto& [key, value] : obj.items()) {
    if (!spec->fields.contains(key)) {
      return Fail(Where(id, index, key) + "unknown field for kind " + kind);
    }
  }
  for (std::string_view req : spec->required) {
    if (!obj.contains(std::string(req))) return Fail(Where(id, index, req) + "missing");
  }

  if (r.HasFiles()) {
    auto path = GetString(obj, "path", Where(id, index, "path"));
    if (!path) return std::unexpected(path.error());
    if (auto st = CheckPath(*path); !st) {
      return Fail(Where(id, index, "path") + st.error().message);
    }
    r.path = *path;
  }

  if (r.kind == Kind::kFile || r.kind == Kind::kCredential) {
    bool plain = obj.contains("content");
    bool b64 = obj.contains("content_base64");
    if (plain == b64) {
      return Fail(Where(id, index, "content") +
                  "exactly one of content and content_base64 is required");
    }
    std::string field = plain ? "content" : "content_base64";
    auto text = GetString(obj, field, Where(id, index, field));
    if (!text) return std::unexpected(text.error());
    if (plain) {
      r.content = std::move(*text);
    } else {
      auto decoded = DecodeBase64(*text);
      if (!decoded) return Fail(Where(id, index, field) + decoded.error().message);
      r.content = std::move(*decoded);
    }
    if (r.content.size() > kMaxContentBytes) {
      return Fail(Where(id, index, field) + "content of " + std::to_string(r.content.size()) +
                  " bytes exceeds the limit of " + std::to_string(kMaxContentBytes));
    }
  }

  if (r.IsFile() || r.kind == Kind::kDirectory) {
    r.mode = r.kind == Kind::kCredential ? 0400 : r.kind == Kind::kDirectory ? 0755 : 0644;
    if (obj.contains("mode")) {
      auto mode = GetString(obj, "mode", Where(id, index, "mode"));
      if (!mode) return std::unexpected(mode.error());
      auto parsed = ParseMode(*mode);
      if (!parsed) return Fail(Where(id, index, "mode") + parsed.error().message);
      r.mode = *parsed;
    }
    for (std::string_view f : {"owner", "group"}) {
      if (!obj.contains(std::string(f))) continue;
      auto name = GetString(obj, f, Where(id, index, f));
      if (!name) return std::unexpected(name.error());
      bool ok = !name->empty() && name->size() <= 32 &&
                std::all_of(name->begin(), name->end(), [](char c) {
                  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                         (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
                });
      if (!ok) return Fail(Where(id, index, f) + "\"" + *name + "\" is not a user or group name");
      (f == "owner" ? r.owner : r.group) = *name;
    }
  }

  if (r.kind == Kind::kSymlink) {
    auto target = GetString(obj, "target", Where(id, index, "target"));
    if (!target) return std::unexpected(target.error());
    if (target->empty() || target->size() > kMaxPathBytes ||
        target->find('\0') != std::string::npos) {
      return Fail(Where(id, index, "target") + "must be a path of 1 to " +
                  std::to_string(kMaxPathBytes) + " bytes without NUL");
    }
    r.target = *target;
  }

  if (r.IsTree()) {
    auto source = GetString(obj, "source", Where(id, index, "source"));
    if (!source) return std::unexpected(source.error());
    if (source->empty() || source->find('/') != std::string::npos || *source == "." ||
        *source == ".." || source->find('\0') != std::string::npos) {
      return Fail(Where(id, index, "source") + "\"" + *source +
                  "\" must be a plain file name under --artifacts");
    }
    r.source = *source;
    auto sha = GetString(obj, "sha256", Where(id, index, "sha256"));
    if (!sha) return std::unexpected(sha.error());
    std::string lower = *sha;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    if (!IsHexDigest(lower)) {
      return Fail(Where(id, index, "sha256") + "must be 64 hex digits");
    }
    r.sha256 = lower;
  }

  if (r.HasUnit()) {
    auto unit = GetString(obj, "unit", Where(id, index, "unit"));
    if (!unit) return std::unexpected(unit.error());
    if (auto st = CheckUnitName(*unit); !st) {
      return Fail(Where(id, index, "unit") + st.error().message);
    }
    if (r.kind == Kind::kProcess && !unit->ends_with(".service")) {
      return Fail(Where(id, index, "unit") + "a process runs as a .service unit");
    }
    r.unit = *unit;
    if (obj.contains("state")) {
      auto state = GetString(obj, "state", Where(id, index, "state"));
      if (!state) return std::unexpected(state.error());
      auto parsed = ParseUnitState(*state);
      if (!parsed) {
        return Fail(Where(id, index, "state") + "\"" + *state + "\" is not running or stopped");
      }
      r.state = *parsed;
    }
    if (obj.contains("unit_text")) {
      auto text = GetString(obj, "unit_text", Where(id, index, "unit_text"));
      if (!text) return std::unexpected(text.error());
      if (text->size() > kMaxContentBytes) {
        return Fail(Where(id, index, "unit_text") + "exceeds the content limit");
      }
      if (text->find('\0') != std::string::npos) {
        return Fail(Where(id, index, "unit_text") + "contains a NUL byte");
      }
      r.unit_text = *text;
    }
    if (obj.contains("drop_ins")) {
      auto drop_ins = ParseDropIns(obj.at("drop_ins"), Where(id, index, "drop_ins"));
      if (!drop_ins) return std::unexpected(drop_ins.error());
      r.drop_ins = std::move(*drop_ins);
    }
    if (obj.contains("enabled")) {
      if (!obj.at("enabled").is_boolean()) {
        return Fail(Where(id, index, "enabled") + "must be true or false");
      }
      r.enabled = obj.at("enabled").get<bool>();
    }
    for (std::string_view f : {"restart_on", "reload_on"}) {
      if (!obj.contains(std::string(f))) continue;
      auto list = GetIdList(obj, f, Where(id, index, f));
      if (!list) return std::unexpected(list.error());
      (f == "restart_on" ? r.restart_on : r.reload_on) = std::move(*list);
    }
    // What systemd cannot do, refused here rather than failed at every
    // apply: only services reload (a reload of a socket, timer, path or
    // target is "not applicable"), and a socket is not restarted while its
    // service runs ("Socket service ... already active, refusing"): the
    // service it activates is what restarts on a change.
    if (!r.reload_on.empty() && !r.unit.ends_with(".service")) {
      return Fail(Where(id, index, "reload_on") + r.unit +
                  " cannot be reloaded: systemd reloads services only (use restart_on)");
    }
    if (!r.restart_on.empty() && r.unit.ends_with(".socket")) {
      return Fail(Where(id, index, "restart_on") + "systemd refuses to restart " + r.unit +
                  " while the service it activates runs: declare restart_on on that service");
    }
  }
  return r;
}

}  // namespace

std::string_view KindName(Kind kind) {
  switch (kind) {
    case Kind::kFile:
      return "file";
    case Kind::kCredential:
      return "credential";
    case Kind::kArchive:
      return "archive";
    case Kind::kService:
      return "service";
    case Kind::kProcess:
      return "process";
    case Kind::kDirectory:
      return "directory";
    case Kind::kSymlink:
      return "symlink";
  }
  return "unknown";
}

std::optional<Kind> ParseKind(std::string_view name) {
  for (const KindSpec& k : Kinds()) {
    if (k.name == name) return k.kind;
  }
  return std::nullopt;
}

std::string_view UnitStateName(UnitState state) {
  return state == UnitState::kRunning ? "running" : "stopped";
}

std::optional<UnitState> ParseUnitState(std::string_view name) {
  if (name == "running") return UnitState::kRunning;
  if (name == "stopped") return UnitState::kStopped;
  return std::nullopt;
}

const Resource* Declaration::Find(std::string_view id) const {
  auto it = index.find(id);
  return it == index.end() ? nullptr : &resources[it->second];
}

Status CheckId(std::string_view id) {
  if (id.empty()) return Fail("empty id");
  if (id.size() > 128) return Fail("id longer than 128 characters");
  auto lower_digit = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!lower_digit(id[0])) {
    return Fail("\"" + std::string(id) + "\" does not match [a-z0-9][a-z0-9._-]*");
  }
  for (char c : id) {
    if (!lower_digit(c) && c != '.' && c != '_' && c != '-') {
      return Fail("\"" + std::string(id) + "\" does not match [a-z0-9][a-z0-9._-]*");
    }
  }
  return Ok();
}

Status CheckPath(std::string_view path) {
  if (path.empty() || path[0] != '/') return Fail("\"" + std::string(path) + "\" is not absolute");
  if (path.size() > kMaxPathBytes) return Fail("path longer than 4096 bytes");
  if (path == "/") return Fail("\"/\" cannot be a resource's path");
  if (path.find('\0') != std::string_view::npos) return Fail("path contains a NUL byte");
  size_t start = 1;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view comp = path.substr(start, end - start);
    if (comp == "..") return Fail("\"" + std::string(path) + "\" contains ..");
    if (comp == "." || comp.empty()) {
      return Fail("\"" + std::string(path) + "\" is not in normal form (empty or . component)");
    }
    if (comp.size() > 255) return Fail("a component of the path is longer than 255 bytes");
    start = end + 1;
  }
  return Ok();
}

Status CheckUnitName(std::string_view unit) {
  static constexpr std::string_view kSuffixes[] = {".service", ".socket", ".timer",
                                                   ".path",    ".target", ".mount"};
  std::string quoted = "\"" + std::string(unit) + "\"";
  if (unit.size() > 255) return Fail(quoted + " is longer than 255 characters");
  size_t dot = unit.rfind('.');
  if (dot == std::string_view::npos || dot == 0) {
    return Fail(quoted + " has no unit type suffix: say which unit, such as \"" +
                std::string(unit) +
                ".service\" (.service, .socket, .timer, .path, .target, .mount)");
  }
  std::string_view suffix = unit.substr(dot);
  if (std::find(std::begin(kSuffixes), std::end(kSuffixes), suffix) == std::end(kSuffixes)) {
    return Fail(
        quoted +
        " has no supported unit suffix (.service, .socket, .timer, .path, .target, .mount)");
  }
  std::string_view prefix = unit.substr(0, dot);
  size_t at = prefix.find('@');
  if (at != std::string_view::npos &&
      (at == 0 || at + 1 == prefix.size() || prefix.find('@', at + 1) != std::string_view::npos)) {
    return Fail(quoted + " is a template without an instance");
  }
  for (char c : prefix) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == ':' || c == '_' || c == '.' || c == '-' || c == '\\' || c == '@';
    if (!ok) return Fail(quoted + " contains a character systemd does not allow in unit names");
  }
  return Ok();
}

Result<uint32_t> ParseMode(std::string_view mode) {
  if (mode.size() < 3 || mode.size() > 4) {
    return Fail("\"" + std::string(mode) + "\" is not an octal mode such as \"0644\"");
  }
  uint32_t value = 0;
  for (char c : mode) {
    if (c < '0' || c > '7') {
      return Fail("\"" + std::string(mode) + "\" is not an octal mode such as \"0644\"");
    }
    value = value * 8 + static_cast<uint32_t>(c - '0');
  }
  return value;
}

std::string FormatMode(uint32_t mode) {
  char buf[8];
  snprintf(buf, sizeof buf, "%04o", mode & 07777);
  return buf;
}

bool PathWithin(std::string_view inner, std::string_view outer) {
  if (!inner.starts_with(outer)) return false;
  return inner.size() == outer.size() || inner[outer.size()] == '/';
}

namespace {

// The refusals of one declaration, at most kMaxProblems of them named.
class Problems {
 public:
  static constexpr size_t kMaxProblems = 50;

  void Add(std::string message) {
    if (named_.size() < kMaxProblems) named_.push_back(std::move(message));
    ++total_;
  }
  void Clear() {
    named_.clear();
    total_ = 0;
  }
  bool empty() const { return total_ == 0; }
  // One refusal: its message, as it always read. Several: a count and
  // all of them on one line, and each in `details` for sinks with lines.
  Error ToError() const {
    if (total_ == 1) return Error{named_[0], ErrorKind::kOther, {}};
    Error e;
    e.message = std::to_string(total_) + " problems: ";
    e.details = named_;
    if (total_ > named_.size()) {
      e.details.push_back("... and " + std::to_string(total_ - named_.size()) + " more");
    }
    for (size_t k = 0; k < e.details.size(); ++k) e.message += (k ? "; " : "") + e.details[k];
    return e;
  }

 private:
  std::vector<std::string> named_;
  size_t total_ = 0;
};

}  // namespace

Result<Declaration> ParseDeclaration(std::string_view text) {
  if (text.size() > kMaxDeclarationBytes) {
    return Fail("declaration: " + std::to_string(text.size()) + " bytes exceeds the limit of " +
                std::to_string(kMaxDeclarationBytes));
  }
  if (!JsonDepthWithin(text, kMaxJsonDepth)) {
    return Fail("declaration: nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  }
  // Resources are checked as they stream by; their refusals are kept and
  // reported after the document's own fields, so the order of messages is
  // that of a whole parse (syntax, then the top level, then resources).
  // Every refusal is kept (up to kMaxProblems), not only the first: fixing
  // a declaration should not take one run per mistake.
  Declaration decl;
  Problems problems;
  std::set<std::string> refused_ids;  // resources refused whole: not "unknown" to others
  auto on_resource = [&](std::string&, size_t index, json& item) {
    if (index == 0) {
      decl.resources.clear();
      decl.index.clear();
      problems.Clear();
      refused_ids.clear();
    }
    if (index >= kMaxResources) return;
    auto r = ParseResource(item, index);
    if (!r) {
      problems.Add(r.error().message);
      if (item.is_object() && item.contains("id") && item["id"].is_string()) {
        refused_ids.insert(item["id"].get<std::string>());
      }
      return;
    }
    auto [it, fresh] = decl.index.emplace(r->id, decl.resources.size());
    if (!fresh) {
      problems.Add(Where(r->id, index, "id") + "duplicate id (also resource #" +
                   std::to_string(it->second) + ")");
      return;
    }
    decl.resources.push_back(std::move(*r));
  };
  auto streamed = ParseStreamed(text, "resources", /*want_array=*/true, on_resource);
  if (!streamed) return Fail("declaration: invalid JSON: " + streamed.error().message);
  json& doc = streamed->document;
  if (!doc.is_object()) return Fail("declaration: must be a JSON object");
  for (const auto& [key, value] : doc.items()) {
    if (key != "machine" && key != "generation" && key != "resources") {
      return Fail("declaration, field " + key + ": unknown field");
    }
  }
  if (!doc.contains("machine")) return Fail("declaration, field machine: missing");
  if (!doc["machine"].is_string() || doc["machine"].get<std::string>().empty()) {
    return Fail("declaration, field machine: must be a non-empty string");
  }
  decl.machine = doc["machine"];
  if (!doc.contains("generation")) return Fail("declaration, field generation: missing");
  if (!doc["generation"].is_number_unsigned()) {
    return Fail("declaration, field generation: must be a non-negative integer");
  }
  decl.generation = doc["generation"];
  if (!doc.contains("resources")) return Fail("declaration, field resources: missing");
  if (!doc["resources"].is_array()) return Fail("declaration, field resources: must be a list");
  if (streamed->members > kMaxResources) {
    return Fail("declaration, field resources: more than " + std::to_string(kMaxResources) +
                " resources");
  }

  // Cross-resource rules.
  // Views into decl.resources, which no longer grows.
  std::map<std::string_view, std::string_view> paths;  // path -> id
  std::map<std::string_view, std::string_view> tree_paths;
  std::map<std::string_view, std::string_view> units;
  for (size_t i = 0; i < decl.resources.size(); ++i) {
    const Resource& r = decl.resources[i];
    for (const auto* list : {&r.restart_on, &r.reload_on}) {
      std::string_view field = list == &r.restart_on ? "restart_on" : "reload_on";
      for (const std::string& ref : *list) {
        if (ref == r.id) {
          problems.Add(Where(r.id, i, field) + "names the resource itself");
        } else if (!decl.index.contains(ref) && !refused_ids.contains(ref)) {
          problems.Add(Where(r.id, i, field) + "names unknown resource \"" + ref + "\"");
        }
      }
    }
    if (r.HasFiles()) {
      // Sorted paths make every clash a neighbour lookup: O(n log n), since
      // declarations of 100,000 files are expected.
      std::string_view clash;
      if (auto it = paths.find(r.path); it != paths.end()) clash = it->second;
      if (clash.empty() && r.IsTree()) {
        auto it = paths.lower_bound(r.path + "/");
        if (it != paths.end() && PathWithin(it->first, r.path)) clash = it->second;
      }
      if (clash.empty()) {
        AnyAncestor(r.path, [&](std::string_view parent) {
          auto it = tree_paths.find(parent);
          if (it != tree_paths.end()) clash = it->second;
          return !clash.empty();
        });
      }
      if (!clash.empty()) {
        problems.Add(Where(r.id, i, "path") + "\"" + r.path + "\" is also claimed by resource " +
                     std::string(clash));
      } else {
        paths.emplace(r.path, r.id);
        if (r.IsTree()) tree_paths.emplace(r.path, r.id);
      }
    }
    if (r.HasUnit()) {
      auto [it, fresh] = units.emplace(r.unit, r.id);
      if (!fresh) {
        problems.Add(Where(r.id, i, "unit") + "\"" + r.unit + "\" is also claimed by resource " +
                     std::string(it->second));
      }
    }
  }
  if (!problems.empty()) return std::unexpected(problems.ToError());
  decl.digest = Sha256Hex(text);
  return decl;
}

}  // namespace mesh::core
