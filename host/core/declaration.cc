#include "host/core/declaration.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "host/core/file_info.h"
#include "host/core/json_stream.h"
#include "host/core/parse_resource.h"
#include "host/core/printable.h"
#include "host/core/sha256.h"

namespace mesh::core {

using json = nlohmann::json;
using resource_parsing::ParseResource;
using resource_parsing::Where;

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
  for (Kind k : {Kind::kFile, Kind::kCredential, Kind::kArchive, Kind::kService, Kind::kDirectory,
                 Kind::kSymlink, Kind::kProcess}) {
    if (KindName(k) == name) return k;
  }
  return std::nullopt;
}

std::string_view UnitStateName(UnitState state) {
  switch (state) {
    case UnitState::kRunning:
      return "running";
    case UnitState::kStopped:
      return "stopped";
    case UnitState::kTriggered:
      return "triggered";
  }
  return "stopped";
}

std::optional<UnitState> ParseUnitState(std::string_view name) {
  if (name == "running") return UnitState::kRunning;
  if (name == "stopped") return UnitState::kStopped;
  if (name == "triggered") return UnitState::kTriggered;
  return std::nullopt;
}

const Resource* Declaration::Find(std::string_view id) const {
  auto it = index.find(id);
  return it == index.end() ? nullptr : &resources[it->second];
}

Status CheckId(std::string_view id) {
  if (id.empty()) return Fail("empty id");
  if (id.size() > kMaxIdBytes) {
    return Fail("id longer than " + std::to_string(kMaxIdBytes) + " characters");
  }
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

// A name the host gives its own temporaries: swept after an interrupted
// apply, so a declared one would be deleted and then reported as declared.
std::string TemporaryNamed(std::string_view name) {
  return "\"" + Printable(name, 256) + "\" is named as the host's temporary files are (." + "NAME" +
         std::string(kTemporaryMark) +
         "PID.N), which it deletes after an interrupted apply: choose another name";
}

Status CheckPath(std::string_view path) {
  if (path.empty() || path[0] != '/') {
    return Fail("\"" + Printable(path, 256) +
                "\" is not absolute: a path starts with \"/\" (such as \"/" + Printable(path, 256) +
                "\")");
  }
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
    if (comp.starts_with('.') && comp.find(kTemporaryMark) != std::string_view::npos) {
      return Fail(TemporaryNamed(comp));
    }
    start = end + 1;
  }
  return Ok();
}

