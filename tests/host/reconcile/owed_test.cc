// SPEC "Reconcile" 7, nothing owed is forgotten: an apply cut short at any
// step, a job systemd refuses, a failed daemon-reload, a lost bus, a failed
// second look — the next apply still owes what was not confirmed, does it
// and says so. Judged by what each fake daemon loaded (the configuration
// on disk when systemd last started, restarted or reloaded it), not by
// what the host reports.
#include <gmock/gmock.h>

#include <map>

#include "tests/fakes/faulty_file_system.h"
#include "tests/fakes/kill_switch.h"
#include "tests/host/reconcile/reconciler_fixture.h"

namespace mesh::reconcile {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace std::chrono_literals;
using Behavior = fakes::FakeServiceManager::Behavior;

class OwedTest : public ReconcilerTest {
 protected:
  void SetUp() override {
    ReconcilerTest::SetUp();
    root_faulty_ = std::make_unique<fakes::FaultyFileSystem>(*root_);
    units_faulty_ = std::make_unique<fakes::FaultyFileSystem>(*units_);
    for (auto* f : {root_faulty_.get(), units_faulty_.get()}) f->kill = &kill_;
    store_.kill = &kill_;
    services_.kill = &kill_;
    // What a daemon loaded: its config file and its unit file, as they were
    // on disk when systemd (re)started or reloaded it.
    services_.on_load = [this](const std::string& unit) { loaded_[unit] = OnDisk(unit); };
  }

  ApplyReport Apply(const json& decl, bool dry_run = false) {
    ReconcilerPorts ports = Ports();
    ports.root = root_faulty_.get();
    ports.units = units_faulty_.get();
    ReconcilerOptions options = Options();
    options.dry_run = dry_run;
    return Reconciler(ports, options).Apply(decl.dump());
  }

  std::string OnDisk(const std::string& unit) const {
    std::string conf = Root("/etc/" + unit.substr(0, unit.find('.')) + ".conf");
    std::string text = dir_.Sub("units/" + unit);
    std::string drop_in = dir_.Sub("units/" + unit + ".d/10-env.conf");
    return (testing::Exists(conf) ? testing::ReadText(conf) : "-") + "|" +
           (testing::Exists(text) ? testing::ReadText(text) : "-") + "|" +
           (testing::Exists(drop_in) ? testing::ReadText(drop_in) : "-");
  }

  // `web` restarts on its config and `cache` reloads on its; both have unit
  // texts that change with the version too.
  static json Versioned(const std::string& v, uint64_t generation, bool web_text_changes = true) {
    auto conf = [&](const std::string& name) {
      return json{{"id", name + ".conf"},
                  {"kind", "file"},
                  {"path", "/etc/" + name + ".conf"},
                  {"content", name + " " + v}};
    };
    auto svc = [&](const std::string& name, const char* on, bool text_changes) {
      return json{{"id", name},
                  {"kind", "service"},
                  {"unit", name + ".service"},
                  {"state", "running"},
                  {"unit_text", "[Service]\nExecStart=/bin/" + name +
                                    (text_changes ? " --v=" + v : std::string()) + "\n"},
                  {on, {name + ".conf"}}};
    };
    return Decl({conf("web"), svc("web", "restart_on", web_text_changes), conf("cache"),
                 svc("cache", "reload_on", false)},
                generation);
  }

