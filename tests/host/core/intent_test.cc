#include "host/core/intent.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace mesh::core {
namespace {

using ::testing::HasSubstr;

TEST(IntentTest, RoundTripsEveryField) {
  Intent intent;
  intent.applying = true;
  intent.owed["web"] = {UnitAction::kRestart, true, core::RestartReason::kRestartOn,
                        "restart_on web.conf changed", 41};
  intent.owed["cache"] = {UnitAction::kReload, false, core::RestartReason::kReloadOn,
                          "reload_on c changed", 7};
  intent.owed["idle"] = {std::nullopt, true, core::RestartReason::kDeclared, "",
                         3};  // a daemon-reload alone
  intent.creating = {"/etc/cron.d/job", "/opt/tree"};
  intent.creating_unit_files = {"new.service"};
  intent.creating_trees = {"/opt/tree"};
  intent.creating_drop_ins = {"web.service.d/10-env.conf"};
  intent.LeaveFailed("app.conf", "file", "unknown user \"x\"\ttab", 41);
  EXPECT_EQ(intent.failed["app.conf"].detail, "unknown user \"x\"\\x09tab") << "escaped";
  auto back = ParseIntent(SerializeIntent(intent));
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(*back, intent);
  EXPECT_FALSE(back->empty());
  EXPECT_TRUE(Intent{}.empty());
  EXPECT_FALSE(Intent{.creating_drop_ins = {"web.service.d/10-env.conf"}}.empty())
      << "a drop-in being created keeps the next apply from proving a no-op";
  Intent left;
  left.LeaveFailed("a", "file", "x", 1);
  EXPECT_FALSE(left.empty()) << "what the last apply left failed is kept on disk";
  for (size_t k = 0; k < Intent::kMaxLeftFailed + 10; ++k) {
    left.LeaveFailed("r" + std::to_string(k), "file", std::string(4096, 'y'), 2);
  }
  EXPECT_EQ(left.failed.size(), Intent::kMaxLeftFailed);
  EXPECT_LE(left.failed["r1"].detail.size(), Intent::kLeftFailedBytes + 3);
}

// "creating" is written a path at a time (it may name 100,000): the text
// is the one a whole tree of the intent makes, byte for byte.
TEST(IntentTest, TheTextIsTheWholeTreesDump) {
  using json = nlohmann::json;
  Intent intent;
  intent.owed["web"] = {UnitAction::kRestart, true, core::RestartReason::kRestartOn,
                        "why \"quoted\"", 41};
  intent.creating = {"/etc/a \"b\"", "/opt/tree", "/\u00e9t\u00e9"};
  intent.creating_unit_files = {"new.service"};
  intent.creating_trees = {"/opt/tree"};
  for (bool applying : {false, true}) {
    intent.applying = applying;
    for (bool creating : {false, true}) {
      Intent i = intent;
      if (!creating) i.creating.clear();
      json owed = {{"web",
                    {{"daemon_reload", true},
                     {"reason", "restart_on"},
                     {"why", "why \"quoted\""},
                     {"since", 41},
                     {"action", "restart"}}}};
      json whole = {{"version", 1}, {"applying", applying}, {"owed", owed}};
      if (creating) whole["creating"] = i.creating;
      whole["creating_unit_files"] = i.creating_unit_files;
      whole["creating_trees"] = i.creating_trees;
      EXPECT_EQ(SerializeIntent(i), whole.dump() + "\n") << applying << creating;
    }
  }
}

// A restart owed for a declared path with a tab in its name: the intent
// written must read back (refused, it held every later apply to nothing
// until someone removed it).
TEST(IntentTest, AReasonNamingAPathWithATabReadsBack) {
  Intent intent;
  intent.applying = true;
  intent.owed["web"] = {UnitAction::kRestart, false, core::RestartReason::kDeclared,
                        "unit definition /etc/systemd/system/web.service.d/a\tb.conf changed", 2};
  auto back = ParseIntent(SerializeIntent(intent));
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(back->owed.at("web").why,
            "unit definition /etc/systemd/system/web.service.d/a\\x09b.conf changed");
}

// An intent an older host wrote, before Printable escaped characters that
// reorder text (a path with U+202E in a reason): an upgrade reads it, and
// holds those characters escaped, as it would write them.
TEST(IntentTest, WhatAnOlderHostWroteReadsBackEscaped) {
  auto back = ParseIntent(
      "{\"version\":1,\"applying\":false,\"owed\":{\"web\":{\"action\":\"restart\","
      "\"why\":\"unit definition /etc/x\u202e.conf changed\",\"since\":2}},"
      "\"failed\":{\"a\":{\"kind\":\"file\",\"detail\":\"/etc/\xe2\x80\xaex\","
      "\"generation\":2}}}");
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(back->owed.at("web").why, "unit definition /etc/x\\xe2\\x80\\xae.conf changed");
  EXPECT_EQ(back->failed.at("a").detail, "/etc/\\xe2\\x80\\xaex");
}

// A daemon-reload owed alone has no reason: written "", read back as none.
TEST(IntentTest, ADaemonReloadAloneHasNoReason) {
  Intent intent;
  intent.owed["idle"] = {std::nullopt, true, std::nullopt, "", 3};
  auto back = ParseIntent(SerializeIntent(intent));
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(*back, intent);
  EXPECT_THAT(SerializeIntent(intent), HasSubstr(R"("reason":"")"));
}

// Only this host writes it; anything else is refused, naming what is wrong,
// so the apply can say it and sweep rather than trust it.
TEST(IntentTest, EveryBadShapeIsNamed) {
  struct Case {
    const char* text;
    const char* says;
  } cases[] = {
      {"", "not a JSON object"},
      {"[]", "not a JSON object"},
      {R"({"version":2,"applying":false,"owed":{}})", "unknown version"},
      {R"({"version":1,"owed":{}})", "field applying"},
      {R"({"version":1,"applying":false,"owed":[]})", "field owed"},
      {R"({"version":1,"applying":false,"owed":{"a":3}})", "resource a: must be an object"},
      {R"({"version":1,"applying":false,"owed":{"a":{"action":"kill"}}})", "field action"},
      {R"({"version":1,"applying":false,"owed":{"a":{"action":"start","since":-1}}})",
       "field since"},
      {R"({"version":1,"applying":false,"owed":{"a":{"daemon_reload":"yes"}}})",
       "field daemon_reload"},
      {R"({"version":1,"applying":false,"owed":{"a":{"daemon_reload":false}}})",
       "names no action and no daemon-reload"},
      {R"({"version":1,"applying":false,"owed":{"a":{"why":[]}}})", "field why"},
      // The reason is a metric's label: only the four the host counts by.
      {R"({"version":1,"applying":false,"owed":{"a":{"action":"start","reason":"because"}}})",
       "field reason: must be declared, restart_on, reload_on or was_dead"},
      {R"({"version":1,"applying":false,"owed":{"a":{"action":"start","reason":7}}})",
       "field reason"},
      {R"({"version":1,"applying":false,"owed":{"a":{"action":"start","why":"x\ny"}}})",
       "field why: has a control character"},
      // DEL and a C1 control: a save escapes them, so the intent read
      // would not be the one saved (tools/fuzz found DEL).
      {"{\"version\":1,\"applying\":false,\"owed\":{\"a\":{\"action\":\"start\",\"why\":\"x\x7fy\"}"
       "}}",
       "field why: has a control character"},
      {R"({"version":1,"applying":false,"owed":{"a":{"action":"start","why":"x\u0085y"}}})",
       "field why: has a control character"},
      {R"({"version":1,"applying":false,"owed":{"a":{"x":{"y":{"z":{"w":1}}}}}})",
       "nested too deeply"},
      // The host removes what these name: only what a declaration could.
      {R"({"version":1,"applying":true,"owed":{},"creating":"/etc/x"})",
       "creating: must be a list"},
      {R"({"version":1,"applying":true,"owed":{},"creating":["etc/x"]})", "is not absolute"},
      {R"({"version":1,"applying":true,"owed":{},"creating":["/etc/../x"]})", "contains .."},
      {R"({"version":1,"applying":true,"owed":{},"creating":[1]})", "not a string"},
      {R"({"version":1,"applying":true,"owed":{},"creating_unit_files":["../x.service"]})",
       "creating_unit_files"},
      {R"({"version":1,"applying":true,"owed":{},"creating_drop_ins":["web.service/x.conf"]})",
       "creating_drop_ins: a drop-in is named UNIT.d/NAME"},
      {R"({"version":1,"applying":true,"owed":{},"creating_drop_ins":["web.service.d/../x.conf"]})",
       "creating_drop_ins"},
      {R"({"version":1,"applying":true,"owed":{},"creating_drop_ins":["../x.service.d/a.conf"]})",
       "creating_drop_ins"},
      {R"({"version":1,"applying":false,"owed":{},"failed":[]})", "field failed: must be"},
      {R"({"version":1,"applying":false,"owed":{},"failed":{"a":1}})",
       "failed resource a: must be an object"},
      {R"({"version":1,"applying":false,"owed":{},"failed":{"a":{"detail":"x\ny"}}})",
       "failed resource a, field detail: has a control character"},
      {R"({"version":1,"applying":false,"owed":{},"failed":{"a":{"generation":"7"}}})",
       "failed resource a, field generation"},
  };
  for (const Case& c : cases) {
    auto parsed = ParseIntent(c.text);
    ASSERT_FALSE(parsed.has_value()) << c.text;
    EXPECT_THAT(parsed.error().message, HasSubstr(c.says)) << c.text;
  }
}

}  // namespace
}  // namespace mesh::core
