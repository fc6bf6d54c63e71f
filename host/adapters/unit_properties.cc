#include "host/adapters/unit_properties.h"

#include <algorithm>
#include <cstring>

namespace mesh::adapters {
namespace {

using core::UnitStatus;

void SetTimeoutStop(const PropertyValue& v, UnitStatus& s, PropertyContext&) {
  // UINT64_MAX is "infinity"; past a day it is as good as one: zero,
  // unknown to the host.
  constexpr uint64_t kDayUsec = 86400ull * 1000 * 1000;
  if (v.number <= kDayUsec) s.timeout_stop = std::chrono::microseconds(v.number);
  s.timeout_stop_unbounded = v.number > kDayUsec;
}

void SetStateChange(const PropertyValue& v, UnitStatus& s, PropertyContext& c) {
  auto since = std::chrono::microseconds(v.number);
  if (v.number > 0 && c.monotonic_now > since) s.in_state_for = c.monotonic_now - since;
}

void SetInvocationId(const PropertyValue& v, UnitStatus& s, PropertyContext&) {
  static constexpr char kHex[] = "0123456789abcdef";
  s.invocation_id.clear();
  for (uint8_t b : v.bytes) {
    s.invocation_id += kHex[b >> 4];
    s.invocation_id += kHex[b & 0xf];
  }
}

void SetConditions(const PropertyValue& v, UnitStatus&, PropertyContext& c) {
  for (const ConditionChecked& k : v.conditions) {
    // A trigger condition (|) fails the unit only when all of them fail:
    // the first failed one is named either way.
    if (k.state < 0 && c.first_failed.empty()) {
      c.first_failed = k.type + "=" + (k.trigger ? "|" : "") + (k.negate ? "!" : "") + k.parameter;
    }
  }
}

// The rows, by name. A text property is one line: the field it fills.
#define MESH_TEXT_ROW(name, field)                                                        \
  {                                                                                       \
    name, Wire::kString,                                                                  \
        [](const PropertyValue& v, UnitStatus& s, PropertyContext&) { s.field = v.text; } \
  }
constexpr PropertyRow kRows[] = {
    MESH_TEXT_ROW("ActiveState", active_state),
    {"ConditionResult", Wire::kBool,
     [](const PropertyValue& v, UnitStatus&, PropertyContext& c) {
       c.conditions_held = v.number != 0;
     }},
    {"Conditions", Wire::kConditions, SetConditions},
    {"DropInPaths", Wire::kStrings,
     [](const PropertyValue& v, UnitStatus& s, PropertyContext&) { s.drop_in_paths = v.strings; }},
    {"ExecMainStatus", Wire::kInt32,
     [](const PropertyValue& v, UnitStatus& s, PropertyContext&) {
       s.exec_main_status = static_cast<int32_t>(static_cast<uint32_t>(v.number));
     }},
    {"ExecReload", Wire::kCommands,
     [](const PropertyValue& v, UnitStatus& s, PropertyContext&) {
       s.reloaded_realtime = std::chrono::microseconds(v.number);
       s.exec_reload = static_cast<uint32_t>(v.command_paths.size());
     }},
    {"ExecStart", Wire::kCommands,
     [](const PropertyValue& v, UnitStatus& s, PropertyContext&) {
       if (!v.command_paths.empty()) s.exec_start = v.command_paths.front();
     }},
    {"ExecStop", Wire::kCommands,
     [](const PropertyValue& v, UnitStatus& s, PropertyContext&) {
       s.exec_stop = static_cast<uint32_t>(v.command_paths.size());
     }},
    {"ExecStopPost", Wire::kCommands,
     [](const PropertyValue& v, UnitStatus& s, PropertyContext&) {
       s.exec_stop_post = static_cast<uint32_t>(v.command_paths.size());
     }},
    MESH_TEXT_ROW("FragmentPath", fragment_path),
    MESH_TEXT_ROW("Id", id),
    {"InactiveExitTimestamp", Wire::kUint64,
     [](const PropertyValue& v, UnitStatus& s, PropertyContext&) {
       s.started_realtime = std::chrono::microseconds(v.number);
     }},
    {"InvocationID", Wire::kBytes, SetInvocationId},
    {"Job", Wire::kJob,
     [](const PropertyValue& v, UnitStatus& s, PropertyContext&) { s.job_queued = v.number != 0; }},
    MESH_TEXT_ROW("KillMode", kill_mode),
    MESH_TEXT_ROW("LoadState", load_state),
    {"NRestarts", Wire::kUint32,
     [](const PropertyValue& v, UnitStatus& s, PropertyContext&) {
       s.n_restarts = static_cast<uint32_t>(v.number);
     }},
    {"NeedDaemonReload", Wire::kBool,
     [](const PropertyValue& v, UnitStatus& s, PropertyContext&) {
       s.need_daemon_reload = v.number != 0;
     }},
    {"RemainAfterExit", Wire::kBool,
     [](const PropertyValue& v, UnitStatus& s, PropertyContext&) {
       s.remain_after_exit = v.number != 0;
     }},
    MESH_TEXT_ROW("Result", result),
    {"StateChangeTimestampMonotonic", Wire::kUint64, SetStateChange},
    MESH_TEXT_ROW("SubState", sub_state),
    {"TimeoutStopUSec", Wire::kUint64, SetTimeoutStop},
    {"Triggers", Wire::kStrings,
     [](const PropertyValue& v, UnitStatus& s, PropertyContext&) { s.triggers = v.strings; }},
    MESH_TEXT_ROW("Type", type),
    MESH_TEXT_ROW("UnitFileState", unit_file_state),
    // The Manager's, read beside the units' (SdbusServiceManager::ReadUnits):
    // zero until the first daemon-reload, then the start time stands.
    {"UnitsLoadStartTimestamp", Wire::kUint64,
     [](const PropertyValue& v, UnitStatus& s, PropertyContext&) {
       if (s.units_loaded_realtime.count() == 0) {
         s.units_loaded_realtime = std::chrono::microseconds(v.number);
       }
     }},
    {"UnitsLoadTimestamp", Wire::kUint64,
     [](const PropertyValue& v, UnitStatus& s, PropertyContext&) {
       if (v.number != 0) s.units_loaded_realtime = std::chrono::microseconds(v.number);
     }},
};
#undef MESH_TEXT_ROW
// Strictly: a row named twice would never be found.
static_assert(std::adjacent_find(std::begin(kRows), std::end(kRows),
                                 [](const PropertyRow& a, const PropertyRow& b) {
                                   return a.name >= b.name;
                                 }) == std::end(kRows),
              "FindProperty looks the rows up by name: sorted, each once");

constexpr const char* kServiceProperties[] = {
    "Type",     "Result",       "NRestarts", "TimeoutStopUSec",
    "ExecStop", "ExecStopPost", "KillMode",  "ExecReload"};
constexpr const char* kExitProperties[] = {"ExecMainStatus", "ExecStart"};

}  // namespace

const PropertyRow* FindProperty(std::string_view name) {
  auto it = std::lower_bound(std::begin(kRows), std::end(kRows), name,
                             [](const PropertyRow& r, std::string_view n) { return r.name < n; });
  return it != std::end(kRows) && it->name == name ? it : nullptr;
}

void FinishProperties(PropertyContext& context, UnitStatus& s) {
  // Conditions lists every check; only a false ConditionResult skipped it.
  // A unit loaded afresh (a finished oneshot unloaded since) reads false
  // with no condition checked: that is no skip.
  if (context.conditions_held == false && !context.first_failed.empty()) {
    s.failed_condition = std::move(context.first_failed);
  }
}

std::span<const PropertyRow> PropertyRows() { return kRows; }
std::span<const char* const> ServiceProperties() { return kServiceProperties; }
std::vector<const char*> LateProperties(const UnitStatus& s) {
  std::vector<const char*> out;
  if (s.result == "exit-code") out.assign(std::begin(kExitProperties), std::end(kExitProperties));
  if (s.type == "oneshot") out.push_back("RemainAfterExit");
  return out;
}

bool ReadInRound(int round, std::string_view unit, const UnitStatus& s) {
  if (round == 0) return true;
  if (!unit.ends_with(".service") || s.load_state != "loaded") return false;
  return round == 1 || !LateProperties(s).empty();
}

const char* JobMethod(ports::JobKind kind) {
  switch (kind) {
    case ports::JobKind::kStart:
      return "StartUnit";
    case ports::JobKind::kRestart:
      return "RestartUnit";
    case ports::JobKind::kReload:
      return "ReloadUnit";
    case ports::JobKind::kStop:
      return "StopUnit";
  }
  return "StopUnit";
}

std::string DescribeBusError(std::string_view method, std::string_view unit,
                             std::string_view error_name, std::string_view message, int r) {
  std::string s = std::string(method);
  if (!unit.empty()) s += " " + std::string(unit);
  s += ": ";
  if (error_name.empty()) return s + std::strerror(-r);
  s += error_name;
  if (!message.empty()) s += ": " + std::string(message);
  // systemd names the setting only in its own log, at load.
  if (error_name == "org.freedesktop.systemd1.BadUnitSetting") {
    std::string_view named = unit.empty() ? method.substr(method.rfind(' ') + 1) : unit;
    s += " (systemd names the setting in its log: journalctl -u " + std::string(named) +
         ", or systemd-analyze verify on its unit file)";
  }
  return s;
}

}  // namespace mesh::adapters