  std::unique_ptr<fakes::FaultyFileSystem> root_faulty_, units_faulty_;
  fakes::KillSwitch kill_;
  std::map<std::string, std::string> loaded_;
};

// The intent is on disk before the first byte of the apply is: a kill at
// the first write cannot lose the restart that write makes owed.
TEST_F(OwedTest, WhatIsOwedIsSavedBeforeTheFirstWrite) {
  services_.AddUnit("web.service", {});
  services_.AddUnit("cache.service", {});
  ASSERT_EQ(Apply(Versioned("a", 1)).result, ApplyResult::kOk);
  bool checked = false;
  // Files are staged (their first byte written) before anything is placed.
  root_faulty_->before_stage = [&](const std::string&) {
    if (checked) return;
    checked = true;
    core::Intent saved = store_.Owed();
    EXPECT_TRUE(saved.applying);
    ASSERT_TRUE(saved.owed.contains("web"));
    EXPECT_EQ(saved.owed["web"].action, core::UnitAction::kRestart);
    EXPECT_TRUE(saved.owed["web"].daemon_reload);
    ASSERT_TRUE(saved.owed.contains("cache"));
    EXPECT_EQ(saved.owed["cache"].action, core::UnitAction::kReload);
    EXPECT_EQ(saved.owed["cache"].since, 2u);
  };
  ASSERT_EQ(Apply(Versioned("b", 2)).result, ApplyResult::kOk);
  root_faulty_->before_stage = nullptr;
  EXPECT_TRUE(checked);
  EXPECT_TRUE(store_.Owed().empty()) << "everything confirmed: nothing owed, no file";
}

// Issue 15: killed after a new cron job and a credential's temporary file
// landed, then a generation that no longer declares them. Before, the
// cron job stayed for ever (never recorded, never pruned) and the
// temporary holding the secret was never swept (its directory was neither
// declared nor recorded).
TEST_F(OwedTest, AnApplyCutShortLeavesNoOrphans) {
  json conf = {{"id", "a.conf"}, {"kind", "file"}, {"path", "/etc/a.conf"}, {"content", "a"}};
  ASSERT_EQ(Apply(Decl({conf}, 1)).result, ApplyResult::kOk);
  json cron = {{"id", "job"}, {"kind", "file"}, {"path", "/etc/cron.d/job"}, {"content", "* * *"}};
  json key = {
      {"id", "key"}, {"kind", "credential"}, {"path", "/etc/app/key"}, {"content", "hunter2"}};
  json svc = {{"id", "svc"},
              {"kind", "service"},
              {"unit", "new.service"},
              {"state", "stopped"},
              {"unit_text", "[Service]\nExecStart=/bin/new\n"}};
  services_.AddUnit("new.service", {});
  std::string temporary = Root("/etc/app/.key.mesh-host-tmp.4242.0");
  root_faulty_->before_write = [&](const std::string& path) {
    if (path != "/etc/cron.d/job") return;  // this write lands; the key's does not
    // What a SIGKILL inside the key's write leaves: its temporary.
    std::filesystem::create_directories(Root("/etc/app"));
    testing::WriteText(temporary, "hunter2", 0600);
    kill_.KillAt(0);
  };
  Apply(Decl({conf, svc, cron, key}, 2));
  root_faulty_->before_write = nullptr;
  kill_.Disarm();
  ASSERT_TRUE(testing::Exists(Root("/etc/cron.d/job")));
  ASSERT_TRUE(testing::Exists(dir_.Sub("units/new.service")));
  ASSERT_FALSE(testing::Exists(Root("/etc/app/key")));

  ApplyReport r = Apply(Decl({conf}, 3));
  EXPECT_EQ(r.result, ApplyResult::kOk) << r.error;
  EXPECT_FALSE(testing::Exists(Root("/etc/cron.d/job")));
  EXPECT_FALSE(testing::Exists(temporary)) << "the secret's temporary is swept";
  EXPECT_FALSE(testing::Exists(dir_.Sub("units/new.service")));
  EXPECT_THAT(r.warnings, ::testing::Contains(
                              HasSubstr("removed /etc/cron.d/job: created by an apply cut short")));
  EXPECT_TRUE(store_.Owed().empty());
}

// The generation the record holds applied again after a cut-short apply:
// its orphan removed, nothing else to record. What that apply had named as
// created must not stay named, or no later apply is proven a no-op again.
TEST_F(OwedTest, AnOrphanRemovedUnderTheRecordedGenerationLeavesNothingNamed) {
  json conf = {{"id", "a.conf"}, {"kind", "file"}, {"path", "/etc/a.conf"}, {"content", "a"}};
  json cron = {{"id", "job"}, {"kind", "file"}, {"path", "/etc/cron.d/job"}, {"content", "* * *"}};
  ASSERT_EQ(Apply(Decl({conf}, 1)).result, ApplyResult::kOk);
  root_faulty_->before_write = [&](const std::string& path) {
    if (path == "/etc/cron.d/job") kill_.KillAt(0);  // this write lands; nothing after
  };
  Apply(Decl({conf, cron}, 2));
  root_faulty_->before_write = nullptr;
  kill_.Disarm();
  ASSERT_TRUE(testing::Exists(Root("/etc/cron.d/job")));
  ApplyReport r = Apply(Decl({conf}, 1));
  EXPECT_EQ(r.result, ApplyResult::kOk) << r.error;
  EXPECT_FALSE(testing::Exists(Root("/etc/cron.d/job")));
  EXPECT_TRUE(store_.Owed().empty()) << "still named: " << store_.intent.value_or("");
}

// A write that fails on every apply of the same declaration (a full disk)
// leaves nothing at its path. Its name must not stay in the intent: once
// the operator puts their own file there and the mesh drops the resource,
// it would be taken for the host's leftover and deleted.
TEST_F(OwedTest, AWriteThatKeepsFailingLeavesNothingNamed) {
  json conf = {{"id", "a.conf"}, {"kind", "file"}, {"path", "/etc/a.conf"}, {"content", "a"}};
  json data = {{"id", "data"}, {"kind", "file"}, {"path", "/srv/data"}, {"content", "x"}};
  ASSERT_EQ(Apply(Decl({conf}, 1)).result, ApplyResult::kOk);
  root_faulty_->FailWrites("/srv/data", ENOSPC);
  for (int i = 0; i < 3; ++i) {  // as the daemon applies it, interval after interval
    ASSERT_EQ(Apply(Decl({conf, data}, 2)).result, ApplyResult::kFailed);
    EXPECT_FALSE(store_.Owed().Creating()) << "apply " << i << ": " << store_.intent.value_or("");
  }
  root_faulty_->Heal();
  std::filesystem::create_directories(Root("/srv"));
  testing::WriteText(Root("/srv/data"), "the operator's");
  Apply(Decl({conf}, 3));
  ASSERT_TRUE(testing::Exists(Root("/srv/data")));
  EXPECT_EQ(testing::ReadText(Root("/srv/data")), "the operator's");
}

// Review of issue 15: a second apply cut short found the first one's
// creation on disk (not missing) and its intent dropped it: the third
// apply then took it for "there before the host" and never pruned it.
TEST_F(OwedTest, TwoAppliesCutShortInARowStillNameWhatTheFirstCreated) {
  json conf = {{"id", "a.conf"}, {"kind", "file"}, {"path", "/etc/a.conf"}, {"content", "a"}};
  json cron = {{"id", "job"}, {"kind", "file"}, {"path", "/etc/cron.d/job"}, {"content", "* * *"}};
  json other = {{"id", "b.conf"}, {"kind", "file"}, {"path", "/etc/b.conf"}, {"content", "b"}};
  ASSERT_EQ(Apply(Decl({conf}, 1)).result, ApplyResult::kOk);
  root_faulty_->before_write = [&](const std::string& path) {
    if (path == "/etc/cron.d/job") kill_.KillAt(0);  // the cron job lands; nothing after
  };
  Apply(Decl({conf, cron}, 2));
  root_faulty_->before_write = [&](const std::string& path) {
    if (path == "/etc/b.conf") kill_.KillAt(0);
  };
  kill_.Disarm();
  Apply(Decl({conf, cron, other}, 3));  // killed again, at its first write
  root_faulty_->before_write = nullptr;
  kill_.Disarm();
  ASSERT_EQ(Apply(Decl({conf, cron, other}, 3)).result, ApplyResult::kOk);
  ApplyReport r = Apply(Decl({conf, other}, 4));
  EXPECT_FALSE(testing::Exists(Root("/etc/cron.d/job"))) << "created by the host: pruned";
}

// Review of issue 15: an orphan is removed only when it is still what the
// cut-short apply was creating; a directory an operator put where the apply
// was writing a file is left, and said so.
TEST_F(OwedTest, AnOrphanReplacedBySomethingElseIsLeft) {
  json conf = {{"id", "a.conf"}, {"kind", "file"}, {"path", "/etc/a.conf"}, {"content", "a"}};
  json data = {{"id", "data"}, {"kind", "file"}, {"path", "/srv/data"}, {"content", "x"}};
  ASSERT_EQ(Apply(Decl({conf}, 1)).result, ApplyResult::kOk);
  root_faulty_->before_write = [&](const std::string& path) {
    if (path == "/srv/data") kill_.KillAt(0);  // this write lands; nothing after
  };
  Apply(Decl({conf, data}, 2));
  root_faulty_->before_write = nullptr;
  kill_.Disarm();
  std::filesystem::remove(Root("/srv/data"));
  std::filesystem::create_directories(Root("/srv/data"));
  testing::WriteText(Root("/srv/data/mine"), "the operator's");
  ApplyReport r = Apply(Decl({conf}, 3));
  EXPECT_EQ(testing::ReadText(Root("/srv/data/mine")), "the operator's");
  EXPECT_THAT(r.warnings, ::testing::Contains(HasSubstr("left /srv/data: an apply cut short")));
}

// The same for a unit file: the operator masked the unit (a link to
// /dev/null) where a cut-short apply was writing its unit file. The mask
// is theirs, and stays.
TEST_F(OwedTest, AUnitFileMaskedSinceIsLeft) {
  json conf = {{"id", "a.conf"}, {"kind", "file"}, {"path", "/etc/a.conf"}, {"content", "a"}};
  json svc = {{"id", "svc"},
              {"kind", "service"},
              {"unit", "new.service"},
              {"state", "stopped"},
              {"unit_text", "[Service]\nExecStart=/bin/new\n"}};
  services_.AddUnit("new.service", {});
  ASSERT_EQ(Apply(Decl({conf}, 1)).result, ApplyResult::kOk);
  units_faulty_->before_write = [&](const std::string& path) {
    if (path == "/new.service") kill_.KillAt(0);  // this write lands; nothing after
  };
  Apply(Decl({conf, svc}, 2));
  units_faulty_->before_write = nullptr;
  kill_.Disarm();
  std::string unit_file = dir_.Sub("units/new.service");
  ASSERT_TRUE(testing::Exists(unit_file));
  std::filesystem::remove(unit_file);
  std::filesystem::create_symlink("/dev/null", unit_file);
  ApplyReport r = Apply(Decl({conf}, 3));
  EXPECT_TRUE(std::filesystem::is_symlink(unit_file)) << "the operator's mask is left";
  EXPECT_THAT(r.warnings, ::testing::Contains(HasSubstr("left unit file new.service")));
}

// Killed after it enabled and started a new unit, before its record was
// saved; the next declaration drops that unit. What the cut-short apply
// started is the host's, and goes as any unit the host wrote: disabled,
// stopped, its unit file deleted — not its file deleted under a daemon
// left running with no definition and no record.
TEST_F(OwedTest, AUnitACutShortApplyStartedIsStoppedWhenDropped) {
  json conf = {{"id", "a.conf"}, {"kind", "file"}, {"path", "/etc/a.conf"}, {"content", "a"}};
  json svc = {
      {"id", "svc"},
      {"kind", "service"},
      {"unit", "new.service"},
      {"state", "running"},
      {"enabled", true},
      {"unit_text", "[Service]\nExecStart=/bin/new\n[Install]\nWantedBy=multi-user.target\n"}};
  services_.AddUnit("new.service", {});
  ASSERT_EQ(Apply(Decl({conf}, 1)).result, ApplyResult::kOk);
  store_.fail_saves = true;  // all done, then the record not saved
  Apply(Decl({conf, svc}, 2));
  store_.fail_saves = false;
  ASSERT_TRUE(services_.ReadUnit("new.service")->Running());
  ASSERT_EQ(services_.ReadUnit("new.service")->unit_file_state, "enabled");
  ApplyReport r = Apply(Decl({conf}, 3));
  EXPECT_EQ(r.result, ApplyResult::kOk);
  EXPECT_THAT(Outcomes(r), ElementsAre("unchanged", "removed"));
  EXPECT_EQ(services_.StopsOf("new.service"), 1) << "left running with no unit file";
  EXPECT_EQ(services_.ReadUnit("new.service")->unit_file_state, "disabled");
  EXPECT_FALSE(testing::Exists(dir_.Sub("units/new.service")));
  EXPECT_EQ(r.outcomes[1].id, "cut-short~new.service");
  EXPECT_EQ(r.outcomes[1].detail,
            "stopped new.service (not waited on), disabled new.service, deleted unit file "
            "new.service");
  EXPECT_FALSE(store_.Load().value()->resources.contains("cut-short~new.service"))
      << "recorded only while its removal waits";
}

// Killed after the record was saved but before the intent forgot what the
// apply created: the created file is recorded, so it is the host's (pruned
// when dropped), not "there before the host".
TEST_F(OwedTest, ACreatedFileIsTheHostsThoughTheRecordWasLost) {
  json conf = {{"id", "a.conf"}, {"kind", "file"}, {"path", "/etc/a.conf"}, {"content", "a"}};
  json cron = {{"id", "job"}, {"kind", "file"}, {"path", "/etc/cron.d/job"}, {"content", "* * *"}};
  ASSERT_EQ(Apply(Decl({conf}, 1)).result, ApplyResult::kOk);
  store_.fail_saves = true;  // written, then the record not saved
  Apply(Decl({conf, cron}, 2));
  store_.fail_saves = false;
  ASSERT_TRUE(testing::Exists(Root("/etc/cron.d/job")));
  ASSERT_EQ(Apply(Decl({conf, cron}, 2)).result, ApplyResult::kOk);
  ApplyReport r = Apply(Decl({conf}, 3));
  EXPECT_THAT(Outcomes(r), ElementsAre("unchanged", "removed"));
  EXPECT_FALSE(testing::Exists(Root("/etc/cron.d/job"))) << "created by the host: pruned";
}

// The apply killed before each of its steps in turn (writes, flushes,
// intent and record saves, daemon-reload, every job): the next apply leaves
// every daemon running the declared configuration, and the one after finds
// nothing to do.
TEST_F(OwedTest, KilledAtEveryStepTheNextApplyPaysWhatIsOwed) {
  services_.AddUnit("web.service", {});
  services_.AddUnit("cache.service", {});
  ASSERT_EQ(Apply(Versioned("a", 1)).result, ApplyResult::kOk);
  uint64_t generation = 1;
  int kills = 0;
  for (int step = 0;; ++step) {
    std::string v = step % 2 == 0 ? "b" : "a";
    json decl = Versioned(v, ++generation);
    kill_.KillAt(step);
    Apply(decl);
    bool killed = kill_.Killed();
    kill_.Disarm();
    ApplyReport next = Apply(decl);
    SCOPED_TRACE("killed before step " + std::to_string(step));
    EXPECT_EQ(next.result, ApplyResult::kOk) << next.error;
    for (const char* unit : {"web.service", "cache.service"}) {
      EXPECT_EQ(loaded_[unit], OnDisk(unit)) << unit << " runs a configuration it never loaded";
    }
    EXPECT_THAT(OnDisk("web.service"), HasSubstr("web " + v));
    EXPECT_THAT(Outcomes(Apply(decl)),
                ElementsAre("unchanged", "unchanged", "unchanged", "unchanged"));
    if (!killed) break;  // the apply outlived every step: all were tried
    ++kills;
  }
  EXPECT_GE(kills, 8) << "writes, flushes, intent, reload, jobs, record";
}

// A drop-in the host adds, the apply killed before each of its steps in
// turn, then the generation before it declared again. The drop-in was never
// recorded; were it not named while being created, the next apply would
// prove the old generation from the record (`unchanged`) while web ran with
// an undeclared drop-in, or take it for the operator's and never delete it.
TEST_F(OwedTest, ADropInAddedByAKilledApplyIsTheHostsToRemove) {
  services_.AddUnit("web.service", {});
  services_.AddUnit("cache.service", {});
  uint64_t generation = 0;
  auto with_drop_in = [&](uint64_t g) {
    json decl = Versioned("a", g);
    decl["resources"][1]["drop_ins"] = {{"10-env.conf", "[Service]\nEnvironment=A=1\n"}};
    return decl;
  };
  int kills = 0;
  for (int step = 0;; ++step) {
    SCOPED_TRACE("killed before step " + std::to_string(step));
    ASSERT_EQ(Apply(Versioned("a", ++generation)).result, ApplyResult::kOk);
    kill_.KillAt(step);
    Apply(with_drop_in(++generation));
    bool killed = kill_.Killed();
    kill_.Disarm();
    // Back to the generation without it.
    json before = Versioned("a", ++generation);
    ApplyReport next = Apply(before);
    EXPECT_EQ(next.result, ApplyResult::kOk) << next.error;
    EXPECT_FALSE(testing::Exists(dir_.Sub("units/web.service.d/10-env.conf")));
    EXPECT_EQ(loaded_["web.service"], OnDisk("web.service"))
        << "web runs a drop-in that is not declared";
    EXPECT_THAT(Outcomes(Apply(before)),
                ElementsAre("unchanged", "unchanged", "unchanged", "unchanged"));
    EXPECT_TRUE(store_.Owed().empty()) << "nothing left named: the next no-op is proven again";
    if (!killed) break;  // the apply outlived every step: all were tried
    ++kills;
  }
  EXPECT_GE(kills, 6) << "intent, write, flush, reload, job, record";
  // The drop-in written, its record not saved (a full disk); then the
  // generation before, whose intent cannot be saved: that apply changes
  // nothing, the drop-in included, as it says; the next one removes it
  // and restarts web.
  ASSERT_EQ(Apply(Versioned("a", ++generation)).result, ApplyResult::kOk);
  store_.fail_saves = true;
  Apply(with_drop_in(++generation));
  store_.fail_saves = false;
  ASSERT_TRUE(testing::Exists(dir_.Sub("units/web.service.d/10-env.conf")));
  store_.fail_intent_saves = true;
  ApplyReport unsaved = Apply(Versioned("a", ++generation));
  store_.fail_intent_saves = false;
  EXPECT_THAT(unsaved.error, HasSubstr("intent not saved"));
  EXPECT_TRUE(unsaved.changed_nothing) << "its outcomes are what it would have done";
  EXPECT_TRUE(testing::Exists(dir_.Sub("units/web.service.d/10-env.conf")))
      << "an apply that could not write down what it owes changed the machine";
  ApplyReport removed = Apply(Versioned("a", generation));
  EXPECT_EQ(removed.result, ApplyResult::kOk) << removed.error;
  EXPECT_FALSE(removed.changed_nothing);
  EXPECT_FALSE(testing::Exists(dir_.Sub("units/web.service.d/10-env.conf")));
  EXPECT_EQ(loaded_["web.service"], OnDisk("web.service"));
  EXPECT_THAT(
      core::FormatOutcomeLine(removed.outcomes[1]),
      HasSubstr("deleted drop-in web.service.d/10-env.conf (written by an apply cut short"));
  // Killed, then the same generation applied whole: the drop-in is the
  // host's, and goes when it is no longer declared.
  for (int step = 0; step < 12; ++step) {
    SCOPED_TRACE("killed before step " + std::to_string(step) + ", then applied again");
    ASSERT_EQ(Apply(Versioned("a", ++generation)).result, ApplyResult::kOk);
    kill_.KillAt(step);
    Apply(with_drop_in(++generation));
    kill_.Disarm();
    ASSERT_EQ(Apply(with_drop_in(generation)).result, ApplyResult::kOk);
    ApplyReport dropped = Apply(Versioned("a", ++generation));
    EXPECT_EQ(dropped.result, ApplyResult::kOk) << dropped.error;
    EXPECT_FALSE(testing::Exists(dir_.Sub("units/web.service.d/10-env.conf")))
        << core::FormatOutcomeLine(dropped.outcomes[1]);
    EXPECT_EQ(loaded_["web.service"], OnDisk("web.service"));
  }
}

// Review of issue 38: the kill campaign above walks writes and jobs, never
// a removal. A dropped unit of the host's (unit_text, enabled, a drop-in)
// is stopped, disabled, and its files deleted, the apply killed before
// each of those steps in turn: the next apply finishes the removal (the
// unit stopped and disabled, no file of it left) and the one after finds
// nothing to do.
TEST_F(OwedTest, KilledAtEveryStepOfARemovalTheNextApplyFinishesIt) {
  services_.AddUnit("gone.service", {});
  json gone = {{"id", "gone"},
               {"kind", "service"},
               {"unit", "gone.service"},
               {"state", "running"},
               {"enabled", true},
               {"unit_text", "[Service]\nExecStart=/bin/gone\n[Install]\nWantedBy=x\n"},
               {"drop_ins", {{"10-env.conf", "[Service]\nEnvironment=A=1\n"}}}};
  uint64_t generation = 0;
  int kills = 0;
  for (int step = 0;; ++step) {
    SCOPED_TRACE("killed before step " + std::to_string(step));
    ASSERT_EQ(Apply(Decl({gone}, ++generation)).result, ApplyResult::kOk);
    ASSERT_TRUE(services_.ReadUnit("gone.service")->Running());
    json dropped = Decl(json::array(), ++generation);
    kill_.KillAt(step);
    Apply(dropped);
    bool killed = kill_.Killed();
    kill_.Disarm();
    ApplyReport next = Apply(dropped);
    EXPECT_EQ(next.result, ApplyResult::kOk) << next.error;
    EXPECT_FALSE(services_.ReadUnit("gone.service")->Running());
    EXPECT_EQ(services_.ReadUnit("gone.service")->unit_file_state, "disabled");
    EXPECT_FALSE(testing::Exists(dir_.Sub("units/gone.service")));
    EXPECT_FALSE(testing::Exists(dir_.Sub("units/gone.service.d/10-env.conf")));
    EXPECT_TRUE(Apply(dropped).outcomes.empty()) << "nothing left to do";
    if (!killed) break;  // the removal outlived every step
    ++kills;
  }
  EXPECT_GE(kills, 4) << "intent, stop, disable, files, record";
}

// The kill that issue 13 reproduced: config written, restart never asked.
// The next apply finds the file matching and still restarts, saying why.
TEST_F(OwedTest, KilledBetweenWriteAndRestartIsNotUnchanged) {
  services_.AddUnit("web.service", {});
  services_.AddUnit("cache.service", {});
  ASSERT_EQ(Apply(Versioned("a", 1, false)).result, ApplyResult::kOk);
  root_faulty_->before_write = [&](const std::string& path) {
    if (path == "/etc/web.conf") kill_.KillAt(0);  // this write lands; nothing after
  };
  Apply(Versioned("b", 2, false));
  root_faulty_->before_write = nullptr;
  kill_.Disarm();
  EXPECT_EQ(testing::ReadText(Root("/etc/web.conf")), "web b");
  EXPECT_THAT(loaded_["web.service"], HasSubstr("web a"));
  ApplyReport r = Apply(Versioned("b", 2, false));
  EXPECT_THAT(Outcomes(r), ElementsAre("unchanged", "restarted", "updated", "reloaded"));
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[1]),
            "restarted web (service): restart_on web.conf changed (pending since generation 2); "
            "web.service active (running)");
  EXPECT_THAT(loaded_["web.service"], HasSubstr("web b"));
}

