// What systemd's unit and service properties mean to the host.
//
// The sd-bus adapter (systemd_bus.cc) only decodes: it looks a
// property's name up here, reads a value of the wire shape this table gives
// off the message, and hands it back to the row's setter. Everything else —
// which properties are read at all and in which round, what infinity or a
// day of stop timeout means, how a failed condition is named, how a bus
// error is worded — is decided here, with no bus in sight, so that adding a
// property is one row (and its test) in unit_properties.cc.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/unit_status.h"
#include "host/ports/service_manager.h"

namespace mesh::adapters {

// The D-Bus shapes the host reads, each inside its variant.
enum class Wire {
  kString,      // s
  kUint32,      // u
  kInt32,       // i
  kBool,        // b
  kUint64,      // t
  kBytes,       // ay
  kCommands,    // a(sasbttttuii): ExecStart= and the like
  kConditions,  // a(sbbsi)
  kStrings,     // as: Triggers=
  kJob,         // (uo): the id (0: none) and path of the unit's job
};

// One condition systemd checked at the last start (a(sbbsi)).
struct ConditionChecked {
  std::string type;  // ConditionPathExists
  bool trigger = false;
  bool negate = false;
  std::string parameter;
  int32_t state = 0;  // < 0: it failed
};

// A value off the bus, in the field its Wire names.
struct PropertyValue {
  std::string text;
  // u, i (as its bits), b, t; of commands, when the first last began
  // (realtime microseconds, 0 never since the unit's start).
  uint64_t number = 0;
  std::vector<uint8_t> bytes;
  std::vector<std::string> command_paths;  // each command's path, in order
  std::vector<ConditionChecked> conditions;
  std::vector<std::string> strings;
};

// What one reply says beyond its single properties: Conditions and
// ConditionResult come in either order and mean something only together.
struct PropertyContext {
  std::optional<bool> conditions_held;  // ConditionResult
  std::string first_failed;             // "ConditionPathExists=/etc/x"
  // CLOCK_MONOTONIC when the reply was read: systemd's clock and ours.
  std::chrono::nanoseconds monotonic_now{0};
};

struct PropertyRow {
  std::string_view name;
  Wire wire;
  void (*set)(const PropertyValue& value, core::UnitStatus& s, PropertyContext& context);
};

// The row of a property the host reads, or null: a property the host has no
// use for is skipped unread.
const PropertyRow* FindProperty(std::string_view name);
// Every row, by name.
std::span<const PropertyRow> PropertyRows();

// After every property of a reply was set: what only the whole reply says.
void FinishProperties(PropertyContext& context, core::UnitStatus& s);

// Asked for one by one of a loaded service (the Service interface's GetAll
// also computes every accounting figure from the cgroup).
std::span<const char* const> ServiceProperties();
// Round 2, as rounds 0 and 1 left `s`: of a service whose run exited
// badly, how and what it ran; of a oneshot, whether it stays active after
// its run (RemainAfterExit=). Empty for most units: no cost while
// everything runs.
std::vector<const char*> LateProperties(const core::UnitStatus& s);
// Whether round 1 (ServiceProperties) or 2 (LateProperties) reads `unit`,
// as its Unit properties (round 0) left `s`.
bool ReadInRound(int round, std::string_view unit, const core::UnitStatus& s);

// systemd's method for a job of `kind`.
const char* JobMethod(ports::JobKind kind);

// A failed call in words: "StartUnit x.service: org.freedesktop...: msg",
// or the errno's text where no D-Bus error came (`error_name` empty).
std::string DescribeBusError(std::string_view method, std::string_view unit,
                             std::string_view error_name, std::string_view message, int r);

}  // namespace mesh::adapters
