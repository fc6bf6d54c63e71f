// The plan is pure: every decision of an apply, from values alone — what
// the machine showed (Seen), the record, and what earlier applies owe.
#include "host/reconcile/plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "host/core/declaration.h"
#include "host/core/want.h"

namespace mesh::reconcile {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using json = nlohmann::json;
using core::UnitAction;

core::UnitStatus Unit(const char* active, const char* sub, uint32_t n_restarts = 0,
                      const char* type = "simple") {
  core::UnitStatus s;
  s.load_state = "loaded";
  s.active_state = active;
  s.sub_state = sub;
  s.result = "success";
  s.type = type;
  s.n_restarts = n_restarts;
  return s;
}

class PlanTest : public ::testing::Test {
 protected:
  // conf (a file) and web (a service restarted on conf), at generation 5.
  void Declare(json web_extra = json::object(), json more = json::array()) {
    json web = {{"id", "web"},
                {"kind", "service"},
                {"unit", "web.service"},
                {"state", "running"},
                {"restart_on", {"conf"}}};
    web.update(web_extra);
    json resources = {{{"id", "conf"}, {"kind", "file"}, {"path", "/etc/conf"}, {"content", "v"}},
                      web};
    for (auto& r : more) resources.push_back(r);
    auto parsed = core::ParseDeclaration(
        json{{"machine", "m"}, {"generation", 5}, {"resources", resources}}.dump());
    ASSERT_TRUE(parsed.has_value()) << parsed.error().message;
    decl_ = std::move(*parsed);
    seen_ = Seen{};
    seen_.files.resize(decl_.resources.size());
    wants_.clear();
    for (const core::Resource& r : decl_.resources) {
      wants_.push_back(core::WantDigest(r, "key"));
      if (r.HasUnit()) seen_.units[&r - decl_.resources.data()] = Unit("active", "running");
    }
  }
  // Records every declared resource as applied at its want.
  void RecordAll() {
    for (size_t i = 0; i < decl_.resources.size(); ++i) {
      const core::Resource& r = decl_.resources[i];
      core::RecordEntry e;
      e.kind = std::string(core::KindName(r.kind));
      e.digest = wants_[i];
      e.applied_at = "then";
      if (r.HasFiles()) e.written.push_back({r.path, "fp", "", 0, false});
      if (r.HasUnit()) {
        e.mutable_unit().name = r.unit().name;
        e.mutable_unit().n_restarts = 0;
      }
      record_.resources[r.id] = e;
    }
  }
  Plan Make(bool dry_run = false) {
    olds_ = OldEntriesOf(decl_, record_);
    return MakePlan({.declaration = &decl_,
                     .record = &record_,
                     .olds = &olds_,
                     .owed = &owed_,
                     .seen = &seen_,
                     .wants = &wants_,
                     .now = "now",
                     .dry_run = dry_run});
  }
  core::UnitStatus& UnitSeen(size_t i) { return *seen_.units.at(i); }

