#include "host/core/parse_resource.h"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "host/core/did_you_mean.h"
#include "host/core/printable.h"
#include "host/core/sha256.h"

namespace mesh::core::resource_parsing {

using json = nlohmann::json;

// Every refusal reads "resource ID, field F: what is wrong".
std::string Where(const std::string& id, size_t index, std::string_view field) {
  // An id refused for its length is cut short: a refusal is one line, and
  // its reason comes last.
  std::string who = id.empty()                 ? "resource #" + std::to_string(index)
                    : id.size() <= kMaxIdBytes ? "resource " + id
                                               : "resource " + id.substr(0, kMaxIdBytes) + "...";
  if (field.empty()) return who + ": ";
  // A field's name may be the declaration's own (an unknown one): bounded,
  // as every key a refusal names.
  return who + ", field " + Printable(field, 64) + ": ";
}

namespace {

// A kind's field names, in sorted order (the order refusals name them in).
// A dozen names at most: a scan that compares lengths first beats a tree
// walk of string compares, for every field of every resource.
class FieldNames {
 public:
  FieldNames(std::initializer_list<std::string_view> names) : names_(names) {
    std::sort(names_.begin(), names_.end());
  }
  bool contains(std::string_view name) const {
    return std::find(names_.begin(), names_.end(), name) != names_.end();
  }
  auto begin() const { return names_.begin(); }
  auto end() const { return names_.end(); }

 private:
  std::vector<std::string_view> names_;
};

struct KindSpec {
  Kind kind;
  std::string_view name;
  FieldNames fields;
  FieldNames required;
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
        "drop_ins", "on_failure"},
       {"unit", "state"}},
      {Kind::kDirectory, "directory", {"id", "kind", "path", "mode", "owner", "group"}, {"path"}},
      {Kind::kSymlink, "symlink", {"id", "kind", "path", "target"}, {"path", "target"}},
      {Kind::kProcess,
       "process",
       {"id", "kind", "path", "source", "sha256", "unit", "unit_text", "restart_on", "enabled",
        "drop_ins", "on_failure"},
       {"path", "source", "sha256", "unit", "unit_text"}},
  };
  return *specs;
}