// A reload systemd refuses (no ExecReload) fails the apply — and the next
// one, until it is done: never `unchanged` while the daemon runs the old
// configuration.
TEST_F(OwedTest, ARefusedReloadStaysOwed) {
  services_.AddUnit("web.service", {});
  services_.AddUnit("cache.service", {});
  services_.RefuseReload("cache.service");
  ASSERT_EQ(Apply(Versioned("a", 1)).result, ApplyResult::kOk);
  for (int i = 0; i < 2; ++i) {
    ApplyReport r = Apply(Versioned("b", 2));
    EXPECT_EQ(r.result, ApplyResult::kFailed);
    EXPECT_EQ(r.outcomes[3].outcome, core::Outcome::kFailed);
    EXPECT_THAT(r.outcomes[3].detail, HasSubstr("JobTypeNotApplicable"));
    EXPECT_THAT(r.outcomes[3].detail,
                HasSubstr("(cache.service has no ExecReload=, so systemd cannot reload it: give "
                          "it one, or name what it reads in restart_on instead of reload_on)"));
    if (i == 1) {
      EXPECT_THAT(r.outcomes[3].detail, HasSubstr("reload pending since generation 2"));
    }
  }
  EXPECT_EQ(store_.Owed().owed.at("cache").action, core::UnitAction::kReload);
  // The way out: the operator moves the dependency to restart_on; the debt
  // is paid with a restart.
  json decl = Versioned("b", 3);
  decl["resources"][3].erase("reload_on");
  decl["resources"][3]["restart_on"] = {"cache.conf"};
  ApplyReport fixed = Apply(decl);
  EXPECT_EQ(fixed.outcomes[3].outcome, core::Outcome::kRestarted) << fixed.outcomes[3].detail;
  EXPECT_THAT(fixed.outcomes[3].detail, HasSubstr("pending since generation 2"));
  EXPECT_EQ(loaded_["cache.service"], OnDisk("cache.service"));
  EXPECT_TRUE(store_.Owed().empty());
}

