#include "host/core/last_good.h"

#include <nlohmann/json.hpp>

#include "host/core/printable.h"
#include "host/core/sha256.h"

namespace mesh::core {
namespace {

using json = nlohmann::json;

// A kept resource in the declaration's own words, so that reading it back
// is the declaration parser's job (every field checked as a push is).
json ResourceJson(const Resource& r) {
  json o = {{"id", r.id}, {"kind", std::string(KindName(r.kind))}};
  if (r.kind != Kind::kService) o["path"] = r.path;
  if (r.IsFile()) {
    o["content_base64"] = EncodeBase64(r.content);
    o["mode"] = FormatMode(r.mode);
    o["owner"] = r.owner;
    o["group"] = r.group;
  }
  if (r.IsTree()) {
    o["source"] = r.source;
    o["sha256"] = r.sha256;
  }
  if (r.kind == Kind::kDirectory) {
    o["mode"] = FormatMode(r.mode);
    o["owner"] = r.owner;
    o["group"] = r.group;
  }
  if (r.kind == Kind::kSymlink) o["target"] = r.target;
  if (r.HasUnit()) {
    o["unit"] = r.unit().name;
    if (r.kind == Kind::kService) o["state"] = "running";
    if (r.unit().text.has_value()) o["unit_text"] = *r.unit().text;
    if (!r.unit().drop_ins.empty()) o["drop_ins"] = r.unit().drop_ins;
  }
  return o;
}

Status Bad(std::string_view unit, std::string_view field, std::string_view why) {
  return Fail("last-good.json, unit " + Printable(unit, 128) +
              (field.empty() ? "" : ", field " + std::string(field)) + ": " + std::string(why));
}

Result<std::map<std::string, std::string>> Wants(const json& v, std::string_view unit,
                                                 std::string_view field) {
  if (!v.is_object()) return std::unexpected(Bad(unit, field, "must be an object").error());
  std::map<std::string, std::string> out;
  for (const auto& [id, want] : v.items()) {
    if (!CheckId(id) || !want.is_string() || !IsPrintable(want.get<std::string>()) ||
        want.get<std::string>().empty()) {
      return std::unexpected(Bad(unit, field, "must map resource ids to digests").error());
    }
    out[id] = want.get<std::string>();
  }
  return out;
}

Result<std::string> Words(const json& o, const char* key, std::string_view unit) {
  if (!o.contains(key) || !o[key].is_string() || !IsOneLine(o[key].get<std::string>())) {
    return std::unexpected(Bad(unit, key, "must be printable text").error());
  }
  return Printable(o[key].get<std::string>());
}

Result<uint64_t> Generation(const json& o, std::string_view unit) {
  if (!o.contains("generation") || !o["generation"].is_number_unsigned()) {
    return std::unexpected(Bad(unit, "generation", "must be a whole number").error());
  }
  return o["generation"].get<uint64_t>();
}

Result<Hold> ParseHold(const json& o, std::string_view unit) {
  if (!o.is_object()) return std::unexpected(Bad(unit, "hold", "must be an object").error());
  Hold h;
  auto gen = Generation(o, unit);
  if (!gen) return std::unexpected(gen.error());
  h.generation = *gen;
  for (auto [key, out] : {std::pair{"since", &h.since}, std::pair{"refused", &h.refused}}) {
    auto w = Words(o, key, unit);
    if (!w) return std::unexpected(w.error());
    *out = std::move(*w);
  }
  if (!o.contains("wants")) return std::unexpected(Bad(unit, "hold.wants", "missing").error());
  auto wants = Wants(o["wants"], unit, "hold.wants");
  if (!wants) return std::unexpected(wants.error());
  h.wants = std::move(*wants);
  if (o.contains("rollback_failed")) {
    if (!o["rollback_failed"].is_boolean()) {
      return std::unexpected(Bad(unit, "hold.rollback_failed", "must be true or false").error());
    }
    h.rollback_failed = o["rollback_failed"].get<bool>();
  }
  return h;
}

Result<KeptUnit> ParseUnit(const json& o, std::string_view unit) {
  if (!o.is_object()) return std::unexpected(Bad(unit, "", "must be an object").error());
  KeptUnit k;
  auto gen = Generation(o, unit);
  if (!gen) return std::unexpected(gen.error());
  k.generation = *gen;
  auto at = Words(o, "confirmed_at", unit);
  if (!at) return std::unexpected(at.error());
  k.confirmed_at = std::move(*at);
  if (!o.contains("declaration") || !o["declaration"].is_object()) {
    return std::unexpected(Bad(unit, "declaration", "must be an object").error());
  }
  auto decl = ParseDeclaration(o["declaration"].dump());
  if (!decl) return std::unexpected(Bad(unit, "declaration", decl.error().message).error());
  for (Resource& r : decl->resources) k.resources.emplace(r.id, std::move(r));
  if (!o.contains("wants")) return std::unexpected(Bad(unit, "wants", "missing").error());
  auto wants = Wants(o["wants"], unit, "wants");
  if (!wants) return std::unexpected(wants.error());
  k.wants = std::move(*wants);
  if (k.wants.size() != k.resources.size() || !k.resources.contains(std::string(unit))) {
    return std::unexpected(
        Bad(unit, "wants", "must name each kept resource, the unit's own among them").error());
  }
  for (const auto& [id, want] : k.wants) {
    if (!k.resources.contains(id)) {
      return std::unexpected(Bad(unit, "wants", "names " + id + ", which is not kept").error());
    }
  }
  if (o.contains("hold")) {
    auto hold = ParseHold(o["hold"], unit);
    if (!hold) return std::unexpected(hold.error());
    k.hold = std::move(*hold);
  }
  return k;
}

}  // namespace

Resource KeptCopy(const Resource& r) {
  Resource k;
  k.id = r.id;
  k.kind = r.kind;
  k.path = r.path;
  k.content = r.content;
  k.mode = r.mode;
  k.owner = r.owner;
  k.group = r.group;
  k.target = r.target;
  k.source = r.source;
  k.sha256 = r.sha256;
  if (r.HasUnit()) {
    UnitSpec& u = k.mutable_unit();
    u.name = r.unit().name;
    u.text = r.unit().text;
    u.drop_ins = r.unit().drop_ins;
  }
  return k;
}

bool Substitute(Resource& declared, const Resource& kept) {
  if (declared.kind != kept.kind) return false;
  declared.content = kept.content;
  declared.mode = kept.mode;
  declared.owner = kept.owner;
  declared.group = kept.group;
  declared.target = kept.target;
  declared.source = kept.source;
  declared.sha256 = kept.sha256;
  if (declared.HasUnit()) {
    declared.mutable_unit().text = kept.unit().text;
    declared.mutable_unit().drop_ins = kept.unit().drop_ins;
  }
  return true;
}

namespace {

// A unit's kept resources, as the declaration its reading parses.
json KeptDeclaration(const KeptUnit& k, std::string_view machine) {
  json resources = json::array();
  for (const auto& [rid, r] : k.resources) resources.push_back(ResourceJson(r));
  return {{"machine", machine.empty() ? std::string("kept") : std::string(machine)},
          {"generation", k.generation},
          {"resources", std::move(resources)}};
}

Result<size_t> DeclarationBytes(std::string_view id, const json& declaration) {
  size_t bytes = 0;
  try {
    bytes = declaration.dump().size();
  } catch (const json::exception&) {
    return Fail("last-good.json: a kept text is not valid UTF-8");
  }
  if (bytes > kMaxDeclarationBytes) {
    return Fail("the last good of " + std::string(id) + " is " + std::to_string(bytes) +
                " bytes, over the " + std::to_string(kMaxDeclarationBytes) +
                " a declaration may be (its resources, base64)");
  }
  return bytes;
}

}  // namespace

Result<size_t> KeptUnitBytes(std::string_view id, const KeptUnit& k, std::string_view machine) {
  return DeclarationBytes(id, KeptDeclaration(k, machine));
}

Result<std::string> SerializeLastGood(const LastGood& last_good, std::string_view machine) {
  json units = json::object();
  for (const auto& [id, k] : last_good.units) {
    json u = {{"generation", k.generation},
              {"confirmed_at", k.confirmed_at},
              {"wants", k.wants},
              {"declaration", KeptDeclaration(k, machine)}};
    // Read back one unit at a time by the declaration's parser, which
    // refuses a text over its bound: kept larger, the file would stop
    // every apply after this one.
    if (auto fits = DeclarationBytes(id, u["declaration"]); !fits) {
      return std::unexpected(fits.error());
    }
    if (k.hold.has_value()) {
      u["hold"] = {{"generation", k.hold->generation},
                   {"since", k.hold->since},
                   {"refused", k.hold->refused},
                   {"wants", k.hold->wants},
                   {"rollback_failed", k.hold->rollback_failed}};
    }
    units[id] = std::move(u);
  }
  json doc = {{"version", LastGood::kVersion}, {"units", std::move(units)}};
  try {
    return doc.dump() + "\n";
  } catch (const json::exception&) {
    return Fail("last-good.json: a kept text is not valid UTF-8");
  }
}

Result<LastGood> ParseLastGood(std::string_view text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return Fail("last-good.json: not a JSON object");
  if (!doc.contains("version") || doc["version"] != LastGood::kVersion) {
    return Fail("last-good.json, field version: this host reads version " +
                std::to_string(LastGood::kVersion));
  }
  if (!doc.contains("units") || !doc["units"].is_object()) {
    return Fail("last-good.json, field units: must be an object");
  }
  LastGood out;
  for (const auto& [id, u] : doc["units"].items()) {
    if (!CheckId(id))
      return Fail("last-good.json, field units: \"" + Printable(id, 128) +
                  "\" is not a resource id");
    auto k = ParseUnit(u, id);
    if (!k) return std::unexpected(k.error());
    out.units.emplace(id, std::move(*k));
  }
  return out;
}

}  // namespace mesh::core