Result<std::vector<std::string>> GetIdList(const json& v, const std::string& where) {
  if (!v.is_array()) return Fail(where + "must be a list of resource ids");
  std::vector<std::string> out;
  out.reserve(v.size());
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

// One resource's fields, read with refusals that name the resource and
// the field ("resource ID, field F: what is wrong"). The refusal's text is
// built only when there is one: a declaration of 100,000 files reads half a
// million fields that are right.
class Fields {
 public:
  // `fields`: the kind's, when the resource holds others too (refused as
  // unknown, and never read as if they were the kind's); null otherwise.
  Fields(FlatObject& obj, const std::string& id, size_t index, const FieldNames* fields)
      : obj_(obj), id_(id), index_(index), fields_(fields) {}

  bool Has(std::string_view f) const {
    return obj_.Find(f) != nullptr && (fields_ == nullptr || fields_->contains(f));
  }
  // A field that is not a string (a list, a map, a flag), as its tree; a
  // string given there comes back as an empty string, which every caller
  // refuses by its type.
  const json& At(std::string_view f) const {
    static const json kAString(json::value_t::string);
    const FlatObject::Field& v = Get(f);
    return v.is_string ? kAString : v.value;
  }
  std::string Where(std::string_view f) const { return resource_parsing::Where(id_, index_, f); }
  std::unexpected<Error> Refuse(std::string_view f, const std::string& why) const {
    return Fail(Where(f) + why);
  }
  Result<std::string> String(std::string_view f) const {
    const FlatObject::Field& v = Get(f);
    if (!v.is_string) return Refuse(f, "must be a string");
    return v.text;
  }
  // String(f), moved out of the object: for a field read only once.
  Result<std::string> Take(std::string_view f) const {
    FlatObject::Field& v = Get(f);
    if (!v.is_string) return Refuse(f, "must be a string");
    return std::move(v.text);
  }
  Result<std::vector<std::string>> IdList(std::string_view f) const {
    return GetIdList(At(f), Where(f));
  }

 private:
  // Only for a field the kind requires (present, or the resource was
  // refused) or one Has() found.
  FlatObject::Field& Get(std::string_view f) const { return *obj_.Find(f); }

  FlatObject& obj_;
  const std::string& id_;
  size_t index_;
  const FieldNames* fields_;
};

// The field groups of the kinds, each read by one parser. A kind is the
// list of its groups (KindParsers), read in this order.
Status ParsePath(const Fields& in, Resource& r) {
  auto path = in.Take("path");
  if (!path) return std::unexpected(path.error());
  if (auto st = CheckPath(*path); !st) return in.Refuse("path", st.error().message);
  if (auto st = CheckNotKernelMade(*path); !st) return in.Refuse("path", st.error().message);
  r.path = std::move(*path);
  return Ok();
}

Status ParseContent(const Fields& in, Resource& r) {
  bool plain = in.Has("content");
  if (plain == in.Has("content_base64")) {
    return in.Refuse("content", "exactly one of content and content_base64 is required");
  }
  std::string_view field = plain ? "content" : "content_base64";
  auto text = in.Take(field);
  if (!text) return std::unexpected(text.error());
  if (plain) {
    r.content = std::move(*text);
  } else {
    auto decoded = DecodeBase64(*text);
    if (!decoded) return in.Refuse(field, decoded.error().message);
    r.content = std::move(*decoded);
  }
  if (r.content.size() > kMaxContentBytes) {
    return in.Refuse(field, "content of " + std::to_string(r.content.size()) +
                                " bytes exceeds the limit of " + std::to_string(kMaxContentBytes));
  }
  return Ok();
}

bool IsUserName(std::string_view name) {
  return !name.empty() && name.size() <= 32 && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
  });
}

// mode, owner, group: of files, credentials and directories.
Status ParseModeField(const Fields& in, Resource& r) {
  r.mode = r.kind == Kind::kCredential ? 0400 : r.kind == Kind::kDirectory ? 0755 : 0644;
  if (!in.Has("mode")) return Ok();
  // 644 as a number (JSON has no octal): said how to write it.
  if (const json& v = in.At("mode"); v.is_number_unsigned() && v.get<uint64_t>() <= 7777) {
    std::string digits = std::to_string(v.get<uint64_t>());
    return in.Refuse("mode", "must be a string of octal digits: write it as \"" +
                                 std::string(4 - std::min<size_t>(digits.size(), 4), '0') + digits +
                                 "\"");
  }
  auto mode = in.String("mode");
  if (!mode) return std::unexpected(mode.error());
  auto parsed = ParseMode(*mode);
  if (!parsed) return in.Refuse("mode", parsed.error().message);
  r.mode = *parsed;
  return Ok();
}

Status ParseUserName(const Fields& in, std::string_view f, std::string& to) {
  if (!in.Has(f)) return Ok();
  auto name = in.String(f);
  if (!name) return std::unexpected(name.error());
  if (!IsUserName(*name))
    return in.Refuse(f, "\"" + Printable(*name, 64) + "\" is not a user or group name");
  to = *name;
  return Ok();
}

Status ParseOwner(const Fields& in, Resource& r) { return ParseUserName(in, "owner", r.owner); }
Status ParseGroup(const Fields& in, Resource& r) { return ParseUserName(in, "group", r.group); }