// A daemon-reload systemd refuses (a full /run, say) fails every unit whose
// new definition it was to load — none is restarted onto the old one — and
// is tried again by the next apply, which then restarts.
TEST_F(OwedTest, AFailedDaemonReloadFailsTheUnitsAndIsRetried) {
  services_.AddUnit("web.service", {});
  services_.AddUnit("cache.service", {});
  ASSERT_EQ(Apply(Versioned("a", 1)).result, ApplyResult::kOk);
  int starts = services_.StartsOf("web.service");
  services_.refuse_daemon_reload = "Refusing to reload, not enough space available on /run";
  ApplyReport r = Apply(Versioned("b", 2));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_FALSE(r.daemon_reloaded);
  EXPECT_EQ(r.outcomes[1].outcome, core::Outcome::kFailed);
  EXPECT_THAT(r.outcomes[1].detail,
              HasSubstr("not restarted: daemon-reload failed (Reload: "
                        "org.freedesktop.DBus.Error.Failed: Refusing to reload"));
  EXPECT_EQ(services_.StartsOf("web.service"), starts);
  EXPECT_TRUE(store_.Owed().owed.at("web").daemon_reload);

  services_.refuse_daemon_reload.clear();
  ApplyReport again = Apply(Versioned("b", 2));
  EXPECT_EQ(again.result, ApplyResult::kOk);
  EXPECT_TRUE(again.daemon_reloaded);
  EXPECT_EQ(again.outcomes[1].outcome, core::Outcome::kRestarted);
  EXPECT_THAT(again.outcomes[1].detail, HasSubstr("pending since generation 2"));
  EXPECT_EQ(loaded_["web.service"], OnDisk("web.service"));
  EXPECT_TRUE(store_.Owed().empty());
}

