#include "host/adapters/unit_properties.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace mesh::adapters {
namespace {

using std::chrono::microseconds;
using std::chrono::seconds;

// Sets `name` from `value` as the adapter would once it decoded it.
core::UnitStatus Set(std::string_view name, const PropertyValue& value,
                     PropertyContext context = {}) {
  core::UnitStatus s;
  const PropertyRow* row = FindProperty(name);
  EXPECT_NE(row, nullptr) << name;
  if (row != nullptr) row->set(value, s, context);
  FinishProperties(context, s);
  return s;
}

PropertyValue Text(std::string t) { return {.text = std::move(t)}; }
PropertyValue Number(uint64_t n) { return {.number = n}; }

TEST(UnitPropertiesTest, EachTextPropertyFillsItsField) {
  EXPECT_EQ(Set("LoadState", Text("loaded")).load_state, "loaded");
  EXPECT_EQ(Set("ActiveState", Text("failed")).active_state, "failed");
  EXPECT_EQ(Set("SubState", Text("auto-restart")).sub_state, "auto-restart");
  EXPECT_EQ(Set("Result", Text("exit-code")).result, "exit-code");
  EXPECT_EQ(Set("Type", Text("oneshot")).type, "oneshot");
  EXPECT_EQ(Set("KillMode", Text("process")).kill_mode, "process");
  EXPECT_EQ(Set("UnitFileState", Text("enabled")).unit_file_state, "enabled");
  EXPECT_EQ(FindProperty("LoadState")->wire, Wire::kString);
}

// The D-Bus signature of each property, as systemd's org.freedesktop.
// systemd1(5) gives it: a row read with another shape makes every unit
// unreadable, so each is held to it here.
TEST(UnitPropertiesTest, EachPropertyIsReadWithSystemdsSignature) {
  // One row a property, as systemd lists them.
  // clang-format off
  const std::pair<const char*, Wire> kSystemd[] = {
      {"ActiveState", Wire::kString},
      {"ConditionResult", Wire::kBool},
      {"Conditions", Wire::kConditions},  // a(sbbsi)
      {"DropInPaths", Wire::kStrings},    // as
      {"ExecMainStatus", Wire::kInt32},
      {"ExecReload", Wire::kCommands},
      {"ExecStart", Wire::kCommands},  // a(sasbttttuii)
      {"ExecStop", Wire::kCommands},
      {"ExecStopPost", Wire::kCommands},
      {"FragmentPath", Wire::kString},
      {"Id", Wire::kString},
      {"InactiveExitTimestamp", Wire::kUint64},  // t, realtime usec
      {"InvocationID", Wire::kBytes},
      {"Job", Wire::kJob},  // (uo)
      {"KillMode", Wire::kString},  // s, of the Service interface
      {"LoadState", Wire::kString},
      {"NRestarts", Wire::kUint32},
      {"NeedDaemonReload", Wire::kBool},
      {"RemainAfterExit", Wire::kBool},  // b
      {"Result", Wire::kString},
      {"StateChangeTimestampMonotonic", Wire::kUint64},
      {"SubState", Wire::kString},
      {"TimeoutStopUSec", Wire::kUint64},
      {"Triggers", Wire::kStrings},  // as
      {"Type", Wire::kString},
      {"UnitFileState", Wire::kString},
      {"UnitsLoadStartTimestamp", Wire::kUint64},  // t, of the Manager
      {"UnitsLoadTimestamp", Wire::kUint64},       // t, of the Manager
  };
  // clang-format on
  for (const auto& [name, wire] : kSystemd) {
    const PropertyRow* row = FindProperty(name);
    ASSERT_NE(row, nullptr) << name;
    EXPECT_EQ(row->wire, wire) << name;
  }
  EXPECT_EQ(PropertyRows().size(), std::size(kSystemd)) << "a row read with no signature checked";
}

TEST(UnitPropertiesTest, WhatTheHostHasNoUseForIsNotRead) {
  EXPECT_EQ(FindProperty("MemoryCurrent"), nullptr);
  EXPECT_EQ(FindProperty(""), nullptr);
  EXPECT_EQ(FindProperty("loadstate"), nullptr) << "names are systemd's, to the letter";
}

TEST(UnitPropertiesTest, NumbersAndFlags) {
  EXPECT_EQ(Set("NRestarts", Number(7)).n_restarts, 7u);
  EXPECT_TRUE(Set("NeedDaemonReload", Number(1)).need_daemon_reload);
  EXPECT_FALSE(Set("NeedDaemonReload", Number(0)).need_daemon_reload);
  // An int32 arrives as its bits: systemd's 203 (EXEC), and a negative one.
  EXPECT_EQ(Set("ExecMainStatus", Number(203)).exec_main_status, 203);
  EXPECT_EQ(Set("ExecMainStatus", Number(static_cast<uint32_t>(-1))).exec_main_status, -1);
}

TEST(UnitPropertiesTest, AStopTimeoutOfInfinityOrPastADayIsUnknown) {
  EXPECT_EQ(Set("TimeoutStopUSec", Number(90'000'000)).timeout_stop, seconds(90));
  EXPECT_EQ(Set("TimeoutStopUSec", Number(86'400'000'000)).timeout_stop, seconds(86400));
  EXPECT_EQ(Set("TimeoutStopUSec", Number(86'400'000'001)).timeout_stop, seconds(0));
  EXPECT_EQ(Set("TimeoutStopUSec", Number(std::numeric_limits<uint64_t>::max())).timeout_stop,
            seconds(0));
  EXPECT_TRUE(
      Set("TimeoutStopUSec", Number(std::numeric_limits<uint64_t>::max())).timeout_stop_unbounded);
  EXPECT_FALSE(Set("TimeoutStopUSec", Number(90'000'000)).timeout_stop_unbounded);
}

TEST(UnitPropertiesTest, TimeInStateIsFromTheMonotonicClockOfTheRead) {
  PropertyContext at_ten{.monotonic_now = seconds(10)};
  EXPECT_EQ(Set("StateChangeTimestampMonotonic", Number(4'000'000), at_ten).in_state_for,
            seconds(6));
  EXPECT_EQ(Set("StateChangeTimestampMonotonic", Number(0), at_ten).in_state_for, seconds(0))
      << "never changed state: unknown";
  EXPECT_EQ(Set("StateChangeTimestampMonotonic", Number(11'000'000), at_ten).in_state_for,
            seconds(0))
      << "a change after the read (another clock) is not a negative age";
}

TEST(UnitPropertiesTest, TheInvocationIdIsLowercaseHex) {
  PropertyValue id{.bytes = {0x00, 0x0f, 0xa0, 0xff}};
  EXPECT_EQ(Set("InvocationID", id).invocation_id, "000fa0ff");
}

TEST(UnitPropertiesTest, CommandsGiveTheFirstPathOrHowManyThereAre) {
  PropertyValue two{.command_paths = {"/usr/bin/jaild", "/bin/true"}};
  EXPECT_EQ(Set("ExecStart", two).exec_start, "/usr/bin/jaild");
  EXPECT_EQ(Set("ExecStart", PropertyValue{}).exec_start, "");
  EXPECT_EQ(Set("ExecStop", two).exec_stop, 2u);
  EXPECT_EQ(Set("ExecStopPost", two).exec_stop_post, 2u);
  EXPECT_EQ(Set("ExecStop", PropertyValue{}).exec_stop, 0u);
}

// A reload is seen by its first ExecReload= command's start (the wire's
// number): the later commands of a reload that failed early keep an older
// reload's.
TEST(UnitPropertiesTest, AReloadIsSeenByItsFirstCommandsStart) {
  PropertyValue reloaded{.number = 1'700'000'000'000'000,
                         .command_paths = {"/bin/kill", "/bin/true"}};
  EXPECT_EQ(Set("ExecReload", reloaded).reloaded_realtime.count(), 1'700'000'000'000'000);
  EXPECT_EQ(Set("ExecReload", reloaded).exec_reload, 2u);
  EXPECT_EQ(Set("ExecReload", PropertyValue{}).reloaded_realtime.count(), 0);
}

// Conditions and ConditionResult mean something only together, in either
// order: a false ConditionResult names the first condition that failed.
TEST(UnitPropertiesTest, AFalseConditionIsNamedOnlyWhenTheStartWasSkipped) {
  PropertyValue checked{.conditions = {{"ConditionPathExists", false, false, "/etc/ok", 1},
                                       {"ConditionPathExists", true, true, "/etc/x", -1},
                                       {"ConditionHost", false, false, "other", -1}}};
  for (bool result_first : {true, false}) {
    core::UnitStatus s;
    PropertyContext c;
    const PropertyRow* conditions = FindProperty("Conditions");
    const PropertyRow* result = FindProperty("ConditionResult");
    ASSERT_NE(conditions, nullptr);
    ASSERT_NE(result, nullptr);
    if (result_first) result->set(Number(0), s, c);
    conditions->set(checked, s, c);
    if (!result_first) result->set(Number(0), s, c);
    FinishProperties(c, s);
    EXPECT_EQ(s.failed_condition, "ConditionPathExists=|!/etc/x");
  }
  core::UnitStatus held;
  PropertyContext c;
  FindProperty("Conditions")->set(checked, held, c);
  FindProperty("ConditionResult")->set(Number(1), held, c);
  FinishProperties(c, held);
  EXPECT_EQ(held.failed_condition, "") << "a trigger failed, the start went on";
  // Loaded afresh: false, with nothing checked. No skip.
  core::UnitStatus fresh;
  PropertyContext f;
  FindProperty("ConditionResult")->set(Number(0), fresh, f);
  FinishProperties(f, fresh);
  EXPECT_EQ(fresh.failed_condition, "");
}

TEST(UnitPropertiesTest, TheServiceRoundsReadLoadedServicesAndTheExitRoundFailedRuns) {
  core::UnitStatus loaded{.load_state = "loaded", .result = "success"};
  core::UnitStatus exited{.load_state = "loaded", .result = "exit-code"};
  core::UnitStatus missing{.load_state = "not-found"};
  EXPECT_TRUE(ReadInRound(0, "x.timer", missing));
  EXPECT_TRUE(ReadInRound(1, "x.service", loaded));
  EXPECT_FALSE(ReadInRound(1, "x.timer", loaded));
  EXPECT_FALSE(ReadInRound(1, "x.service", missing));
  EXPECT_FALSE(ReadInRound(2, "x.service", loaded));
  EXPECT_TRUE(ReadInRound(2, "x.service", exited));
  // A oneshot's RemainAfterExit= decides whether inactive is finished or
  // stopped: read of every oneshot, and only of oneshots.
  core::UnitStatus oneshot{.load_state = "loaded", .result = "success", .type = "oneshot"};
  EXPECT_TRUE(ReadInRound(2, "x.service", oneshot));
  ASSERT_EQ(LateProperties(oneshot).size(), 1u);
  EXPECT_STREQ(LateProperties(oneshot)[0], "RemainAfterExit");
  EXPECT_TRUE(LateProperties(loaded).empty());
  for (const char* name : ServiceProperties()) EXPECT_NE(FindProperty(name), nullptr) << name;
  for (const auto* s : {&exited, &oneshot}) {
    for (const char* name : LateProperties(*s)) EXPECT_NE(FindProperty(name), nullptr) << name;
  }
  core::UnitStatus remains = oneshot;
  PropertyContext c;
  FindProperty("RemainAfterExit")->set(Number(1), remains, c);
  EXPECT_TRUE(remains.remain_after_exit);
}

TEST(UnitPropertiesTest, ABusErrorInWords) {
  EXPECT_EQ(JobMethod(ports::JobKind::kRestart), std::string("RestartUnit"));
  EXPECT_EQ(DescribeBusError("StartUnit", "x.service", "org.freedesktop.systemd1.NoSuchUnit",
                             "Unit x.service not found.", -5),
            "StartUnit x.service: org.freedesktop.systemd1.NoSuchUnit: Unit x.service not found.");
  EXPECT_EQ(DescribeBusError("Reload", "", "", "", -ETIMEDOUT), "Reload: Connection timed out");
  std::string bad = DescribeBusError("Get org.freedesktop.systemd1.Service.Type x.service", "",
                                     "org.freedesktop.systemd1.BadUnitSetting", "bad", -5);
  EXPECT_NE(bad.find("journalctl -u x.service, or systemd-analyze verify"), std::string::npos)
      << bad;
}

}  // namespace
}  // namespace mesh::adapters