Status CheckNotKernelMade(std::string_view path) {
  // What the kernel makes and systemd's sandbox hides: a file declared
  // there is not where anyone looks (devtmpfs is rebuilt at boot; the
  // shipped unit's PrivateDevices= gives the host a /dev of its own, its
  // ProtectKernelTunables= a read-only /proc/sys and /sys).
  static constexpr std::pair<std::string_view, std::string_view> kKernel[] = {
      {"dev", "devtmpfs, made by the kernel at boot"},
      {"proc", "procfs, the kernel's view of processes and tunables"},
      {"sys", "sysfs, the kernel's view of devices"}};
  std::string_view first = path.substr(1, path.find('/', 1) - 1);
  for (const auto& [top, what] : kKernel) {
    if (first == top) {
      return Fail("\"" + std::string(path) + "\" is under /" + std::string(top) + " (" +
                  std::string(what) + "): mesh-host declares no files there");
    }
  }
  return Ok();
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

Status CheckUnitName(std::string_view unit) {
  static constexpr std::string_view kSuffixes[] = {".service", ".socket", ".timer",
                                                   ".path",    ".target", ".mount"};
  std::string quoted = "\"" + Printable(unit, 256) + "\"";
  if (unit.size() > 255) return Fail(quoted + " is longer than 255 characters");
  size_t dot = unit.rfind('.');
  if (dot == std::string_view::npos || dot == 0) {
    return Fail(quoted + " has no unit type suffix: say which unit, such as \"" +
                Printable(unit, 256) +
                ".service\" (.service, .socket, .timer, .path, .target, .mount)");
  }
  std::string_view suffix = unit.substr(dot);
  if (std::find(std::begin(kSuffixes), std::end(kSuffixes), suffix) == std::end(kSuffixes)) {
    return Fail(
        quoted +
        " has no supported unit suffix (.service, .socket, .timer, .path, .target, .mount)");
  }
  std::string_view prefix = unit.substr(0, dot);
  if (unit.starts_with('.') && unit.find(kTemporaryMark) != std::string_view::npos) {
    return Fail(TemporaryNamed(unit));
  }
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
    return Fail("\"" + Printable(mode, 16) + "\" is not an octal mode such as \"0644\"");
  }
  uint32_t value = 0;
  for (char c : mode) {
    if (c < '0' || c > '7') {
      return Fail("\"" + Printable(mode, 16) + "\" is not an octal mode such as \"0644\"");
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

// The document's own fields (machine, generation, resources): every
// problem of them, each named, so that a refusal lists them beside the
// resources' (SPEC: every refusal found, up to 50).
void CheckTopLevel(json& doc, size_t members, Declaration& decl, Problems& problems) {
  if (!doc.is_object()) return problems.Add("declaration: must be a JSON object");
  for (const auto& [key, value] : doc.items()) {
    if (key != "machine" && key != "generation" && key != "resources") {
      problems.Add("declaration, field " + Printable(key, 64) + ": unknown field");
    }
  }
  if (!doc.contains("machine")) {
    problems.Add("declaration, field machine: missing");
  } else if (!doc["machine"].is_string() || doc["machine"].get<std::string>().empty()) {
    problems.Add("declaration, field machine: must be a non-empty string");
  } else if (doc["machine"].get_ref<const std::string&>().size() > kMaxMachineBytes) {
    // Bounded as a host name is: it heads the record's first line, which a
    // reader holds whole.
    problems.Add("declaration, field machine: longer than " + std::to_string(kMaxMachineBytes) +
                 " bytes (a host name has at most 253)");
  } else {
    decl.machine = doc["machine"];
  }
  if (!doc.contains("generation")) {
    problems.Add("declaration, field generation: missing");
  } else if (!doc["generation"].is_number_unsigned()) {
    problems.Add("declaration, field generation: must be a non-negative integer");
  } else {
    decl.generation = doc["generation"];
  }
  if (!doc.contains("resources")) {
    problems.Add("declaration, field resources: missing");
  } else if (!doc["resources"].is_array()) {
    problems.Add("declaration, field resources: must be a list");
  } else if (members > kMaxResources) {
    problems.Add("declaration, field resources: more than " + std::to_string(kMaxResources) +
                 " resources");
  }
}

Status ParseTopLevel(json& doc, size_t members, Declaration& decl) {
  Problems problems;
  CheckTopLevel(doc, members, decl, problems);
  if (!problems.empty()) return std::unexpected(problems.ToError());
  return Ok();
}

// restart_on and reload_on name other resources of the declaration (one
// refused whole is not also "unknown").
void CheckReferences(const Declaration& decl, const std::set<std::string>& refused,
                     Problems& problems) {
  for (size_t i = 0; i < decl.resources.size(); ++i) {
    const Resource& r = decl.resources[i];
    for (const auto* list : {&r.unit().restart_on, &r.unit().reload_on}) {
      std::string_view field = list == &r.unit().restart_on ? "restart_on" : "reload_on";
      for (const std::string& ref : *list) {
        if (ref == r.id) {
          problems.Add(Where(r.id, i, field) + "names the resource itself");
        } else if (!decl.index.contains(ref) && !refused.contains(ref)) {
          problems.Add(Where(r.id, i, field) + "names unknown resource \"" +
                       Printable(ref, kMaxIdBytes) + "\"");
        }
      }
    }
  }
}

// No path is two resources' (nor inside a bundle's tree), no unit two
// resources'. Every clash is a hash lookup (a path, or one of its ancestors
// among the trees), except a tree declared after paths inside it: sorted
// paths make that a neighbour lookup, kept only when there is a tree. O(n
// log n) at worst, since declarations of 100,000 files are expected.
void CheckClaims(const Declaration& decl, Problems& problems) {
  bool trees = std::any_of(decl.resources.begin(), decl.resources.end(),
                           [](const Resource& r) { return r.IsTree(); });
  std::unordered_map<std::string_view, std::string_view> paths;  // path -> id
  std::map<std::string_view, std::string_view> sorted_paths;     // the same, when there are trees
  std::unordered_map<std::string_view, std::string_view> tree_paths;
  std::unordered_map<std::string_view, std::string_view> units;
  paths.reserve(decl.resources.size());
  for (size_t i = 0; i < decl.resources.size(); ++i) {
    const Resource& r = decl.resources[i];
    if (r.HasFiles()) {
      // Claimed here at once (one hash of the path), and let go again if a
      // tree already holds it.
      auto [claim, fresh] = paths.try_emplace(r.path, r.id);
      std::string_view clash = fresh ? std::string_view() : claim->second;
      if (clash.empty() && r.IsTree()) {
        auto it = sorted_paths.lower_bound(r.path + "/");
        if (it != sorted_paths.end() && PathWithin(it->first, r.path)) clash = it->second;
      }
      if (clash.empty() && !tree_paths.empty()) {
        AnyAncestor(r.path, [&](std::string_view parent) {
          auto it = tree_paths.find(parent);
          if (it != tree_paths.end()) clash = it->second;
          return !clash.empty();
        });
      }
      if (!clash.empty()) {
        problems.Add(Where(r.id, i, "path") + "\"" + r.path + "\" is also claimed by resource " +
                     std::string(clash));
        if (fresh) paths.erase(claim);
      } else {
        if (trees) sorted_paths.emplace(r.path, r.id);
        if (r.IsTree()) tree_paths.emplace(r.path, r.id);
      }
    }
    if (r.HasUnit()) {
      auto [it, fresh] = units.emplace(r.unit().name, r.id);
      if (!fresh) {
        problems.Add(Where(r.id, i, "unit") + "\"" + r.unit().name +
                     "\" is also claimed by resource " + std::string(it->second));
      }
    }
  }
  // Only a directory holds other declared paths: under a file, a credential
  // or a symlink, one of the two could never be written (the one written
  // first is in the other's way at every apply).
  for (size_t i = 0; i < decl.resources.size(); ++i) {
    const Resource& r = decl.resources[i];
    if (!r.HasFiles()) continue;
    std::string_view holder;
    AnyAncestor(r.path, [&](std::string_view parent) {
      auto it = paths.find(parent);
      if (it == paths.end()) return false;
      auto above = decl.index.find(it->second);
      if (above == decl.index.end()) return false;
      const Resource& a = decl.resources[above->second];
      if (a.kind != Kind::kDirectory && !a.IsTree()) holder = it->second;
      return !holder.empty();
    });
    if (!holder.empty()) {
      problems.Add(Where(r.id, i, "path") + "\"" + r.path + "\" lies under the path of resource " +
                   std::string(holder) + ", which is not a directory");
    }
  }
}

// How to mend the syntax error the parser names, in an operator's words:
// the parser says what it found and what it expected there, which is where
// the fix starts but not how to make it. What it expected decides first (a
// ']' found where a '}' was expected is an object left open, not a value
// missing). Empty for what is not a syntax error.
std::string JsonFixHint(std::string_view message) {
  auto has = [message](std::string_view part) { return message.find(part) != message.npos; };
  if (!has("syntax error")) return "";
  // "... - unexpected FOUND; expected WANTED (in resources[N])"
  auto after = [message](std::string_view mark, std::string_view end) {
    size_t at = message.find(mark);
    if (at == message.npos) return std::string_view();
    std::string_view rest = message.substr(at + mark.size());
    return rest.substr(0, rest.find(end));
  };
  std::string_view found = after("- unexpected ", ";");
  std::string_view wanted = after("; expected ", " (in ");
  bool closer = found == "']'" || found == "'}'";
  if (has("unexpected end of input")) {
    return "the text ends too soon: a closing } or ] or a value is missing at its end";
  }
  if (has("missing closing quote")) return "a string is not closed: end it with \"";
  if (has("control character U+000A") || has("control character U+0009") ||
      has("control character U+000D")) {
    return "a string holds a line break or tab as it is: write it as \\n or \\t";
  }
  if (has("control character")) {
    return "a string holds a control character as it is: write it escaped, as \\u0001 for "
           "U+0001";
  }
  if (wanted == "end of input") {
    return "text follows the end of the declaration: a } or ] too many, or a second document";
  }
  if (wanted == "':'") return "a colon is missing between a key and its value";
  if ((wanted == "'}'" || wanted == "']'") && closer) {
    return "the brackets do not pair: a { or [ is closed by the other kind, or not at all";
  }
  if (wanted == "'}'" || wanted == "']'") return "a comma is missing before it";
  if (wanted == "string literal") {
    if (found == "'}'") return "a comma before a closing }: remove it";
    if (found == "']'") {
      return "the brackets do not pair: a { or [ is closed by the other kind, or not at all";
    }
    return "an object's key must be a string in double quotes";
  }
  if (closer) {
    return "a value is missing there: a comma before a closing ] or }, or nothing after a "
           "\":\"; remove the comma or add the value";
  }
  return "mend the JSON at that line and column (python3 -m json.tool FILE points at the "
         "same place)";
}

}  // namespace

Result<Declaration> ParseDeclaration(std::string_view text, const MoreChecks& more) {
  if (text.size() > kMaxDeclarationBytes) {
    return Fail("declaration: " + std::to_string(text.size()) + " bytes exceeds the limit of " +
                std::to_string(kMaxDeclarationBytes));
  }
  // Resources are checked as they stream by; their refusals are kept and
  // reported after the document's own fields, so the order of messages is
  // that of a whole parse (syntax, then the top level, then resources).
  // Every refusal is kept (up to kMaxProblems), not only the first: fixing
  // a declaration should not take one run per mistake.
  Declaration decl;
  Problems problems;
  std::set<std::string> refused_ids;  // resources refused whole: not "unknown" to others
  // The list starts (again): what an earlier "resources" held goes, as it
  // does from a whole parse, even when the last list is empty. Reserved
  // when the count is known: a list and a table grown by doubling move
  // every resource and hash every id again at each step. A resource takes
  // some 40 bytes of text at least, whatever the count claims.
  auto on_start = [&](std::optional<size_t> members) {
    decl.resources.clear();
    decl.index.clear();
    problems.Clear();
    refused_ids.clear();
    if (members.has_value()) {
      size_t n = std::min({*members, kMaxResources, text.size() / 40});
      decl.resources.reserve(n);
      decl.index.reserve(n);
    }
  };
  auto over = [&](size_t index) { return index >= kMaxResources; };
  auto on_other = [&](std::string&, size_t index, json&) {
    if (over(index)) return;
    problems.Add("resource #" + std::to_string(index) + ": must be an object");
  };
  auto on_resource = [&](size_t index, FlatObject& item) {
    if (over(index)) return;
    Resource& r = decl.resources.emplace_back();
    if (!ParseResource(item, index, r, problems)) {
      decl.resources.pop_back();
      if (const FlatObject::Field* id = item.Find("id"); id != nullptr && id->is_string) {
        refused_ids.insert(id->text);
      }
      return;
    }
    auto [it, fresh] = decl.index.emplace(r.id, decl.resources.size() - 1);
    if (!fresh) {
      problems.Add(Where(r.id, index, "id") + "duplicate id (also resource #" +
                   std::to_string(it->second) + "): ids are unique in a declaration, rename one");
      decl.resources.pop_back();
      return;
    }
  };
  auto streamed = ParseStreamed(text, "resources", /*want_array=*/true, on_other, on_resource,
                                {.max_depth = kMaxJsonDepth, .on_start = on_start});
  if (!streamed) {
    ErrorKind kind = streamed.error().kind;
    bool json_is_fine = kind == ErrorKind::kTooDeep || kind == ErrorKind::kDuplicateKey;
    if (json_is_fine) return Fail("declaration: " + streamed.error().message);
    std::string hint = JsonFixHint(streamed.error().message);
    return Fail("declaration: invalid JSON: " + streamed.error().message +
                (hint.empty() ? "" : ": " + hint));
  }
  Problems all;
  CheckTopLevel(streamed->document, streamed->members, decl, all);
  decl.digest = Sha256Hex(text);
  // Before the resources' own: another machine's declaration, or an older
  // generation, is named first, never among the unnamed past 50.
  if (more && all.empty()) more(decl, all);
  all.Append(problems);
  CheckReferences(decl, refused_ids, all);
  CheckClaims(decl, all);
  if (!all.empty()) return std::unexpected(all.ToError());
  // Grown by doubling while the count was unknown: up to half of it idle
  // capacity, held through the whole apply.
  decl.resources.shrink_to_fit();
  return decl;
}

Result<Declaration> ParseDeclarationInChunks(
    std::string_view text, size_t chunk, const std::function<bool(Declaration& chunk)>& on_chunk) {
  if (text.size() > kMaxDeclarationBytes || chunk == 0) return Fail("declaration: not chunked");
  Declaration batch;
  std::optional<Error> refused;
  bool started = false;
  bool stop = false;  // refused: the rest is not read
  auto refuse = [&](std::string why) {
    if (!refused.has_value()) refused = Error{std::move(why), ErrorKind::kOther, {}};
    stop = true;
  };
  auto hand_over = [&] {
    if (!refused.has_value() && !batch.resources.empty() && !on_chunk(batch)) refuse("stopped");
    batch.resources.clear();
    batch.index.clear();
  };
  // A repeated "resources" would take back what was handed over.
  auto on_start = [&](std::optional<size_t>) {
    if (started) refuse("declaration: \"resources\" given twice");
    started = true;
  };
  auto on_other = [&](std::string&, size_t, json&) { refuse("a resource is not an object"); };
  auto on_resource = [&](size_t index, FlatObject& item) {
    if (refused.has_value()) return;
    if (index >= kMaxResources) return refuse("too many resources");
    if (batch.resources.empty()) batch.resources.reserve(chunk);
    Resource& r = batch.resources.emplace_back();
    if (Problems problems; !ParseResource(item, index, r, problems)) {
      return refuse(problems.ToError().message);
    }
    if (!batch.index.emplace(r.id, batch.resources.size() - 1).second) {
      return refuse("duplicate id");
    }
    if (batch.resources.size() == chunk) hand_over();
  };
  auto streamed = ParseStreamed(text, "resources", /*want_array=*/true, on_other, on_resource,
                                {.max_depth = kMaxJsonDepth,
                                 .engine = JsonEngine::kReference,
                                 .on_start = on_start,
                                 .stop = &stop});
  if (refused.has_value()) return std::unexpected(*refused);
  if (!streamed) return std::unexpected(streamed.error());
  hand_over();
  if (refused.has_value()) return std::unexpected(*refused);
  Declaration header;
  if (auto st = ParseTopLevel(streamed->document, streamed->members, header); !st) {
    return std::unexpected(st.error());
  }
  header.digest = Sha256Hex(text);
  return header;
}

}  // namespace mesh::core