// reload_on follows restart_on's rule: never onto a write that failed; the
// reload stays owed until the write succeeds.
TEST_F(OwedTest, ReloadOnNeverFiresOntoAFailedWrite) {
  services_.AddUnit("web.service", {});
  services_.AddUnit("cache.service", {});
  ASSERT_EQ(Apply(Versioned("a", 1)).result, ApplyResult::kOk);
  root_faulty_->FailWrites("/etc/cache.conf", ENOSPC);
  ApplyReport r = Apply(Versioned("b", 2));
  EXPECT_THAT(Outcomes(r), ElementsAre("updated", "updated", "failed", "failed"));
  EXPECT_EQ(r.outcomes[3].detail,
            "not reloaded: reload_on resource cache.conf failed; cache.service keeps its "
            "previous configuration");
  EXPECT_THAT(loaded_["cache.service"], HasSubstr("cache a"));
  EXPECT_EQ(store_.Owed().owed.at("cache").action, core::UnitAction::kReload);
  root_faulty_->Heal();
  ApplyReport again = Apply(Versioned("b", 2));
  EXPECT_THAT(Outcomes(again), ElementsAre("unchanged", "unchanged", "updated", "reloaded"));
  EXPECT_EQ(loaded_["cache.service"], OnDisk("cache.service"));
}

