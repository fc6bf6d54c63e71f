#include "host/core/intent.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <tuple>

#include "host/core/declaration.h"
#include "host/core/json_depth.h"
#include "host/core/printable.h"

namespace mesh::core {
namespace {

using json = nlohmann::json;
constexpr int kIntentVersion = 1;

std::optional<UnitAction> ParseAction(std::string_view verb) {
  for (UnitAction a : {UnitAction::kStart, UnitAction::kRestart, UnitAction::kReload}) {
    if (UnitActionVerb(a) == verb) return a;
  }
  return std::nullopt;
}

Result<Owed> ParseOwed(const std::string& id, const json& j) {
  std::string where = "intent: resource " + id + ", field ";
  if (!j.is_object()) return Fail("intent: resource " + id + ": must be an object");
  Owed owed;
  for (const auto& [key, value] : j.items()) {
    if (key == "action") {
      if (!value.is_string() || !(owed.action = ParseAction(value.get<std::string>()))) {
        return Fail(where + "action: must be start, restart or reload");
      }
    } else if (key == "daemon_reload") {
      if (!value.is_boolean()) return Fail(where + "daemon_reload: must be true or false");
      owed.daemon_reload = value.get<bool>();
    } else if (key == "reason") {
      const std::string* name = value.is_string() ? &value.get_ref<const std::string&>() : nullptr;
      // Empty where only a daemon-reload is owed.
      if (name != nullptr && !name->empty()) owed.reason = ParseRestartReason(*name);
      if (name == nullptr || (!name->empty() && !owed.reason.has_value())) {
        return Fail(where + "reason: must be declared, restart_on, reload_on or was_dead");
      }
    } else if (key == "why") {
      if (!value.is_string()) return Fail(where + key + ": must be a string");
      std::string text = value.get<std::string>();
      // As the host writes it (Printable): DEL and C1 controls included,
      // which a save would escape, so that what reads saves as it read.
      if (!IsOneLine(text)) return Fail(where + key + ": has a control character");
      owed.why = Printable(text);
    } else if (key == "since") {
      if (!value.is_number_unsigned()) return Fail(where + "since: must be a generation");
      owed.since = value.get<uint64_t>();
    }
  }
  if (!owed.action.has_value() && !owed.daemon_reload) {
    return Fail("intent: resource " + id + ": names no action and no daemon-reload");
  }
  return owed;
}

Result<LeftFailed> ParseLeftFailed(const std::string& id, const json& j) {
  if (!IsPrintable(id)) return Fail("intent: a failed resource's id has a control character");
  std::string what = "intent: failed resource " + id;
  std::string where = what + ", field ";
  if (!j.is_object()) return Fail(what + ": must be an object");
  LeftFailed f;
  for (const auto& [key, value] : j.items()) {
    if (key == "kind" || key == "detail") {
      if (!value.is_string()) return Fail(where + key + ": must be a string");
      const std::string& text = value.get_ref<const std::string&>();
      if (!IsOneLine(text)) return Fail(where + key + ": has a control character");
      (key == "kind" ? f.kind : f.detail) = Printable(text);
    } else if (key == "generation") {
      if (!value.is_number_unsigned()) return Fail(where + "generation: must be a generation");
      f.generation = value.get<uint64_t>();
    }
  }
  return f;
}

Status CheckDropInPath(std::string_view path) {
  auto [unit, name] = SplitDropIn(path);
  if (unit.empty()) return Fail("a drop-in is named UNIT.d/NAME");
  if (auto st = CheckUnitName(unit); !st) return st;
  return CheckDropInName(name);
}

}  // namespace

std::pair<std::string_view, std::string_view> SplitDropIn(std::string_view drop_in) {
  size_t slash = drop_in.find('/');
  if (slash == drop_in.npos || slash < 2 || drop_in.substr(slash - 2, 2) != ".d") return {};
  return {drop_in.substr(0, slash - 2), drop_in.substr(slash + 1)};
}

void Intent::LeaveFailed(const std::string& id, const std::string& kind, std::string_view detail,
                         uint64_t generation) {
  if (failed.size() >= kMaxLeftFailed) return;
  failed[id] = LeftFailed{kind, Printable(detail, kLeftFailedBytes), generation};
}

std::string_view UnitActionVerb(UnitAction action) {
  switch (action) {
    case UnitAction::kStart:
      return "start";
    case UnitAction::kRestart:
      return "restart";
    case UnitAction::kReload:
      return "reload";
  }
  return "?";
}

std::string SerializeIntent(const Intent& intent) {
  json owed = json::object();
  for (const auto& [id, o] : intent.owed) {
    json item = {{"daemon_reload", o.daemon_reload},
                 {"reason", o.reason ? RestartReasonName(*o.reason) : std::string_view()},
                 // Said of a declared path, which may hold a tab: escaped
                 // as every output escapes it, so that the reader, which
                 // refuses control characters, reads it back.
                 {"why", Printable(o.why)},
                 {"since", o.since}};
    if (o.action.has_value()) item["action"] = std::string(UnitActionVerb(*o.action));
    owed[id] = std::move(item);
  }
  json j = {{"version", kIntentVersion}, {"applying", intent.applying}, {"owed", std::move(owed)}};
  if (!intent.creating_unit_files.empty()) j["creating_unit_files"] = intent.creating_unit_files;
  if (!intent.creating_drop_ins.empty()) j["creating_drop_ins"] = intent.creating_drop_ins;
  if (!intent.creating_trees.empty()) j["creating_trees"] = intent.creating_trees;
  if (!intent.failed.empty()) {
    json failed = json::object();
    for (const auto& [id, f] : intent.failed) {
      failed[id] = {{"kind", f.kind}, {"detail", f.detail}, {"generation", f.generation}};
    }
    j["failed"] = std::move(failed);
  }
  std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (intent.creating.empty()) return text + "\n";
  // "creating" may name every path of a large first apply: written a path
  // at a time rather than as a tree of them, in its sorted place (keys are
  // sorted, and "applying" always comes first).
  size_t after_applying = text.find(',');
  std::string out = text.substr(0, after_applying);
  out += ",\"creating\":[";
  for (size_t k = 0; k < intent.creating.size(); ++k) {
    if (k > 0) out += ',';
    out += json(intent.creating[k]).dump(-1, ' ', false, json::error_handler_t::replace);
  }
  out += ']';
  out.append(text, after_applying);
  out += '\n';
  return out;
}

Result<Intent> ParseIntent(std::string_view text) {
  // Only this host writes it, but it is read before anything else is
  // trusted: its nesting is bounded like the declaration's.
  if (!JsonDepthWithin(text, 4)) return Fail("intent: nested too deeply");
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Fail("intent: not a JSON object");
  auto version = j.find("version");
  if (version == j.end() || !version->is_number_unsigned() ||
      version->get<uint64_t>() != kIntentVersion) {
    return Fail("intent: unknown version");
  }
  Intent intent;
  auto applying = j.find("applying");
  if (applying == j.end() || !applying->is_boolean()) {
    return Fail("intent: field applying: must be true or false");
  }
  intent.applying = applying->get<bool>();
  auto owed = j.find("owed");
  if (owed == j.end() || !owed->is_object()) return Fail("intent: field owed: must be an object");
  for (const auto& [id, item] : owed->items()) {
    auto parsed = ParseOwed(id, item);
    if (!parsed) return std::unexpected(parsed.error());
    intent.owed.emplace(id, std::move(*parsed));
  }
  if (auto failed = j.find("failed"); failed != j.end()) {
    if (!failed->is_object()) return Fail("intent: field failed: must be an object");
    for (const auto& [id, item] : failed->items()) {
      auto parsed = ParseLeftFailed(id, item);
      if (!parsed) return std::unexpected(parsed.error());
      intent.failed.emplace(id, std::move(*parsed));
    }
  }
  // The host removes what these name: each must be what a declaration
  // could have named (an absolute path in normal form, a unit name).
  for (auto [key, out, check] :
       {std::tuple{"creating", &intent.creating, &CheckPath},
        std::tuple{"creating_unit_files", &intent.creating_unit_files, &CheckUnitName},
        std::tuple{"creating_drop_ins", &intent.creating_drop_ins, &CheckDropInPath},
        std::tuple{"creating_trees", &intent.creating_trees, &CheckPath}}) {
    auto list = j.find(key);
    if (list == j.end()) continue;
    if (!list->is_array()) return Fail(std::string("intent: field ") + key + ": must be a list");
    for (const json& item : *list) {
      if (!item.is_string()) return Fail(std::string("intent: field ") + key + ": not a string");
      const std::string& text = item.get_ref<const std::string&>();
      if (auto st = check(text); !st) {
        return Fail(std::string("intent: field ") + key + ": " + st.error().message);
      }
      out->push_back(text);
    }
  }
  return intent;
}

}  // namespace mesh::core