Status ParseTarget(const Fields& in, Resource& r) {
  auto target = in.String("target");
  if (!target) return std::unexpected(target.error());
  // A symlink holds at most PATH_MAX - 1 bytes: symlinkat refuses more.
  constexpr size_t kMaxTargetBytes = kMaxPathBytes - 1;
  if (target->empty() || target->size() > kMaxTargetBytes ||
      target->find('\0') != std::string::npos) {
    return in.Refuse("target", "must be a path of 1 to " + std::to_string(kMaxTargetBytes) +
                                   " bytes without NUL");
  }
  r.target = *target;
  return Ok();
}

// source and sha256: a bundle under --artifacts.
Status ParseSource(const Fields& in, Resource& r) {
  auto source = in.String("source");
  if (!source) return std::unexpected(source.error());
  if (source->empty() || source->find('/') != std::string::npos || *source == "." ||
      *source == ".." || source->find('\0') != std::string::npos) {
    return in.Refuse("source", "\"" + Printable(*source, 128) +
                                   "\" must be a plain file name under --artifacts");
  }
  if (source->size() > 255) return in.Refuse("source", "a file name longer than 255 bytes");
  r.source = *source;
  return Ok();
}

Status ParseSha256(const Fields& in, Resource& r) {
  auto sha = in.String("sha256");
  if (!sha) return std::unexpected(sha.error());
  std::string lower = *sha;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (!IsHexDigest(lower)) return in.Refuse("sha256", "must be 64 hex digits");
  r.sha256 = lower;
  return Ok();
}

Status ParseUnitText(const Fields& in, Resource& r) {
  if (!in.Has("unit_text")) return Ok();
  auto text = in.String("unit_text");
  if (!text) return std::unexpected(text.error());
  if (text->size() > kMaxContentBytes) return in.Refuse("unit_text", "exceeds the content limit");
  if (text->find('\0') != std::string::npos) return in.Refuse("unit_text", "contains a NUL byte");
  r.mutable_unit().text = *text;
  return Ok();
}

// What systemd cannot do, refused here rather than failed at every apply:
// only services reload (a reload of a socket, timer, path or target is "not
// applicable"), and a socket is not restarted while its service runs
// ("Socket service ... already active, refusing"): the service it activates
// is what restarts on a change.
Status CheckWhatSystemdDoes(const Fields& in, const Resource& r) {
  if (!r.unit().reload_on.empty() && !r.unit().name.ends_with(".service")) {
    return in.Refuse("reload_on", r.unit().name +
                                      " cannot be reloaded: systemd reloads services only (use "
                                      "restart_on)");
  }
  if (!r.unit().restart_on.empty() && r.unit().name.ends_with(".socket")) {
    return in.Refuse("restart_on", "systemd refuses to restart " + r.unit().name +
                                       " while the service it activates runs: declare "
                                       "restart_on on that service");
  }
  return Ok();
}

// "fail" (the default: the resource fails, the unit is left as it is) or
// "rollback" (docs/declaration.md, "Back to the last good"). A rollback
// needs a unit the host keeps running: a stopped or triggered one is never
// restarted by the host, so nothing would ever confirm it good.
Status ParseOnFailure(const Fields& in, Resource& r) {
  if (!in.Has("on_failure")) return Ok();
  auto value = in.String("on_failure");
  if (!value) return std::unexpected(value.error());
  if (*value != "fail" && *value != "rollback") {
    return in.Refuse("on_failure", "\"" + Printable(*value, 64) + "\" is not fail or rollback");
  }
  if (*value == "rollback" && r.unit().state != UnitState::kRunning) {
    return in.Refuse("on_failure",
                     "rollback needs state running: the host never restarts a unit declared " +
                         std::string(UnitStateName(r.unit().state)) +
                         ", so no generation is ever confirmed good");
  }
  r.mutable_unit().rollback = *value == "rollback";
  return Ok();
}

Status ParseUnitName(const Fields& in, Resource& r) {
  auto unit = in.String("unit");
  if (!unit) return std::unexpected(unit.error());
  if (auto st = CheckUnitName(*unit); !st) return in.Refuse("unit", st.error().message);
  if (r.kind == Kind::kProcess && !unit->ends_with(".service")) {
    return in.Refuse("unit", "a process runs as a .service unit");
  }
  r.mutable_unit().name = *unit;
  return Ok();
}