// A restart whose second look fails stays owed: the next apply restarts
// again (and fails again, naming the debt) until the daemon stays up.
TEST_F(OwedTest, AFailedSecondLookStaysOwed) {
  services_.AddUnit("web.service", {});
  services_.AddUnit("cache.service", {});
  ASSERT_EQ(Apply(Versioned("a", 1)).result, ApplyResult::kOk);
  services_.AddUnit("web.service", {Behavior::kDiesAfter, 221ms, true});
  ApplyReport r = Apply(Versioned("b", 2));
  EXPECT_EQ(r.outcomes[1].outcome, core::Outcome::kFailed);
  EXPECT_TRUE(r.outcomes[1].confirm_failed);
  ApplyReport again = Apply(Versioned("b", 2));
  EXPECT_EQ(again.outcomes[1].outcome, core::Outcome::kFailed);
  EXPECT_THAT(again.outcomes[1].detail, HasSubstr("(restart pending since generation 2)"));
  services_.AddUnit("web.service", {Behavior::kHealthy, 0s, true});  // the daemon is fixed
  ApplyReport fixed = Apply(Versioned("b", 2));
  EXPECT_EQ(fixed.outcomes[1].outcome, core::Outcome::kRestarted);
  EXPECT_THAT(fixed.outcomes[1].detail, HasSubstr("pending since generation 2"));
  EXPECT_THAT(Outcomes(Apply(Versioned("b", 2))),
              ElementsAre("unchanged", "unchanged", "unchanged", "unchanged"));
}