  core::Declaration decl_;
  core::Record record_;
  core::Intent owed_;
  Seen seen_;
  OldEntries olds_;
  std::vector<std::string> wants_;
};

TEST_F(PlanTest, AMachineAsRecordedChangesNothingAndOwesNothing) {
  Declare();
  RecordAll();
  Plan plan = Make();
  EXPECT_EQ(plan.steps[0].outcome, core::Outcome::kUnchanged);
  EXPECT_EQ(plan.steps[0].detail, "as declared");
  ASSERT_EQ(plan.units.size(), 1u);
  EXPECT_FALSE(plan.units[0].action.has_value());
  EXPECT_TRUE(plan.units[0].up);
  EXPECT_FALSE(plan.ChangesMachine());
  EXPECT_TRUE(plan.intent.empty());
}

// A record entry boxes its unit's part: a file's entry (most of a large
// record) must not carry one, or it costs the 160 bytes the box saves.
TEST_F(PlanTest, OnlyAUnitsEntryHoldsAUnitPart) {
  Declare();
  Plan plan = Make();
  ASSERT_TRUE(plan.steps[0].entry.has_value());
  EXPECT_FALSE(plan.steps[0].entry->unit_record.has_value());
  ASSERT_TRUE(plan.steps[1].entry.has_value());
  ASSERT_TRUE(plan.steps[1].entry->unit_record.has_value());
  EXPECT_EQ(plan.steps[1].entry->unit().name, "web.service");
  EXPECT_EQ(plan.steps[1].entry->unit().state, "running");
}

TEST_F(PlanTest, ADriftedFileIsWrittenAndItsRestartOwedBeforehand) {
  Declare();
  RecordAll();
  seen_.files[0].found = Found::kDiffers;
  seen_.files[0].drift = "content changed";
  Plan plan = Make();
  EXPECT_EQ(plan.steps[0].outcome, core::Outcome::kUpdated);
  EXPECT_EQ(plan.steps[0].detail,
            "drifted: content changed on the machine, put back; wrote 1 byte(s), mode 0644");
  EXPECT_TRUE(plan.steps[0].write_files);
  const UnitPlan& u = plan.units[0];
  EXPECT_EQ(u.action, UnitAction::kRestart);
  EXPECT_EQ(u.reason, core::RestartReason::kRestartOn);
  EXPECT_EQ(u.why, "restart_on conf changed");
  EXPECT_THAT(u.causes, ElementsAre(0u));
  EXPECT_TRUE(plan.intent.applying);
  ASSERT_TRUE(plan.intent.owed.contains("web"));
  EXPECT_EQ(plan.intent.owed["web"].action, UnitAction::kRestart);
  EXPECT_EQ(plan.intent.owed["web"].since, 5u);
}

// Crash loops (issue 14): auto-restart reads "activating", NRestarts grown
// since the host's last look reads "active" — neither is as declared.
TEST_F(PlanTest, AUnitSystemdKeepsRestartingIsNotUp) {
  Declare();
  RecordAll();
  UnitSeen(1) = Unit("activating", "auto-restart", 3);
  Plan plan = Make();
  EXPECT_FALSE(plan.units[0].up);
  EXPECT_EQ(plan.units[0].action, UnitAction::kStart);
  EXPECT_EQ(plan.units[0].why,
            "was activating (auto-restart: it died, and systemd starts it again after "
            "RestartSec=)");

  record_.resources["web"].mutable_unit().n_restarts = 2;
  UnitSeen(1) = Unit("active", "running", 5);
  plan = Make();
  EXPECT_FALSE(plan.units[0].up);
  EXPECT_EQ(plan.units[0].reason, core::RestartReason::kWasDead);
  EXPECT_EQ(plan.units[0].why,
            "was restarted by systemd since the host last looked (NRestarts 2 -> 5)");

  UnitSeen(1) = Unit("active", "running", 0);  // reset-failed: a lower count is no restart
  EXPECT_TRUE(Make().units[0].up);
  // ... but one above zero is systemd's restarts since that reset.
  UnitSeen(1) = Unit("active", "running", 1);
  plan = Make();
  EXPECT_FALSE(plan.units[0].up);
  EXPECT_EQ(plan.units[0].why,
            "was restarted by systemd since the host last looked (NRestarts 2 -> 0 by a manual "
            "start, then 1)");
}

// Oneshots (issue 14): finished with Result=success is as declared only
// when the record knows it ran — systemd forgets a finished oneshot.
TEST_F(PlanTest, AFinishedOneshotIsUpOnlyWhenTheRecordSaysItRan) {
  Declare();
  RecordAll();
  UnitSeen(1) = Unit("inactive", "dead", 0, "oneshot");
  EXPECT_EQ(Make().units[0].action, UnitAction::kStart) << "never known to have run";
  record_.resources["web"].mutable_unit().finished = true;
  Plan plan = Make();
  EXPECT_TRUE(plan.units[0].up);
  EXPECT_FALSE(plan.units[0].action.has_value());
  UnitSeen(1).result = "exit-code";
  EXPECT_EQ(Make().units[0].action, UnitAction::kStart) << "its last run failed";
}

TEST_F(PlanTest, AnOwedActionIsCarriedWithItsGeneration) {
  Declare();
  RecordAll();
  owed_.owed["web"] = {UnitAction::kRestart, false, core::RestartReason::kRestartOn,
                       "restart_on conf changed", 3};
  Plan plan = Make();
  const UnitPlan& u = plan.units[0];
  EXPECT_EQ(u.action, UnitAction::kRestart);
  EXPECT_EQ(u.owed_since, 3u);
  EXPECT_EQ(u.why, "restart_on conf changed");
  EXPECT_EQ(plan.intent.owed["web"].since, 3u);
  EXPECT_TRUE(plan.ChangesMachine());
}

// The stronger action wins (restart > start > reload); an owed one keeps
// its first generation even when this apply asks for it anew.
TEST_F(PlanTest, OwedAndNewActionsMerge) {
  Declare({{"restart_on", json::array()}, {"reload_on", {"conf"}}});
  RecordAll();
  seen_.files[0].found = Found::kDiffers;
  owed_.owed["web"] = {UnitAction::kRestart, false, core::RestartReason::kDeclared,
                       "its files changed", 2};
  Plan plan = Make();
  EXPECT_EQ(plan.units[0].action, UnitAction::kRestart);
  EXPECT_EQ(plan.units[0].owed_since, 2u);
  EXPECT_EQ(plan.intent.owed["web"].since, 2u);

  owed_.owed["web"] = {UnitAction::kReload, false, core::RestartReason::kReloadOn,
                       "reload_on conf changed", 2};
  UnitSeen(1) = Unit("failed", "failed");
  plan = Make();
  EXPECT_EQ(plan.units[0].action, UnitAction::kStart) << "a dead unit is started, not reloaded";
  EXPECT_EQ(plan.intent.owed["web"].since, 2u);
  // A reload's reason never labels a start or restart: mesh_host_unit_
  // restarts_total has no reload_on series (its reasons are made at 0).
  EXPECT_EQ(plan.units[0].reason, core::RestartReason::kWasDead);
  EXPECT_EQ(plan.intent.owed["web"].reason, core::RestartReason::kWasDead);
}

// A reload owed to a unit that no longer reloads on anything is paid with a
// restart, counted as restart_on.
TEST_F(PlanTest, AnOwedReloadTurnedRestartIsCountedAsOne) {
  Declare({{"restart_on", {"conf"}}, {"reload_on", json::array()}});
  RecordAll();
  owed_.owed["web"] = {UnitAction::kReload, false, core::RestartReason::kReloadOn,
                       "reload_on conf changed", 2};
  Plan plan = Make();
  EXPECT_EQ(plan.units[0].action, UnitAction::kRestart);
  EXPECT_EQ(plan.units[0].reason, core::RestartReason::kRestartOn);
}

TEST_F(PlanTest, DeclaredStoppedDropsTheOwedActionButNotTheDaemonReload) {
  Declare({{"state", "stopped"}});
  RecordAll();
  owed_.owed["web"] = {UnitAction::kRestart, true, core::RestartReason::kDeclared, "", 2};
  Plan plan = Make();
  EXPECT_TRUE(plan.units[0].stop);
  EXPECT_FALSE(plan.units[0].action.has_value());
  EXPECT_TRUE(plan.units[0].daemon_reload);
  EXPECT_FALSE(plan.intent.owed["web"].action.has_value());
  EXPECT_TRUE(plan.intent.owed["web"].daemon_reload);
}

TEST_F(PlanTest, NeedDaemonReloadOnAHostUnitFileOwesReloadAndRestart) {
  Declare({{"unit_text", "[Service]\nExecStart=/bin/web\n"}});
  RecordAll();
  UnitSeen(1).need_daemon_reload = true;
  Plan plan = Make();
  EXPECT_TRUE(plan.units[0].daemon_reload);
  EXPECT_EQ(plan.units[0].action, UnitAction::kRestart);
  EXPECT_EQ(plan.units[0].why,
            "unit file web.service is newer than what systemd loaded (NeedDaemonReload)");
  EXPECT_EQ(plan.units[0].reason, core::RestartReason::kDeclared);
  // A reload owed as well: the restart that pays both is this apply's, and
  // counted as such, never as the reload's reason.
  owed_.owed["web"] = {UnitAction::kReload, false, core::RestartReason::kReloadOn,
                       "reload_on conf changed", 2};
  plan = Make();
  EXPECT_EQ(plan.units[0].action, UnitAction::kRestart);
  EXPECT_EQ(plan.units[0].reason, core::RestartReason::kDeclared);
  owed_.owed.clear();
  // The machine's own unit file: not the host's to reload for.
  Declare();
  RecordAll();
  UnitSeen(1).need_daemon_reload = true;
  EXPECT_FALSE(Make().units[0].daemon_reload);
}

// A unit systemd cannot be asked about still owes what this apply's writes
// ask of it.
TEST_F(PlanTest, AnUnreadableUnitStillOwesWhatItsWritesAsk) {
  Declare({{"unit_text", "[Service]\nExecStart=/bin/web\n"}});
  seen_.unit_files[1].found = Found::kDiffers;
  seen_.units[1] = core::Result<core::UnitStatus>(core::Fail("GetAll web.service: gone"));
  Plan plan = Make();
  EXPECT_EQ(plan.units[0].failed, "GetAll web.service: gone");
  EXPECT_EQ(plan.intent.owed["web"].action, UnitAction::kRestart);
  EXPECT_TRUE(plan.intent.owed["web"].daemon_reload);
}

TEST_F(PlanTest, AResourceThatCannotBeLookedAtKeepsWhatWasOwed) {
  Declare();
  RecordAll();
  seen_.files[0].found = Found::kError;
  seen_.files[0].error = "stat /etc/conf: Permission denied";
  owed_.owed["web"] = {UnitAction::kRestart, false, core::RestartReason::kRestartOn,
                       "restart_on conf changed", 4};
  owed_.owed["gone"] = {UnitAction::kStart, false, core::RestartReason::kDeclared, "", 4};
  Plan plan = Make();
  EXPECT_TRUE(plan.steps[0].failed());
  EXPECT_EQ(plan.steps[0].old, &record_.resources["conf"]);
  EXPECT_TRUE(plan.intent.owed.contains("web"));
  EXPECT_FALSE(plan.intent.owed.contains("gone")) << "no longer declared: owes nothing";
}

TEST_F(PlanTest, WhatIsNoLongerDeclaredIsRemovedOnlyWhereTheHostMadeIt) {
  Declare();
  RecordAll();
  core::RecordEntry old;
  old.kind = "process";
  old.mutable_unit().name = "old.service";
  old.mutable_unit().file_fingerprint = "1:2:3:4";
  old.written = {{"/opt/old", "tree:x", "sha256:y", 3, false}, {"/etc/kept", "f", "", 0, true}};
  record_.resources["old"] = old;
  seen_.dropped_units["old.service"] = Unit("active", "running");
  seen_.dropped_paths["/opt/old"] = {"", false, core::FileType::kDirectory, "tree:x"};
  seen_.dropped_unit_files["old.service"] = {"", false, core::FileType::kRegular, "1:2:3:4"};
  Plan plan = Make();
  ASSERT_EQ(plan.removals.size(), 1u);
  const Removal& rm = plan.removals[0];
  EXPECT_TRUE(rm.stop);
  // SPEC 8: its tree, and the unit file it runs from, once it no longer
  // runs (a later apply).
  EXPECT_THAT(rm.delete_paths, ElementsAre());
  EXPECT_FALSE(rm.delete_unit_file);
  EXPECT_EQ(rm.until_stopped, "its tree and unit file go once old.service no longer runs");
  EXPECT_THAT(rm.left, ElementsAre("/etc/kept, there before the host managed it"));
  EXPECT_TRUE(plan.ChangesMachine());
  seen_.dropped_units["old.service"] = Unit("inactive", "dead");
  Plan stopped = Make();
  EXPECT_FALSE(stopped.removals[0].stop);
  EXPECT_THAT(stopped.removals[0].delete_paths, ElementsAre("/opt/old"));
  EXPECT_TRUE(stopped.removals[0].delete_unit_file);
  EXPECT_EQ(stopped.removals[0].until_stopped, "");
}

// Prune deletes only what is still as the host wrote it: a file replaced by
// an operator's directory, an edited tree, an edited unit file (and so its
// unit), an operator's own unit file are left, each with why.
TEST_F(PlanTest, WhatNoLongerMatchesWhatTheHostWroteIsLeft) {
  Declare();
  RecordAll();
  core::RecordEntry db;
  db.kind = "file";
  db.written = {{"/srv/data/db/important.db", "1:2:3:4", "", 0, false}};
  record_.resources["db"] = db;
  seen_.dropped_paths["/srv/data/db/important.db"] = {"", false, core::FileType::kDirectory, ""};
  core::RecordEntry tree;
  tree.kind = "process";
  tree.mutable_unit().name = "tree.service";
  tree.mutable_unit().file_fingerprint = "5:6:7:8";
  tree.written = {{"/opt/tree", "tree:x", "sha256:y", 3, false}};
  record_.resources["tree"] = tree;
  seen_.dropped_paths["/opt/tree"] = {"", false, core::FileType::kDirectory, "tree:other"};
  seen_.dropped_unit_files["tree.service"] = {"", false, core::FileType::kRegular, "9:9:9:9"};
  seen_.dropped_units["tree.service"] = Unit("active", "running");
  core::RecordEntry theirs;
  theirs.kind = "service";
  theirs.mutable_unit().name = "theirs.service";
  theirs.mutable_unit().file_fingerprint = "1:1:1:1";
  theirs.mutable_unit().file_preexisting = true;
  record_.resources["theirs"] = theirs;
  seen_.dropped_unit_files["theirs.service"] = {"", false, core::FileType::kRegular, "1:1:1:1"};
  seen_.dropped_units["theirs.service"] = Unit("active", "running");
  core::RecordEntry gone;
  gone.kind = "file";
  gone.written = {{"/etc/gone", "1:2:3:4", "", 0, false}};
  record_.resources["gone"] = gone;
  seen_.dropped_paths["/etc/gone"] = {"", true, core::FileType::kMissing, ""};

  Plan plan = Make();
  ASSERT_EQ(plan.removals.size(), 4u);
  std::map<std::string, const Removal*> by_id;
  for (const Removal& rm : plan.removals) by_id[rm.id] = &rm;
  EXPECT_THAT(by_id["db"]->delete_paths, ElementsAre());
  EXPECT_THAT(by_id["db"]->left, ElementsAre("/srv/data/db/important.db: now a directory"));
  EXPECT_THAT(by_id["tree"]->delete_paths, ElementsAre());
  EXPECT_FALSE(by_id["tree"]->stop);
  EXPECT_FALSE(by_id["tree"]->delete_unit_file);
  EXPECT_THAT(by_id["tree"]->left,
              ElementsAre("unit tree.service and its unit file: changed since the host wrote it",
                          "/opt/tree: changed since the host wrote it"));
  EXPECT_FALSE(by_id["theirs"]->stop);
  EXPECT_FALSE(by_id["theirs"]->delete_unit_file);
  EXPECT_THAT(by_id["theirs"]->left,
              ElementsAre("unit theirs.service and its unit file, there before the host wrote it"));
  EXPECT_THAT(by_id["gone"]->delete_paths, ElementsAre()) << "already gone: nothing to delete";
  EXPECT_THAT(by_id["gone"]->left, ElementsAre());
}

// CheckDeclaration's problems, as a Status.
core::Status Checked(const core::Declaration& decl, const core::Record& record, bool had_record,
                     std::string_view machine, const HostDirs& dirs = {}) {
  core::Problems problems;
  CheckDeclaration(decl, record, had_record, machine, dirs, problems);
  return problems.ToStatus();
}

TEST_F(PlanTest, TheDeclarationIsCheckedAgainstTheRecord) {
  Declare();
  record_.generation = 6;
  EXPECT_THAT(Checked(decl_, record_, true, "m").error().message,
              HasSubstr("generation: 5 is lower than the applied generation 6"));
  EXPECT_THAT(Checked(decl_, record_, false, "other").error().message,
              HasSubstr("\"m\" is not this machine (\"other\")"));
  EXPECT_TRUE(Checked(decl_, record_, false, "m").has_value());
  // SPEC: every refusal found, not only the first.
  auto both = Checked(decl_, record_, true, "other");
  ASSERT_FALSE(both.has_value());
  EXPECT_THAT(both.error().details,
              ElementsAre(HasSubstr("field machine: \"m\" is not this machine"),
                          HasSubstr("field generation: 5 is lower")));
}

// Issue 15: a file resource and a unit_text on one unit file fought
// forever (updated, drifted, a new InvocationID every apply); an archive at
// --state-dir destroyed the record.
TEST_F(PlanTest, ADeclaredPathMayNotOverlapTheHostsOwnPlaces) {
  HostDirs dirs{"/", "/etc/systemd/system", "/var/lib/mesh-host", "/var/lib/mesh-host/artifacts"};
  auto check = [&](json web_extra, json more) {
    Declare(web_extra, more);
    return Checked(decl_, record_, false, "m", dirs);
  };
  json unit_text = {{"unit_text", "[Service]\nExecStart=/bin/web\n"}};
  json clash = {{"id", "twin"},
                {"kind", "file"},
                {"path", "/etc/systemd/system/web.service"},
                {"content", "[Service]\nExecStart=/bin/other\n"}};
  EXPECT_THAT(check(unit_text, {clash}).error().message,
              HasSubstr("resource twin, field path: \"/etc/systemd/system/web.service\" "
                        "(/etc/systemd/system/web.service) overlaps the unit file that resource "
                        "web's unit_text writes"));
  json drop_in = clash;
  drop_in["path"] = "/etc/systemd/system/web.service.d/override.conf";
  EXPECT_TRUE(check(unit_text, {drop_in}).has_value()) << "a drop-in beside it is fine";
  // ... unless the service's drop_ins writes that very drop-in: two writers.
  EXPECT_THAT(check({{"drop_ins", {{"override.conf", "[Service]\n"}}}}, {drop_in}).error().message,
              HasSubstr("overlaps a drop-in of resource web's drop_ins"));
  EXPECT_TRUE(check(json::object(), {clash}).has_value()) << "no unit_text: one writer";

  auto archive = [](std::string path) {
    return json{{"id", "b"},
                {"kind", "archive"},
                {"path", path},
                {"source", "b.tar.gz"},
                {"sha256", std::string(64, 'a')}};
  };
  EXPECT_THAT(check(json::object(), {archive("/var/lib/mesh-host")}).error().message,
              HasSubstr("overlaps the host's state directory (--state-dir /var/lib/mesh-host)"));
  EXPECT_THAT(check(json::object(), {archive("/var/lib")}).error().message,
              HasSubstr("overlaps the host's state directory"));
  EXPECT_THAT(check(json::object(), {archive("/var/lib/mesh-host/artifacts/x")}).error().message,
              HasSubstr("overlaps the host's state directory"));
  EXPECT_THAT(check(json::object(), {archive("/etc/systemd")}).error().message,
              HasSubstr("overlaps the unit directory (--unit-dir /etc/systemd/system)"));
  EXPECT_TRUE(check(json::object(), {archive("/var/lib/mesh-host-data")}).has_value())
      << "a prefix only";
  EXPECT_TRUE(check(json::object(), {archive("/opt/b")}).has_value());

  // Under another --root, paths are compared where they land.
  dirs = {"/srv/root/", "/srv/root/units", "/srv/state", "/srv/art"};
  EXPECT_THAT(check(unit_text, {archive("/units")}).error().message,
              HasSubstr("\"/units\" (/srv/root/units) overlaps the unit directory"));
  EXPECT_TRUE(check(json::object(), {archive("/srv/state")}).has_value()) << "/srv/root/srv/state";

  // A flag spelled otherwise names the same place: compared in normal
  // form, a declared file cannot land on the record through "//" or "/./".
  dirs = {"/", "/etc/systemd//system/", "/var//lib/./mesh-host/", "/var/lib/x/../mesh-host/art"};
  json record = {
      {"id", "r"}, {"kind", "file"}, {"path", "/var/lib/mesh-host/state.json"}, {"content", "{}"}};
  EXPECT_THAT(check(json::object(), {record}).error().message,
              HasSubstr("overlaps the host's state directory (--state-dir /var/lib/mesh-host)"));
  clash["path"] = "/etc/systemd/system/web.service";
  EXPECT_THAT(check(unit_text, {clash}).error().message,
              HasSubstr("overlaps the unit file that resource web's unit_text writes"));
  EXPECT_THAT(check(json::object(), {archive("/var/lib/mesh-host/art/b")}).error().message,
              HasSubstr("overlaps the host's state directory"));

  // The declaration itself: written over by a file, or by a tree over its
  // directory, the next apply would read what this one wrote. A directory
  // resource over it changes no bytes of it.
  dirs = {"/srv/root", "/srv/root/units", "/srv/state",
          "/srv/art",  std::nullopt,      "/srv/root/etc/mesh/./d.json"};
  json self = {{"id", "self"}, {"kind", "file"}, {"path", "/etc/mesh/d.json"}, {"content", "{}"}};
  EXPECT_THAT(check(json::object(), {self}).error().message,
              HasSubstr("\"/etc/mesh/d.json\" (/srv/root/etc/mesh/d.json) overlaps the declaration "
                        "itself (--declaration /srv/root/etc/mesh/d.json)"));
  EXPECT_THAT(check(json::object(), {archive("/etc/mesh")}).error().message,
              HasSubstr("overlaps the declaration itself"));
  json dir = {{"id", "d"}, {"kind", "directory"}, {"path", "/etc/mesh"}};
  EXPECT_TRUE(check(json::object(), {dir}).has_value());
  self["path"] = "/etc/mesh/other.json";
  EXPECT_TRUE(check(json::object(), {self}).has_value());

  // Reached through symlinks: a declared path is written with none
  // followed, so it lands where the resolved root leads. The host's own
  // places are compared where they resolve too, and named as given.
  dirs = {"/",          "/etc/systemd/system",   "/var/lib/mesh-host", "/var/lib/mesh-host/art",
          std::nullopt, "/etc/mesh/current.json"};
  dirs.resolved = {"/", "/etc/systemd/system", "/srv/state", "/srv/state/art",
                   "/etc/mesh/gen-12.json"};
  self["path"] = "/etc/mesh/gen-12.json";
  EXPECT_THAT(
      check(json::object(), {self}).error().message,
      HasSubstr("\"/etc/mesh/gen-12.json\" (/etc/mesh/gen-12.json) overlaps the declaration "
                "itself (--declaration /etc/mesh/current.json, which is "
                "/etc/mesh/gen-12.json)"));
  EXPECT_THAT(check(json::object(), {archive("/srv")}).error().message,
              HasSubstr("overlaps the host's state directory (--state-dir /var/lib/mesh-host, "
                        "which is /srv/state)"));
  self["path"] = "/etc/mesh/current.json";
  EXPECT_THAT(check(json::object(), {self}).error().message,
              HasSubstr("overlaps the declaration itself (--declaration /etc/mesh/current.json)"))
      << "the link itself, as given";
  std::string both = check(json::object(), {archive("/etc/mesh")}).error().message;
  EXPECT_EQ(both.find("resource b,"), both.rfind("resource b,"))
      << "refused once, as given, though its resolved place overlaps too: " << both;
  dirs.resolved.root = "/mnt/real";
  self["path"] = "/etc/mesh/gen-12.json";
  EXPECT_TRUE(check(json::object(), {self}).has_value())
      << "under a root that resolves elsewhere, it lands at /mnt/real/etc/mesh/gen-12.json";

  // The links on the way to it: whatever is put at one re-points the next
  // read (current.json -> mid.json -> gen-12.json; a file at mid.json was
  // applied, then read as the next declaration).
  dirs.resolved.root = "/";
  dirs.resolved.declaration_links = {"/etc/mesh/current.json", "/etc/mesh/mid.json", "/opt/gdir"};
  const std::string through =
      "overlaps a link on the way to the declaration (--declaration /etc/mesh/current.json, "
      "through ";
  self["path"] = "/etc/mesh/mid.json";
  EXPECT_THAT(
      check(json::object(), {self}).error().message,
      HasSubstr("\"/etc/mesh/mid.json\" (/etc/mesh/mid.json) " + through + "/etc/mesh/mid.json)"));
  json link = {{"id", "l"}, {"kind", "symlink"}, {"path", "/opt/gdir"}, {"target", "/tmp/x"}};
  EXPECT_THAT(check(json::object(), {link}).error().message, HasSubstr(through + "/opt/gdir)"));
  dir["path"] = "/opt/gdir";
  EXPECT_THAT(check(json::object(), {dir}).error().message, HasSubstr(through + "/opt/gdir)"));
  EXPECT_THAT(check(json::object(), {archive("/opt")}).error().message,
              HasSubstr(through + "/opt/gdir)"));
  self["path"] = "/etc/mesh/mid.json.bak";
  EXPECT_TRUE(check(json::object(), {self}).has_value()) << "beside a link: fine";
}

// A directory resource that opened the way to the declaration to other
// users was applied, and every apply after it was refused: the host reads
// no declaration that others could swap (FileDeclaration), so it could not
// apply the one that mended it.
TEST_F(PlanTest, ADirectoryOnTheWayToTheDeclarationStaysRootsAlone) {
  HostDirs dirs{"/srv/root", "/srv/root/units", "/srv/state",
                "/srv/art",  std::nullopt,      "/srv/root/etc/mesh/d.json"};
  auto check = [&](json more) {
    Declare(json::object(), more);
    return Checked(decl_, record_, false, "m", dirs);
  };
  auto directory = [](std::string path, json extra) {
    json d = {{"id", "d"}, {"kind", "directory"}, {"path", path}};
    d.update(extra);
    return d;
  };
  EXPECT_THAT(
      check({directory("/etc/mesh", {{"mode", "0777"}})}).error().message,
      HasSubstr("resource d, field mode: \"0777\" lets users other than root change "
                "/srv/root/etc/mesh, a directory on the way to the declaration (--declaration "
                "/srv/root/etc/mesh/d.json), which the host then refuses to read"));
  EXPECT_THAT(check({directory("/etc", {{"mode", "0775"}})}).error().message,
              HasSubstr("field mode: \"0775\" lets users other than root change /srv/root/etc,"));
  EXPECT_THAT(check({directory("/etc/mesh", {{"owner", "nobody"}})}).error().message,
              HasSubstr("resource d, field owner: \"nobody\" would own /srv/root/etc/mesh, a "
                        "directory on the way to the declaration"));
  EXPECT_TRUE(check({directory("/etc/mesh", {{"mode", "0750"}, {"group", "adm"}})}).has_value())
      << "no write but its owner's";
  EXPECT_TRUE(check({directory("/etc/mesh", {{"mode", "1777"}})}).has_value())
      << "sticky: others cannot rename root's entries";
  EXPECT_TRUE(check({directory("/etc/mesh", {{"owner", "0"}})}).has_value()) << "root by uid";
  EXPECT_TRUE(check({directory("/etc/other", {{"mode", "0777"}})}).has_value()) << "beside it";
  EXPECT_TRUE(check({directory("/etc/mesh/sub", {{"mode", "0777"}})}).has_value()) << "below it";

  // The way as it resolves, through links.
  dirs.root = "/";
  dirs.resolved.root = "/";
  dirs.resolved.declaration = "/opt/real/d.json";
  dirs.resolved.declaration_links = {"/srv/root/etc/mesh/d.json"};
  EXPECT_THAT(check({directory("/opt", {{"mode", "0777"}})}).error().message,
              HasSubstr("a directory on the way to the declaration (--declaration "
                        "/srv/root/etc/mesh/d.json, which is /opt/real/d.json)"));

  // The verify key's way, so too. A signed declaration is read wherever it
  // lies: its way is free.
  dirs.verify_key = "/srv/keys/mesh.pub";
  EXPECT_TRUE(check({directory("/opt", {{"mode", "0777"}})}).has_value())
      << "signed: read from a directory anyone may own";
  EXPECT_THAT(check({directory("/srv/keys", {{"mode", "0777"}})}).error().message,
              HasSubstr("a directory on the way to the verify key (--verify-key "
                        "/srv/keys/mesh.pub)"));
  dirs.resolved.verify_key_links = {"/var/k/mesh.pub"};
  EXPECT_THAT(check({directory("/var/k", {{"owner", "daemon"}})}).error().message,
              HasSubstr("a directory on the way to the verify key"));

  // Nor may a declaration write the key, a link on its way, or the
  // signature the next apply reads.
  auto file = [](std::string path) {
    return json{{"id", "f"}, {"kind", "file"}, {"path", path}, {"content", "x"}};
  };
  EXPECT_THAT(check({file("/srv/keys/mesh.pub")}).error().message,
              HasSubstr("\"/srv/keys/mesh.pub\" (/srv/keys/mesh.pub) overlaps the verify key "
                        "(--verify-key /srv/keys/mesh.pub)"));
  EXPECT_THAT(check({file("/var/k/mesh.pub")}).error().message,
              HasSubstr("overlaps a link on the way to the verify key (--verify-key "
                        "/srv/keys/mesh.pub, through /var/k/mesh.pub)"));
  EXPECT_THAT(check({file("/srv/root/etc/mesh/d.json.minisig")}).error().message,
              HasSubstr("overlaps the declaration's signature "
                        "(/srv/root/etc/mesh/d.json.minisig)"));
  EXPECT_TRUE(check({file("/srv/keys/other.pub")}).has_value()) << "beside it";
}

}  // namespace
}  // namespace mesh::reconcile