// After ParseUnitName: "triggered" is judged by the unit's type only when
// the unit was read.
Status ParseStateField(const Fields& in, Resource& r) {
  if (!in.Has("state")) return Ok();
  auto state = in.String("state");
  if (!state) return std::unexpected(state.error());
  auto parsed = ParseUnitState(*state);
  if (!parsed) {
    return in.Refuse("state",
                     "\"" + Printable(*state, 64) + "\" is not running, stopped or triggered");
  }
  const std::string& unit = r.unit().name;
  if (*parsed == UnitState::kTriggered &&
      (r.kind != Kind::kService || (!unit.empty() && !unit.ends_with(".service")))) {
    return in.Refuse("state",
                     "\"triggered\" is for the .service a timer, socket or path unit starts; "
                     "declare that unit itself running");
  }
  r.mutable_unit().state = *parsed;
  return Ok();
}

Status ParseUnitDropIns(const Fields& in, Resource& r) {
  if (!in.Has("drop_ins")) return Ok();
  auto drop_ins = ParseDropIns(in.At("drop_ins"), in.Where("drop_ins"));
  if (!drop_ins) return std::unexpected(drop_ins.error());
  r.mutable_unit().drop_ins = std::move(*drop_ins);
  return Ok();
}

Status ParseEnabled(const Fields& in, Resource& r) {
  if (!in.Has("enabled")) return Ok();
  const json& enabled = in.At("enabled");
  if (!enabled.is_boolean()) return in.Refuse("enabled", "must be true or false");
  r.mutable_unit().enabled = enabled.get<bool>();
  return Ok();
}

Status ParseIds(const Fields& in, std::string_view f, std::vector<std::string>& to) {
  if (!in.Has(f)) return Ok();
  auto list = in.IdList(f);
  if (!list) return std::unexpected(list.error());
  to = std::move(*list);
  return Ok();
}

Status ParseRestartOn(const Fields& in, Resource& r) {
  return ParseIds(in, "restart_on", r.mutable_unit().restart_on);
}
Status ParseReloadOn(const Fields& in, Resource& r) {
  return ParseIds(in, "reload_on", r.mutable_unit().reload_on);
}

using FieldParser = Status (*)(const Fields&, Resource&);

// Each group reads its own fields, so that a resource's refusal names every
// field wrong, not only the first. A group that reads several fields at
// once judges them together (content against content_base64).
const std::vector<FieldParser>& KindParsers(Kind kind) {
  // A process has no state (it runs) nor reload_on: Fields::Has() does not
  // find them there.
  static const std::vector<FieldParser> kUnit = {ParseUnitName,    ParseStateField, ParseUnitText,
                                                 ParseUnitDropIns, ParseEnabled,    ParseOnFailure,
                                                 ParseRestartOn,   ParseReloadOn};
  static const auto* parsers = new std::map<Kind, std::vector<FieldParser>>{
      {Kind::kFile, {ParsePath, ParseContent, ParseModeField, ParseOwner, ParseGroup}},
      {Kind::kCredential, {ParsePath, ParseContent, ParseModeField, ParseOwner, ParseGroup}},
      {Kind::kDirectory, {ParsePath, ParseModeField, ParseOwner, ParseGroup}},
      {Kind::kSymlink, {ParsePath, ParseTarget}},
      {Kind::kArchive, {ParsePath, ParseSource, ParseSha256}},
      {Kind::kService, kUnit},
      {Kind::kProcess,
       [] {
         std::vector<FieldParser> p = {ParsePath, ParseSource, ParseSha256};
         p.insert(p.end(), kUnit.begin(), kUnit.end());
         return p;
       }()},
  };
  return parsers->at(kind);
}