// The bus goes away after the files were written: the restart is owed and
// done once the bus is back.
TEST_F(OwedTest, ABusLostAfterTheWritesStaysOwed) {
  services_.AddUnit("web.service", {});
  services_.AddUnit("cache.service", {});
  ASSERT_EQ(Apply(Versioned("a", 1)).result, ApplyResult::kOk);
  root_faulty_->before_write = [&](const std::string&) { services_.bus_gone = true; };
  ApplyReport r = Apply(Versioned("b", 2));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_THAT(r.outcomes[1].detail, HasSubstr("Transport endpoint is not connected"));
  root_faulty_->before_write = nullptr;
  services_.bus_gone = false;
  ApplyReport back = Apply(Versioned("b", 2));
  EXPECT_EQ(back.result, ApplyResult::kOk);
  EXPECT_THAT(Outcomes(back), ElementsAre("unchanged", "restarted", "unchanged", "reloaded"));
  EXPECT_EQ(loaded_["web.service"], OnDisk("web.service"));
  EXPECT_EQ(loaded_["cache.service"], OnDisk("cache.service"));
}

// systemd's own NeedDaemonReload is a cross-check: a host-written unit file
// newer than what systemd loaded, under a run the host did not start (it
// may have begun on whatever was loaded), is reloaded and the unit
// restarted onto it. (Under the host's own run a daemon-reload alone does:
// units_test's AUnitFileTouchedUnderTheRecordedRunIsLoadedAgainNotRestarted.)
TEST_F(OwedTest, NeedDaemonReloadIsACrossCheck) {
  services_.AddUnit("web.service", {});
  services_.AddUnit("cache.service", {});
  ASSERT_EQ(Apply(Versioned("a", 1)).result, ApplyResult::kOk);
  services_.RestartedByOther("web.service");
  services_.SetNeedDaemonReload("web.service");
  int reloads = services_.daemon_reloads();
  ApplyReport r = Apply(Versioned("a", 1));
  EXPECT_FALSE(r.from_record);
  EXPECT_EQ(services_.daemon_reloads(), reloads + 1);
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[1]),
            "restarted web (service): unit file web.service is newer than what systemd loaded "
            "(NeedDaemonReload); "
            "web.service active (running)");
}

// What was owed goes with what it was owed for: a unit now declared stopped
// is stopped, not restarted; a resource no longer declared owes nothing.
TEST_F(OwedTest, ADebtEndsWithWhatItWasFor) {
  services_.AddUnit("web.service", {Behavior::kHealthy, 0s, true});
  services_.AddUnit("cache.service", {Behavior::kHealthy, 0s, true});
  ASSERT_EQ(Apply(Versioned("a", 1)).result, ApplyResult::kOk);
  core::Intent owed;
  owed.owed["web"] = {core::UnitAction::kRestart, false, core::RestartReason::kRestartOn,
                      "web.conf changed", 1};
  owed.owed["gone"] = {core::UnitAction::kRestart, false, core::RestartReason::kDeclared, "", 1};
  store_.intent = core::SerializeIntent(owed);
  json decl = Versioned("a", 2);
  decl["resources"][1]["state"] = "stopped";
  int starts = services_.StartsOf("web.service");
  ApplyReport r = Apply(decl);
  EXPECT_EQ(r.outcomes[1].outcome, core::Outcome::kStopped);
  EXPECT_EQ(services_.StartsOf("web.service"), starts);
  EXPECT_TRUE(store_.Owed().empty());
}

// An intent that cannot be read is not taken for "nothing owed": the apply
// changes nothing, says why (and what it would do), and leaves the file.
TEST_F(OwedTest, AnUnreadableIntentChangesNothing) {
  services_.AddUnit("web.service", {});
  services_.AddUnit("cache.service", {});
  ASSERT_EQ(Apply(Versioned("a", 1)).result, ApplyResult::kOk);
  store_.intent = "{\"version\":1,\"applying\":";  // torn
  int starts = services_.StartsOf("web.service");
  ApplyReport r = Apply(Versioned("b", 2));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_THAT(r.error, HasSubstr("intent not readable: intent: not a JSON object; nothing was "
                                 "changed"));
  EXPECT_THAT(r.outcomes[0].detail, HasSubstr("would write"));
  EXPECT_EQ(testing::ReadText(Root("/etc/web.conf")), "web a");
  EXPECT_EQ(services_.StartsOf("web.service"), starts);
  EXPECT_EQ(*store_.intent, "{\"version\":1,\"applying\":");
  store_.intent.reset();  // the operator forgets it
  EXPECT_EQ(Apply(Versioned("b", 2)).result, ApplyResult::kOk);
}

// Not read because the state directory was opened to others: mended by
// its owner and mode. The advice to remove the intent file would have the
// operator forget what is owed, and the next apply refuse all the same.
TEST_F(OwedTest, AnIntentNotTrustedIsNotToldToBeRemoved) {
  services_.AddUnit("web.service", {});
  services_.AddUnit("cache.service", {});
  ASSERT_EQ(Apply(Versioned("a", 1)).result, ApplyResult::kOk);
  store_.intent_load_error = core::Error{
      "/var/lib/mesh-host has mode 0777, writable by group or others; a record another user "
      "could have written is not trusted (chmod go-w)",
      core::ErrorKind::kUntrusted,
      {}};
  ApplyReport r = Apply(Versioned("b", 2));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_THAT(r.error, HasSubstr("has mode 0777"));
  EXPECT_THAT(r.error, HasSubstr("nothing was changed"));
  EXPECT_THAT(r.error, Not(HasSubstr("remove the intent file")));
  EXPECT_EQ(testing::ReadText(Root("/etc/web.conf")), "web a");
}

// What will be owed cannot be written down (a full state disk): nothing is
// written or asked of systemd, and the apply says so.
TEST_F(OwedTest, AnIntentThatCannotBeSavedChangesNothing) {
  services_.AddUnit("web.service", {});
  services_.AddUnit("cache.service", {});
  ASSERT_EQ(Apply(Versioned("a", 1)).result, ApplyResult::kOk);
  int starts = services_.StartsOf("web.service");
  store_.fail_intent_saves = true;
  ApplyReport r = Apply(Versioned("b", 2));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_EQ(r.error, "intent not saved: disk full (fake); nothing was changed");
  EXPECT_THAT(r.outcomes[0].detail, HasSubstr("would write"));
  EXPECT_EQ(testing::ReadText(Root("/etc/web.conf")), "web a");
  EXPECT_EQ(services_.StartsOf("web.service"), starts);
  store_.fail_intent_saves = false;
  EXPECT_EQ(Apply(Versioned("b", 2)).result, ApplyResult::kOk);
  EXPECT_EQ(loaded_["web.service"], OnDisk("web.service"));
}

// A plan says what an apply would pay, and pays nothing.
TEST_F(OwedTest, APlanShowsWhatIsOwed) {
  services_.AddUnit("web.service", {});
  services_.AddUnit("cache.service", {});
  ASSERT_EQ(Apply(Versioned("a", 1)).result, ApplyResult::kOk);
  core::Intent owed;
  owed.owed["cache"] = {core::UnitAction::kReload, false, core::RestartReason::kReloadOn,
                        "reload_on cache.conf "
                        "changed",
                        1};
  store_.intent = core::SerializeIntent(owed);
  ApplyReport plan = Apply(Versioned("a", 1), /*dry_run=*/true);
  EXPECT_EQ(core::FormatOutcomeLine(plan.outcomes[3]),
            "reloaded cache (service): reload_on cache.conf changed (pending since generation 1); "
            "would reload cache.service");
  EXPECT_EQ(store_.Owed(), owed);
}

// The no-op proven from the record never hides a debt; a lost record does
// not forgive one either.
TEST_F(OwedTest, NeitherTheRecordProofNorALostRecordForgetsADebt) {
  services_.AddUnit("web.service", {});
  services_.AddUnit("cache.service", {});
  ASSERT_EQ(Apply(Versioned("a", 1)).result, ApplyResult::kOk);
  ASSERT_TRUE(Apply(Versioned("a", 1)).from_record);
  core::Intent owed;
  owed.owed["web"] = {core::UnitAction::kRestart, false, core::RestartReason::kRestartOn,
                      "restart_on web.conf "
                      "changed",
                      1};
  store_.intent = core::SerializeIntent(owed);
  ApplyReport r = Apply(Versioned("a", 1));
  EXPECT_FALSE(r.from_record);
  EXPECT_EQ(r.outcomes[1].outcome, core::Outcome::kRestarted);

  store_.intent = core::SerializeIntent(owed);
  store_.text.reset();
  ApplyReport lost = Apply(Versioned("a", 1));
  EXPECT_THAT(Outcomes(lost), ElementsAre("unchanged", "restarted", "unchanged", "unchanged"));
}

}  // namespace
}  // namespace mesh::reconcile