// id and kind: without them nothing else is read (an id that is there but
// refused is enough). Then every field the
// kind does not have (in sorted order, whatever order they came in: the
// message does not depend on the writer's order) and every one it needs.
// Returns the kind, when its own fields can be read (null: they cannot),
// and sets `unknown_fields` when the resource holds others.
const KindSpec* ParseIdAndKind(const FlatObject& obj, size_t index, Resource& r, Problems& refusals,
                               bool& unknown_fields) {
  auto refuse = [&](std::string why) -> const KindSpec* {
    refusals.Add(std::move(why));
    return nullptr;
  };
  const FlatObject::Field* id_at = obj.Find("id");
  if (id_at == nullptr && obj.overflowed()) {
    return refuse(Where("", index, "") + "more than " + std::to_string(FlatObject::kMaxFields) +
                  " fields");
  }
  if (id_at == nullptr) return refuse(Where("", index, "id") + "missing");
  if (!id_at->is_string) return refuse(Where("", index, "id") + "must be a string");
  // An id refused: the rest is read all the same, named by the resource's
  // place, so that one round of fixes mends every field.
  if (auto st = CheckId(id_at->text); !st) {
    refuse(Where(id_at->text, index, "id") + st.error().message);
  } else {
    r.id = id_at->text;
  }
  const std::string& id = r.id;
  if (obj.overflowed()) {
    return refuse(Where(id, index, "") + "more than " + std::to_string(FlatObject::kMaxFields) +
                  " fields");
  }
  const FlatObject::Field* kind_at = obj.Find("kind");
  if (kind_at == nullptr) return refuse(Where(id, index, "kind") + "missing");
  if (!kind_at->is_string) return refuse(Where(id, index, "kind") + "must be a string");
  const std::string& kind = kind_at->text;
  auto spec = std::find_if(Kinds().begin(), Kinds().end(),
                           [&](const KindSpec& k) { return k.name == kind; });
  if (spec == Kinds().end()) {
    std::vector<std::string_view> kinds;
    for (const KindSpec& k : Kinds()) kinds.push_back(k.name);
    return refuse(Where(id, index, "kind") + "unknown kind \"" + Printable(kind, 64) +
                  "\" (expected file, credential, directory, symlink, archive, service or " +
                  "process)" + DidYouMean(kind, kinds));
  }
  r.kind = spec->kind;
  std::vector<std::string_view> unknown;
  for (const FlatObject::Field& f : obj.fields()) {
    if (!spec->fields.contains(f.key)) unknown.push_back(f.key);
  }
  unknown_fields = !unknown.empty();
  if (!unknown.empty()) {
    std::sort(unknown.begin(), unknown.end());
    std::vector<std::string_view> known(spec->fields.begin(), spec->fields.end());
    for (std::string_view f : unknown) {
      refuse(Where(id, index, f) + "unknown field for kind " + kind + DidYouMean(f, known));
    }
  }
  const KindSpec* readable = &*spec;
  for (std::string_view req : spec->required) {
    if (obj.Find(req) == nullptr) readable = refuse(Where(id, index, req) + "missing");
  }
  return readable;
}

}  // namespace

bool ParseResource(FlatObject& obj, size_t index, Resource& r, Problems& refusals) {
  size_t before = refusals.total();
  bool unknown_fields = false;
  if (const KindSpec* spec = ParseIdAndKind(obj, index, r, refusals, unknown_fields)) {
    Fields in(obj, r.id, index, unknown_fields ? &spec->fields : nullptr);
    for (FieldParser parse : KindParsers(r.kind)) refusals.Add(parse(in, r));
    // Judged across fields: only of fields each read right.
    bool unit = r.kind == Kind::kService || r.kind == Kind::kProcess;
    if (unit && refusals.total() == before) refusals.Add(CheckWhatSystemdDoes(in, r));
  }
  return refusals.total() == before;
}

}  // namespace mesh::core::resource_parsing
