// Services and processes over the fake service manager and fake clock: the
// ADR 184 table, restart_on, one shared pause, stops not waited on, and
// issue 210 for a process.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <sys/stat.h>

#include <functional>

#include "host/core/unit_name.h"
#include "tests/fakes/faulty_file_system.h"
#include "tests/host/reconcile/reconciler_fixture.h"

namespace mesh::reconcile {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;
using Behavior = fakes::FakeServiceManager::Behavior;
using testing::TarMember;

class UnitsTest : public ReconcilerTest {
 protected:
  static json Service(const std::string& id, const json& extra = json::object()) {
    json r = {{"id", id}, {"kind", "service"}, {"unit", id + ".service"}, {"state", "running"}};
    r.update(extra);
    return r;
  }

  // A unit definition declared as a file in --unit-dir (ApplyWithUnitsInRoot):
  // `name` there, a unit that sleeps `v`.
  static json DefinitionFile(const std::string& id, const std::string& name, const std::string& v) {
    return json{{"id", id},
                {"kind", "file"},
                {"path", "/etc/systemd/system/" + name},
                {"content", "[Service]\nExecStart=/bin/sleep " + v + "\n"}};
  }

  // `line` in the journal of `unit`'s run now, as its daemon would log it.
  void LogInItsRun(const std::string& unit, std::string line) {
    auto run = services_.ReadUnits({unit})[0];
    ASSERT_TRUE(run.has_value());
    journal_.Log(run->invocation_id, std::move(line));
  }

  static json Conf(const std::string& content) {
    return {
        {"id", "jail.conf"}, {"kind", "file"}, {"path", "/etc/jail.conf"}, {"content", content}};
  }
  // A server restarted by its restart_on and a client declared beside it;
  // `to_client` is what systemd does to the client when the restart is
  // asked. Returns the apply of generation 2.
  ApplyReport ApplyRestartingTheServer(const std::function<void()>& to_client) {
    services_.AddUnit("server.service", {});
    services_.AddUnit("client.service", {});
    auto decl = [](const std::string& conf, uint64_t generation) {
      return Decl(
          {Conf(conf), Service("server", {{"restart_on", {"jail.conf"}}}), Service("client")},
          generation);
    };
    EXPECT_EQ(Run(decl("a", 1)).result, ApplyResult::kOk);
    services_.on_enqueue = [&](const std::string& unit) {
      if (unit == "server.service") to_client();
    };
    ApplyReport r = Run(decl("b", 2));
    services_.on_enqueue = nullptr;
    return r;
  }
};

// While an apply runs the daemon's live watch follows the units it does
// not act on: the apply says which it has in hand (a restart, a removal's
// stop; not a unit it leaves alone) before it touches any, and forgets
// them when it ends.
TEST_F(UnitsTest, AnApplySaysWhichUnitsItHasInHandWhileItRuns) {
  services_.AddUnit("server.service", {});
  services_.AddUnit("client.service", {});
  services_.AddUnit("old.service", {});
  auto decl = [](const std::string& conf, uint64_t generation, bool with_old) {
    json resources = {Conf(conf), Service("server", {{"restart_on", {"jail.conf"}}}),
                      Service("client")};
    if (with_old) {
      resources.push_back(
          Service("old", {{"unit_text", "[Service]\nExecStart=/bin/sleep infinity\n"}}));
    }
    return Decl(resources, generation).dump();
  };
  Reconciler reconciler(Ports(), Options());
  EXPECT_THAT(reconciler.progress().InHand(), ElementsAre()) << "no apply yet";
  ASSERT_EQ(reconciler.Apply(decl("a", 1, true)).result, ApplyResult::kOk);
  EXPECT_THAT(reconciler.progress().InHand(),
              ElementsAre("client.service", "old.service", "server.service"))
      << "the first apply's starts";
  std::vector<std::vector<std::string>> in_hand;
  services_.on_enqueue = [&](const std::string&) {
    in_hand.push_back(reconciler.progress().InHand());
  };
  ApplyReport r = reconciler.Apply(decl("b", 2, false));
  services_.on_enqueue = nullptr;
  EXPECT_THAT(Outcomes(r), ElementsAre("updated", "restarted", "unchanged", "removed"));
  ASSERT_EQ(in_hand.size(), 2u) << "the removal's stop and the restart";
  for (const auto& units : in_hand) {
    EXPECT_THAT(units, ElementsAre("old.service", "server.service"));
  }
  // Kept in hand after the apply returns, while the daemon has not yet
  // published its report: a look at old.service, stopped by it, is no
  // death. They are let go once it is shown, or as the next apply begins.
  EXPECT_THAT(reconciler.progress().InHand(), ElementsAre("old.service", "server.service"));
  std::vector<std::string> at_next_apply{"(not asked)"};
  services_.on_enqueue = [&](const std::string&) {
    at_next_apply = reconciler.progress().InHand();
  };
  ApplyReport third = reconciler.Apply(decl("c", 3, false));
  services_.on_enqueue = nullptr;
  EXPECT_THAT(Outcomes(third), ElementsAre("updated", "restarted", "unchanged"));
  EXPECT_THAT(at_next_apply, ElementsAre("server.service")) << "old's stop is the last apply's";
  reconciler.progress().Shown();
  EXPECT_THAT(reconciler.progress().InHand(), ElementsAre()) << "its report shown";
}

// The daemon's watch keeps its own look at a unit over the apply's report
// only when it is the later one. The apply's observation is a look too:
// a watch look taken before it (a unit seen dead, then up again by its own
// Restart= as the apply read it) does not stand over it.
TEST_F(UnitsTest, AnApplysObservationIsALookLaterThanOneBeforeIt) {
  services_.AddUnit("client.service", {});
  Reconciler reconciler(Ports(), Options());
  json decl = Decl({Conf("a"), Service("client")}, 1);
  ASSERT_EQ(reconciler.Apply(decl.dump()).result, ApplyResult::kOk);
  const uint64_t before = reconciler.progress().Now();
  decl["generation"] = 2;
  decl["resources"][0]["content"] = "b";
  int enqueued = 0;
  services_.on_enqueue = [&](const std::string&) { ++enqueued; };
  ApplyReport r = reconciler.Apply(decl.dump());
  services_.on_enqueue = nullptr;
  ASSERT_THAT(Outcomes(r), ElementsAre("updated", "unchanged"));
  ASSERT_EQ(enqueued, 0) << "no job: no second look, the observation is its only look";
  EXPECT_TRUE(reconciler.progress().ApplysLookStands("client.service", before));
  EXPECT_FALSE(
      reconciler.progress().ApplysLookStands("client.service", reconciler.progress().Now()))
      << "a look begun after the apply's last is the later";
  // A no-op proven from the record reads the units too: its report shows
  // that look.
  const uint64_t before_noop = reconciler.progress().Now();
  ApplyReport noop = reconciler.Apply(decl.dump());
  ASSERT_TRUE(noop.from_record);
  EXPECT_TRUE(reconciler.progress().ApplysLookStands("client.service", before_noop));
}

// An apply that changes files and asks systemd for nothing still looks
// again at the units it left alone as it ends: one that died while it ran
// (a daemon that reads a file it wrote) fails it, as it does when the
// apply restarts another unit. Before, whether it was said depended on
// that: a files-only apply reported it "unchanged ... active (running)".
TEST_F(UnitsTest, AFilesOnlyApplyLooksAgainAtTheUnitsItLeftAlone) {
  services_.AddUnit("client.service", {});
  Reconciler reconciler(Ports(), Options());
  json decl = Decl({Conf("a"), Service("client")}, 1);
  ASSERT_EQ(reconciler.Apply(decl.dump()).result, ApplyResult::kOk);
  // The apply of `decl`, with `meanwhile` done to systemd once its
  // observation has read the units (at the next read); `reads` counts them.
  int reads = 0;
  auto apply = [&](const std::function<void()>& meanwhile) {
    reads = 0;
    services_.on_read_units = [&](const std::vector<std::string>&) {
      if (++reads == 2 && meanwhile) meanwhile();
    };
    ApplyReport r = reconciler.Apply(decl.dump());
    services_.on_read_units = nullptr;
    return r;
  };
  auto kill_client = [&] { services_.Kill("client.service"); };
  decl["generation"] = 2;
  decl["resources"][0]["content"] = "b";
  ApplyReport r = apply(kill_client);
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_THAT(Outcomes(r), ElementsAre("updated", "failed"));
  EXPECT_THAT(r.outcomes[1].detail, HasSubstr("went down during this apply"));
  EXPECT_EQ(reads, 2) << "one look more, and no pause";
  EXPECT_EQ(services_.StartsOf("client.service"), 1) << "started by the first apply only";

  // Nothing changed: no look more.
  decl["generation"] = 3;
  ASSERT_EQ(apply(nullptr).result, ApplyResult::kOk);  // client started again
  const int with_start = reads;
  ApplyReport same = apply(nullptr);
  EXPECT_EQ(same.result, ApplyResult::kOk);
  EXPECT_LE(reads, 1) << "the observation or the record's proof alone (" << with_start
                      << " with a start)";

  // Restarted by someone else while it ran: no death, and the words do
  // not lay it on the apply, which asked systemd for nothing.
  decl["generation"] = 4;
  decl["resources"][0]["content"] = "b2";
  ApplyReport other = apply([&] { services_.RestartedByOther("client.service"); });
  EXPECT_EQ(other.result, ApplyResult::kOk);
  EXPECT_THAT(other.outcomes[1].detail,
              HasSubstr("started anew during this apply (by someone else: this apply asked "
                        "systemd for nothing)"));

  // Died and brought back by its Restart=: failed, and the lines shown are
  // those of the run that died.
  decl["generation"] = 5;
  decl["resources"][0]["content"] = "b3";
  ApplyReport crashed = apply([&] {
    LogInItsRun("client.service", "client: lost its upstream");
    services_.RestartedBySystemd("client.service", 1);
  });
  EXPECT_EQ(crashed.result, ApplyResult::kFailed);
  EXPECT_THAT(crashed.outcomes[1].detail,
              HasSubstr("died during this apply and was restarted by systemd (NRestarts now 1)"));
  EXPECT_THAT(core::FormatJournalLines(crashed.outcomes[1]),
              ElementsAre(HasSubstr("client: lost its upstream")));

  // Started anew by someone else, and that run died (no Restart=): its
  // lines, not those of the run stopped cleanly before it.
  ASSERT_EQ(apply(nullptr).result, ApplyResult::kOk);  // started again, generation 5
  decl["generation"] = 6;
  decl["resources"][0]["content"] = "b4";
  ApplyReport anew = apply([&] {
    LogInItsRun("client.service", "client: stopping cleanly");
    services_.RestartedByOther("client.service");
    LogInItsRun("client.service", "client: bad flag in the new run");
    services_.Kill("client.service");
  });
  EXPECT_EQ(anew.result, ApplyResult::kFailed);
  EXPECT_THAT(anew.outcomes[1].detail, HasSubstr("went down during this apply"));
  EXPECT_THAT(core::FormatJournalLines(anew.outcomes[1]),
              ElementsAre(HasSubstr("client: bad flag in the new run")));

  // An apply that also stops a unit takes no look: a stop is not waited
  // on, and what it carries to others (BindsTo=) would be judged half
  // done. The watch and the next apply see a death then.
  services_.AddUnit("other.service", {.running_initially = true});
  decl["resources"].push_back(Service("other"));
  decl["generation"] = 7;
  ApplyReport added = reconciler.Apply(decl.dump());
  ASSERT_EQ(added.result, ApplyResult::kOk) << added.error;
  decl["resources"][2]["state"] = "stopped";
  decl["resources"][0]["content"] = "c";
  decl["generation"] = 8;
  ApplyReport stops = apply(kill_client);
  EXPECT_EQ(stops.result, ApplyResult::kOk);
  EXPECT_THAT(Outcomes(stops), ElementsAre("updated", "unchanged", "stopped"));
}

// ADR 184 row 1: running at the first look and dead at the second fails the
// apply, naming the unit and its state.
TEST_F(UnitsTest, DiesAfterRestartFailsNamingUnitAndState) {
  services_.AddUnit("jail.service", {Behavior::kDiesAfter, 221ms, /*running_initially=*/true});
  json svc = Service("jail", {{"restart_on", {"jail.conf"}}});
  testing::WriteText(Root("/etc/jail.conf"), "good");
  Run(Decl({Conf("good"), svc}));  // adopts the file and the running unit: no restart
  EXPECT_EQ(services_.StartsOf("jail.service"), 0);
  ApplyReport r = Run(Decl({Conf("bad"), svc}, 2));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_THAT(Outcomes(r), ElementsAre("updated", "failed"));
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[1]),
            "failed jail (service): jail.service failed (Result=exit-code) 1.0 s after restart");
  EXPECT_TRUE(r.outcomes[1].confirm_failed);
  EXPECT_EQ(r.outcomes[1].restart_reason_name(), "restart_on");
}

// The next config put in place by hand (no restart), then declared: the
// file is as declared, so nothing is written, but the daemon runs on the
// one it read at its start. Before, both read `unchanged` and the record
// took the new digest: the daemon stayed on the old config for good, the
// machine reported right. Now the file counts as changed for what runs on
// it. A record of another want version, a credential under a new key and
// an apply cut short are not this (their own tests).
TEST_F(UnitsTest, AConfigPutInPlaceByHandThenDeclaredRestartsItsUnit) {
  services_.AddUnit("jail.service", {});
  json svc = Service("jail", {{"restart_on", {"jail.conf"}}});
  ASSERT_EQ(Run(Decl({Conf("R"), svc})).result, ApplyResult::kOk);
  int starts = services_.StartsOf("jail.service");
  // Edited a while after its run began. A file's ctime comes from the
  // kernel's coarse clock (a tick, up to 4 ms, behind): an edit within
  // that tick of the start reads as older than the run, and was seen as
  // read by it in 1 of 30 runs under ASan.
  services_.RanSince("jail.service", std::chrono::seconds(1));
  testing::WriteText(Root("/etc/jail.conf"), "S");
  ApplyReport r = Run(Decl({Conf("S"), svc}, 2));
  EXPECT_EQ(r.result, ApplyResult::kOk);
  EXPECT_THAT(Outcomes(r), ElementsAre("updated", "restarted"));
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[0]),
            "updated jail.conf (file): already as declared on the machine: adopted");
  EXPECT_THAT(r.outcomes[1].detail, HasSubstr("restart_on jail.conf changed"));
  EXPECT_EQ(services_.StartsOf("jail.service"), starts + 1);
  EXPECT_THAT(Outcomes(Run(Decl({Conf("S"), svc}, 2))), ElementsAre("unchanged", "unchanged"))
      << "once restarted onto it, nothing more";

  // Put in place and restarted by hand before it was declared: the run
  // read it, and is not restarted again.
  testing::WriteText(Root("/etc/jail.conf"), "T");
  services_.RestartedByOther("jail.service");
  starts = services_.StartsOf("jail.service");
  EXPECT_THAT(Outcomes(Run(Decl({Conf("T"), svc}, 3))), ElementsAre("updated", "unchanged"));
  EXPECT_EQ(services_.StartsOf("jail.service"), starts);

  // The host's own write and restart, its record not saved (a kill or a
  // full disk between the intent and the record): the next apply finds the
  // file as declared, the run begun after it. Not restarted a second time,
  // nor at every apply while the record cannot be saved.
  store_.fail_saves = true;
  ApplyReport unsaved = Run(Decl({Conf("U"), svc}, 4));
  ASSERT_THAT(Outcomes(unsaved), ElementsAre("updated", "restarted"));
  starts = services_.StartsOf("jail.service");
  for (int i = 0; i < 2; ++i) {
    EXPECT_THAT(Outcomes(Run(Decl({Conf("U"), svc}, 4))), ElementsAre("updated", "unchanged"));
  }
  store_.fail_saves = false;
  EXPECT_EQ(services_.StartsOf("jail.service"), starts);
}

// The unit's next unit_text put in place by hand and loaded (daemon-reload)
// but the daemon not restarted, then declared: its unit file is as
// declared and systemd has it loaded, yet the daemon runs on what it
// started with. As for a file its restart_on names, the unit is restarted
// when its run began before the unit file last changed; a run begun since
// read it already.
TEST_F(UnitsTest, AUnitTextPutInPlaceByHandThenDeclaredRestartsTheUnit) {
  services_.AddUnit("jail.service", {});
  auto svc = [](const std::string& exec) {
    return Service("jail", {{"unit_text", "[Service]\nExecStart=" + exec + "\n"}});
  };
  ASSERT_EQ(Run(Decl({svc("/bin/v1")})).result, ApplyResult::kOk);
  int starts = services_.StartsOf("jail.service");
  services_.RanSince("jail.service", 5s);
  testing::WriteText(dir_.Sub("units") + "/jail.service", "[Service]\nExecStart=/bin/v2\n");
  ASSERT_TRUE(services_.ReloadDaemon().has_value());
  int reloads = services_.daemon_reloads();
  ApplyReport r = Run(Decl({svc("/bin/v2")}, 2));
  EXPECT_EQ(services_.daemon_reloads(), reloads + 1)
      << "loaded again first: systemd does not flag a file copied in with its mtime kept";
  EXPECT_EQ(r.result, ApplyResult::kOk);
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[0]),
            "restarted jail (service): unit file jail.service found as declared, changed after "
            "its run began; jail.service active (running)");
  EXPECT_EQ(services_.StartsOf("jail.service"), starts + 1);
  EXPECT_THAT(Outcomes(Run(Decl({svc("/bin/v2")}, 2))), ElementsAre("unchanged"));

  // Restarted by hand onto it before it was declared: not again.
  services_.RanSince("jail.service", 5s);
  testing::WriteText(dir_.Sub("units") + "/jail.service", "[Service]\nExecStart=/bin/v3\n");
  ASSERT_TRUE(services_.ReloadDaemon().has_value());
  services_.RestartedByOther("jail.service");
  starts = services_.StartsOf("jail.service");
  r = Run(Decl({svc("/bin/v3")}, 3));
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[0]),
            "updated jail (service): unit file jail.service already as declared on the machine: "
            "adopted, jail.service active (running)");
  EXPECT_EQ(services_.StartsOf("jail.service"), starts);
}

// A config edited by hand, the daemon restarted onto the edit by someone
// else, the config then put back: every apply read `unchanged`, exit 0,
// with the daemon on the edit. The file's bytes moved after that run began,
// and the run is not the one the host recorded: what it read is not known,
// and it is restarted. The same bytes written again under the host's own
// run (a tool that copies the file over), or a restart by hand alone,
// restart nothing.
TEST_F(UnitsTest, AConfigPutBackUnderARunSomeoneElseStartedRestartsIt) {
  services_.AddUnit("jail.service", {});
  json decl = Decl({Conf("R"), Service("jail", {{"restart_on", {"jail.conf"}}})});
  ASSERT_EQ(Run(decl).result, ApplyResult::kOk);
  ASSERT_EQ(Run(decl).result, ApplyResult::kOk);  // the host's run recorded
  int starts = services_.StartsOf("jail.service");

  // Copied over with the same bytes under the host's own run: nothing.
  testing::WriteText(Root("/etc/jail.conf"), "R");
  EXPECT_THAT(Outcomes(Run(decl, false, /*from_record=*/false)),
              ElementsAre("unchanged", "unchanged"));
  EXPECT_EQ(services_.StartsOf("jail.service"), starts);

  // Restarted by hand alone: nothing either.
  services_.RestartedByOther("jail.service");
  services_.RanSince("jail.service", 5s);
  starts = services_.StartsOf("jail.service");
  EXPECT_THAT(Outcomes(Run(decl)), ElementsAre("unchanged", "unchanged"));
  EXPECT_EQ(services_.StartsOf("jail.service"), starts);

  // Edited, restarted onto the edit by hand, put back.
  testing::WriteText(Root("/etc/jail.conf"), "HANDEDIT");
  services_.RestartedByOther("jail.service");
  services_.RanSince("jail.service", 5s);
  testing::WriteText(Root("/etc/jail.conf"), "R");
  starts = services_.StartsOf("jail.service");
  for (bool from_record : {true, false}) {
    if (!from_record) {  // once more, the full pass alone
      testing::WriteText(Root("/etc/jail.conf"), "HANDEDIT");
      services_.RestartedByOther("jail.service");
      services_.RanSince("jail.service", 5s);
      testing::WriteText(Root("/etc/jail.conf"), "R");
      starts = services_.StartsOf("jail.service");
    }
    ApplyReport r = Run(decl, false, from_record);
    EXPECT_EQ(r.result, ApplyResult::kOk);
    EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[1]),
              "restarted jail (service): restart_on /etc/jail.conf written again on the machine "
              "after its run began, a run the "
              "host did not start: what it read is not known; jail.service active (running)")
        << from_record;
    EXPECT_EQ(services_.StartsOf("jail.service"), starts + 1);
    EXPECT_THAT(Outcomes(Run(decl)), ElementsAre("unchanged", "unchanged")) << "once";
  }

  // Put back by a copy that keeps the old mtime (cp -p, a mv of a backup):
  // its size and mtime as recorded, its ctime not.
  struct stat was;
  ASSERT_EQ(::stat(Root("/etc/jail.conf").c_str(), &was), 0);
  testing::WriteText(Root("/etc/jail.conf"), "EDIT");
  services_.RestartedByOther("jail.service");
  services_.RanSince("jail.service", 5s);
  testing::WriteText(Root("/etc/jail.conf"), "R");
  const struct timespec times[2] = {was.st_atim, was.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, Root("/etc/jail.conf").c_str(), times, 0), 0);
  starts = services_.StartsOf("jail.service");
  EXPECT_THAT(Outcomes(Run(decl)), ElementsAre("unchanged", "restarted"));
  EXPECT_EQ(services_.StartsOf("jail.service"), starts + 1);
}

// The same for a oneshot whose last run someone else started: run again.
TEST_F(UnitsTest, AConfigPutBackUnderAJobRunByHandRunsItAgain) {
  services_.AddUnit("job.service", {Behavior::kOneshot});
  json decl = Decl({Conf("R"), Service("job", {{"restart_on", {"jail.conf"}}})});
  ASSERT_EQ(Run(decl).result, ApplyResult::kOk);
  ASSERT_EQ(Run(decl).result, ApplyResult::kOk);
  testing::WriteText(Root("/etc/jail.conf"), "EDIT");
  services_.RestartedByOther("job.service");
  services_.RanSince("job.service", 5s);
  testing::WriteText(Root("/etc/jail.conf"), "R");
  int starts = services_.StartsOf("job.service");
  ApplyReport r = Run(decl);
  EXPECT_EQ(r.result, ApplyResult::kOk);
  EXPECT_THAT(r.outcomes[1].detail, HasSubstr("restart_on /etc/jail.conf written again"));
  EXPECT_EQ(services_.StartsOf("job.service"), starts + 1);
  EXPECT_EQ(Run(decl).outcomes[1].outcome, core::Outcome::kUnchanged) << "once";
}

// The host's own unit file edited by hand (loaded or not), then put back
// by the host: the run the host recorded began on the declared text, so a
// daemon-reload alone makes systemd's loaded one match it again. Under a
// run someone else started, it is restarted.
TEST_F(UnitsTest, AUnitFileEditedByHandIsPutBackWithoutARestart) {
  services_.AddUnit("jail.service", {});
  json decl = Decl({Service("jail", {{"unit_text", "[Service]\nExecStart=/bin/v1\n"}})});
  ASSERT_EQ(Run(decl).result, ApplyResult::kOk);
  // The edit comes after its run began, whatever the file system's clock
  // granularity; a full pass records that run.
  services_.RanSince("jail.service", 5s);
  ASSERT_EQ(Run(decl, false, /*from_record=*/false).result, ApplyResult::kOk);
  const std::string file = dir_.Sub("units") + "/jail.service";
  testing::WriteText(file, "[Unit]\nDescription=by hand\n[Service]\nExecStart=/bin/v1\n");
  services_.SetNeedDaemonReload("jail.service");
  int starts = services_.StartsOf("jail.service");
  int reloads = services_.daemon_reloads();
  ApplyReport r = Run(decl);
  EXPECT_EQ(r.result, ApplyResult::kOk);
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[0]),
            "updated jail (service): drifted: unit file jail.service changed on the machine, put "
            "back; wrote unit file jail.service; its run, the one the host recorded, began on the "
            "declared unit file: loaded again (daemon-reload), not restarted; jail.service active "
            "(running)");
  EXPECT_EQ(services_.StartsOf("jail.service"), starts);
  EXPECT_EQ(services_.daemon_reloads(), reloads + 1);
  EXPECT_EQ(testing::ReadText(file), "[Service]\nExecStart=/bin/v1\n");
  EXPECT_THAT(Outcomes(Run(decl)), ElementsAre("unchanged"));

  testing::WriteText(file, "[Service]\nExecStart=/bin/v2\n");
  services_.RestartedByOther("jail.service");
  starts = services_.StartsOf("jail.service");
  EXPECT_THAT(Outcomes(Run(decl)), ElementsAre("updated"));
  EXPECT_EQ(services_.StartsOf("jail.service"), starts + 1) << "someone else's run";
}

// The same for a unit definition declared as a file: a template and a
// drop-in in --unit-dir, edited by hand, put back. Before, every instance
// was restarted ("unit definition ... changed"), though its run, the one
// the host recorded, began on the declared definition.
TEST_F(UnitsTest, AUnitDefinitionFileEditedByHandIsPutBackWithoutARestart) {
  services_.AddUnit("app@a.service", {});
  json decl = Decl({DefinitionFile("tpl", "app@.service", "1"),
                    DefinitionFile("tpl.env", "app@.service.d/x.conf", "1"),
                    Service("inst", {{"unit", "app@a.service"}})});
  ASSERT_EQ(ApplyWithUnitsInRoot(decl).result, ApplyResult::kOk);
  // The edits come after its run began, whatever the file system's clock
  // granularity; a full pass records that run.
  services_.RanSince("app@a.service", 5s);
  ASSERT_EQ(ApplyWithUnitsInRoot(decl, /*from_record=*/false).result, ApplyResult::kOk);
  int starts = services_.StartsOf("app@a.service");
  for (std::string edited : {"app@.service", "app@.service.d/x.conf"}) {
    testing::WriteText(Root("/etc/systemd/system/" + edited), "[Service]\nExecStart=/bin/HAND\n");
    services_.SetNeedDaemonReload("app@a.service");
    int reloads = services_.daemon_reloads();
    ApplyReport r = ApplyWithUnitsInRoot(decl);
    EXPECT_EQ(r.result, ApplyResult::kOk) << edited;
    EXPECT_THAT(Outcomes(r), ::testing::Contains("updated")) << edited;
    EXPECT_EQ(r.outcomes[2].outcome, core::Outcome::kUnchanged) << edited;
    EXPECT_THAT(r.outcomes[2].detail,
                HasSubstr("its run, the one the host recorded, began on the declared unit "
                          "definition /etc/systemd/system/"))
        << edited;
    EXPECT_THAT(r.outcomes[2].detail, HasSubstr("loaded again (daemon-reload), not restarted"));
    EXPECT_EQ(services_.StartsOf("app@a.service"), starts) << edited;
    EXPECT_EQ(services_.daemon_reloads(), reloads + 1) << edited;
  }
  // Under a run someone else started since, it is restarted.
  testing::WriteText(Root("/etc/systemd/system/app@.service"), "[Service]\nExecStart=/bin/v2\n");
  services_.RestartedByOther("app@a.service");
  starts = services_.StartsOf("app@a.service");
  EXPECT_EQ(ApplyWithUnitsInRoot(decl).outcomes[2].outcome, core::Outcome::kRestarted);
  EXPECT_EQ(services_.StartsOf("app@a.service"), starts + 1) << "someone else's run";
  // A declared change restarts it, as before.
  json changed = decl;
  changed["resources"][0]["content"] = "[Service]\nExecStart=/bin/sleep 2\n";
  changed["generation"] = 2;
  EXPECT_THAT(ApplyWithUnitsInRoot(changed).outcomes[2].detail,
              HasSubstr("unit definition /etc/systemd/system/app@.service changed"));
}

// A put-back stands in for the restart its own write would ask, no other:
// with a restart_on and a reload_on file changed in the same apply, the
// restart and the reload were lost (unchanged, exit 0, the daemons on the
// old config). And an edit the recorded run may have read (made before it
// began) is no put-back to load alone.
TEST_F(UnitsTest, APutBackLeavesWhatElseAsksForAnAction) {
  auto file = [](const std::string& id, const std::string& path, const std::string& v) {
    return json{{"id", id}, {"kind", "file"}, {"path", path}, {"content", v}};
  };
  services_.AddUnit("app@a.service", {});
  services_.AddUnit("app@b.service", {});
  auto decl = [&](const std::string& conf, uint64_t generation) {
    return Decl({file("tpl", "/etc/systemd/system/app@.service", "[Service]\nExecStart=/bin/a\n"),
                 file("conf", "/etc/app.conf", conf),
                 Service("a", {{"unit", "app@a.service"}, {"restart_on", {"conf"}}}),
                 Service("b", {{"unit", "app@b.service"}, {"reload_on", {"conf"}}})},
                generation);
  };
  ASSERT_EQ(ApplyWithUnitsInRoot(decl("1", 1)).result, ApplyResult::kOk);
  services_.RanSince("app@a.service", 5s);
  services_.RanSince("app@b.service", 5s);
  ASSERT_EQ(ApplyWithUnitsInRoot(decl("1", 1), /*from_record=*/false).result, ApplyResult::kOk);
  const std::string tpl = Root("/etc/systemd/system/app@.service");
  testing::WriteText(tpl, "[Service]\nExecStart=/bin/HAND\n");
  int starts = services_.StartsOf("app@a.service");
  int reloads = services_.ReloadsOf("app@b.service");
  ApplyReport r = ApplyWithUnitsInRoot(decl("2", 2));
  EXPECT_EQ(r.result, ApplyResult::kOk);
  EXPECT_THAT(Outcomes(r), ElementsAre("updated", "updated", "restarted", "reloaded"));
  EXPECT_THAT(r.outcomes[2].detail, HasSubstr("restart_on conf changed"));
  EXPECT_THAT(r.outcomes[3].detail, HasSubstr("reload_on conf changed"));
  EXPECT_EQ(services_.StartsOf("app@a.service"), starts + 1);
  EXPECT_EQ(services_.ReloadsOf("app@b.service"), reloads + 1);

  // An edit made as a.service's restart was asked: the run it began may
  // have read it. Put back, it restarts a; b's run began before it.
  services_.RanSince("app@b.service", 5s);
  ASSERT_EQ(ApplyWithUnitsInRoot(decl("2", 2), /*from_record=*/false).result, ApplyResult::kOk);
  services_.on_enqueue = [&](const std::string& unit) {
    if (unit == "app@a.service") testing::WriteText(tpl, "[Service]\nExecStart=/bin/HAND2\n");
  };
  ASSERT_EQ(ApplyWithUnitsInRoot(decl("3", 3)).outcomes[2].outcome, core::Outcome::kRestarted);
  services_.on_enqueue = nullptr;
  starts = services_.StartsOf("app@a.service");
  ApplyReport after = ApplyWithUnitsInRoot(decl("3", 3));
  EXPECT_THAT(Outcomes(after), ElementsAre("updated", "unchanged", "restarted", "unchanged"));
  EXPECT_THAT(after.outcomes[2].detail,
              HasSubstr("unit definition /etc/systemd/system/app@.service changed"));
  EXPECT_THAT(after.outcomes[3].detail, HasSubstr("loaded again (daemon-reload), not restarted"));
  EXPECT_EQ(services_.StartsOf("app@a.service"), starts + 1);
}

// A process's new unit text put in place by hand before it was declared
// (adopted), in the apply that also put back a hand edit of a drop-in
// declared as a file: the put-back's "load it again" hid the adoption's
// restart, and the process ran its old unit text, exit 0, for good.
TEST_F(UnitsTest, APutBackDoesNotHideAnAdoptedUnitText) {
  std::string sha = Bundle("app.tar.gz", {{.name = "run", .content = "v1", .mode = 0755}});
  services_.AddUnit("app.service", {});
  auto decl = [&](const std::string& exec, uint64_t generation) {
    return Decl({{{"id", "app"},
                  {"kind", "process"},
                  {"path", "/opt/app"},
                  {"source", "app.tar.gz"},
                  {"sha256", sha},
                  {"unit", "app.service"},
                  {"unit_text", "[Service]\nExecStart=" + exec + "\n"}},
                 {{"id", "env"},
                  {"kind", "file"},
                  {"path", "/etc/systemd/system/app.service.d/10-env.conf"},
                  {"content", "[Service]\nEnvironment=A=1\n"}}},
                generation);
  };
  ASSERT_EQ(ApplyWithUnitsInRoot(decl("/opt/app/run", 1)).result, ApplyResult::kOk);
  services_.RanSince("app.service", 5s);
  ASSERT_EQ(ApplyWithUnitsInRoot(decl("/opt/app/run", 1), /*from_record=*/false).result,
            ApplyResult::kOk);
  testing::WriteText(Root("/etc/systemd/system/app.service"),
                     "[Service]\nExecStart=/opt/app/run --v2\n");
  testing::WriteText(Root("/etc/systemd/system/app.service.d/10-env.conf"),
                     "[Service]\nEnvironment=A=HAND\n");
  int starts = services_.StartsOf("app.service");
  ApplyReport r = ApplyWithUnitsInRoot(decl("/opt/app/run --v2", 2));
  EXPECT_EQ(r.result, ApplyResult::kOk);
  EXPECT_EQ(r.outcomes[0].outcome, core::Outcome::kRestarted) << r.outcomes[0].detail;
  EXPECT_EQ(services_.StartsOf("app.service"), starts + 1);
}

// A template declared as a file, edited, loaded and run by hand, then put
// back by hand as declared: the file reads as declared, yet the run began
// on the edit. As for a unit_text's own file, a definition rewritten under
// a run the host did not start restarts the unit; before, it was
// unchanged, running the edit.
TEST_F(UnitsTest, ADefinitionFileRewrittenUnderARunSomeoneElseStartedRestartsIt) {
  json tpl = {{"id", "tpl"},
              {"kind", "file"},
              {"path", "/etc/systemd/system/app@.service"},
              {"content", "[Service]\nExecStart=/bin/a\n"}};
  services_.AddUnit("app@a.service", {});
  json decl = Decl({tpl, Service("inst", {{"unit", "app@a.service"}})});
  ASSERT_EQ(ApplyWithUnitsInRoot(decl).result, ApplyResult::kOk);
  ASSERT_EQ(ApplyWithUnitsInRoot(decl, /*from_record=*/false).result, ApplyResult::kOk);
  services_.RestartedByOther("app@a.service");  // onto an edit, loaded
  services_.RanSince("app@a.service", 5s);
  testing::WriteText(Root("/etc/systemd/system/app@.service"), "[Service]\nExecStart=/bin/a\n");
  int starts = services_.StartsOf("app@a.service");
  int reloads = services_.daemon_reloads();
  ApplyReport r = ApplyWithUnitsInRoot(decl);
  EXPECT_THAT(Outcomes(r), ElementsAre("unchanged", "restarted"));
  EXPECT_THAT(r.outcomes[1].detail,
              HasSubstr("unit definition /etc/systemd/system/app@.service written again on the "
                        "machine"))
      << r.outcomes[1].detail;
  EXPECT_EQ(services_.StartsOf("app@a.service"), starts + 1);
  // Loaded again first: a restart alone runs what systemd loaded, the edit.
  EXPECT_EQ(services_.daemon_reloads(), reloads + 1);
  ASSERT_TRUE(r.outcomes[1].declared.has_value());
  EXPECT_EQ(r.outcomes[1].declared->restart_reason, core::RestartReason::kDeclared);
  EXPECT_THAT(Outcomes(ApplyWithUnitsInRoot(decl)), ElementsAre("unchanged", "unchanged"))
      << "once";
}

// A reload asked by hand onto an edit, the file then put back: the run is
// the host's own, but what its last reload read is not known. Reloaded (a
// restart_on file: restarted). A reload by hand alone, or a touch under
// the host's own reload, does nothing.
TEST_F(UnitsTest, AConfigPutBackUnderAReloadByHandReloadsIt) {
  services_.AddUnit("jail.service", {});
  json decl = Decl({Conf("R"), Service("jail", {{"reload_on", {"jail.conf"}}})});
  ASSERT_EQ(Run(decl).result, ApplyResult::kOk);
  ASSERT_EQ(Run(decl).result, ApplyResult::kOk);
  auto asked = [&] {
    return services_.StartsOf("jail.service") + services_.ReloadsOf("jail.service");
  };
  int before = asked();

  services_.ReloadedByOther("jail.service");
  services_.ReloadedSince("jail.service", 5s);
  EXPECT_THAT(Outcomes(Run(decl)), ElementsAre("unchanged", "unchanged"));
  ::utimensat(AT_FDCWD, Root("/etc/jail.conf").c_str(), nullptr, 0);  // touch
  EXPECT_THAT(Outcomes(Run(decl)), ElementsAre("unchanged", "unchanged"));
  EXPECT_EQ(asked(), before) << "a reload by hand, then a touch";

  for (bool from_record : {true, false}) {
    testing::WriteText(Root("/etc/jail.conf"), "HANDEDIT");
    services_.ReloadedByOther("jail.service");
    services_.ReloadedSince("jail.service", 5s);
    testing::WriteText(Root("/etc/jail.conf"), "R");
    int reloads = services_.ReloadsOf("jail.service");
    before = asked();
    ApplyReport r = Run(decl, false, from_record);
    EXPECT_EQ(r.result, ApplyResult::kOk);
    EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[1]),
              "reloaded jail (service): reload_on /etc/jail.conf written again on the machine "
              "after its last reload began, a reload the host did not ask for: what it read is "
              "not known; jail.service active (running)")
        << from_record;
    EXPECT_EQ(services_.ReloadsOf("jail.service"), reloads + 1);
    EXPECT_EQ(asked(), before + 1);
    EXPECT_THAT(Outcomes(Run(decl)), ElementsAre("unchanged", "unchanged")) << "once";
  }

  // A daemon-reload after the reload by hand (a package installed): systemd
  // forgets its reloads. Reloaded all the same.
  testing::WriteText(Root("/etc/jail.conf"), "HANDEDIT");
  services_.ReloadedByOther("jail.service");
  ASSERT_TRUE(services_.ReloadDaemon().has_value());
  testing::WriteText(Root("/etc/jail.conf"), "R");
  int reloads = services_.ReloadsOf("jail.service");
  ApplyReport forgotten = Run(decl);
  EXPECT_EQ(core::FormatOutcomeLine(forgotten.outcomes[1]),
            "reloaded jail (service): reload_on /etc/jail.conf written again on the machine since "
            "the host recorded it, and systemd forgets reloads at a daemon-reload, one of which "
            "came during its run: what it read is not known; jail.service active (running)");
  EXPECT_EQ(services_.ReloadsOf("jail.service"), reloads + 1);
  EXPECT_THAT(Outcomes(Run(decl)), ElementsAre("unchanged", "unchanged")) << "once";

  // The same where the host never reloaded it (the record says none, as
  // systemd does after a daemon-reload): the no-op proof hands the touched
  // file over. A touch alone under a daemon-reload reloads it too: what a
  // reload meanwhile read is not known.
  json fresh = Decl({Conf("R"), Service("jail", {{"reload_on", {"jail.conf"}}})}, 3);
  services_.RestartedByOther("jail.service");
  services_.RanSince("jail.service", 5s);
  ASSERT_EQ(Run(fresh).result, ApplyResult::kOk);
  ASSERT_THAT(Outcomes(Run(fresh)), ElementsAre("unchanged", "unchanged"));
  ASSERT_EQ(Record()["resources"]["jail"].count("reload_began"), 0u);
  testing::WriteText(Root("/etc/jail.conf"), "HANDEDIT");
  services_.ReloadedByOther("jail.service");
  ASSERT_TRUE(services_.ReloadDaemon().has_value());
  testing::WriteText(Root("/etc/jail.conf"), "R");
  reloads = services_.ReloadsOf("jail.service");
  forgotten = Run(fresh);
  EXPECT_FALSE(forgotten.from_record);
  EXPECT_THAT(forgotten.outcomes[1].detail, HasSubstr("systemd forgets reloads"));
  EXPECT_EQ(services_.ReloadsOf("jail.service"), reloads + 1);
  EXPECT_THAT(Outcomes(Run(fresh)), ElementsAre("unchanged", "unchanged")) << "once";
  EXPECT_TRUE(Run(fresh).from_record) << "the record holds what the last reload read";

  json restart = Decl({Conf("R"), Service("jail", {{"restart_on", {"jail.conf"}}})}, 4);
  ASSERT_EQ(Run(restart).result, ApplyResult::kOk);
  testing::WriteText(Root("/etc/jail.conf"), "HANDEDIT");
  services_.ReloadedByOther("jail.service");
  services_.ReloadedSince("jail.service", 5s);
  testing::WriteText(Root("/etc/jail.conf"), "R");
  int starts = services_.StartsOf("jail.service");
  ApplyReport r = Run(restart);
  EXPECT_THAT(r.outcomes[1].detail, HasSubstr("restart_on /etc/jail.conf written again"));
  EXPECT_EQ(services_.StartsOf("jail.service"), starts + 1);

  // A restart_on file whose bytes cannot have moved (a chmod, a hard link:
  // its ctime alone) under a reload by hand restarts nothing.
  services_.ReloadedByOther("jail.service");
  services_.ReloadedSince("jail.service", 5s);
  ASSERT_EQ(::chmod(Root("/etc/jail.conf").c_str(), 0600), 0);
  ASSERT_EQ(::chmod(Root("/etc/jail.conf").c_str(), 0644), 0);
  starts = services_.StartsOf("jail.service");
  EXPECT_THAT(Outcomes(Run(restart)), ElementsAre("unchanged", "unchanged"));
  EXPECT_EQ(services_.StartsOf("jail.service"), starts);
}

// A reloaded unit that died after the apply wrote its file and before the
// reload was asked, restarted by systemd in between: the reload keeps the
// new run, so both looks see it up. Before, that apply said `reloaded` and
// nothing said the death: the watch leaves a unit the apply holds to it.
// So for a start of a unit that runs (one systemd restarted since the
// record: a start only has it looked at twice). A restart ends the run
// itself, and is judged on the new one.
TEST_F(UnitsTest, AUnitThatDiedBeforeItsReloadOrStartWasAskedFailsTheApply) {
  services_.AddUnit("jail.service", {});
  auto decl = [](const std::string& conf, const std::string& on, uint64_t generation) {
    return Decl({Conf(conf), Service("jail", {{on, {"jail.conf"}}})}, generation);
  };
  ASSERT_EQ(Run(decl("R", "reload_on", 1)).result, ApplyResult::kOk);
  // `meanwhile` done at the read of jail.service after the observation's:
  // the read as its job is asked.
  auto apply = [&](const json& d, const std::function<void()>& meanwhile) {
    int reads = 0;
    services_.on_read_units = [&](const std::vector<std::string>& names) {
      if (std::find(names.begin(), names.end(), "jail.service") == names.end()) return;
      if (++reads == 2) meanwhile();
    };
    ApplyReport r = Run(d);
    services_.on_read_units = nullptr;
    return r;
  };
  // It says why in its run's log, dies, and Restart= starts another run.
  auto died = [&] {
    LogInItsRun("jail.service", "jail: bad pattern in jail.conf");
    services_.RestartedBySystemd("jail.service", 1);
  };

  ApplyReport r = apply(decl("S", "reload_on", 2), died);
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_THAT(Outcomes(r), ElementsAre("updated", "failed"));
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[1]),
            "failed jail (service): jail.service died during this apply and was restarted by "
            "systemd (NRestarts now 1): active (running) (read as its reload was asked)");
  EXPECT_THAT(core::FormatJournalLines(r.outcomes[1]),
              ElementsAre(HasSubstr("jail: bad pattern in jail.conf")))
      << "the lines of the run that died";
  EXPECT_EQ(services_.ReloadsOf("jail.service"), 1) << "asked, as the plan said";
  EXPECT_THAT(Outcomes(Run(decl("S", "reload_on", 2))), ElementsAre("unchanged", "reloaded"))
      << "owed still";

  // Up as it was: reloaded.
  ApplyReport calm = apply(decl("T", "reload_on", 3), [] {});
  EXPECT_EQ(calm.result, ApplyResult::kOk) << calm.error;
  EXPECT_THAT(Outcomes(calm), ElementsAre("updated", "reloaded"));

  // Restarted by someone else (a new run, NRestarts 0): not a death.
  ApplyReport other =
      apply(decl("U", "reload_on", 4), [&] { services_.RestartedByOther("jail.service"); });
  EXPECT_EQ(other.result, ApplyResult::kOk) << other.error;
  EXPECT_THAT(Outcomes(other), ElementsAre("updated", "reloaded"));

  // Restarted by systemd since the record: the plan asks a start of the
  // running unit, which only has it looked at twice. Up as it was, that
  // start is accepted; dead and back again before it is asked, it fails.
  // (A new generation each: the record's proof would read the unit first.)
  services_.RestartedBySystemd("jail.service", 1);
  ApplyReport start = apply(decl("U", "reload_on", 5), [] {});
  EXPECT_EQ(start.result, ApplyResult::kOk) << core::FormatOutcomeLine(start.outcomes[1]);
  EXPECT_EQ(start.outcomes[1].outcome, core::Outcome::kStarted)
      << core::FormatOutcomeLine(start.outcomes[1]);
  services_.RestartedBySystemd("jail.service", 1);
  ApplyReport died_start = apply(decl("U", "reload_on", 6), died);
  EXPECT_EQ(died_start.result, ApplyResult::kFailed);
  EXPECT_THAT(core::FormatOutcomeLine(died_start.outcomes[1]),
              HasSubstr("died during this apply and was restarted by systemd (NRestarts now 3): "
                        "active (running) (read as its start was asked)"));

  // A restart_on file: the restart ends whatever run it finds.
  ASSERT_EQ(Run(decl("U", "restart_on", 7)).result, ApplyResult::kOk);
  ApplyReport restart = apply(decl("V", "restart_on", 8), died);
  EXPECT_EQ(restart.result, ApplyResult::kOk) << restart.error;
  EXPECT_THAT(Outcomes(restart), ElementsAre("updated", "restarted"));
}

// systemd restarted the unit since the host last looked, and this apply
// reloads (or restarts) it for a change: the restart is said beside the
// change, as it is when the apply only starts it. Before, it went unsaid.
TEST_F(UnitsTest, ARestartBySystemdSinceTheRecordIsSaidBesideAChangesAction) {
  services_.AddUnit("jail.service", {});
  auto decl = [](const std::string& conf, const std::string& on, uint64_t generation) {
    return Decl({Conf(conf), Service("jail", {{on, {"jail.conf"}}})}, generation);
  };
  ASSERT_EQ(Run(decl("R", "reload_on", 1)).result, ApplyResult::kOk);
  services_.RestartedBySystemd("jail.service", 1);
  ApplyReport reloaded = Run(decl("S", "reload_on", 2));
  EXPECT_EQ(reloaded.result, ApplyResult::kOk);
  EXPECT_EQ(core::FormatOutcomeLine(reloaded.outcomes[1]),
            "reloaded jail (service): reload_on jail.conf changed; was restarted by systemd since "
            "the host last looked (NRestarts 0 -> 1); jail.service active (running)");
  services_.RestartedBySystemd("jail.service", 2);
  ApplyReport restarted = Run(decl("T", "restart_on", 3));
  EXPECT_THAT(core::FormatOutcomeLine(restarted.outcomes[1]),
              HasSubstr("was restarted by systemd since the host last looked (NRestarts 1 -> 3)"));
}

// A unit the host reloaded, then an apply that daemon-reloads for another:
// systemd forgets the reload, and so does the record, so the next no-op is
// proven from it (not handed to a full pass by a stale reload_began).
TEST_F(UnitsTest, AReloadForgottenAtTheHostsOwnDaemonReloadIsForgottenInTheRecord) {
  services_.AddUnit("jail.service", {});
  services_.AddUnit("web.service", {});
  auto decl = [](const std::string& conf, const std::string& web, uint64_t generation) {
    return Decl({Conf(conf), Service("jail", {{"reload_on", {"jail.conf"}}}),
                 Service("web", {{"unit_text", "[Service]\nExecStart=" + web + "\n"}})},
                generation);
  };
  ASSERT_EQ(Run(decl("R", "/bin/a", 1)).result, ApplyResult::kOk);
  ASSERT_THAT(Outcomes(Run(decl("S", "/bin/a", 2))),
              ElementsAre("updated", "reloaded", "unchanged"));
  ASSERT_EQ(Record()["resources"]["jail"].count("reload_began"), 1u);
  ASSERT_THAT(Outcomes(Run(decl("S", "/bin/b", 3))),
              ElementsAre("unchanged", "unchanged", "updated"));
  EXPECT_EQ(Record()["resources"]["jail"].count("reload_began"), 0u);
  ApplyReport again = Run(decl("S", "/bin/b", 3));
  EXPECT_TRUE(again.from_record);
  EXPECT_THAT(Outcomes(again), ElementsAre("unchanged", "unchanged", "unchanged"));
}

// The host's own unit file touched, or the same bytes copied over: systemd
// finds it newer than its last load (NeedDaemonReload), yet the run the
// host recorded began on it. A daemon-reload alone; the unit runs on. Not
// so once systemd restarted it (Restart=) since: that run may have begun on
// whatever was loaded then.
TEST_F(UnitsTest, AUnitFileTouchedUnderTheRecordedRunIsLoadedAgainNotRestarted) {
  services_.AddUnit("jail.service", {});
  json decl = Decl({Service("jail", {{"unit_text", "[Service]\nExecStart=/bin/v1\n"}})});
  ASSERT_EQ(Run(decl).result, ApplyResult::kOk);
  ASSERT_EQ(Run(decl, false, /*from_record=*/false).result, ApplyResult::kOk);
  const std::string file = dir_.Sub("units") + "/jail.service";
  for (bool from_record : {true, false}) {
    ASSERT_EQ(::utimensat(AT_FDCWD, file.c_str(), nullptr, 0), 0);
    services_.SetNeedDaemonReload("jail.service");
    int starts = services_.StartsOf("jail.service");
    int reloads = services_.daemon_reloads();
    ApplyReport r = Run(decl, false, from_record);
    EXPECT_EQ(r.result, ApplyResult::kOk);
    EXPECT_EQ(services_.StartsOf("jail.service"), starts) << core::FormatOutcomeLine(r.outcomes[0]);
    EXPECT_EQ(services_.daemon_reloads(), reloads + 1) << from_record;
    EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[0]),
              "unchanged jail (service): systemd loaded jail.service before its files last "
              "changed (NeedDaemonReload); its unit file is as declared, under the run the host "
              "recorded: loaded again (daemon-reload), not restarted; jail.service active "
              "(running)");
  }
  EXPECT_THAT(Outcomes(Run(decl)), ElementsAre("unchanged"));

  // Reloaded by hand meanwhile: that reload ran what systemd had loaded
  // (an edit, say, loaded and put back since).
  ASSERT_EQ(::utimensat(AT_FDCWD, file.c_str(), nullptr, 0), 0);
  services_.SetNeedDaemonReload("jail.service");
  services_.ReloadedByOther("jail.service");
  int starts = services_.StartsOf("jail.service");
  EXPECT_THAT(Outcomes(Run(decl)), ElementsAre("restarted"));
  EXPECT_EQ(services_.StartsOf("jail.service"), starts + 1);

  ASSERT_EQ(::utimensat(AT_FDCWD, file.c_str(), nullptr, 0), 0);
  services_.SetNeedDaemonReload("jail.service");
  services_.RestartedBySystemd("jail.service", 1);
  starts = services_.StartsOf("jail.service");
  ApplyReport r = Run(decl);
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[0]),
            "restarted jail (service): unit file jail.service is newer than what systemd loaded "
            "(NeedDaemonReload); was restarted by systemd since the host last looked (NRestarts "
            "0 -> 1); jail.service active (running)");
  EXPECT_EQ(services_.StartsOf("jail.service"), starts + 1);
}

// The next unit_text put in place by hand, the daemon restarted before the
// daemon-reload that loads it: the run began after the file changed yet
// runs the definition systemd had loaded. Declared, it is restarted.
TEST_F(UnitsTest, AUnitTextRestartedOntoBeforeItsDaemonReloadIsRestarted) {
  services_.AddUnit("jail.service", {});
  auto svc = [](const std::string& exec) {
    return Service("jail", {{"unit_text", "[Service]\nExecStart=" + exec + "\n"}});
  };
  ASSERT_EQ(Run(Decl({svc("/bin/v1")})).result, ApplyResult::kOk);
  services_.RanSince("jail.service", 5s);
  testing::WriteText(dir_.Sub("units") + "/jail.service", "[Service]\nExecStart=/bin/v2\n");
  services_.RestartedByOther("jail.service");
  ASSERT_TRUE(services_.ReloadDaemon().has_value());
  int starts = services_.StartsOf("jail.service");
  ApplyReport r = Run(Decl({svc("/bin/v2")}, 2));
  EXPECT_EQ(r.result, ApplyResult::kOk);
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[0]),
            "restarted jail (service): unit file jail.service found as declared, systemd last "
            "loaded unit files after its run began: what it runs is not known; jail.service "
            "active (running)");
  EXPECT_EQ(services_.StartsOf("jail.service"), starts + 1);
  EXPECT_THAT(Outcomes(Run(Decl({svc("/bin/v2")}, 2))), ElementsAre("unchanged"));
}

// What moves a unit file's ctime and not its bytes (a chmod, a chown, a
// relabel, a hard link) is no change of its definition: a declaration that
// changed only `enabled` meanwhile restarts nothing.
TEST_F(UnitsTest, AUnitFileOnlyChmoddedIsNoAdoptedChange) {
  services_.AddUnit("jail.service", {});
  auto svc = [](bool enabled) {
    return Service(
        "jail",
        {{"unit_text", "[Service]\nExecStart=/bin/v1\n[Install]\nWantedBy=multi-user.target\n"},
         {"enabled", enabled}});
  };
  ASSERT_EQ(Run(Decl({svc(false)})).result, ApplyResult::kOk);
  services_.RanSince("jail.service", 5s);
  // The run as the host records it (a run it did not start, under a chmod
  // since, is restarted: RewrittenUnderItsRun).
  ASSERT_EQ(Run(Decl({svc(false)}), false, /*from_record=*/false).result, ApplyResult::kOk);
  int starts = services_.StartsOf("jail.service");
  ASSERT_EQ(::chmod((dir_.Sub("units") + "/jail.service").c_str(), 0644), 0);
  ApplyReport r = Run(Decl({svc(true)}, 2));
  EXPECT_EQ(r.result, ApplyResult::kOk) << core::FormatOutcomeLine(r.outcomes[0]);
  EXPECT_EQ(services_.StartsOf("jail.service"), starts) << core::FormatOutcomeLine(r.outcomes[0]);
}

// The same for a drop-in of the machine's own unit file: written by hand
// and loaded before it was declared.
TEST_F(UnitsTest, ADropInPutInPlaceByHandThenDeclaredRestartsTheUnit) {
  services_.AddUnit("jail.service", {});
  auto svc = [](const std::string& limit) {
    return Service("jail",
                   {{"drop_ins", {{"10-limit.conf", "[Service]\nLimitNOFILE=" + limit + "\n"}}}});
  };
  ASSERT_EQ(Run(Decl({svc("1024")})).result, ApplyResult::kOk);
  int starts = services_.StartsOf("jail.service");
  services_.RanSince("jail.service", 5s);
  testing::WriteText(dir_.Sub("units") + "/jail.service.d/10-limit.conf",
                     "[Service]\nLimitNOFILE=4096\n");
  ApplyReport r = Run(Decl({svc("4096")}, 2));
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[0]),
            "restarted jail (service): drop-in jail.service.d/10-limit.conf found as declared, "
            "changed after its run began; jail.service active (running)");
  EXPECT_EQ(services_.StartsOf("jail.service"), starts + 1);
  EXPECT_THAT(Outcomes(Run(Decl({svc("4096")}, 2))), ElementsAre("unchanged"));
}

// Issue 40 (1): beside a failed verdict, what the failed run itself logged
// (its complaint, which Result=exit-code does not say), the last lines
// only; none logged and an unreadable journal are said, never silent. A
// unit that passed its looks is not looked up.
// A daemon that refuses a rotated token may log it: its journal lines
// went to /status, the apply's output and the log whole, where SPEC says a
// credential's content never appears.
TEST_F(UnitsTest, ACredentialInAFailedRunsJournalIsNotShown) {
  services_.AddUnit("api.service", {Behavior::kDiesAfter, 221ms, /*running_initially=*/true});
  const std::string token = "tok-9f8e7d6c5b4a";
  const std::string pem = "-----BEGIN KEY-----\nMIIBVgIBADANBgkqhkiG9w0B\n-----END KEY-----\n";
  json cred = {
      {"id", "api.token"}, {"kind", "credential"}, {"path", "/etc/api.token"}, {"content", token}};
  json key = {
      {"id", "api.key"}, {"kind", "credential"}, {"path", "/etc/api.key"}, {"content", pem}};
  json svc = Service("api", {{"restart_on", {"api.token", "api.key"}}});
  // A user declared before the URL that holds it: replaced first, it broke
  // the URL up and its password showed. And a file's trailing newline.
  json user = {{"id", "db.user"},
               {"kind", "credential"},
               {"path", "/etc/db.user"},
               {"content", "postgres_app\n"}};
  json url = {{"id", "db.url"},
              {"kind", "credential"},
              {"path", "/etc/db.url"},
              {"content", "postgres://postgres_app:S3cretPw@db/x\n"}};
  svc["restart_on"].push_back("db.user");
  svc["restart_on"].push_back("db.url");
  journal_.any_run = {"token " + token + " rejected by upstream",
                      "bad key line MIIBVgIBADANBgkqhkiG9w0B in api.key",
                      "cannot reach postgres://postgres_app:S3cretPw@db/x as postgres_app"};
  ApplyReport r = Run(Decl({cred, key, user, url, svc}));
  ASSERT_EQ(r.outcomes[4].outcome, core::Outcome::kFailed);
  std::string shown;
  for (const std::string& line : core::FormatJournalLines(r.outcomes[4])) shown += line + "\n";
  EXPECT_THAT(shown, HasSubstr("token [credential api.token] rejected by upstream")) << shown;
  EXPECT_THAT(shown, HasSubstr("bad key line [credential api.key] in api.key")) << shown;
  EXPECT_THAT(shown, HasSubstr("cannot reach [credential db.url] as [credential db.user]"))
      << shown;
  EXPECT_THAT(shown, Not(HasSubstr(token)));
  EXPECT_THAT(shown, Not(HasSubstr("MIIBVgIBADANBgkqhkiG9w0B")));
  EXPECT_THAT(shown, Not(HasSubstr("S3cretPw")));
}

// A credential made of settings (an env file, YAML, JSON) whose daemon
// logs one value, not the line it is on: the value is not shown either.
TEST_F(UnitsTest, ACredentialsValueInAFailedRunsJournalIsNotShown) {
  services_.AddUnit("api.service", {Behavior::kDiesAfter, 221ms, /*running_initially=*/true});
  json env = {{"id", "api.env"},
              {"kind", "credential"},
              {"path", "/etc/api.env"},
              {"content", "API_TOKEN=abcdef0123456789\nDB_PASSWORD='hunter2hunter2'\n"}};
  json yaml = {{"id", "api.yaml"},
               {"kind", "credential"},
               {"path", "/etc/api.yaml"},
               {"content", "upstream:\n  secret: \"s3cr3t-for-upstream\",\n"}};
  json svc = Service("api", {{"restart_on", {"api.env", "api.yaml"}}});
  journal_.any_run = {"invalid token abcdef0123456789", "auth failed for hunter2hunter2",
                      "upstream refused s3cr3t-for-upstream"};
  ApplyReport r = Run(Decl({env, yaml, svc}));
  ASSERT_EQ(r.outcomes[2].outcome, core::Outcome::kFailed);
  std::string shown;
  for (const std::string& line : core::FormatJournalLines(r.outcomes[2])) shown += line + "\n";
  EXPECT_THAT(shown, HasSubstr("invalid token [credential api.env]")) << shown;
  EXPECT_THAT(shown, HasSubstr("auth failed for [credential api.env]")) << shown;
  EXPECT_THAT(shown, HasSubstr("upstream refused [credential api.yaml]")) << shown;
  for (const char* secret : {"abcdef0123456789", "hunter2hunter2", "s3cr3t-for-upstream"}) {
    EXPECT_THAT(shown, Not(HasSubstr(secret)));
  }
}

// One line holding many values: compact JSON, a flow-style map, a query
// string. Each value is what a daemon echoes, not the line.
TEST_F(UnitsTest, EachValueOfAOneLineCredentialIsNotShown) {
  services_.AddUnit("api.service", {Behavior::kDiesAfter, 221ms, /*running_initially=*/true});
  json compact = {{"id", "api.json"},
                  {"kind", "credential"},
                  {"path", "/etc/api.json"},
                  {"content", R"({"user":"svc-account","token":"tok-0123456789","n":1})"}};
  json flow = {{"id", "api.yml"},
               {"kind", "credential"},
               {"path", "/etc/api.yml"},
               {"content", "{user: admin, password: 'pass-phrase-42'}\n"}};
  json query = {{"id", "api.dsn"},
                {"kind", "credential"},
                {"path", "/etc/api.dsn"},
                {"content", "postgres://db/app?user=app&password=dsn-secret-77;x=1"}};
  json svc = Service("api", {{"restart_on", {"api.json", "api.yml", "api.dsn"}}});
  journal_.any_run = {"invalid token tok-0123456789 for svc-account", "auth failed: pass-phrase-42",
                      "db refused dsn-secret-77"};
  ApplyReport r = Run(Decl({compact, flow, query, svc}));
  ASSERT_EQ(r.outcomes[3].outcome, core::Outcome::kFailed);
  std::string shown;
  for (const std::string& line : core::FormatJournalLines(r.outcomes[3])) shown += line + "\n";
  EXPECT_THAT(shown, HasSubstr("invalid token [credential api.json] for [credential api.json]"))
      << shown;
  EXPECT_THAT(shown, HasSubstr("auth failed: [credential api.yml]")) << shown;
  EXPECT_THAT(shown, HasSubstr("db refused [credential api.dsn]")) << shown;
  for (const char* secret : {"tok-0123456789", "svc-account", "pass-phrase-42", "dsn-secret-77"}) {
    EXPECT_THAT(shown, Not(HasSubstr(secret)));
  }
}

TEST_F(UnitsTest, AFailedRestartShowsWhatItsRunLogged) {
  services_.AddUnit("jail.service", {Behavior::kDiesAfter, 221ms, /*running_initially=*/true});
  services_.AddUnit("web.service", {});
  json svc = Service("jail", {{"restart_on", {"jail.conf"}}});
  json web = Service("web", {{"restart_on", {"jail.conf"}}});
  testing::WriteText(Root("/etc/jail.conf"), "good");
  ASSERT_EQ(Run(Decl({Conf("good"), svc, web})).result, ApplyResult::kOk);
  for (int i = 1; i <= 6; ++i) journal_.any_run.push_back("line " + std::to_string(i));
  // A line longer than kJournalLineBytes is cut there, whole before it.
  journal_.any_run.push_back(std::string(239, 'a') + "bc");
  journal_.any_run.push_back("refusing jail.conf: unknown key \x1b[31m at line 3");
  ApplyReport r = Run(Decl({Conf("bad"), svc, web}, 2));
  ASSERT_EQ(r.result, ApplyResult::kFailed);
  const core::ResourceOutcome& jail = r.outcomes[1];
  ASSERT_EQ(jail.outcome, core::Outcome::kFailed);
  EXPECT_THAT(core::FormatJournalLines(jail),
              ElementsAre("  journal: line 4", "  journal: line 5", "  journal: line 6",
                          "  journal: " + std::string(239, 'a') + "b...",
                          "  journal: refusing jail.conf: unknown key \\x1b[31m at line 3"))
      << "the last five, each cut at 240 bytes, escaped";
  EXPECT_EQ(r.outcomes[2].outcome, core::Outcome::kRestarted);
  EXPECT_TRUE(r.outcomes[2].unit->journal.empty() && r.outcomes[2].unit->journal_note.empty())
      << "a unit that passed its looks is not looked up";
  for (const std::string& read : journal_.reads()) EXPECT_NE(read, "") << "no run, no read";

  journal_.any_run.clear();
  ApplyReport again = Run(Decl({Conf("bad"), svc, web}, 2));
  ASSERT_EQ(again.outcomes[1].outcome, core::Outcome::kFailed);
  EXPECT_THAT(core::FormatJournalLines(again.outcomes[1]),
              ElementsAre("  journal: (the journal holds no line of this run)"));
  journal_.unreadable = "cannot open the journal: Permission denied";
  ApplyReport unreadable = Run(Decl({Conf("bad"), svc, web}, 2));
  EXPECT_THAT(core::FormatJournalLines(unreadable.outcomes[1]),
              ElementsAre("  journal: (journal not readable: cannot open the journal: Permission "
                          "denied)"));
}

// Issue 40 (1): a unit systemd will not load (BadUnitSetting) never ran, so
// no run logged a word; systemd itself logged which setting, and that is
// what is shown under it. Before, the words only said to go and look.
TEST_F(UnitsTest, AUnitSystemdWillNotLoadShowsWhatSystemdLoggedOfIt) {
  services_.AddUnit("jail.service", {});
  services_.BadSetting("jail.service");
  journal_.any_run.push_back("a run's line, not this unit's");
  journal_.LogManager("jail.service",
                      "jail.service: Service has no ExecStart=, ExecStop=, or SuccessAction=. "
                      "Refusing.");
  ApplyReport r = Run(Decl({Service("jail", json::object())}));
  ASSERT_EQ(r.result, ApplyResult::kFailed);
  const core::ResourceOutcome& jail = r.outcomes[0];
  ASSERT_EQ(jail.outcome, core::Outcome::kFailed);
  EXPECT_THAT(jail.detail, HasSubstr("BadUnitSetting"));
  EXPECT_THAT(core::FormatJournalLines(jail),
              ElementsAre("  journal: jail.service: Service has no ExecStart=, ExecStop=, or "
                          "SuccessAction=. Refusing."));
  EXPECT_THAT(journal_.reads(), ElementsAre("manager:jail.service")) << "no run was looked up";

  services_.AddUnit("mute.service", {});
  services_.BadSetting("mute.service");
  ApplyReport mute = Run(Decl({Service("mute", json::object())}, 2));
  ASSERT_EQ(mute.outcomes[0].outcome, core::Outcome::kFailed);
  EXPECT_THAT(core::FormatJournalLines(mute.outcomes[0]),
              ElementsAre("  journal: (the journal holds no line of systemd's about this unit)"));
}

// A resource can fail on its unit while the unit's run is healthy (it
// cannot be enabled; a restart held back; a job systemd refused): that
// run's chatter is not shown as if it were the reason. Before, any failed
// resource with a unit had its current run's lines read.
TEST_F(UnitsTest, AHealthyRunsLinesAreNotShownBesideAFailureNotItsOwn) {
  fakes::FakeServiceManager::UnitScript script{Behavior::kHealthy, {}, /*running_initially=*/true};
  script.unit_file_state = "static";
  services_.AddUnit("static.service", script);
  journal_.any_run = {"serving on :8080"};
  ApplyReport r = Run(Decl({Service("static", {{"enabled", true}})}));
  ASSERT_EQ(r.outcomes[0].outcome, core::Outcome::kFailed) << r.outcomes[0].detail;
  EXPECT_THAT(core::FormatJournalLines(r.outcomes[0]), ::testing::IsEmpty());
  EXPECT_THAT(journal_.reads(), ::testing::IsEmpty()) << "no failed run: nothing read";
}

// Someone else restarted the unit after the host looked at it and before
// the host asked for its own restart (an operator, or the job of an apply
// that was killed): the host's restart then stops it under that newer
// InvocationID, which is not the unit coming up, nor a death. The first
// look waits for the host's own job, and the restart is accepted.
TEST_F(UnitsTest, ARestartBySomeoneElseJustBeforeTheHostsIsNoDeath) {
  fakes::FakeServiceManager::UnitScript script{Behavior::kHealthy, 0s,
                                               /*running_initially=*/true};
  script.stop_delay = 200ms;
  services_.AddUnit("jail.service", script);
  auto svc = [](const std::string& exec) {
    return Service("jail", {{"unit_text", "[Service]\nExecStart=" + exec + "\n"}});
  };
  ASSERT_EQ(Run(Decl({svc("/bin/v1")})).result, ApplyResult::kOk);
  services_.on_daemon_reload = [&] { services_.RestartedByOther("jail.service"); };
  ApplyReport r = Run(Decl({svc("/bin/v2")}, 2));
  EXPECT_EQ(r.result, ApplyResult::kOk) << core::FormatOutcomeLine(r.outcomes[0]);
  EXPECT_EQ(r.outcomes[0].outcome, core::Outcome::kUpdated);  // its unit file, then a restart
  EXPECT_FALSE(r.outcomes[0].confirm_failed);
  EXPECT_EQ(services_.StartsOf("jail.service"), 2);
}

// Found dead, its new unit file is to be loaded by a start; someone else
// starts it after the host looked and before it asks (Restart=, a socket,
// an operator). A start would then be a job done at once that loads
// nothing, the daemon left on what it started with, and the apply would
// say it runs the change: it is restarted instead.
TEST_F(UnitsTest, AUnitStartedByOtherAfterTheLookIsRestartedOntoTheChange) {
  services_.AddUnit("jail.service", {Behavior::kHealthy, 0s, /*running_initially=*/true});
  auto svc = [](const std::string& exec) {
    return Service("jail", {{"unit_text", "[Service]\nExecStart=" + exec + "\n"}});
  };
  ASSERT_EQ(Run(Decl({svc("/bin/v1")})).result, ApplyResult::kOk);
  services_.Kill("jail.service");
  services_.on_daemon_reload = [&] { services_.RestartedByOther("jail.service"); };
  int loads = 0;
  services_.on_load = [&](const std::string&) { ++loads; };
  ApplyReport r = Run(Decl({svc("/bin/v2")}, 2));
  ASSERT_EQ(r.outcomes.size(), 1u);
  EXPECT_EQ(r.result, ApplyResult::kOk) << core::FormatOutcomeLine(r.outcomes[0]);
  EXPECT_EQ(loads, 1) << "the daemon runs what it started with: " << r.outcomes[0].detail;
  ASSERT_FALSE(services_.calls().empty());
  EXPECT_EQ(services_.calls().back().kind, ports::JobKind::kRestart);
  EXPECT_THAT(r.outcomes[0].detail,
              HasSubstr("started by someone else after the host looked: restarted onto the "
                        "change, running as jail.service"));
}

// A running unit systemd restarted since the last apply (so not up as
// recorded) whose new generation changes only its want (`enabled`): its
// start only has it looked at twice. Nothing is there to load, so it is
// never restarted for it.
TEST_F(UnitsTest, ARunningUnitWhoseWantAloneChangedIsNotRestarted) {
  services_.AddUnit("web.service", {Behavior::kHealthy, 0s, /*running_initially=*/true});
  ASSERT_EQ(Run(Decl({Service("web")})).result, ApplyResult::kOk);
  services_.RestartedBySystemd("web.service", 1);
  ApplyReport r = Run(Decl({Service("web", {{"enabled", false}})}, 2));
  EXPECT_EQ(r.result, ApplyResult::kOk) << core::FormatOutcomeLine(r.outcomes[0]);
  ASSERT_FALSE(services_.calls().empty());
  EXPECT_EQ(services_.calls().back().kind, ports::JobKind::kStart);
  EXPECT_THAT(r.outcomes[0].detail, Not(HasSubstr("restarted onto the change")));
}

// A socket found dead, due its new definition, started by someone else
// with its service before the host asks: the start that stands for a
// restart is held as any restart of a socket under its running service
// (systemd would stop the socket and refuse to start it again).
TEST_F(UnitsTest, ASocketStartedByOtherSinceTheLookIsNotRestartedUnderItsService) {
  services_.AddUnit("echo.socket", {Behavior::kHealthy, 0s, /*running_initially=*/true});
  services_.AddUnit("echo.service", {Behavior::kHealthy, 0s});
  services_.SetTriggers("echo.socket", {"echo.service"});
  auto socket = [](const std::string& path) {
    return Service(
        "echo", {{"unit", "echo.socket"}, {"unit_text", "[Socket]\nListenStream=" + path + "\n"}});
  };
  ASSERT_EQ(Run(Decl({socket("/run/a")})).result, ApplyResult::kOk);
  services_.Kill("echo.socket");
  services_.on_daemon_reload = [&] {
    services_.RestartedByOther("echo.socket");
    services_.RestartedByOther("echo.service");
  };
  size_t jobs_before = services_.calls().size();
  ApplyReport r = Run(Decl({socket("/run/b")}, 2));
  EXPECT_EQ(r.result, ApplyResult::kFailed) << core::FormatOutcomeLine(r.outcomes[0]);
  EXPECT_THAT(r.outcomes[0].detail,
              HasSubstr("systemd refuses to start echo.socket again while it runs"));
  EXPECT_EQ(services_.calls().size(), jobs_before) << "no job asked of the socket";
  EXPECT_TRUE(store_.Owed().owed.contains("echo"));
}

// The same restart by someone else, later still: after the host read the
// unit and before systemd took the host's job. The host's restart then
// stops a run it never saw, for longer than a settle, and its new
// definition fails to start. Neither look may read that stop as the unit
// on its way up: the restart is not accepted.
TEST_F(UnitsTest, AStopOfARunTheHostNeverSawIsNotTheUnitComingUp) {
  fakes::FakeServiceManager::UnitScript script{Behavior::kHealthy, 0s,
                                               /*running_initially=*/true};
  services_.AddUnit("jail.service", script);
  auto svc = [](const std::string& exec) {
    return Service("jail", {{"unit_text", "[Service]\nExecStart=" + exec + "\n"}});
  };
  ASSERT_EQ(Run(Decl({svc("/bin/v1")})).result, ApplyResult::kOk);
  script.behavior = Behavior::kJobFails;
  script.stop_delay = 5s;
  services_.AddUnit("jail.service", script);
  services_.on_enqueue = [&](const std::string& unit) { services_.RestartedByOther(unit); };
  ApplyReport r = Run(Decl({svc("/bin/v2")}, 2));
  ASSERT_EQ(r.outcomes.size(), 1u);
  EXPECT_EQ(r.result, ApplyResult::kFailed) << core::FormatOutcomeLine(r.outcomes[0]);
  EXPECT_EQ(r.outcomes[0].outcome, core::Outcome::kFailed);
  EXPECT_TRUE(r.outcomes[0].confirm_failed);
}

// The same window, on a loaded machine: the host's restart has stopped the
// run it never saw, and systemd has not yet turned the job into its start.
// The unit reads inactive (dead) under that run, the job pending; it then
// comes up under the host's run and stays up. (Against a real systemd, a
// unit crash campaign under load failed it as "inactive (dead) 0.3 s after
// restart".)
TEST_F(UnitsTest, ARestartBetweenItsStopAndItsStartIsNotAnEnd) {
  fakes::FakeServiceManager::UnitScript script{Behavior::kHealthy, 0s,
                                               /*running_initially=*/true};
  services_.AddUnit("jail.service", script);
  auto svc = [](const std::string& exec) {
    return Service("jail", {{"unit_text", "[Service]\nExecStart=" + exec + "\n"}});
  };
  ASSERT_EQ(Run(Decl({svc("/bin/v1")})).result, ApplyResult::kOk);
  script.start_gap = 300ms;
  services_.AddUnit("jail.service", script);
  services_.on_enqueue = [&](const std::string& unit) { services_.RestartedByOther(unit); };
  ApplyReport r = Run(Decl({svc("/bin/v2")}, 2));
  ASSERT_EQ(r.outcomes.size(), 1u);
  EXPECT_EQ(r.result, ApplyResult::kOk) << core::FormatOutcomeLine(r.outcomes[0]);
  EXPECT_THAT(r.outcomes[0].detail, HasSubstr("active (running)"));
  // And a run that ends there, the job failing, still fails.
  script.behavior = Behavior::kJobFails;
  services_.AddUnit("jail.service", script);
  ApplyReport dies = Run(Decl({svc("/bin/v3")}, 3));
  ASSERT_EQ(dies.outcomes.size(), 1u);
  EXPECT_EQ(dies.result, ApplyResult::kFailed) << core::FormatOutcomeLine(dies.outcomes[0]);
  EXPECT_TRUE(dies.outcomes[0].confirm_failed);
}

// A unit that cannot be read just before its job (the bus lost there) is
// not asked: there is nothing to tell its coming up from. It fails, named,
// and what it owes is owed to the next apply, which restarts it.
TEST_F(UnitsTest, AUnitThatCannotBeReadBeforeItsJobIsNotAskedAndStaysOwed) {
  services_.AddUnit("jail.service", {Behavior::kHealthy, 0s, /*running_initially=*/true});
  auto svc = [](const std::string& exec) {
    return Service("jail", {{"unit_text", "[Service]\nExecStart=" + exec + "\n"}});
  };
  ASSERT_EQ(Run(Decl({svc("/bin/v1")})).result, ApplyResult::kOk);
  int starts = services_.StartsOf("jail.service");
  services_.on_daemon_reload = [&] { services_.failing_reads = 1; };
  ApplyReport lost = Run(Decl({svc("/bin/v2")}, 2));
  EXPECT_EQ(lost.result, ApplyResult::kFailed);
  ASSERT_EQ(lost.outcomes.size(), 1u);
  EXPECT_EQ(lost.outcomes[0].outcome, core::Outcome::kFailed);
  EXPECT_THAT(lost.outcomes[0].detail, HasSubstr("Connection reset by peer"));
  EXPECT_EQ(services_.StartsOf("jail.service"), starts) << "not asked";
  EXPECT_TRUE(store_.Owed().owed.contains("jail"));
  services_.on_daemon_reload = nullptr;
  ApplyReport next = Run(Decl({svc("/bin/v2")}, 2));
  EXPECT_EQ(next.result, ApplyResult::kOk) << core::FormatOutcomeLine(next.outcomes[0]);
  EXPECT_THAT(next.outcomes[0].detail, HasSubstr("pending since generation 2"));
  EXPECT_EQ(services_.StartsOf("jail.service"), starts + 1);
}

// A unit systemd does not know fails at once, named, and costs no pause:
// there is nothing to look at twice.
TEST_F(UnitsTest, UnknownUnitFailsNamedWithoutAPause) {
  ApplyReport r = Run(Decl({Service("ghost")}));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_THAT(r.outcomes[0].detail, HasSubstr("Unit ghost.service not found"));
  EXPECT_EQ(clock_.elapsed(), 0s) << "no settle spent when no job was queued";
}

// ADR 184 row 2: a unit still starting is accepted at both looks.
TEST_F(UnitsTest, StillStartingIsAcceptedWithoutWaitingForIt) {
  services_.AddUnit("slow.service", {Behavior::kSlowStart, 10s});
  ApplyReport r = Run(Decl({Service("slow")}));
  EXPECT_EQ(r.result, ApplyResult::kOk);
  EXPECT_THAT(Outcomes(r), ElementsAre("started"));
  EXPECT_THAT(r.outcomes[0].detail, HasSubstr("still starting"));
  EXPECT_EQ(clock_.elapsed(), 2s) << "one bounded job wait plus one pause, not 10 s";
}

// ADR 184's incident, with a daemon slow to say it is ready: a Type=notify
// daemon ready 1.8 s after its start, into a 1 s settle, that refuses its
// config 300 ms after. The first look (1 s, still activating) and the
// pause put the second look 0.2 s after it came up, and it read active:
// the apply said restarted, exit 0, and every later apply started it again
// as was failed. The second look now comes a settle after it came up.
TEST_F(UnitsTest, ADaemonReadyAfterItsFirstLookIsLookedAtASettleAfter) {
  fakes::FakeServiceManager::UnitScript refuses{Behavior::kSlowStart, 1800ms};
  refuses.dies_after_ready = 300ms;
  services_.AddUnit("late.service", refuses);
  ApplyReport r = Run(Decl({Service("late")}));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[0]),
            "failed late (service): late.service failed (Result=exit-code) 2.8 s after start");
  EXPECT_EQ(clock_.elapsed(), 2800ms) << "the second look a settle after it came up, at 1.8 s";

  // Up and staying up: accepted at that later look, no longer.
  services_.AddUnit("ready.service", {Behavior::kSlowStart, 1800ms});
  auto before = clock_.elapsed();
  r = Run(Decl({Service("ready")}));
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[0]),
            "started ready (service): was inactive, started; ready.service active (running)");
  EXPECT_EQ(clock_.elapsed() - before, 2800ms);
}

// ADR 184 row 3: a service asked to stop is not waited on.
TEST_F(UnitsTest, StopIsNotWaitedOn) {
  services_.AddUnit("old.service", {Behavior::kHealthy, 0s, true});
  json svc = Service("old");
  svc["state"] = "stopped";
  ApplyReport r = Run(Decl({svc}));
  EXPECT_THAT(Outcomes(r), ElementsAre("stopped"));
  EXPECT_THAT(r.outcomes[0].detail, HasSubstr("not waited on"));
  EXPECT_EQ(clock_.elapsed(), 0s);
  EXPECT_EQ(clock_.slept(), 0s);
}

TEST_F(UnitsTest, TwelveRestartsShareOnePause) {
  json resources = {Conf("v1")};
  for (int i = 0; i < 12; ++i) {
    std::string id = "svc" + std::to_string(i);
    services_.AddUnit(id + ".service", {Behavior::kHealthy, 0s, true});
    resources.push_back(Service(id, {{"restart_on", {"jail.conf"}}}));
  }
  Run(Decl(resources));
  auto before = clock_.slept();
  resources[0] = Conf("v2");
  ApplyReport r = Run(Decl(resources, 2));
  EXPECT_EQ(r.result, ApplyResult::kOk);
  for (size_t i = 1; i < r.outcomes.size(); ++i)
    EXPECT_EQ(r.outcomes[i].outcome, core::Outcome::kRestarted);
  EXPECT_EQ(clock_.slept() - before, 1s) << "one settle for all twelve";
}

TEST_F(UnitsTest, CrashLoopReadingActiveAtBothLooksFails) {
  services_.AddUnit("flap.service", {Behavior::kCrashLoop, 300ms});
  ApplyReport r = Run(Decl({Service("flap")}));
  EXPECT_THAT(Outcomes(r), ElementsAre("failed"));
  EXPECT_THAT(r.outcomes[0].detail, HasSubstr("restarted by systemd"));
}

// Issue 14: a crash loop reads "active" at many looks. Once the host found
// the unit failing, it never reads unchanged again: the restart stays owed.
TEST_F(UnitsTest, ACrashLoopIsNeverUnchanged) {
  services_.AddUnit("loop.service", {Behavior::kCrashLoop, 100ms});
  for (int i = 0; i < 3; ++i) {
    ApplyReport r = Run(Decl({Service("loop")}));
    EXPECT_EQ(r.result, ApplyResult::kFailed) << i;
    EXPECT_THAT(r.outcomes[0].detail, HasSubstr("restarted by systemd"));
    EXPECT_FALSE(r.outcomes[0].unit->up);
    clock_.Advance(5min);
  }
}

// ... and a daemon systemd restarted on its own since the host last found
// it as declared is not as declared either — in the full pass and in the
// no-op proven from the record. The host starts it (a no-op job when it is
// running) and looks twice.
TEST_F(UnitsTest, NRestartsGrownSinceTheLastLookIsNotUnchanged) {
  services_.AddUnit("d.service", {Behavior::kHealthy, 0s, true});
  ASSERT_THAT(Outcomes(Run(Decl({Service("d")}))), ElementsAre("unchanged"));
  ASSERT_TRUE(Run(Decl({Service("d")})).from_record);
  services_.RestartedBySystemd("d.service", 3);
  ApplyReport r = Run(Decl({Service("d")}));
  EXPECT_FALSE(r.from_record);
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[0]),
            "started d (service): was restarted by systemd since the host last looked "
            "(NRestarts 0 -> 3), started; d.service active (running)");
  // The start ran nothing (the same run before and after): no restart of
  // the host's to count beside systemd's own three, or MeshHostUnitFlapping
  // counts each twice.
  EXPECT_EQ(r.outcomes[0].restart_reason_name(), "");
  EXPECT_TRUE(Run(Decl({Service("d")})).from_record) << "confirmed at 3: the new baseline";
}

// A start of a unit that runs is a job systemd finishes at once without
// touching the daemon: a change must still restart it, even when the unit
// is not up for another reason (systemd restarted it on its own).
TEST_F(UnitsTest, AChangeToAUnitSystemdRestartedIsStillARestart) {
  services_.AddUnit("jail.service", {Behavior::kHealthy, 0s, true});
  json svc = Service("jail", {{"restart_on", {"jail.conf"}}});
  testing::WriteText(Root("/etc/jail.conf"), "v1");
  ASSERT_THAT(Outcomes(Run(Decl({Conf("v1"), svc}))), ElementsAre("unchanged", "unchanged"));
  services_.RestartedBySystemd("jail.service", 2);
  ApplyReport r = Run(Decl({Conf("v2"), svc}, 2));
  EXPECT_THAT(Outcomes(r), ElementsAre("updated", "restarted"));
  EXPECT_EQ(services_.calls().back().kind, ports::JobKind::kRestart);
}

// Issue 14: a oneshot without RemainAfterExit, declared running, ran at
// every apply. Once it ended well under this want it is as declared: run
// once, then unchanged, up (what /healthz and mesh_host_unit_active read).
TEST_F(UnitsTest, AOneshotThatRanWellIsNotRunAgain) {
  services_.AddUnit("once.service", {Behavior::kOneshot});
  json once = Service("once", {{"unit_text", "[Service]\nType=oneshot\nExecStart=/bin/true\n"}});
  ApplyReport first = Run(Decl({once}));
  EXPECT_THAT(Outcomes(first), ElementsAre("created"));
  EXPECT_TRUE(first.outcomes[0].unit->up);
  for (int i = 0; i < 2; ++i) {
    ApplyReport again = Run(Decl({once}));
    EXPECT_THAT(Outcomes(again), ElementsAre("unchanged"));
    EXPECT_TRUE(again.outcomes[0].unit->up);
  }
  EXPECT_EQ(services_.StartsOf("once.service"), 1);
  EXPECT_THAT(Record()["resources"]["once"]["finished"], true);
}

// A oneshot still running at the second look (a migration) is accepted as
// still starting; once it finished well it is not run again.
TEST_F(UnitsTest, AOneshotLongerThanTheSettleRunsOnce) {
  services_.AddUnit("migrate.service", {Behavior::kSlowOneshot, 5s});
  json svc = Service("migrate");
  ApplyReport first = Run(Decl({svc}));
  EXPECT_THAT(first.outcomes[0].detail, HasSubstr("still starting"));
  clock_.Advance(10s);
  for (int i = 0; i < 2; ++i) EXPECT_THAT(Outcomes(Run(Decl({svc}))), ElementsAre("unchanged"));
  EXPECT_EQ(services_.StartsOf("migrate.service"), 1);
}

TEST_F(UnitsTest, FinishedOneshotAccepted) {
  services_.AddUnit("once.service", {Behavior::kOneshot});
  ApplyReport r = Run(Decl({Service("once")}));
  EXPECT_EQ(r.result, ApplyResult::kOk) << r.outcomes[0].detail;
  EXPECT_THAT(r.outcomes[0].detail, HasSubstr("finished (Result=success)"));
}

TEST_F(UnitsTest, JobFailureFails) {
  services_.AddUnit("bad.service", {Behavior::kJobFails});
  ApplyReport r = Run(Decl({Service("bad")}));
  EXPECT_THAT(Outcomes(r), ElementsAre("failed"));
  EXPECT_THAT(r.outcomes[0].detail, HasSubstr("job start ended \"failed\""));
}

TEST_F(UnitsTest, DeadUnitIsStartedAsWasDead) {
  services_.AddUnit("d.service", {Behavior::kHealthy, 0s, true});
  Run(Decl({Service("d")}));
  services_.Kill("d.service");
  // A plan says what it would do: it started nothing.
  ApplyReport plan = Run(Decl({Service("d")}), /*dry_run=*/true);
  EXPECT_EQ(core::FormatOutcomeLine(plan.outcomes[0]),
            "started d (service): was failed; would start d.service");
  ApplyReport r = Run(Decl({Service("d")}));
  EXPECT_THAT(Outcomes(r), ElementsAre("started"));
  EXPECT_EQ(r.outcomes[0].restart_reason_name(), "was_dead") << "a dead daemon started: counted";
  EXPECT_EQ(r.outcomes[0].restart_reason_name(), "was_dead");
  EXPECT_THAT(r.outcomes[0].detail, HasSubstr("was failed, started"));
}

// Issue 38 (3): a start accepted as still starting that then dies (a
// Type=notify unit that never becomes ready) read "was failed, started;
// still starting", exit 0, at every later apply. It fails each of them,
// naming its result and how long ago, and the start stays owed.
TEST_F(UnitsTest, AStartFoundFailedAfterItsSettleFailsTheLaterApplies) {
  services_.AddUnit("n.service", {Behavior::kNeverReady, 5s});
  ApplyReport first = Run(Decl({Service("n")}));
  EXPECT_THAT(Outcomes(first), ElementsAre("started"));
  EXPECT_THAT(first.outcomes[0].detail, HasSubstr("still starting"));
  for (int k = 2; k <= 3; ++k) {
    clock_.Advance(10s);
    ApplyReport r = Run(Decl({Service("n")}));
    EXPECT_EQ(r.result, ApplyResult::kFailed) << "apply " << k;
    EXPECT_THAT(Outcomes(r), ElementsAre("failed")) << "apply " << k;
    EXPECT_THAT(r.outcomes[0].detail,
                HasSubstr("start failed: n.service failed (Result=timeout) for "))
        << r.outcomes[0].detail;
    EXPECT_THAT(r.outcomes[0].detail, HasSubstr("started again: still starting"));
    EXPECT_TRUE(store_.Owed().owed.contains("n")) << "apply " << k;
  }
  // At once again: on its way up, as before it failed. Not a success yet.
  ApplyReport again = Run(Decl({Service("n")}));
  EXPECT_THAT(Outcomes(again), ElementsAre("failed"));
  EXPECT_THAT(again.outcomes[0].detail,
              HasSubstr("start not seen through: n.service activating (start)"));
  EXPECT_FALSE(again.outcomes[0].unit->up);
}

// A Type=notify daemon that never gets ready, under Restart=on-failure:
// accepted "still starting" once, then found activating again, systemd
// having restarted it. The host's start merged with systemd's own, both
// looks read activating, and every apply said "started … still starting",
// exit 0, for a daemon never up. It died on its way up: the start failed.
TEST_F(UnitsTest, AStartRestartedBySystemdBeforeItWasUpFails) {
  services_.AddUnit("n.service", {Behavior::kSlowStart, 1h});
  ApplyReport first = Run(Decl({Service("n")}));
  EXPECT_THAT(first.outcomes[0].detail, HasSubstr("still starting"));
  for (int k = 2; k <= 3; ++k) {
    services_.RestartedBySystemd("n.service", 2);
    clock_.Advance(5min);
    ApplyReport r = Run(Decl({Service("n")}));
    EXPECT_EQ(r.result, ApplyResult::kFailed) << "apply " << k;
    EXPECT_THAT(r.outcomes[0].detail,
                HasSubstr("start failed: n.service died before it was ever seen running and was "
                          "restarted by systemd (NRestarts " +
                          std::to_string(2 * k - 4) + " -> " + std::to_string(2 * k - 2) + ")"))
        << r.outcomes[0].detail;
    EXPECT_FALSE(r.outcomes[0].unit->up);
    EXPECT_TRUE(store_.Owed().owed.contains("n")) << "apply " << k;
  }
}

// ... but one that came up since, died once and is up again is a daemon
// systemd restarted, as any: looked at twice, not a failed start.
TEST_F(UnitsTest, AStartUpSinceThenRestartedBySystemdIsNoFailedStart) {
  services_.AddUnit("n.service", {Behavior::kSlowStart, 10s});
  EXPECT_THAT(Run(Decl({Service("n")})).outcomes[0].detail, HasSubstr("still starting"));
  clock_.Advance(1min);
  services_.RestartedBySystemd("n.service", 1);
  ApplyReport r = Run(Decl({Service("n")}));
  EXPECT_EQ(r.result, ApplyResult::kOk) << r.outcomes[0].detail;
  EXPECT_THAT(r.outcomes[0].detail, Not(HasSubstr("start failed")));
}

// A start held behind a dependency that never comes up (Requires= and
// After= a unit that fails): the job waits while the unit reads inactive
// (dead), then ends "dependency", and the unit never ran. Every apply said
// "still starting (inactive (dead))", exit 0, the first as "started", the
// later ones as "was inactive, started". Each fails, and the start stays
// owed.
TEST_F(UnitsTest, AStartHeldBehindADependencyIsNotAccepted) {
  services_.AddUnit("a.service", {Behavior::kBlockedByDependency, 5s});
  for (int k = 1; k <= 3; ++k) {
    ApplyReport r = Run(Decl({Service("a")}));
    EXPECT_EQ(r.result, ApplyResult::kFailed) << "apply " << k;
    EXPECT_THAT(r.outcomes[0].detail,
                HasSubstr("a.service its start job is still queued (behind a unit it is "
                          "ordered after), inactive (dead) 2.0 s after start"))
        << r.outcomes[0].detail;
    EXPECT_FALSE(r.outcomes[0].unit->up) << "apply " << k;
    EXPECT_TRUE(r.outcomes[0].confirm_failed) << "its second look failed";
    EXPECT_TRUE(r.outcomes[0].never_ran) << "but it never ran: no death to roll back";
    EXPECT_TRUE(store_.Owed().owed.contains("a")) << "apply " << k;
    clock_.Advance(10s);
  }
}

// The same for a restart of a unit that runs: its job waits behind a unit
// it is ordered after, slower than its own stop timeout, and the old run
// goes on untouched. It was waited on for that timeout and then read
// "still stopping, active (running)": a stop that never began, and a
// death on the new config, rolled back. It fails as queued: nothing of
// what the apply wrote ran, and the restart stays owed.
TEST_F(UnitsTest, ARestartHeldBehindADependencyIsQueuedNotStopping) {
  fakes::FakeServiceManager::UnitScript held{Behavior::kBlockedByDependency, 60s, true};
  held.timeout_stop = 5s;
  services_.AddUnit("jail.service", held);
  json svc = Service("jail", {{"restart_on", {"jail.conf"}}});
  testing::WriteText(Root("/etc/jail.conf"), "good");
  Run(Decl({Conf("good"), svc}));
  ApplyReport r = Run(Decl({Conf("new"), svc}, 2));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_THAT(r.outcomes[1].detail,
              HasSubstr("jail.service its restart job is still queued (behind a unit it is "
                        "ordered after), active (running), past its stop timeout"))
      << r.outcomes[1].detail;
  EXPECT_FALSE(r.outcomes[1].unit->up);
  EXPECT_TRUE(r.outcomes[1].never_ran) << "the old run went on: no death to roll back";
  EXPECT_TRUE(store_.Owed().owed.contains("jail"));
}

// A unit that ran, was confirmed and was killed later is a dead daemon
// started again, as before: not a failed start.
TEST_F(UnitsTest, AConfirmedUnitKilledLaterIsStartedNotAFailedStart) {
  services_.AddUnit("d.service", {Behavior::kHealthy, 0s});
  Run(Decl({Service("d")}));
  services_.Kill("d.service");
  ApplyReport r = Run(Decl({Service("d")}));
  EXPECT_THAT(Outcomes(r), ElementsAre("started"));
  EXPECT_FALSE(store_.Owed().owed.contains("d"));
}

// Issue 38 (6): a unit declared stopped whose stop has not finished read
// "unchanged ... stopped as declared" while deactivating.
TEST_F(UnitsTest, AUnitStillStoppingIsNotStopped) {
  fakes::FakeServiceManager::UnitScript slow{Behavior::kHealthy, 0s, true, 30s};
  services_.AddUnit("s.service", slow);
  json stopped = Service("s", {{"state", "stopped"}});
  ApplyReport first = Run(Decl({stopped}));
  EXPECT_THAT(Outcomes(first), ElementsAre("stopped"));
  ApplyReport r = Run(Decl({stopped}));
  EXPECT_THAT(Outcomes(r), ElementsAre("stopped"));
  EXPECT_THAT(r.outcomes[0].detail,
              HasSubstr("still stopping: s.service deactivating (stop-sigterm)"));
  clock_.Advance(31s);
  EXPECT_THAT(Outcomes(Run(Decl({stopped}))), ElementsAre("unchanged"));
}

TEST_F(UnitsTest, StoppedThenDeclaredRunningIsADeclaredStart) {
  services_.AddUnit("s.service", {});
  json svc = Service("s");
  svc["state"] = "stopped";
  Run(Decl({svc}));
  svc["state"] = "running";
  ApplyReport r = Run(Decl({svc}, 2));
  EXPECT_THAT(Outcomes(r), ElementsAre("started"));
  EXPECT_EQ(r.outcomes[0].restart_reason_name(), "declared");
}

TEST_F(UnitsTest, RestartOnAFailedResourceDoesNotRestart) {
  services_.AddUnit("jail.service", {Behavior::kHealthy, 0s, true});
  json svc = Service("jail", {{"restart_on", {"jail.conf"}}});
  testing::WriteText(Root("/etc/jail.conf"), "v1");
  Run(Decl({Conf("v1"), svc}));
  json conf = Conf("v2");
  conf["owner"] = "no-such-user-xyz";
  ApplyReport r = Run(Decl({conf, svc}, 2));
  EXPECT_THAT(Outcomes(r), ElementsAre("failed", "failed"));
  EXPECT_THAT(r.outcomes[1].detail,
              HasSubstr("not restarted: restart_on resource jail.conf failed"));
  EXPECT_EQ(services_.StartsOf("jail.service"), 0);
}

TEST_F(UnitsTest, UnitTextWrittenWithOneDaemonReload) {
  services_.AddUnit("a.service", {});
  services_.AddUnit("b.service", {});
  ApplyReport r = Run(Decl({Service("a", {{"unit_text", "[Service]\nExecStart=/bin/a\n"}}),
                            Service("b", {{"unit_text", "[Service]\nExecStart=/bin/b\n"}})}));
  EXPECT_THAT(Outcomes(r), ElementsAre("created", "created"));
  EXPECT_EQ(services_.daemon_reloads(), 1);
  EXPECT_EQ(testing::ReadText(dir_.Sub("units/a.service")), "[Service]\nExecStart=/bin/a\n");
  Run(Decl({Service("a", {{"unit_text", "[Service]\nExecStart=/bin/a\n"}}),
            Service("b", {{"unit_text", "[Service]\nExecStart=/bin/b\n"}})}));
  EXPECT_EQ(services_.daemon_reloads(), 1) << "no reload when nothing changed";
}

// Issue 210 for the process kind: created, unchanged, unchanged, and the
// unit is started exactly once.
TEST_F(UnitsTest, Issue210ProcessAppliedThreeTimesStartsOnce) {
  services_.AddUnit("node-tools.service", {});
  std::string sha = Bundle("rt.tar.gz", {{TarMember::kFile, "bin/serve", "#!/bin/sh\n", 0755}});
  json decl = Decl({{{"id", "node-tools.runtime"},
                     {"kind", "process"},
                     {"path", "/opt/node-tools"},
                     {"source", "rt.tar.gz"},
                     {"sha256", sha},
                     {"unit", "node-tools.service"},
                     {"unit_text", "[Service]\nExecStart=/opt/node-tools/bin/serve\n"}}});
  ApplyReport first = Run(decl);
  EXPECT_EQ(core::FormatOutcomeLine(first.outcomes[0]).substr(0, 60),
            std::string("created node-tools.runtime (process): unpacked 1 file(s), wr"));
  std::string digest = Record()["resources"]["node-tools.runtime"]["digest"];
  for (int i = 0; i < 2; ++i) {
    ApplyReport again = Run(decl);
    EXPECT_THAT(Outcomes(again), ElementsAre("unchanged"));
    EXPECT_EQ(Record()["resources"]["node-tools.runtime"]["digest"], digest);
  }
  EXPECT_EQ(services_.StartsOf("node-tools.service"), 1);
}

// A dropped process whose tree lies in the path of a bundle that failed
// stays the host's, recorded: its removal was said "kept", yet its unit
// was stopped and its unit file deleted.
TEST_F(UnitsTest, ARemovalKeptForAFailedBundleDoesNothingToItsUnit) {
  services_.AddUnit("rt.service", {});
  std::string sha = Bundle("rt.tar.gz", {{TarMember::kFile, "serve", "#!/bin/sh\n", 0755}});
  json process = {{"id", "rt"},
                  {"kind", "process"},
                  {"path", "/opt/app/bin"},
                  {"source", "rt.tar.gz"},
                  {"sha256", sha},
                  {"unit", "rt.service"},
                  {"unit_text", "[Service]\nExecStart=/opt/app/bin/serve\n"}};
  ASSERT_EQ(Run(Decl({process})).result, ApplyResult::kOk);
  testing::WriteText(Root("/opt/app/data.txt"), "someone's");
  json app = {{"id", "app"},
              {"kind", "archive"},
              {"path", "/opt/app"},
              {"source", "rt.tar.gz"},
              {"sha256", sha}};
  ApplyReport r = Run(Decl({app}, 2));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  ASSERT_EQ(r.outcomes.size(), 2u);
  EXPECT_THAT(core::FormatOutcomeLine(r.outcomes[1]), HasSubstr("kept as the host's"));
  for (const auto& c : services_.calls()) EXPECT_NE(c.kind, ports::JobKind::kStop);
  EXPECT_TRUE(std::filesystem::exists(dir_.Sub("units") + "/rt.service"));
  EXPECT_TRUE(services_.ReadUnit("rt.service")->Running());
}

// SPEC 8: the tree of a dropped process is deleted once its unit no longer
// runs; until then that removal is owed. It was deleted in the apply that
// queued the stop: an ExecStop= in the bundle was gone before systemd ran
// it, and a unit still draining lost its files under it.
TEST_F(UnitsTest, ADroppedProcessKeepsItsTreeUntilItsUnitNoLongerRuns) {
  fakes::FakeServiceManager::UnitScript draining{Behavior::kHealthy, 0s, false, 30s};
  services_.AddUnit("rt.service", draining);
  std::string sha = Bundle("rt.tar.gz", {{TarMember::kFile, "bin/serve", "#!/bin/sh\n", 0755}});
  json decl = Decl({{{"id", "rt"},
                     {"kind", "process"},
                     {"path", "/opt/rt"},
                     {"source", "rt.tar.gz"},
                     {"sha256", sha},
                     {"unit", "rt.service"},
                     {"unit_text", "[Service]\nExecStart=/opt/rt/bin/serve\n"}}});
  ASSERT_THAT(Outcomes(Run(decl)), ElementsAre("created"));
  ApplyReport stopping = Run(Decl(json::array(), 2));
  EXPECT_EQ(stopping.result, ApplyResult::kOk);
  EXPECT_THAT(Outcomes(stopping), ElementsAre("removed"));
  EXPECT_THAT(stopping.outcomes[0].detail,
              HasSubstr("stopped rt.service (not waited on); its tree and unit file go once "
                        "rt.service no longer runs"))
      << stopping.outcomes[0].detail;
  EXPECT_TRUE(testing::Exists(Root("/opt/rt/bin/serve")));
  EXPECT_TRUE(testing::Exists(dir_.Sub("units/rt.service")));
  // Stopped on purpose: the record's own view (the daemon's at its start,
  // beside a refused push) must not call it dead.
  EXPECT_EQ(Record()["resources"]["rt"]["state"], "stopped");
  clock_.Advance(5s);  // still draining: deactivating
  ApplyReport still = Run(Decl(json::array(), 2));
  EXPECT_THAT(still.outcomes[0].detail, HasSubstr("go once rt.service no longer runs"));
  EXPECT_TRUE(testing::Exists(Root("/opt/rt/bin/serve")));
  clock_.Advance(30s);
  ApplyReport done = Run(Decl(json::array(), 2));
  EXPECT_THAT(Outcomes(done), ElementsAre("removed"));
  EXPECT_THAT(done.outcomes[0].detail, HasSubstr("deleted unit file rt.service"));
  EXPECT_FALSE(testing::Exists(Root("/opt/rt")));
  EXPECT_FALSE(testing::Exists(dir_.Sub("units/rt.service")));
  EXPECT_TRUE(Run(Decl(json::array(), 2)).outcomes.empty()) << "nothing left recorded";
  EXPECT_EQ(services_.StopsOf("rt.service"), 1);
}

// A stop systemd refuses (RefuseManualStop=, a policy) is no wait for the
// stop: the removal fails, naming the refusal, and stays owed with every
// file in place. It read "stopped (not waited on); ... go once it no
// longer runs" at every apply while the unit ran on.
TEST_F(UnitsTest, ARefusedStopOfADroppedUnitIsAFailureNotAWait) {
  fakes::FakeServiceManager::UnitScript draining{Behavior::kHealthy, 0s, false, 30s};
  services_.AddUnit("rt.service", draining);
  fakes::FakeServiceManager::UnitScript drain;
  drain.exec_stop = 1;
  services_.AddUnit("db.service", drain);
  std::string sha = Bundle("rt.tar.gz", {{TarMember::kFile, "bin/serve", "#!/bin/sh\n", 0755}});
  json decl = Decl({{{"id", "rt"},
                     {"kind", "process"},
                     {"path", "/opt/rt"},
                     {"source", "rt.tar.gz"},
                     {"sha256", sha},
                     {"unit", "rt.service"},
                     {"unit_text", "[Service]\nExecStart=/opt/rt/bin/serve\n"}},
                    Service("db", {{"unit_text", "[Service]\nExecStart=/bin/db\n"}})});
  ASSERT_EQ(Run(decl).result, ApplyResult::kOk);
  services_.refuse_stop = "org.freedesktop.systemd1.OperationRefused: Operation refused";
  ApplyReport refused = Run(Decl(json::array(), 2));
  EXPECT_EQ(refused.result, ApplyResult::kFailed);
  ASSERT_EQ(refused.outcomes.size(), 2u);
  for (const auto& o : refused.outcomes) {
    EXPECT_EQ(o.outcome, core::Outcome::kFailed) << o.id;
    EXPECT_THAT(o.detail, HasSubstr("removing: StopUnit")) << o.id;
  }
  EXPECT_TRUE(testing::Exists(Root("/opt/rt/bin/serve")));
  EXPECT_TRUE(testing::Exists(dir_.Sub("units/rt.service")));
  EXPECT_TRUE(testing::Exists(dir_.Sub("units/db.service")));
  services_.refuse_stop.clear();
  ApplyReport stopping = Run(Decl(json::array(), 2));
  EXPECT_EQ(stopping.result, ApplyResult::kOk);
  EXPECT_EQ(services_.StopsOf("db.service"), 2) << "refused, then asked again";
  EXPECT_THAT(Outcomes(stopping), ElementsAre("removed", "removed"));
}

// A process whose unit is renamed: its old unit's file, which its stop
// reads, waits for that stop too (its tree is the new unit's).
TEST_F(UnitsTest, AProcessMovedToAnotherUnitKeepsTheOldFileItsStopReads) {
  fakes::FakeServiceManager::UnitScript drain;
  drain.exec_stop = 1;
  drain.stop_delay = 2s;
  services_.AddUnit("api.service", drain);
  services_.AddUnit("api2.service", {});
  std::string sha = Bundle("api.tar.gz", {{TarMember::kFile, "bin/serve", "#!/bin/sh\n", 0755}});
  auto api = [&](const std::string& unit) {
    return json{{"id", "api"},
                {"kind", "process"},
                {"path", "/opt/api"},
                {"source", "api.tar.gz"},
                {"sha256", sha},
                {"unit", unit},
                {"unit_text", "[Service]\nExecStart=/opt/api/bin/serve\n"}};
  };
  ASSERT_EQ(Run(Decl({api("api.service")})).result, ApplyResult::kOk);
  ApplyReport moved = Run(Decl({api("api2.service")}, 2));
  EXPECT_EQ(moved.result, ApplyResult::kOk);
  ASSERT_EQ(moved.outcomes.size(), 2u);
  EXPECT_EQ(moved.outcomes[1].id, "api~api.service");
  EXPECT_THAT(moved.outcomes[1].detail,
              HasSubstr("its unit file goes once api.service no longer runs"));
  EXPECT_TRUE(testing::Exists(dir_.Sub("units/api.service")));
  EXPECT_TRUE(testing::Exists(Root("/opt/api/bin/serve"))) << "the new unit's";
  // Recorded as api~api.service now: still a unit with no tree of its own.
  ApplyReport stopping = Run(Decl({api("api2.service")}, 2));
  ASSERT_EQ(stopping.outcomes.size(), 2u);
  EXPECT_THAT(stopping.outcomes[1].detail,
              HasSubstr("api.service still stopping; its unit file goes once"));
  clock_.Advance(2s);
  ApplyReport stopped = Run(Decl({api("api2.service")}, 2));
  ASSERT_EQ(stopped.outcomes.size(), 2u);
  EXPECT_THAT(stopped.outcomes[1].detail, HasSubstr("deleted unit file api.service"));
  EXPECT_FALSE(testing::Exists(dir_.Sub("units/api.service")));
  EXPECT_TRUE(testing::Exists(Root("/opt/api/bin/serve")));
}

// The same unit taken over by another resource (a process renamed, its
// tree moved): the old tree goes once the new resource restarted the unit
// onto its own (the unit runs from the old one until then), not once the
// unit stops, which it never does. It waited for ever, failing every
// apply ("could not be read": a declared unit is not read as a dropped
// one); deleted at once instead, the restart onto the new tree could
// still fail and leave the daemon on a deleted tree.
TEST_F(UnitsTest, AProcessRenamedOnTheSameUnitLeavesNoTreeBehind) {
  services_.AddUnit("api.service", {});
  std::string sha = Bundle("api.tar.gz", {{TarMember::kFile, "bin/serve", "#!/bin/sh\n", 0755}});
  auto api = [&](const std::string& id, const std::string& path) {
    return json{{"id", id},
                {"kind", "process"},
                {"path", path},
                {"source", "api.tar.gz"},
                {"sha256", sha},
                {"unit", "api.service"},
                {"unit_text", "[Service]\nExecStart=" + path + "/bin/serve\n"}};
  };
  ASSERT_EQ(Run(Decl({api("api", "/opt/api-1")})).result, ApplyResult::kOk);
  ApplyReport moved = Run(Decl({api("api2", "/opt/api-2")}, 2));
  EXPECT_EQ(moved.result, ApplyResult::kOk) << moved.outcomes[0].detail;
  EXPECT_TRUE(testing::Exists(Root("/opt/api-1/bin/serve"))) << "run from until the restart";
  EXPECT_THAT(moved.outcomes[1].detail,
              HasSubstr("its tree goes once api.service no longer runs from it (api2 restarts "
                        "it now)"));
  EXPECT_TRUE(testing::Exists(Root("/opt/api-2/bin/serve")));
  ApplyReport next = Run(Decl({api("api2", "/opt/api-2")}, 2));
  EXPECT_EQ(next.result, ApplyResult::kOk);
  EXPECT_FALSE(testing::Exists(Root("/opt/api-1"))) << "the old tree goes";
  ApplyReport after = Run(Decl({api("api2", "/opt/api-2")}, 2));
  EXPECT_EQ(after.result, ApplyResult::kOk);
  EXPECT_THAT(Outcomes(after), ElementsAre("unchanged")) << "nothing left to remove";
}

// The same under its own id: the old tree was forgotten, and stayed. It
// goes once the unit was restarted onto the new one; a bundle that runs
// nothing goes at once.
TEST_F(UnitsTest, AProcessOrBundleMovedUnderItsIdLeavesNoTreeBehind) {
  services_.AddUnit("api.service", {});
  std::string sha = Bundle("api.tar.gz", {{TarMember::kFile, "bin/serve", "#!/bin/sh\n", 0755}});
  auto decl = [&](const std::string& at, int generation) {
    return Decl({{{"id", "api"},
                  {"kind", "process"},
                  {"path", "/opt/api-" + at},
                  {"source", "api.tar.gz"},
                  {"sha256", sha},
                  {"unit", "api.service"},
                  {"unit_text", "[Service]\nExecStart=/opt/api-" + at + "/bin/serve\n"}},
                 {{"id", "t"},
                  {"kind", "archive"},
                  {"path", "/opt/t-" + at},
                  {"source", "api.tar.gz"},
                  {"sha256", sha}}},
                generation);
  };
  ASSERT_EQ(Run(decl("1", 1)).result, ApplyResult::kOk);
  ApplyReport moved = Run(decl("2", 2));
  ASSERT_EQ(moved.result, ApplyResult::kOk) << moved.error;
  ASSERT_EQ(moved.outcomes.size(), 4u);
  EXPECT_EQ(core::FormatOutcomeLine(moved.outcomes[2]),
            "removed api~/opt/api-1 (process): its tree goes once api.service no longer runs "
            "from it (api restarts it now)");
  EXPECT_EQ(core::FormatOutcomeLine(moved.outcomes[3]),
            "removed t~/opt/t-1 (archive): deleted 1 path(s)");
  EXPECT_TRUE(testing::Exists(Root("/opt/api-1/bin/serve"))) << "run from until the restart";
  EXPECT_FALSE(testing::Exists(Root("/opt/t-1")));
  EXPECT_TRUE(testing::Exists(Root("/opt/t-2/bin/serve")));
  ApplyReport next = Run(decl("2", 2));
  EXPECT_EQ(next.result, ApplyResult::kOk);
  EXPECT_FALSE(testing::Exists(Root("/opt/api-1"))) << "the old tree goes";
  EXPECT_TRUE(testing::Exists(Root("/opt/api-2/bin/serve")));
  ApplyReport after = Run(decl("2", 2));
  EXPECT_EQ(after.result, ApplyResult::kOk);
  EXPECT_THAT(Outcomes(after), ElementsAre("unchanged", "unchanged")) << "nothing left to remove";
}

// Moved without its ExecStart= following it: the unit, restarted, still
// runs from the old tree. Deleting that tree would leave it running from
// deleted files, to fail at its next start; it is kept, and the apply
// fails, until no declared unit names it.
TEST_F(UnitsTest, AnOldTreeADeclaredUnitStillNamesIsKept) {
  services_.AddUnit("api.service", {});
  std::string sha = Bundle("api.tar.gz", {{TarMember::kFile, "bin/serve", "#!/bin/sh\n", 0755}});
  auto decl = [&](const std::string& at, const std::string& exec, int generation) {
    return Decl({{{"id", "api"},
                  {"kind", "process"},
                  {"path", "/opt/api-" + at},
                  {"source", "api.tar.gz"},
                  {"sha256", sha},
                  {"unit", "api.service"},
                  {"unit_text", "[Service]\nExecStart=/opt/api-" + exec + "/bin/serve\n"}},
                 Conf("x")},
                generation);
  };
  ASSERT_EQ(Run(decl("1", "1", 1)).result, ApplyResult::kOk);
  for (int i = 0; i < 2; ++i) {
    ApplyReport moved = Run(decl("2", "1", 2));
    EXPECT_EQ(moved.result, ApplyResult::kFailed);
    ASSERT_EQ(moved.outcomes.size(), 3u);
    EXPECT_EQ(core::FormatOutcomeLine(moved.outcomes[2]),
              "failed api~/opt/api-1 (process): kept: /opt/api-1 is still named by api.service "
              "(api), which runs from it or needs it to start; removed once no declared unit "
              "names it");
    EXPECT_TRUE(testing::Exists(Root("/opt/api-1/bin/serve")));
  }
  // A condition on the old tree is no command run from it.
  json conditioned = decl("2", "2", 3);
  conditioned["resources"][0]["unit_text"] =
      "[Unit]\nConditionPathExists=!/opt/api-1\n[Service]\nExecStart=/opt/api-1/bin/serve\n";
  EXPECT_EQ(Run(conditioned).result, ApplyResult::kFailed) << "ExecStart= still names it";
  conditioned["resources"][0]["unit_text"] =
      "[Unit]\nConditionPathExists=!/opt/api-1\n[Service]\nExecStart=/opt/api-2/bin/serve\n";
  ASSERT_EQ(Run(conditioned).result, ApplyResult::kOk);
  ASSERT_EQ(Run(conditioned).result, ApplyResult::kOk);
  EXPECT_FALSE(testing::Exists(Root("/opt/api-1")));
  ASSERT_EQ(Run(decl("1", "1", 4)).result, ApplyResult::kOk);
  // A name that only begins the same (/opt/api-10) is not it.
  ASSERT_EQ(Run(decl("2", "10", 5)).result, ApplyResult::kOk);
  EXPECT_EQ(Run(decl("2", "10", 5)).result, ApplyResult::kOk);
  EXPECT_FALSE(testing::Exists(Root("/opt/api-1")));
}

// The same through a declared symlink into the old tree, by a unit file
// declared as a `file`, and by a dropped process whose own unit runs (kept
// at once, its unit neither stopped nor disabled).
TEST_F(UnitsTest, AnOldTreeNamedThroughALinkOrAUnitFileIsKept) {
  services_.AddUnit("rel.service", {});
  services_.AddUnit("k.service", {});
  services_.AddUnit("tool.service", {});
  std::string sha = Bundle("r.tar.gz", {{TarMember::kFile, "bin/serve", "#!/bin/sh\n", 0755}});
  auto process = [&](const std::string& id, const std::string& at, const std::string& exec) {
    return json{{"id", id},
                {"kind", "process"},
                {"path", at},
                {"source", "r.tar.gz"},
                {"sha256", sha},
                {"unit", id + ".service"},
                {"unit_text", "[Service]\nExecStart=" + exec + "\n"}};
  };
  json link = {{"id", "cur"}, {"kind", "symlink"}, {"path", "/opt/current"}, {"target", "r1"}};
  json unit_file = {{"id", "kunit"},
                    {"kind", "file"},
                    {"path", "/etc/systemd/system/k.service"},
                    {"content", "[Service]\nExecStart=/bin/sh \\\n  /opt/tool/bin/serve\n"}};
  json k = {{"id", "k"}, {"kind", "service"}, {"unit", "k.service"}, {"state", "running"}};
  ApplyReport first = ApplyWithUnitsInRoot(
      Decl({process("rel", "/opt/r1", "/opt/current/bin/serve"), link,
            process("tool", "/opt/tool", "/opt/tool/bin/serve"), unit_file, k}));
  ASSERT_EQ(first.result, ApplyResult::kOk) << first.error;
  int stops = services_.StopsOf("tool.service");
  ApplyReport r = ApplyWithUnitsInRoot(
      Decl({process("rel", "/opt/r2", "/opt/current/bin/serve"), link, unit_file, k}, 2));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  ASSERT_EQ(r.outcomes.size(), 6u);
  EXPECT_THAT(r.outcomes[4].detail,
              HasSubstr("kept: /opt/tool is still named by /etc/systemd/system/k.service (kunit)"));
  EXPECT_THAT(r.outcomes[5].detail, HasSubstr("kept: /opt/r1 is still named by rel.service (rel)"));
  EXPECT_EQ(services_.StopsOf("tool.service"), stops);
  EXPECT_TRUE(testing::Exists(Root("/opt/r1/bin/serve")));
  EXPECT_TRUE(testing::Exists(Root("/opt/tool/bin/serve")));
}

// What the removal would not delete anyway is no reason to keep it: a
// dropped directory still holding the daemon's data, a dropped file changed
// by hand since.
TEST_F(UnitsTest, OnlyWhatARemovalWouldDeleteIsKeptForAUnit) {
  services_.AddUnit("api.service", {});
  json data = {{"id", "data"}, {"kind", "directory"}, {"path", "/var/lib/app"}};
  json conf = {{"id", "conf"}, {"kind", "file"}, {"path", "/etc/app.conf"}, {"content", "x"}};
  std::string sha = Bundle("w.tar.gz", {{TarMember::kFile, "bin/check", "#!/bin/sh\n", 0755}});
  json tree = {{"id", "tree"},
               {"kind", "archive"},
               {"path", "/opt/w"},
               {"source", "w.tar.gz"},
               {"sha256", sha}};
  json api = Service("api", {{"unit_text",
                              "[Service]\nWorkingDirectory=/var/lib/app\n"
                              "ExecStart=/bin/app --config /etc/app.conf "
                              "--check /opt/w/bin/check\n"}});
  ASSERT_EQ(Run(Decl({data, conf, tree, api})).result, ApplyResult::kOk);
  testing::WriteText(Root("/var/lib/app/state"), "the daemon's");
  testing::WriteText(Root("/etc/app.conf"), "edited by hand");
  ApplyReport r = Run(Decl({api}, 2));
  ASSERT_EQ(r.outcomes.size(), 4u);
  EXPECT_THAT(r.outcomes[1].detail, Not(HasSubstr("kept"))) << "data";
  EXPECT_THAT(r.outcomes[2].detail, Not(HasSubstr("kept"))) << "conf";
  EXPECT_THAT(r.outcomes[3].detail, HasSubstr("kept: /opt/w is still named by api.service"));
  EXPECT_TRUE(testing::Exists(Root("/opt/w/bin/check")));
}

// Moved to another unit and another path at once: the old unit goes under
// ID~UNIT, and its old tree with it once it no longer runs from it.
TEST_F(UnitsTest, AProcessMovedToAnotherUnitAndPathTakesItsOldTreeWithItsOldUnit) {
  services_.AddUnit("api.service", {});
  services_.AddUnit("api2.service", {});
  std::string sha = Bundle("api.tar.gz", {{TarMember::kFile, "bin/serve", "#!/bin/sh\n", 0755}});
  auto decl = [&](const std::string& at, int generation) {
    return Decl({{{"id", "api"},
                  {"kind", "process"},
                  {"path", "/opt/api" + at},
                  {"source", "api.tar.gz"},
                  {"sha256", sha},
                  {"unit", "api" + at + ".service"},
                  {"unit_text", "[Service]\nExecStart=/opt/api" + at + "/bin/serve\n"}}},
                generation);
  };
  ASSERT_EQ(Run(decl("", 1)).result, ApplyResult::kOk);
  ApplyReport moved = Run(decl("2", 2));
  ASSERT_EQ(moved.result, ApplyResult::kOk) << moved.error;
  ASSERT_EQ(moved.outcomes.size(), 2u);
  EXPECT_EQ(core::FormatOutcomeLine(moved.outcomes[1]),
            "removed api~api.service (process): stopped api.service (not waited on); its tree "
            "and unit file go once api.service no longer runs");
  EXPECT_TRUE(testing::Exists(Root("/opt/api/bin/serve"))) << "run from while it stops";
  ApplyReport next = Run(decl("2", 2));
  EXPECT_EQ(next.result, ApplyResult::kOk);
  EXPECT_FALSE(testing::Exists(Root("/opt/api"))) << "the old tree goes with the old unit";
  EXPECT_FALSE(testing::Exists(dir_.Sub("units") + "/api.service"));
  EXPECT_THAT(Outcomes(Run(decl("2", 2))), ElementsAre("unchanged")) << "nothing left";
}

// A directory dropped with the running process whose tree it holds: it
// was let go as "not empty" and forgotten, and stayed once the tree went.
// It waits with the tree.
TEST_F(UnitsTest, ADirectoryHoldingAWaitingTreeWaitsWithIt) {
  fakes::FakeServiceManager::UnitScript draining{Behavior::kHealthy, 0s, false, 30s};
  services_.AddUnit("rt.service", draining);
  std::string sha = Bundle("rt.tar.gz", {{TarMember::kFile, "bin/serve", "#!/bin/sh\n", 0755}});
  json dir = {{"id", "app"}, {"kind", "directory"}, {"path", "/opt/app"}};
  json rt = {{"id", "rt"},
             {"kind", "process"},
             {"path", "/opt/app/current"},
             {"source", "rt.tar.gz"},
             {"sha256", sha},
             {"unit", "rt.service"},
             {"unit_text", "[Service]\nExecStart=/opt/app/current/bin/serve\n"}};
  ASSERT_EQ(Run(Decl({dir, rt})).result, ApplyResult::kOk);
  ApplyReport stopping = Run(Decl(json::array(), 2));
  EXPECT_TRUE(testing::Exists(Root("/opt/app/current/bin/serve")));
  EXPECT_THAT(stopping.outcomes[0].detail,
              HasSubstr("/opt/app holds /opt/app/current, which goes first"));
  clock_.Advance(31s);
  ApplyReport done = Run(Decl(json::array(), 2));
  EXPECT_FALSE(testing::Exists(Root("/opt/app"))) << "both gone once the unit stopped";
  EXPECT_TRUE(Run(Decl(json::array(), 2)).outcomes.empty()) << "nothing left recorded";
}

// Issue 14, issue 210's shape: a bundle made as most are (`tar czf x
// bin/serve`, no directory entries). After a lost record, or a chmod to the
// same mode, its tree must still read as declared: not re-unpacked, the
// process not restarted.
TEST_F(UnitsTest, ABundleWithoutDirectoryEntriesDoesNotChurn) {
  services_.AddUnit("rt.service", {});
  std::string sha = Bundle("rt.tar.gz", {{TarMember::kFile, "bin/serve", "#!/bin/sh\n", 0755},
                                         {TarMember::kFile, "lib/deep/x.so", "x", 0644}});
  json decl = Decl({{{"id", "rt"},
                     {"kind", "process"},
                     {"path", "/opt/rt"},
                     {"source", "rt.tar.gz"},
                     {"sha256", sha},
                     {"unit", "rt.service"},
                     {"unit_text", "[Service]\nExecStart=/opt/rt/bin/serve\n"}}});
  ASSERT_THAT(Outcomes(Run(decl)), ElementsAre("created"));
  store_.text.reset();
  ApplyReport lost = Run(decl);
  EXPECT_THAT(Outcomes(lost), ElementsAre("unchanged")) << lost.outcomes[0].detail;
  EXPECT_THAT(lost.outcomes[0].detail, HasSubstr("2 file(s) adopted: already as declared"));
  std::filesystem::permissions(Root("/opt/rt/bin"), std::filesystem::perms(0755));
  EXPECT_THAT(Outcomes(Run(decl)), ElementsAre("unchanged"));
  EXPECT_EQ(services_.StartsOf("rt.service"), 1);
}

TEST_F(UnitsTest, MissingRecordNeverRestartsAUnitWhoseFilesMatch) {
  services_.AddUnit("jail.service", {Behavior::kHealthy, 0s, true});
  json decl = Decl({Conf("v1"), Service("jail", {{"restart_on", {"jail.conf"}},
                                                 {"unit_text", "[Service]\nExecStart=/bin/j\n"}})});
  Run(decl);
  int starts = services_.StartsOf("jail.service");
  store_.text.reset();
  ApplyReport r = Run(decl);
  EXPECT_THAT(Outcomes(r), ElementsAre("unchanged", "unchanged"));
  EXPECT_EQ(services_.StartsOf("jail.service"), starts);
}

TEST_F(UnitsTest, PruneStopsTheUnitAndDeletesItsUnitFile) {
  services_.AddUnit("gone.service", {});
  Run(Decl({Service("gone", {{"unit_text", "[Service]\nExecStart=/bin/g\n"}})}));
  ASSERT_TRUE(testing::Exists(dir_.Sub("units/gone.service")));
  ApplyReport r = Run(Decl(json::array(), 2));
  EXPECT_THAT(Outcomes(r), ElementsAre("removed"));
  EXPECT_THAT(r.outcomes[0].detail, HasSubstr("stopped gone.service"));
  EXPECT_FALSE(testing::Exists(dir_.Sub("units/gone.service")));
  EXPECT_EQ(services_.calls().back().kind, ports::JobKind::kStop);
}

// A dropped service whose stop reads its unit file (ExecStop=, a stop
// timeout of its own, KillMode=) keeps that file until it no longer runs:
// deleted and reloaded mid-stop, systemd would stop it under the defaults
// of a unit without a file (a database given 300 s killed at 90 s). One
// with none of them goes at once.
TEST_F(UnitsTest, ADroppedServiceWhoseStopReadsItsFileKeepsItUntilStopped) {
  fakes::FakeServiceManager::UnitScript drain;
  drain.exec_stop = 1;
  drain.stop_delay = 2s;
  fakes::FakeServiceManager::UnitScript slow;
  slow.timeout_stop = 300s;
  fakes::FakeServiceManager::UnitScript spare;
  spare.kill_mode = "process";
  services_.AddUnit("drain.service", drain);
  services_.AddUnit("slow.service", slow);
  services_.AddUnit("spare.service", spare);
  services_.AddUnit("plain.service", {});
  json all = json::array();
  for (const char* id : {"drain", "plain", "slow", "spare"}) {
    all.push_back(Service(id, {{"unit_text", "[Service]\nExecStart=/bin/x\n"}}));
  }
  ASSERT_EQ(Run(Decl(all)).result, ApplyResult::kOk);
  auto detail = [](const ApplyReport& r, const std::string& id) {
    for (const auto& o : r.outcomes) {
      if (o.id == id) return o.detail;
    }
    return std::string("(no outcome)");
  };
  ApplyReport dropped = Run(Decl(json::array(), 2));
  EXPECT_EQ(dropped.result, ApplyResult::kOk);
  for (const char* id : {"drain", "slow", "spare"}) {
    std::string unit = std::string(id) + ".service";
    EXPECT_EQ(detail(dropped, id), "stopped " + unit +
                                       " (not waited on); its unit file goes once " + unit +
                                       " no longer runs (systemd reads it to stop the unit)");
    EXPECT_TRUE(testing::Exists(dir_.Sub("units/" + unit))) << unit;
    EXPECT_EQ(services_.StopsOf(unit), 1) << unit;
  }
  EXPECT_FALSE(testing::Exists(dir_.Sub("units/plain.service")));
  // Still stopping at the next apply: not asked again, the file kept.
  ApplyReport stopping = Run(Decl(json::array(), 2));
  EXPECT_THAT(detail(stopping, "drain"), HasSubstr("drain.service still stopping; its unit file"));
  EXPECT_TRUE(testing::Exists(dir_.Sub("units/drain.service")));
  EXPECT_EQ(services_.StopsOf("drain.service"), 1);
  EXPECT_FALSE(testing::Exists(dir_.Sub("units/slow.service"))) << "stopped: it goes";
  clock_.Advance(2s);
  ApplyReport stopped = Run(Decl(json::array(), 2));
  EXPECT_THAT(detail(stopped, "drain"), HasSubstr("deleted unit file drain.service"));
  EXPECT_FALSE(testing::Exists(dir_.Sub("units/drain.service")));
  EXPECT_TRUE(Run(Decl(json::array(), 2)).outcomes.empty()) << "nothing left to remove";
}

// Issue 15: an operator's own unit file that a unit_text once overwrote,
// and a unit file edited after the host wrote it: dropping the service
// neither stops the unit nor deletes the file.
TEST_F(UnitsTest, PruneLeavesAUnitFileTheHostDidNotCreateOrNoLongerMatches) {
  testing::WriteText(dir_.Sub("units/theirs.service"), "[Service]\nExecStart=/bin/theirs\n");
  services_.AddUnit("theirs.service", {});
  services_.AddUnit("edited.service", {});
  Run(Decl({Service("theirs", {{"unit_text", "[Service]\nExecStart=/bin/t\n"}}),
            Service("edited", {{"unit_text", "[Service]\nExecStart=/bin/e\n"}})}));
  testing::WriteText(dir_.Sub("units/edited.service"), "[Service]\nExecStart=/bin/mine\n");
  size_t calls = services_.calls().size();
  ApplyReport r = Run(Decl(json::array(), 2));
  EXPECT_THAT(Outcomes(r), ElementsAre("removed", "removed"));
  EXPECT_TRUE(testing::Exists(dir_.Sub("units/theirs.service")));
  EXPECT_TRUE(testing::Exists(dir_.Sub("units/edited.service")));
  for (size_t i = calls; i < services_.calls().size(); ++i) {
    EXPECT_NE(services_.calls()[i].kind, ports::JobKind::kStop) << services_.calls()[i].unit;
  }
  std::string details = r.outcomes[0].detail + "\n" + r.outcomes[1].detail;
  EXPECT_THAT(details, HasSubstr("left unit theirs.service and its unit file, there before"));
  EXPECT_THAT(details,
              HasSubstr("left unit edited.service and its unit file: changed since the host"));
}

// The daemon's keepalive pets the watchdog only while the apply moves: a
// slow stop (here 20 s on the fake clock) advances it at every look.
TEST_F(UnitsTest, ProgressMovesWhileTheApplyWaitsOnSystemd) {
  services_.AddUnit("slow.service", {Behavior::kHealthy, {}, true, std::chrono::seconds(20)});
  Reconciler reconciler(Ports(), Options());
  ASSERT_EQ(reconciler.Apply(Decl({Service("slow")}).dump()).result, ApplyResult::kOk);
  json conf = Conf("a");
  json svc = Service("slow", {{"restart_on", {"jail.conf"}}});
  reconciler.Apply(Decl({conf, svc}, 2).dump());
  uint64_t before = reconciler.progress().steps();
  ApplyReport r = reconciler.Apply(Decl({Conf("b"), svc}, 3).dump());
  EXPECT_THAT(Outcomes(r), ElementsAre("updated", "restarted"));
  EXPECT_GT(reconciler.progress().steps() - before, 20u * 10) << "a step per 50 ms look";
}

// SPEC "Reconcile" 8, an operator's mask wins: a unit systemd reports
// masked, or a link to /dev/null at its unit file's place (before any
// daemon-reload), gets no unit file, no start, restart or reload; the
// resource fails with `masked`. Before, unit_text was renamed over the mask
// and the unit started.
TEST_F(UnitsTest, AMaskedUnitIsLeftAlone) {
  services_.AddUnit("jail.service", {});
  json v1 = Service("jail", {{"unit_text", "[Service]\nExecStart=/bin/j --v1\n"}});
  ASSERT_EQ(Run(Decl({v1})).result, ApplyResult::kOk);
  services_.Mask("jail.service");
  json v2 = Service("jail", {{"unit_text", "[Service]\nExecStart=/bin/j --v2\n"}});
  size_t calls = services_.calls().size();
  ApplyReport r = Run(Decl({v2}, 2));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[0]),
            "failed jail (service): masked: jail.service is masked on this machine; the host "
            "leaves it alone (no unit file, no start, restart or reload) until `systemctl unmask "
            "jail.service`");
  EXPECT_EQ(testing::ReadText(dir_.Sub("units/jail.service")),
            "[Service]\nExecStart=/bin/j --v1\n");
  EXPECT_EQ(services_.calls().size(), calls) << "nothing asked of systemd";
  services_.Mask("jail.service", false);
  EXPECT_THAT(Outcomes(Run(Decl({v2}, 2))), ElementsAre("updated"));
  EXPECT_EQ(services_.calls().back().kind, ports::JobKind::kRestart) << "unmasked: restarted";
  EXPECT_EQ(testing::ReadText(dir_.Sub("units/jail.service")),
            "[Service]\nExecStart=/bin/j --v2\n");
}

// A unit file the host writes that systemd would not load: a file of that
// name in a directory systemd reads first (its UnitPath). Before, the host
// wrote its file, restarted the unit and said so while systemd ran the
// other file. Judged by systemd's order alone: a vendor's file read after
// --unit-dir is what the host's file overrides, and a view systemd says is
// stale (NeedDaemonReload) is not judged.
TEST_F(UnitsTest, AUnitLoadedFromADirectoryReadFirstIsShadowed) {
  std::string units = dir_.Sub("root/etc/systemd/system");
  services_.search_path = {"/run/systemd/system", units + "/", "/usr/lib/systemd/system"};
  services_.AddUnit("web.service", {});
  services_.SetFragmentPath("web.service", "/run/systemd/system/web.service");
  json web = Service("web", {{"unit_text", "[Service]\nExecStart=/bin/web\n"}});
  size_t calls = services_.calls().size();
  ApplyReport r = ApplyWithUnitsInRoot(Decl({web}));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[0]),
            "failed web (service): shadowed: systemd loads web.service from "
            "/run/systemd/system/web.service, in a directory it reads before " +
                units +
                " (--unit-dir): a unit file the host writes there would not run (move that "
                "file away, or set --unit-dir to its directory)");
  EXPECT_FALSE(testing::Exists(units + "/web.service"));
  EXPECT_EQ(services_.calls().size(), calls) << "nothing asked of systemd";

  services_.SetFragmentPath("web.service", "/usr/lib/systemd/system/web.service");
  ApplyReport vendor = ApplyWithUnitsInRoot(Decl({web}, 2));
  EXPECT_EQ(vendor.result, ApplyResult::kOk) << vendor.outcomes[0].detail;
  EXPECT_TRUE(testing::Exists(units + "/web.service"));

  // Loaded from the host's file, the next no-op is proven from the record;
  // once systemd loads another file read first, it is not, and fails.
  services_.SetFragmentPath("web.service", units + "/web.service");
  EXPECT_TRUE(ApplyWithUnitsInRoot(Decl({web}, 2)).from_record);
  services_.SetFragmentPath("web.service", "/run/systemd/system/web.service");
  ApplyReport again = ApplyWithUnitsInRoot(Decl({web}, 2));
  EXPECT_FALSE(again.from_record);
  EXPECT_THAT(again.outcomes[0].detail, HasSubstr("shadowed: systemd loads web.service from"));
  // That file gone since (systemd's view stale): not judged, and the
  // reload loads the host's file.
  services_.SetNeedDaemonReload("web.service");
  services_.on_daemon_reload = [&] {
    services_.SetFragmentPath("web.service", units + "/web.service");
  };
  EXPECT_THAT(ApplyWithUnitsInRoot(Decl({web}, 2)).outcomes[0].detail, Not(HasSubstr("shadowed")))
      << "that file may be gone since: systemd's view is not judged until it is reloaded";
  services_.on_daemon_reload = nullptr;
}

// What is not a shadow, and what cannot be told: an instance systemd
// loads from its template reads the host's file of its own name once
// written; under a stale view (NeedDaemonReload) only a file still there
// shadows; a search path that cannot be read is said, and nothing is
// written.
TEST_F(UnitsTest, AShadowIsOnlyAFileOfTheUnitsNameStillThere) {
  std::string root = dir_.Sub("root");
  std::string units = root + "/etc/systemd/system";
  std::string early = root + "/run/early";
  std::filesystem::create_directories(early);
  services_.search_path = {early, units};
  json web = Service("web", {{"unit_text", "[Service]\nExecStart=/bin/web\n"}});
  services_.AddUnit("web.service", {});
  ASSERT_EQ(ApplyWithUnitsInRoot(Decl({web})).result, ApplyResult::kOk);

  // systemd's reload: the earlier directory's file when there is one.
  services_.on_daemon_reload = [&] {
    bool other = testing::Exists(early + "/web.service");
    services_.SetFragmentPath("web.service", (other ? early : units) + "/web.service");
  };
  // A file in the earlier directory that systemd's stale view still names,
  // moved away since: not a shadow. Put back, it is one.
  services_.SetFragmentPath("web.service", early + "/web.service");
  services_.SetNeedDaemonReload("web.service");
  EXPECT_EQ(ApplyWithUnitsInRoot(Decl({web}, 2)).result, ApplyResult::kOk);
  testing::WriteText(early + "/web.service", "[Service]\nExecStart=/bin/other\n");
  services_.SetFragmentPath("web.service", early + "/web.service");
  services_.SetNeedDaemonReload("web.service");
  ApplyReport there = ApplyWithUnitsInRoot(Decl({web}, 2));
  EXPECT_THAT(there.outcomes[0].detail,
              HasSubstr("shadowed: systemd loads web.service from " + early + "/web.service"));

  // Its search path unreadable: not known, said, and nothing written.
  services_.refuse_search_path = "Access denied";
  json web2 = Service("web", {{"unit_text", "[Service]\nExecStart=/bin/web --2\n"}});
  ApplyReport unknown = ApplyWithUnitsInRoot(Decl({web2}, 3));
  EXPECT_EQ(unknown.result, ApplyResult::kFailed);
  EXPECT_THAT(unknown.outcomes[0].detail,
              HasSubstr("not applied: systemd loads web.service from " + early +
                        "/web.service, and whether it reads that before " + units +
                        " (--unit-dir) is not known: its unit search path could not be read "
                        "(Get UnitPath: Access denied)"));
  EXPECT_EQ(testing::ReadText(units + "/web.service"), "[Service]\nExecStart=/bin/web\n");

  // An instance loaded from its template in the earlier directory: the
  // host's file of the instance's own name is what systemd will load.
  services_.AddUnit("app@b.service", {});
  services_.SetFragmentPath("app@b.service", early + "/app@.service");
  json inst = Service(
      "inst", {{"unit", "app@b.service"}, {"unit_text", "[Service]\nExecStart=/bin/app b\n"}});
  ApplyReport instance = ApplyWithUnitsInRoot(Decl({inst}, 4));
  EXPECT_EQ(instance.result, ApplyResult::kOk) << instance.outcomes[0].detail;
  EXPECT_TRUE(testing::Exists(units + "/app@b.service"));
}

// A --unit-dir systemd does not read: the host's file is written and
// reloaded, and systemd still has no unit of that name. Before, the apply
// failed with StartUnit's "Unit web.service not found.", which does not say
// why; now it names the directory, and nothing is asked of the unit.
TEST_F(UnitsTest, AUnitDirSystemdDoesNotReadIsNamed) {
  std::string units = dir_.Sub("root/etc/systemd/system");
  services_.search_path = {"/etc/systemd/system", "/run/systemd/system", "/usr/lib/systemd/system"};
  json web = Service("web", {{"unit_text", "[Service]\nExecStart=/bin/web\n"}});
  ApplyReport r = ApplyWithUnitsInRoot(Decl({web}));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[0]),
            "failed web (service): not found: after the daemon-reload systemd has no unit file "
            "for it, as it does not read " +
                units +
                " (--unit-dir): set --unit-dir to a directory of its unit search path "
                "(systemd-analyze unit-paths lists them)");
  EXPECT_TRUE(testing::Exists(units + "/web.service"));
  EXPECT_EQ(services_.calls().size(), 0u) << "no job asked of a unit systemd does not have";

  // Among the directories systemd reads, a unit still not found is
  // StartUnit's to say.
  services_.search_path.push_back(units + "/");
  ApplyReport read = ApplyWithUnitsInRoot(Decl({web}));
  EXPECT_THAT(read.outcomes[0].detail, HasSubstr("NoSuchUnit"));
  // Found: it runs.
  services_.AddUnit("web.service", {});
  EXPECT_EQ(ApplyWithUnitsInRoot(Decl({web})).result, ApplyResult::kOk);
}

// A file of the unit's name put in a directory systemd reads first, with
// no daemon-reload: the observation sees the host's file loaded, and the
// apply's own reload moves systemd onto the other file. Before, the
// restart onto it was reported as the host's. And a dropped unit that runs
// from such a file is not the host's to stop: its file goes, the daemon
// stays.
TEST_F(UnitsTest, AShadowTheApplysOwnReloadRevealsFailsAndIsNotStoppedWhenDropped) {
  std::string units = dir_.Sub("root/etc/systemd/system");
  std::string early = dir_.Sub("root/run/early");
  services_.search_path = {early, units};
  services_.AddUnit("web.service", {});
  auto web = [](const std::string& v) {
    return Service("web", {{"unit_text", "[Service]\nExecStart=/bin/web " + v + "\n"}});
  };
  services_.SetFragmentPath("web.service", units + "/web.service");
  ASSERT_EQ(ApplyWithUnitsInRoot(Decl({web("1")})).result, ApplyResult::kOk);
  services_.on_daemon_reload = [&] {
    services_.SetFragmentPath("web.service", early + "/web.service");
  };
  ApplyReport r = ApplyWithUnitsInRoot(Decl({web("2")}, 2));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_THAT(r.outcomes[0].detail,
              HasSubstr("shadowed: after the daemon-reload systemd loads it from " + early +
                        "/web.service, in a directory it reads before " + units));
  services_.on_daemon_reload = nullptr;
  EXPECT_THAT(ApplyWithUnitsInRoot(Decl({web("2")}, 2)).outcomes[0].detail,
              HasSubstr("shadowed: systemd loads web.service from " + early));

  ASSERT_TRUE(services_.ReadUnit("web.service")->Running());
  // Left running only when the host sees that file itself: the operator's.
  std::filesystem::create_directories(early);
  testing::WriteText(early + "/web.service", "[Service]\nExecStart=/bin/theirs\n");
  size_t calls = services_.calls().size();
  ApplyReport dropped = ApplyWithUnitsInRoot(Decl(json::array(), 3));
  EXPECT_EQ(dropped.result, ApplyResult::kOk) << dropped.outcomes[0].detail;
  EXPECT_THAT(dropped.outcomes[0].detail,
              HasSubstr("left unit web.service as it is: systemd loads it from " + early +
                        "/web.service, not from the host's file"));
  EXPECT_FALSE(testing::Exists(units + "/web.service")) << "the host's own file goes";
  EXPECT_EQ(services_.calls().size(), calls) << "not stopped";
  EXPECT_TRUE(services_.ReadUnit("web.service")->Running());
  EXPECT_THAT(services_.reset_failed(), ElementsAre());
}

// A shadow the apply's own reload reveals is not a death on what the host
// wrote (which never ran): with on_failure: rollback nothing is rolled back
// or held, and the restart stays pending until that file is moved away.
TEST_F(UnitsTest, AShadowRevealedByTheReloadIsNotRolledBack) {
  std::string units = dir_.Sub("root/etc/systemd/system");
  std::string early = dir_.Sub("root/run/early");
  services_.search_path = {early, units};
  services_.AddUnit("web.service", {});
  auto web = [](const std::string& v) {
    return Service("web", {{"unit_text", "[Service]\nExecStart=/bin/web " + v + "\n"},
                           {"on_failure", "rollback"}});
  };
  services_.SetFragmentPath("web.service", units + "/web.service");
  ASSERT_EQ(ApplyWithUnitsInRoot(Decl({web("1")})).result, ApplyResult::kOk);
  services_.on_daemon_reload = [&] {
    services_.SetFragmentPath("web.service", early + "/web.service");
  };
  ApplyReport r = ApplyWithUnitsInRoot(Decl({web("2")}, 2));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_THAT(r.outcomes[0].detail, HasSubstr("shadowed: after the daemon-reload"));
  EXPECT_THAT(r.outcomes[0].detail, Not(HasSubstr("rolled back")));
  EXPECT_EQ(testing::ReadText(units + "/web.service"), "[Service]\nExecStart=/bin/web 2\n")
      << "the declared file stays, not the last good's";
  services_.on_daemon_reload = [&] {
    services_.SetFragmentPath("web.service", units + "/web.service");
  };
  services_.SetNeedDaemonReload("web.service");
  ApplyReport moved = ApplyWithUnitsInRoot(Decl({web("2")}, 2));
  EXPECT_EQ(moved.result, ApplyResult::kOk) << moved.outcomes[0].detail;
  EXPECT_EQ(services_.calls().back().kind, ports::JobKind::kRestart)
      << "the restart it was owed, onto the host's file";
}

// A unit_text's name that systemd reads as an alias of another unit (a
// link of that name, read before the host's file): systemd answers for
// the other unit, and the host's file never runs. Before, the host wrote
// its file and reported the other unit's run as its own. Judged once the
// host's file is in place (a later directory's alias gives way to it);
// a dropped one is not stopped: that would stop the other unit.
TEST_F(UnitsTest, ANameSystemdReadsAsAnAliasOfAnotherUnitIsShadowed) {
  std::string units = dir_.Sub("root/etc/systemd/system");
  std::string early = dir_.Sub("root/run/early");
  services_.search_path = {early, units};
  services_.AddUnit("web.service", {});
  services_.AddUnit("other.service", {});
  auto web = [](const std::string& v) {
    return Service("web", {{"unit_text", "[Service]\nExecStart=/bin/web " + v + "\n"}});
  };
  // Not written yet: the apply's own reload shows what systemd makes of it.
  services_.SetAliasOf("web.service", "other.service", early + "/other.service");
  ApplyReport first = ApplyWithUnitsInRoot(Decl({web("1")}));
  EXPECT_EQ(first.result, ApplyResult::kFailed);
  EXPECT_EQ(first.outcomes[0].detail,
            "shadowed: after the daemon-reload systemd reads web.service as an alias of "
            "other.service, from " +
                early +
                "/other.service, not the host's file (remove the link that makes web.service "
                "an alias and run `systemctl daemon-reload`, or declare other.service itself)");
  EXPECT_TRUE(testing::Exists(units + "/web.service"));
  // In place: judged before anything is asked, and no longer proven.
  size_t calls = services_.calls().size();
  ApplyReport again = ApplyWithUnitsInRoot(Decl({web("1")}, 2));
  EXPECT_EQ(again.result, ApplyResult::kFailed);
  EXPECT_FALSE(again.from_record);
  EXPECT_EQ(again.outcomes[0].detail,
            "shadowed: systemd reads web.service as an alias of other.service, from " + early +
                "/other.service: the unit file the host writes would not run (remove the link "
                "that makes web.service an alias and run `systemctl daemon-reload`, or declare "
                "other.service itself)");
  EXPECT_EQ(services_.calls().size(), calls) << "nothing asked of systemd";
  // A stale view is not judged: the reload may give the name to the host.
  services_.SetNeedDaemonReload("web.service");
  services_.on_daemon_reload = [&] {
    services_.SetAliasOf("web.service", "", units + "/web.service");
  };
  EXPECT_EQ(ApplyWithUnitsInRoot(Decl({web("1")}, 2)).result, ApplyResult::kOk);
  services_.on_daemon_reload = nullptr;
  ASSERT_TRUE(ApplyWithUnitsInRoot(Decl({web("1")}, 2)).from_record);

  // Dropped while an alias of the operator's unit (a file the host need
  // not see itself): the host's file goes, the other unit is neither
  // stopped nor reset.
  services_.SetAliasOf("web.service", "other.service", early + "/other.service");
  calls = services_.calls().size();
  ApplyReport dropped = ApplyWithUnitsInRoot(Decl(json::array(), 3));
  EXPECT_EQ(dropped.result, ApplyResult::kOk) << dropped.outcomes[0].detail;
  EXPECT_THAT(dropped.outcomes[0].detail,
              HasSubstr("left unit web.service as it is: systemd reads it as an alias of "
                        "other.service, not as the host's file"));
  EXPECT_FALSE(testing::Exists(units + "/web.service"));
  EXPECT_EQ(services_.calls().size(), calls) << "not stopped";
  EXPECT_THAT(services_.reset_failed(), ElementsAre());
}

// What systemd says of a name that is another unit's alias is that unit's
// state: nothing it would ask is asked of the name before the apply's own
// reload shows whose it is (a stop of the name stops that unit; an enable
// or disable acts on its links). And a reload the host still owes is a
// view not yet judged: the alias may give way to the host's file once read.
TEST_F(UnitsTest, NothingIsAskedOfANameSystemdReadsAsAnAliasBeforeItsReload) {
  std::string units = dir_.Sub("root/etc/systemd/system");
  std::string early = dir_.Sub("root/run/early");
  services_.search_path = {early, units};
  // The fake answers for the name with the state it holds for it: that
  // of other.service, running.
  services_.AddUnit("web.service", {.running_initially = true});
  ASSERT_TRUE(services_.ReadUnit("web.service")->Running());
  services_.SetAliasOf("web.service", "other.service", early + "/other.service");
  json web = Service(
      "web",
      {{"state", "stopped"}, {"enabled", true}, {"unit_text", "[Service]\nExecStart=/bin/web\n"}});
  size_t calls = services_.calls().size();
  // Still the other unit's after the reload: failed as such, though asked
  // nothing (before, a stopped unit's apply reported other.service).
  ApplyReport first = ApplyWithUnitsInRoot(Decl({web}));
  EXPECT_EQ(first.result, ApplyResult::kFailed);
  EXPECT_THAT(first.outcomes[0].detail,
              HasSubstr("shadowed: after the daemon-reload systemd reads web.service as an alias "
                        "of other.service"));
  EXPECT_EQ(services_.calls().size(), calls) << "no stop of the name, which is other.service";
  EXPECT_EQ(services_.enablements(), 0);
  EXPECT_TRUE(testing::Exists(units + "/web.service"));
  // The host's file read by the reload (an alias read after it gives way):
  // its enablement waits for the next apply's look.
  services_.on_daemon_reload = [&] { services_.SetAliasOf("web.service", "", ""); };
  json web2 = Service("web", {{"state", "stopped"},
                              {"enabled", true},
                              {"unit_text", "[Service]\nExecStart=/bin/web 1\n"}});
  ApplyReport gives_way = ApplyWithUnitsInRoot(Decl({web2}, 2));
  EXPECT_EQ(gives_way.result, ApplyResult::kFailed);
  EXPECT_THAT(gives_way.outcomes[0].detail,
              HasSubstr("not enabled yet: systemd read web.service as an alias of other.service "
                        "before it read the host's file"));
  EXPECT_EQ(services_.enablements(), 0);
  services_.on_daemon_reload = nullptr;
  // Not readable after the reload: what the plan took it for (a new unit)
  // is not systemd's word, and is not reported as the unit's state.
  services_.SetAliasOf("web.service", "other.service", early + "/other.service");
  services_.on_daemon_reload = [&] { services_.unreadable.insert("web.service"); };
  json web3 =
      Service("web", {{"state", "stopped"}, {"unit_text", "[Service]\nExecStart=/bin/web 1b\n"}});
  ApplyReport unread = ApplyWithUnitsInRoot(Decl({web3}, 2));
  EXPECT_EQ(unread.result, ApplyResult::kFailed);
  EXPECT_THAT(unread.outcomes[0].detail, HasSubstr("not read after the daemon-reload: GetAll"));
  services_.unreadable.clear();
  services_.on_daemon_reload = nullptr;
  services_.SetAliasOf("web.service", "", "");

  // In place, but a daemon-reload still owed (the last one refused): not
  // judged; the reload reads the host's file, which the name is then.
  services_.SetAliasOf("web.service", "", "");
  json running = Service("web", {{"unit_text", "[Service]\nExecStart=/bin/web 2\n"}});
  services_.refuse_daemon_reload = "Access denied";
  ASSERT_EQ(ApplyWithUnitsInRoot(Decl({running}, 3)).result, ApplyResult::kFailed);
  services_.refuse_daemon_reload.clear();
  services_.SetAliasOf("web.service", "other.service", early + "/other.service");
  services_.on_daemon_reload = [&] { services_.SetAliasOf("web.service", "", ""); };
  ApplyReport owed = ApplyWithUnitsInRoot(Decl({running}, 3));
  EXPECT_EQ(owed.result, ApplyResult::kOk) << owed.outcomes[0].detail;
  services_.on_daemon_reload = nullptr;

  // Dropped, its name an alias, under a view systemd says is stale: still
  // not stopped (the stop would stop other.service).
  services_.SetAliasOf("web.service", "other.service", early + "/other.service");
  services_.SetNeedDaemonReload("web.service");
  calls = services_.calls().size();
  ApplyReport dropped = ApplyWithUnitsInRoot(Decl(json::array(), 4));
  EXPECT_THAT(dropped.outcomes[0].detail,
              HasSubstr("left unit web.service as it is: systemd reads it as an alias of "
                        "other.service"));
  EXPECT_EQ(services_.calls().size(), calls);
  EXPECT_THAT(services_.reset_failed(), ElementsAre());
}

// A name that is an alias of a masked unit: the mask to lift is that
// unit's. Before, the words told the operator to unmask the name, a link
// to the other unit, which lifts nothing.
TEST_F(UnitsTest, AnAliasOfAMaskedUnitNamesTheMaskedUnit) {
  services_.AddUnit("alj.service", {});
  services_.SetAliasOf("alj.service", "opj.service", "/etc/systemd/system/opj.service");
  services_.Mask("alj.service");
  json alj = Service("alj", {{"unit_text", "[Service]\nExecStart=/bin/alj\n"}});
  ApplyReport r = ApplyWithUnitsInRoot(Decl({alj}));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_EQ(r.outcomes[0].detail,
            "masked: alj.service is an alias of opj.service, which is masked on this machine; "
            "the host leaves it alone (no unit file, no start, restart or reload) until "
            "`systemctl unmask opj.service`");
}

// A declared drop-in of a name systemd loads from a directory it reads
// before --unit-dir (of each name it loads one): the host's would not be
// read. Before, the host wrote it and said so. One from a directory read
// after is what the host's overrides.
TEST_F(UnitsTest, ADropInOfANameSystemdLoadsFromADirectoryReadFirstIsShadowed) {
  std::string units = dir_.Sub("root/etc/systemd/system");
  std::string early = dir_.Sub("root/run/early");
  std::string late = dir_.Sub("root/usr/lib/systemd/system");
  services_.search_path = {early, units, late};
  services_.AddUnit("dw.service", {});
  json dw = Service("dw", {{"drop_ins", {{"10-x.conf", "[Service]\nEnvironment=X=host\n"}}}});
  services_.SetDropInPaths("dw.service", {late + "/dw.service.d/10-x.conf"});
  ApplyReport vendor = ApplyWithUnitsInRoot(Decl({dw}));
  EXPECT_EQ(vendor.result, ApplyResult::kOk) << vendor.outcomes[0].detail;
  services_.SetDropInPaths("dw.service", {early + "/dw.service.d/10-x.conf"});
  json dw2 = Service("dw", {{"drop_ins", {{"10-x.conf", "[Service]\nEnvironment=X=two\n"}}}});
  size_t calls = services_.calls().size();
  ApplyReport r = ApplyWithUnitsInRoot(Decl({dw2}, 2));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_THAT(r.outcomes[0].detail,
              HasSubstr("shadowed: systemd loads its drop-in 10-x.conf from " + early +
                        "/dw.service.d/10-x.conf, in a directory it reads before " + units +
                        " (--unit-dir): the drop-in the host writes there would not run"));
  EXPECT_EQ(testing::ReadText(units + "/dw.service.d/10-x.conf"), "[Service]\nEnvironment=X=host\n")
      << "not written";
  EXPECT_EQ(services_.calls().size(), calls);
  // Settled on the host's, then one of that name put first: no longer
  // proven from the record, and said.
  services_.SetDropInPaths("dw.service", {units + "/dw.service.d/10-x.conf"});
  ASSERT_EQ(ApplyWithUnitsInRoot(Decl({dw2}, 2)).result, ApplyResult::kOk);
  ASSERT_TRUE(ApplyWithUnitsInRoot(Decl({dw2}, 2)).from_record);
  services_.SetDropInPaths("dw.service", {early + "/dw.service.d/10-x.conf"});
  ApplyReport again = ApplyWithUnitsInRoot(Decl({dw2}, 2));
  EXPECT_FALSE(again.from_record);
  EXPECT_THAT(again.outcomes[0].detail, HasSubstr("shadowed: systemd loads its drop-in"));
}

// SPEC rule 7 beside rule 8: what a changed restart_on or reload_on asks
// of a masked unit is not done, and stays owed. Before, the file was
// recorded as written and the restart forgotten: once unmasked, the unit
// was `unchanged` on its old config, and the apply healthy.
TEST_F(UnitsTest, WhatAMaskedUnitIsOwedIsDoneOnceUnmasked) {
  services_.AddUnit("jail.service", {});
  json svc = Service("jail", {{"restart_on", {"jail.conf"}}});
  ASSERT_EQ(Run(Decl({Conf("a"), svc})).result, ApplyResult::kOk);
  services_.Mask("jail.service");
  ApplyReport masked = Run(Decl({Conf("b"), svc}, 2));
  EXPECT_THAT(Outcomes(masked), ElementsAre("updated", "failed"));
  size_t calls = services_.calls().size();
  EXPECT_THAT(Outcomes(Run(Decl({Conf("b"), svc}, 2))), ElementsAre("unchanged", "failed"))
      << "still masked: still owed, still not done";
  EXPECT_EQ(services_.calls().size(), calls);
  services_.Mask("jail.service", false);
  ApplyReport r = Run(Decl({Conf("b"), svc}, 2));
  EXPECT_THAT(Outcomes(r), ElementsAre("unchanged", "restarted"));
  EXPECT_THAT(r.outcomes[1].detail, HasSubstr("restart_on jail.conf changed"));
  EXPECT_EQ(services_.calls().back().kind, ports::JobKind::kRestart);
  EXPECT_EQ(r.result, ApplyResult::kOk);
}

// ADR 184's incident, passed on by systemd: a unit that Requires= (or is
// PartOf=) one the apply restarts is stopped and started with it, and may
// die or stay down. Before, the host judged it on the plan's look:
// `unchanged … active (running)`, exit 0, with it dead.
TEST_F(UnitsTest, AUnitSystemdTookDownWithOneActedOnFails) {
  ApplyReport r = ApplyRestartingTheServer([&] { services_.Kill("client.service"); });
  EXPECT_THAT(Outcomes(r), ElementsAre("updated", "restarted", "failed"));
  EXPECT_THAT(r.outcomes[2].detail,
              HasSubstr("client.service went down during this apply: failed"));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  ASSERT_TRUE(r.outcomes[2].unit.has_value());
  EXPECT_FALSE(r.outcomes[2].unit->up);
  json server = Service("server", {{"restart_on", {"jail.conf"}}});
  ApplyReport again = Run(Decl({Conf("b"), server, Service("client")}, 2));
  EXPECT_THAT(Outcomes(again), ElementsAre("unchanged", "unchanged", "started"))
      << "the next apply starts it, as any dead daemon";
}

// The same unit started again by systemd, and running under one run at
// both looks: as declared, and said; its new run is the baseline.
TEST_F(UnitsTest, AUnitSystemdRestartedWithOneActedOnIsJudgedByTheLooks) {
  ApplyReport r = ApplyRestartingTheServer([&] { services_.RestartedByOther("client.service"); });
  EXPECT_THAT(Outcomes(r), ElementsAre("updated", "restarted", "unchanged"));
  EXPECT_THAT(r.outcomes[2].detail,
              HasSubstr("client.service active (running), started anew during this apply (with a "
                        "unit it acted on)"));
  EXPECT_EQ(r.result, ApplyResult::kOk);
  size_t calls = services_.calls().size();
  json server = Service("server", {{"restart_on", {"jail.conf"}}});
  ApplyReport again = Run(Decl({Conf("b"), server, Service("client")}, 2));
  EXPECT_THAT(Outcomes(again), ElementsAre("unchanged", "unchanged", "unchanged"));
  EXPECT_EQ(services_.calls().size(), calls) << "nothing asked of a machine that is right";
}

TEST_F(UnitsTest, ALinkToDevNullAtTheUnitFilesPlaceIsAMask) {
  services_.AddUnit("cron.service", {});
  ASSERT_EQ(::symlink("/dev/null", dir_.Sub("units/cron.service").c_str()), 0);
  ApplyReport r = Run(Decl(
      {Service("cron", {{"unit_text", "[Service]\nExecStart=/bin/c\n"}}), Service("other.cron")}));
  EXPECT_THAT(r.outcomes[0].detail, HasSubstr("masked: cron.service is masked"));
  char target[64] = {};
  ASSERT_GT(::readlink(dir_.Sub("units/cron.service").c_str(), target, sizeof target - 1), 0);
  EXPECT_STREQ(target, "/dev/null") << "the mask stays";
  for (const auto& call : services_.calls()) EXPECT_NE(call.unit, "cron.service");
  // A machine's unit (no unit_text) masked the same way, after a no-op
  // proven from the record: the full pass reports it.
  services_.AddUnit("ntp.service", {});
  ASSERT_EQ(Run(Decl({Service("ntp")}, 2)).result, ApplyResult::kOk);
  ASSERT_EQ(Run(Decl({Service("ntp")}, 2)).from_record, true);
  ASSERT_EQ(::symlink("/dev/null", dir_.Sub("units/ntp.service").c_str()), 0);
  ApplyReport again = Run(Decl({Service("ntp")}, 2));
  EXPECT_FALSE(again.from_record);
  EXPECT_THAT(again.outcomes[0].detail, HasSubstr("masked: ntp.service is masked"));
}

// Issue 20: a drop-in (or a unit file) declared as a `file` is a unit
// definition. Before, restart_on on it restarted the unit with no
// daemon-reload: systemd ran the old setting and the host said restarted.
TEST_F(UnitsTest, AUnitDefinitionDeclaredAsAFileIsLoadedBeforeTheUnitIsActedOn) {
  auto apply = [&](const json& decl) { return ApplyWithUnitsInRoot(decl); };
  auto drop_in = [](const std::string& v) {
    return json{{"id", "web.env"},
                {"kind", "file"},
                {"path", "/etc/systemd/system/web.service.d/env.conf"},
                {"content", "[Service]\nEnvironment=V=" + v + "\n"}};
  };
  auto timer_conf = [](const std::string& v) {
    return json{{"id", "other.conf"},
                {"kind", "file"},
                {"path", "/etc/systemd/system/other.timer.d/at.conf"},
                {"content", "[Timer]\nOnCalendar=" + v + "\n"}};
  };
  services_.AddUnit("web.service", {});
  services_.AddUnit("api.service", {});
  json web = Service("web");
  json api = Service("api", {{"restart_on", {"other.conf"}}});
  ASSERT_EQ(apply(Decl({drop_in("1"), web, timer_conf("daily"), api})).result, ApplyResult::kOk);
  int reloads = services_.daemon_reloads();
  size_t calls = services_.calls().size();
  ApplyReport r = apply(Decl({drop_in("2"), web, timer_conf("hourly"), api}, 2));
  EXPECT_THAT(Outcomes(r), ElementsAre("updated", "restarted", "updated", "restarted"));
  EXPECT_EQ(services_.daemon_reloads(), reloads + 1) << "one daemon-reload, before the restarts";
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[1]),
            "restarted web (service): unit definition /etc/systemd/system/web.service.d/env.conf "
            "changed; web.service active (running)");
  ASSERT_EQ(services_.calls().size(), calls + 2);
  // Dropped, the drop-in is deleted and systemd loads its absence.
  reloads = services_.daemon_reloads();
  ApplyReport dropped = apply(Decl({web, timer_conf("hourly"), api}, 3));
  EXPECT_THAT(Outcomes(dropped), ElementsAre("restarted", "unchanged", "unchanged", "removed"));
  EXPECT_FALSE(testing::Exists(dir_.Sub("root/etc/systemd/system/web.service.d/env.conf")));
  EXPECT_EQ(services_.daemon_reloads(), reloads + 1);
}

// Issue 38 (2): a declared instance stayed unchanged, on the old
// definition, when its template (or the template's drop-in) changed.
// Whatever systemd reads as part of the unit's definition counts.
TEST_F(UnitsTest, AnInstanceFollowsItsTemplateAndItsDropIns) {
  auto apply = [&](const json& decl) { return ApplyWithUnitsInRoot(decl); };
  services_.AddUnit("app@a.service", {});
  services_.AddUnit("other.service", {});
  json inst = Service("inst", {{"unit", "app@a.service"}});
  json other = Service("other");
  ASSERT_EQ(apply(Decl({DefinitionFile("tpl", "app@.service", "1"),
                        DefinitionFile("tpl.env", "app@.service.d/x.conf", "1"), inst, other}))
                .result,
            ApplyResult::kOk);
  ApplyReport r = apply(Decl({DefinitionFile("tpl", "app@.service", "2"),
                              DefinitionFile("tpl.env", "app@.service.d/x.conf", "1"), inst, other},
                             2));
  EXPECT_THAT(Outcomes(r), ElementsAre("updated", "unchanged", "restarted", "unchanged"));
  EXPECT_THAT(r.outcomes[2].detail,
              HasSubstr("unit definition /etc/systemd/system/app@.service changed"));
  ApplyReport d = apply(Decl({DefinitionFile("tpl", "app@.service", "2"),
                              DefinitionFile("tpl.env", "app@.service.d/x.conf", "2"), inst, other},
                             3));
  EXPECT_THAT(Outcomes(d), ElementsAre("unchanged", "updated", "restarted", "unchanged"));
}

// A masked instance's FragmentPath is its mask (a link to /dev/null at
// its own name), which read as a unit file of its own: its template's
// file was then no part of its definition, so a template changed under
// the mask owed it nothing. Once unmasked it ran on the old template,
// `unchanged`, exit 0, for good.
TEST_F(UnitsTest, AnInstanceMaskedWhileItsTemplateChangedIsRestartedOnceUnmasked) {
  services_.AddUnit("app@a.service", {});
  json inst = Service("inst", {{"unit", "app@a.service"}});
  ASSERT_EQ(ApplyWithUnitsInRoot(Decl({DefinitionFile("tpl", "app@.service", "1"), inst})).result,
            ApplyResult::kOk);
  services_.Mask("app@a.service");
  services_.SetFragmentPath("app@a.service", dir_.Sub("root/etc/systemd/system/app@a.service"));
  ApplyReport masked =
      ApplyWithUnitsInRoot(Decl({DefinitionFile("tpl", "app@.service", "2"), inst}, 2));
  EXPECT_THAT(Outcomes(masked), ElementsAre("updated", "failed"));
  services_.Mask("app@a.service", false);
  services_.SetFragmentPath("app@a.service", dir_.Sub("root/etc/systemd/system/app@.service"));
  ApplyReport r = ApplyWithUnitsInRoot(Decl({DefinitionFile("tpl", "app@.service", "2"), inst}, 2));
  EXPECT_THAT(Outcomes(r), ElementsAre("unchanged", "restarted"));
  EXPECT_THAT(r.outcomes[1].detail,
              HasSubstr("unit definition /etc/systemd/system/app@.service changed"));
  EXPECT_EQ(services_.calls().back().kind, ports::JobKind::kRestart);
}

// A dropped unit of the host's that systemd could not be asked about (a
// stalled bus) was not stopped, yet its unit file was deleted and its
// entry forgotten: the daemon ran on with no definition, for good. Nothing
// of such a removal is done; it fails, stays recorded, and the next apply
// does it.
TEST_F(UnitsTest, ADroppedUnitThatCannotBeReadIsNotForgotten) {
  services_.AddUnit("own.service", {});
  json own = Service("own", {{"unit_text", "[Service]\nExecStart=/bin/own\n"}});
  ASSERT_EQ(Run(Decl({own})).result, ApplyResult::kOk);
  services_.failing_reads = 1;  // the dropped unit's read
  ApplyReport r = Run(Decl(json::array(), 2));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_THAT(Outcomes(r), ElementsAre("failed"));
  EXPECT_THAT(r.outcomes[0].detail,
              HasSubstr("own.service could not be read from systemd (GetAll own.service: "
                        "Connection reset by peer): not stopped, nothing deleted"))
      << r.outcomes[0].detail;
  EXPECT_TRUE(services_.ReadUnit("own.service")->Running());
  EXPECT_TRUE(testing::Exists(dir_.Sub("units/own.service")));
  ApplyReport again = Run(Decl(json::array(), 2));
  EXPECT_EQ(again.result, ApplyResult::kOk);
  EXPECT_THAT(again.outcomes[0].detail,
              HasSubstr("stopped own.service (not waited on), deleted unit file own.service"));
  EXPECT_FALSE(services_.ReadUnit("own.service")->Running());
  EXPECT_FALSE(testing::Exists(dir_.Sub("units/own.service")));
}

// Issue 38 (7): an operator's own unit (no unit_text) declared running
// and then dropped was stopped; SPEC 8 says it is forgotten. A unit the
// host wrote is disabled before its file goes, then stopped.
TEST_F(UnitsTest, ADroppedUnitIsStoppedOnlyWhenItsUnitFileIsTheHosts) {
  services_.AddUnit("op.service", {Behavior::kHealthy, 0s, true});
  services_.AddUnit("own.service", {});
  json own = Service(
      "own",
      {{"unit_text", "[Service]\nExecStart=/bin/own\n[Install]\nWantedBy=x\n"}, {"enabled", true}});
  ASSERT_EQ(Run(Decl({Service("op"), own})).result, ApplyResult::kOk);
  ASSERT_EQ(services_.ReadUnit("own.service")->unit_file_state, "enabled");
  ApplyReport r = Run(Decl(json::array(), 2));
  EXPECT_THAT(Outcomes(r), ElementsAre("removed", "removed"));
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[0]),
            "removed op (service): no longer managed; left unit op.service as it is (not the "
            "host's: no unit_text)");
  EXPECT_TRUE(services_.ReadUnit("op.service")->Running()) << "the operator's: not stopped";
  EXPECT_THAT(r.outcomes[1].detail, HasSubstr("stopped own.service (not waited on), disabled "
                                              "own.service, deleted unit file own.service"));
  EXPECT_EQ(services_.ReadUnit("own.service")->unit_file_state, "disabled");
  EXPECT_FALSE(testing::Exists(dir_.Sub("units/own.service")));
  EXPECT_THAT(services_.reset_failed(), ElementsAre("own.service"))
      << "the operator's unit keeps whatever systemd says of it";
}

// A dropped unit of the host's that had failed stayed listed by systemd as
// "not-found failed" until a reboot (systemd never collects a failed
// unit): its failure is forgotten once its file is gone, and only then.
TEST_F(UnitsTest, ADroppedUnitThatFailedIsForgottenBySystemdOnceItsFileIsGone) {
  services_.AddUnit("bad.service", {Behavior::kDiesAfter, 100ms});
  services_.AddUnit("edited.service", {Behavior::kDiesAfter, 100ms});
  json bad = Service("bad", {{"unit_text", "[Service]\nExecStart=/bin/false\n"}});
  json edited = Service("edited", {{"unit_text", "[Service]\nExecStart=/bin/false\n"}});
  ASSERT_EQ(Run(Decl({bad, edited})).result, ApplyResult::kFailed);
  ASSERT_EQ(services_.ReadUnit("bad.service")->active_state, "failed");
  testing::WriteText(dir_.Sub("units/edited.service"), "[Service]\nExecStart=/bin/mine\n");
  ApplyReport r = Run(Decl(json::array(), 2));
  EXPECT_EQ(r.result, ApplyResult::kOk) << r.outcomes[0].detail;
  EXPECT_THAT(r.outcomes[0].detail, HasSubstr("deleted unit file bad.service"));
  EXPECT_THAT(r.outcomes[1].detail, HasSubstr("left unit edited.service"));
  EXPECT_THAT(services_.reset_failed(), ElementsAre("bad.service"))
      << "edited.service's file is someone's now: what systemd says of it stays";
}

// The same of a unit the host's own declared `file` defines (its unit file
// in --unit-dir), without unit_text: it is the host's, and forgotten too.
TEST_F(UnitsTest, ADroppedUnitItsDeclaredFileDefinedIsForgottenBySystemd) {
  services_.AddUnit("s.service", {Behavior::kDiesAfter, 100ms});
  json unit_file = {{"id", "s.unit"},
                    {"kind", "file"},
                    {"path", "/etc/systemd/system/s.service"},
                    {"content", "[Service]\nExecStart=/bin/false\n"}};
  ASSERT_EQ(ApplyWithUnitsInRoot(Decl({unit_file, Service("s")})).result, ApplyResult::kFailed);
  ApplyReport r = ApplyWithUnitsInRoot(Decl(json::array(), 2));
  EXPECT_EQ(r.result, ApplyResult::kOk);
  EXPECT_THAT(services_.reset_failed(), ElementsAre("s.service"));
}

// Issue 38 (4): a service its timer or socket runs, declared `stopped` as
// the docs advised, was killed mid-run. Declared `triggered`, the host
// neither starts nor stops it, and a new definition is loaded for its
// next run without touching the run in progress.
TEST_F(UnitsTest, ATriggeredUnitIsLeftToItsTrigger) {
  services_.AddUnit("job.service", {Behavior::kHealthy, 0s, /*running_initially=*/true});
  auto job = [](const std::string& v) {
    return Service(
        "job", {{"state", "triggered"}, {"unit_text", "[Service]\nExecStart=/bin/" + v + "\n"}});
  };
  ApplyReport first = Run(Decl({job("a")}));
  EXPECT_THAT(Outcomes(first), ElementsAre("created"));
  ApplyReport r = Run(Decl({job("a")}));
  EXPECT_THAT(Outcomes(r), ElementsAre("unchanged"));
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[0]),
            "unchanged job (service): job.service left to its trigger (active (running))");
  int reloads = services_.daemon_reloads();
  ApplyReport changed = Run(Decl({job("b")}, 2));
  EXPECT_THAT(Outcomes(changed), ElementsAre("updated"));
  EXPECT_THAT(changed.outcomes[0].detail, HasSubstr("its next activation runs the new definition"));
  EXPECT_EQ(services_.daemon_reloads(), reloads + 1);
  EXPECT_EQ(services_.StartsOf("job.service"), 0) << "never started or restarted";
  for (const auto& c : services_.calls()) EXPECT_NE(c.kind, ports::JobKind::kStop);
  EXPECT_TRUE(services_.ReadUnit("job.service")->Running()) << "the run in progress goes on";
  EXPECT_EQ(changed.outcomes[0].declared_unit(), "job.service");
}

// A triggered unit's restart_on was accepted and never acted on, unsaid:
// a daemon its socket started ran on the old config while every apply
// said "unchanged … left to its trigger (active (running))". The host
// still never restarts it (that would kill a run in progress), and says
// so.
TEST_F(UnitsTest, ATriggeredUnitsRestartOnIsSaidNotDone) {
  services_.AddUnit("job.service", {Behavior::kHealthy, 0s, /*running_initially=*/true});
  json job = Service("job", {{"state", "triggered"}, {"restart_on", {"jail.conf"}}});
  testing::WriteText(Root("/etc/jail.conf"), "one");
  ASSERT_EQ(Run(Decl({Conf("one"), job})).result, ApplyResult::kOk);
  ApplyReport r = Run(Decl({Conf("two"), job}, 2));
  EXPECT_EQ(r.result, ApplyResult::kOk);
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[1]),
            "unchanged job (service): job.service left to its trigger (active (running)); "
            "restart_on jail.conf changed: not restarted (left to its trigger: a run in progress "
            "keeps what it started with, its next activation reads the change)");
  EXPECT_EQ(services_.StartsOf("job.service"), 0);
  EXPECT_TRUE(store_.Owed().owed.empty()) << "nothing owed: its next activation reads it";
  ApplyReport again = Run(Decl({Conf("two"), job}, 2));
  EXPECT_EQ(core::FormatOutcomeLine(again.outcomes[1]),
            "unchanged job (service): job.service left to its trigger (active (running))")
      << "said once, with the change";
}

// Declared running again after it was left to its trigger: the changes
// the host did not restart it for (a restart_on file, its unit file) were
// never read by the run in progress. It read `unchanged`, exit 0, while the
// daemon ran on the old config for good. Now restarted when its run began
// before one of them last changed; one begun since read them.
TEST_F(UnitsTest, ATriggeredUnitDeclaredRunningIsRestartedOntoWhatItSkipped) {
  services_.AddUnit("job.service", {Behavior::kHealthy, 0s, /*running_initially=*/true});
  auto job = [](const std::string& state, const std::string& exec) {
    return Service("job", {{"state", state},
                           {"restart_on", {"jail.conf"}},
                           {"unit_text", "[Service]\nExecStart=/bin/" + exec + "\n"}});
  };
  ASSERT_EQ(Run(Decl({Conf("one"), job("running", "a")})).result, ApplyResult::kOk);
  ASSERT_EQ(Run(Decl({Conf("two"), job("triggered", "a")}, 2)).result, ApplyResult::kOk);
  int starts = services_.StartsOf("job.service");
  ApplyReport r = Run(Decl({Conf("two"), job("running", "a")}, 3));
  EXPECT_EQ(r.result, ApplyResult::kOk);
  EXPECT_THAT(core::FormatOutcomeLine(r.outcomes[1]),
              HasSubstr("declared running, was triggered: its run began before /etc/jail.conf "
                        "last changed"));
  EXPECT_EQ(services_.StartsOf("job.service"), starts + 1);
  EXPECT_THAT(Outcomes(Run(Decl({Conf("two"), job("running", "a")}, 3))),
              ElementsAre("unchanged", "unchanged"));

  // Its unit file changed while triggered, and its trigger started a run
  // since: that run read it, and is not restarted.
  ASSERT_EQ(Run(Decl({Conf("two"), job("triggered", "b")}, 4)).result, ApplyResult::kOk);
  services_.RestartedByOther("job.service");
  starts = services_.StartsOf("job.service");
  r = Run(Decl({Conf("two"), job("running", "b")}, 5));
  EXPECT_THAT(Outcomes(r), ElementsAre("unchanged", "unchanged"));
  EXPECT_EQ(services_.StartsOf("job.service"), starts);

  // The apply that declares it running cannot read it (the bus lost for
  // it): it fails, and the next apply, which can, still restarts it. Its
  // run began a second before that write (a ctime within the kernel's
  // clock tick of the start reads as older than it).
  services_.RanSince("job.service", std::chrono::seconds(1));
  ASSERT_EQ(Run(Decl({Conf("three"), job("triggered", "b")}, 6)).result, ApplyResult::kOk);
  services_.unreadable.insert("job.service");
  EXPECT_EQ(Run(Decl({Conf("three"), job("running", "b")}, 7)).result, ApplyResult::kFailed);
  services_.unreadable.clear();
  starts = services_.StartsOf("job.service");
  r = Run(Decl({Conf("three"), job("running", "b")}, 7));
  EXPECT_THAT(core::FormatOutcomeLine(r.outcomes[1]),
              HasSubstr("declared running, was triggered: its run began before "));
  EXPECT_EQ(services_.StartsOf("job.service"), starts + 1);

  // Unless it predates that change.
  services_.RanSince("job.service", 5s);
  ASSERT_EQ(Run(Decl({Conf("three"), job("triggered", "c")}, 8)).result, ApplyResult::kOk);
  r = Run(Decl({Conf("three"), job("running", "c")}, 9));
  EXPECT_THAT(core::FormatOutcomeLine(r.outcomes[1]),
              HasSubstr("declared running, was triggered: its run began before unit file "
                        "job.service last changed"));
}

// The same for a reload_on file: the reload left to the trigger was never
// done once it was declared running (`unchanged`, exit 0).
TEST_F(UnitsTest, ATriggeredUnitDeclaredRunningCatchesUpOnItsReloadOn) {
  services_.AddUnit("job.service", {Behavior::kHealthy, 0s, /*running_initially=*/true});
  auto job = [](const std::string& state) {
    return Service("job", {{"state", state}, {"reload_on", {"jail.conf"}}});
  };
  ASSERT_EQ(Run(Decl({Conf("a"), job("triggered")})).result, ApplyResult::kOk);
  ASSERT_EQ(Run(Decl({Conf("b"), job("triggered")}, 2)).result, ApplyResult::kOk);
  int starts = services_.StartsOf("job.service");
  ApplyReport r = Run(Decl({Conf("b"), job("running")}, 3));
  EXPECT_THAT(core::FormatOutcomeLine(r.outcomes[1]),
              HasSubstr("its run began before /etc/jail.conf last changed"));
  EXPECT_EQ(services_.StartsOf("job.service"), starts + 1);
}

// A triggered unit systemd has no unit for was `unchanged … left to its
// trigger (inactive (dead))`, exit 0 and healthy, even on a first apply:
// nothing can ever start it. Declared running, the same name fails.
TEST_F(UnitsTest, ATriggeredUnitSystemdCannotLoadFails) {
  ApplyReport r = Run(Decl({Service("nosuch", {{"state", "triggered"}})}));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[0]),
            "failed nosuch (service): nosuch.service not found: systemd has no unit of that name "
            "(LoadState=not-found), so no timer, socket or path unit can start it; declare its "
            "unit_text, or install it");
  // Loadable when settled, not any more since (its file broken or gone):
  // the no-op proven from the record said unchanged, healthy.
  services_.AddUnit("tick.service", {});
  json tick = Service("tick", {{"state", "triggered"}});
  ASSERT_EQ(Run(Decl({tick}, 2)).result, ApplyResult::kOk);
  ASSERT_TRUE(Run(Decl({tick}, 2)).from_record);
  services_.BadSetting("tick.service");
  r = Run(Decl({tick}, 2));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_THAT(core::FormatOutcomeLine(r.outcomes[0]),
              HasSubstr("tick.service cannot be loaded (LoadState=bad-setting)"));
  // The host's own unit file, loaded bad since (a drop-in put by hand):
  // systemd keeps NeedDaemonReload set for it, which is no new definition.
  services_.AddUnit("bt5.service", {});
  json bt5 = Service("bt5", {{"state", "triggered"}, {"unit_text", "[Service]\nExecStart=/x\n"}});
  ASSERT_EQ(Run(Decl({bt5}, 3)).result, ApplyResult::kOk);
  services_.BadSetting("bt5.service");
  services_.SetNeedDaemonReload("bt5.service");
  r = Run(Decl({bt5}, 3));
  EXPECT_EQ(r.result, ApplyResult::kFailed) << core::FormatOutcomeLine(r.outcomes[0]);
  // Mended on disk since (the bad drop-in taken away): this apply's own
  // daemon-reload loads it, and it is judged after.
  services_.SetNeedDaemonReload("bt5.service");
  services_.on_daemon_reload = [&] { services_.BadSetting("bt5.service", false); };
  r = Run(Decl({bt5}, 3));
  services_.on_daemon_reload = nullptr;
  EXPECT_EQ(r.result, ApplyResult::kOk) << core::FormatOutcomeLine(r.outcomes[0]);
  // Its own new unit_text that systemd cannot load: said by the apply that
  // writes it, not only by the next one.
  services_.AddUnit("badtext.service", {});
  services_.BadSetting("badtext.service");
  r = Run(Decl({Service("badtext", {{"state", "triggered"},
                                    {"unit_text", "[Service]\nExecStart=/x\nBogus=1\n"}})},
               4));
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[0]),
            "failed badtext (service): badtext.service cannot be loaded after the daemon-reload "
            "(LoadState=bad-setting): its trigger would fail to start it; systemd-analyze verify "
            "badtext.service says why");
  // Its unit_text written by this apply, which systemd loads (the fake
  // knows the unit as a real one would once its file is read).
  services_.AddUnit("made.service", {});
  r = Run(Decl({Service("made", {{"state", "triggered"},
                                 {"unit_text", "[Service]\nExecStart=/bin/true\n"}})},
               5));
  EXPECT_EQ(r.result, ApplyResult::kOk) << core::FormatOutcomeLine(r.outcomes[0]);
}

// A service its trigger starts, where the trigger is declared running:
// declared stopped, it was stopped at every apply, exit 0, and started
// again 0.3 s later; dropped alone, it was stopped and its unit file
// deleted, and the trigger started it again, running with no file and no
// record. Both now fail, saying what starts it, and nothing is done.
// A kept unit's last drop-in no longer declared: the file went and its
// empty UNIT.d/ stayed behind. It goes too, unless someone's file is in it.
TEST_F(UnitsTest, AKeptUnitsLastDropInTakesItsFolder) {
  services_.AddUnit("ro.service", {});
  json with = Service("ro", {{"drop_ins", {{"10-a.conf", "[Service]\nNice=5\n"}}}});
  ASSERT_EQ(Run(Decl({with})).result, ApplyResult::kOk);
  ASSERT_EQ(Run(Decl({Service("ro")}, 2)).result, ApplyResult::kOk);
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("units") + "/ro.service.d"));
  ASSERT_EQ(Run(Decl({with}, 3)).result, ApplyResult::kOk);
  testing::WriteText(dir_.Sub("units") + "/ro.service.d/99-mine.conf", "[Service]\n");
  ASSERT_EQ(Run(Decl({Service("ro")}, 4)).result, ApplyResult::kOk);
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("units") + "/ro.service.d/10-a.conf"));
  EXPECT_TRUE(std::filesystem::exists(dir_.Sub("units") + "/ro.service.d/99-mine.conf"));
}

// ... but not a folder a resource declares (a review of 97f9c55: deleted,
// and put back as drifted by the next apply).
TEST_F(UnitsTest, AKeptUnitsLastDropInLeavesADeclaredFolder) {
  services_.AddUnit("ro.service", {});
  json folder = {
      {"id", "ro.d"}, {"kind", "directory"}, {"path", "/etc/systemd/system/ro.service.d"}};
  json with = Service("ro", {{"drop_ins", {{"10-a.conf", "[Service]\nNice=5\n"}}}});
  ASSERT_EQ(ApplyWithUnitsInRoot(Decl({folder, with})).result, ApplyResult::kOk);
  ApplyReport r = ApplyWithUnitsInRoot(Decl({folder, Service("ro")}, 2));
  EXPECT_EQ(r.result, ApplyResult::kOk);
  EXPECT_TRUE(std::filesystem::is_directory(Root("/etc/systemd/system/ro.service.d")));
  EXPECT_THAT(Outcomes(ApplyWithUnitsInRoot(Decl({folder, Service("ro")}, 2))),
              ElementsAre("unchanged", "unchanged"));
}

// A path unit and the service it starts, both declared stopped: stopped at
// once, the path unit restarted the service before its own stop, and the
// apply said both stopped. The trigger's stop now comes first.
TEST_F(UnitsTest, ATriggerDeclaredStoppedIsStoppedBeforeItsService) {
  services_.AddUnit("pr.path", {Behavior::kHealthy, 0s, /*running_initially=*/true});
  services_.AddUnit("pr.service", {Behavior::kHealthy, 0s, /*running_initially=*/true});
  services_.SetTriggers("pr.path", {"pr.service"});
  json service = Service("pr", {{"state", "stopped"}});
  json path = Service("prp", {{"unit", "pr.path"}, {"state", "stopped"}});
  ApplyReport r = Run(Decl({service, path}));
  EXPECT_THAT(Outcomes(r), ElementsAre("stopped", "stopped"));
  std::vector<std::string> stopped;
  for (const auto& c : services_.calls()) {
    if (c.kind == ports::JobKind::kStop) stopped.push_back(c.unit);
  }
  EXPECT_THAT(stopped, ElementsAre("pr.path", "pr.service"));
}

// A timer's job declared stopped, found between its runs: stopped as
// declared (issue 16's declarations), however its timer is declared.
TEST_F(UnitsTest, ATimersJobDeclaredStoppedBetweenItsRunsIsAsDeclared) {
  services_.AddUnit("tick.timer", {Behavior::kHealthy, 0s, /*running_initially=*/true});
  services_.AddUnit("tick.service", {Behavior::kOneshot});
  services_.SetTriggers("tick.timer", {"tick.service"});
  json timer = Service("tick", {{"unit", "tick.timer"}});
  json job = Service("tick-job", {{"unit", "tick.service"}, {"state", "stopped"}});
  ApplyReport r = Run(Decl({timer, job}));
  EXPECT_EQ(r.result, ApplyResult::kOk) << core::FormatOutcomeLine(r.outcomes[1]);
}

TEST_F(UnitsTest, AServiceItsDeclaredTriggerStartsIsNotStoppedUnderIt) {
  services_.AddUnit("dq.path", {Behavior::kHealthy, 0s, /*running_initially=*/true});
  services_.AddUnit("dq.service", {Behavior::kHealthy, 0s, /*running_initially=*/true});
  services_.SetTriggers("dq.path", {"dq.service"});
  json path = Service("dqp", {{"unit", "dq.path"}, {"unit_text", "[Path]\nPathExists=/x\n"}});
  auto service = [](const std::string& state) {
    return Service("dq",
                   {{"state", state}, {"unit_text", "[Service]\nExecStart=/bin/sleep infinity\n"}});
  };
  ASSERT_EQ(Run(Decl({path, service("triggered")})).result, ApplyResult::kOk);

  ApplyReport r = Run(Decl({path, service("stopped")}, 2));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[1]),
            "failed dq (service): dq.service is started again by dq.path, declared running: "
            "declare it \"triggered\" to leave it to dq.path, or declare dq.path stopped");
  for (const auto& c : services_.calls()) EXPECT_NE(c.kind, ports::JobKind::kStop);

  r = Run(Decl({path}, 3));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_THAT(core::FormatOutcomeLine(r.outcomes[1]),
              HasSubstr("dq.service is started by dq.path, still declared running: not stopped, "
                        "nothing deleted"));
  for (const auto& c : services_.calls()) EXPECT_NE(c.kind, ports::JobKind::kStop);
  EXPECT_TRUE(std::filesystem::exists(dir_.Sub("units") + "/dq.service"));

  // Its trigger declared stopped: it still runs while the removals are
  // done (the units are acted on after), so the service's waits one apply.
  json stopped_path = path;
  stopped_path["state"] = "stopped";
  r = Run(Decl({stopped_path}, 4));
  EXPECT_THAT(Outcomes(r), ElementsAre("stopped", "failed"));
  EXPECT_THAT(core::FormatOutcomeLine(r.outcomes[1]),
              HasSubstr("dq.service is started by dq.path, which runs until this apply's units "
                        "are acted on: not stopped, nothing deleted"));
  EXPECT_TRUE(std::filesystem::exists(dir_.Sub("units") + "/dq.service"));
  r = Run(Decl({stopped_path}, 5));
  EXPECT_THAT(Outcomes(r), ElementsAre("unchanged", "removed"));
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("units") + "/dq.service"));

  // Dropped together: the trigger is stopped first, then the service.
  services_.AddUnit("dq.service", {Behavior::kHealthy, 0s, /*running_initially=*/true});
  services_.AddUnit("dq.path", {Behavior::kHealthy, 0s, /*running_initially=*/true});
  services_.SetTriggers("dq.path", {"dq.service"});
  ASSERT_EQ(Run(Decl({path, service("triggered")}, 6)).result, ApplyResult::kOk);
  services_.ClearCalls();
  r = Run(Decl(json::array(), 7));
  EXPECT_EQ(r.result, ApplyResult::kOk);
  std::vector<std::string> stopped;
  for (const auto& c : services_.calls()) {
    if (c.kind == ports::JobKind::kStop) stopped.push_back(c.unit);
  }
  EXPECT_THAT(stopped, ElementsAre("dq.path", "dq.service"));
}

// A socket's new definition was restarted into while the service it
// activates ran: systemd stopped the socket, refused to start it again
// ("already active, refusing"), and nothing listened any more. The
// restart now waits, said and owed, until the service stops.
TEST_F(UnitsTest, ASocketIsNotRestartedUnderItsRunningService) {
  services_.AddUnit("echo.socket", {Behavior::kHealthy, 0s, /*running_initially=*/true});
  services_.AddUnit("echo.service", {Behavior::kHealthy, 0s});
  services_.SetTriggers("echo.socket", {"echo.service", "echo@0-1-2.service"});
  // A timer of the same service is no socket: restarted as asked.
  services_.AddUnit("echo.timer", {Behavior::kHealthy, 0s, /*running_initially=*/true});
  services_.SetTriggers("echo.timer", {"echo.service"});
  auto socket = [](const std::string& path) {
    return Service(
        "echo", {{"unit", "echo.socket"}, {"unit_text", "[Socket]\nListenStream=" + path + "\n"}});
  };
  auto timer = [](const std::string& when) {
    return Service("tick", {{"unit", "echo.timer"}, {"unit_text", "[Timer]\nOnCalendar=" + when}});
  };
  ASSERT_EQ(Run(Decl({socket("/run/a"), timer("daily")})).result, ApplyResult::kOk);
  services_.AddUnit("echo.service", {Behavior::kHealthy, 0s, /*running_initially=*/true});
  ApplyReport both = Run(Decl({socket("/run/b"), timer("hourly")}, 2));
  EXPECT_THAT(Outcomes(both), ElementsAre("failed", "updated")) << both.outcomes[1].detail;
  for (int k = 2; k <= 3; ++k) {
    ApplyReport r = Run(Decl({socket("/run/b"), timer("hourly")}, 2));
    EXPECT_EQ(r.result, ApplyResult::kFailed) << "apply " << k;
    EXPECT_THAT(r.outcomes[0].detail,
                HasSubstr("not restarted: its service echo.service active (running), and systemd "
                          "refuses to start echo.socket again while it runs"))
        << r.outcomes[0].detail;
    EXPECT_TRUE(services_.ReadUnit("echo.socket")->Running()) << "still listening, apply " << k;
    EXPECT_TRUE(store_.Owed().owed.contains("echo")) << "apply " << k;
  }
  services_.Kill("echo.service");  // it exits
  ApplyReport r = Run(Decl({socket("/run/b"), timer("hourly")}, 2));
  EXPECT_EQ(r.result, ApplyResult::kOk) << r.outcomes[0].detail;
  EXPECT_THAT(Outcomes(r), ElementsAre("restarted", "unchanged"));
  EXPECT_TRUE(services_.ReadUnit("echo.socket")->Running());
  EXPECT_FALSE(store_.Owed().owed.contains("echo"));
}

// A unit whose unit file was a `file` of the host's inside --unit-dir,
// dropped with it: its definition goes, so it is stopped too (left, it
// would run on with no definition and no record).
TEST_F(UnitsTest, AUnitDroppedWithTheFileThatDefinedItIsStopped) {
  auto apply = [&](const json& decl) { return ApplyWithUnitsInRoot(decl); };
  json file = {{"id", "web-unit"},
               {"kind", "file"},
               {"path", "/etc/systemd/system/web.service"},
               {"content", "[Service]\nExecStart=/bin/web\n"}};
  services_.AddUnit("web.service", {});
  ASSERT_EQ(apply(Decl({file, Service("web")})).result, ApplyResult::kOk);
  ASSERT_TRUE(services_.ReadUnit("web.service")->Running());
  ApplyReport r = apply(Decl(json::array(), 2));
  EXPECT_EQ(r.result, ApplyResult::kOk);
  EXPECT_FALSE(services_.ReadUnit("web.service")->Running()) << "stopped with its definition";
}

// The same, for a unit whose stop reads that file (an ExecStop=): the
// file waits for the stop, as a unit_text's does.
TEST_F(UnitsTest, AFileThatDefinesADroppedUnitItsStopReadsWaitsForTheStop) {
  auto apply = [&](const json& decl) { return ApplyWithUnitsInRoot(decl); };
  json file = {{"id", "web-unit"},
               {"kind", "file"},
               {"path", "/etc/systemd/system/web.service"},
               {"content", "[Service]\nExecStart=/bin/web\nExecStop=/bin/drain\n"}};
  fakes::FakeServiceManager::UnitScript drain;
  drain.exec_stop = 1;
  drain.stop_delay = 2s;
  services_.AddUnit("web.service", drain);
  ASSERT_EQ(apply(Decl({file, Service("web")})).result, ApplyResult::kOk);
  const std::string unit_file = dir_.Sub("root/etc/systemd/system/web.service");
  ApplyReport r = apply(Decl(json::array(), 2));
  EXPECT_EQ(r.result, ApplyResult::kOk);
  ASSERT_EQ(r.outcomes.size(), 2u);
  EXPECT_EQ(services_.StopsOf("web.service"), 1);
  EXPECT_TRUE(testing::Exists(unit_file));
  EXPECT_THAT(r.outcomes[1].detail,
              HasSubstr("unit file /etc/systemd/system/web.service goes once web.service no "
                        "longer runs"))
      << r.outcomes[0].detail;
  // Still stopping at the next apply: the file still waits (the service's
  // removal waits with it, or the file's alone would not know the unit).
  ApplyReport stopping = apply(Decl(json::array(), 2));
  EXPECT_TRUE(testing::Exists(unit_file));
  ASSERT_EQ(stopping.outcomes.size(), 2u);
  EXPECT_THAT(stopping.outcomes[0].detail, HasSubstr("web.service still stopping"));
  clock_.Advance(2s);
  ApplyReport stopped = apply(Decl(json::array(), 2));
  EXPECT_EQ(stopped.result, ApplyResult::kOk);
  EXPECT_FALSE(testing::Exists(unit_file));
  EXPECT_TRUE(apply(Decl(json::array(), 2)).outcomes.empty()) << "nothing left recorded";
}

// Two instances of a template that is a `file` of the host's, dropped with
// it, the second stopping longer: the file waits for both, not only for
// the first that claimed it.
TEST_F(UnitsTest, ATemplateFileWaitsForEveryInstanceThatStillStops) {
  auto apply = [&](const json& decl) { return ApplyWithUnitsInRoot(decl); };
  json tpl = {{"id", "a-tpl"},
              {"kind", "file"},
              {"path", "/etc/systemd/system/app@.service"},
              {"content", "[Service]\nExecStart=/bin/app %i\nExecStop=/bin/drain\n"}};
  fakes::FakeServiceManager::UnitScript quick;
  quick.exec_stop = 1;
  quick.stop_delay = 1s;
  fakes::FakeServiceManager::UnitScript slow = quick;
  slow.stop_delay = 3s;
  services_.AddUnit("app@a.service", quick);
  services_.AddUnit("app@b.service", slow);
  ASSERT_EQ(apply(Decl({tpl, Service("app-a", {{"unit", "app@a.service"}}),
                        Service("app-b", {{"unit", "app@b.service"}})}))
                .result,
            ApplyResult::kOk);
  const std::string tpl_file = dir_.Sub("root/etc/systemd/system/app@.service");
  ApplyReport r = apply(Decl(json::array(), 2));
  EXPECT_EQ(r.result, ApplyResult::kOk);
  EXPECT_TRUE(testing::Exists(tpl_file));
  for (const auto& o : r.outcomes) {
    if (o.id != "a-tpl") EXPECT_THAT(o.detail, HasSubstr("goes once")) << o.id;
  }
  clock_.Advance(1500ms);  // a stopped, b still stopping
  ApplyReport half = apply(Decl(json::array(), 2));
  EXPECT_TRUE(testing::Exists(tpl_file)) << "app@b.service still stops";
  clock_.Advance(2s);
  ApplyReport done = apply(Decl(json::array(), 2));
  EXPECT_EQ(done.result, ApplyResult::kOk);
  EXPECT_FALSE(testing::Exists(tpl_file));
  EXPECT_TRUE(apply(Decl(json::array(), 2)).outcomes.empty()) << "nothing left recorded";
}

// Review of issue 38: the operator's instance of a template that was a
// `file` of the host's, dropped with it, ran on undefined: only a file
// named exactly like the unit counted. Its template's file counts too,
// and an enabled unit is disabled while that file is still there to read.
TEST_F(UnitsTest, AnInstanceDroppedWithItsTemplateFileIsDisabledThenStopped) {
  auto apply = [&](const json& decl) { return ApplyWithUnitsInRoot(decl); };
  json tpl = {{"id", "a-tpl"},  // removed before "app": the disable must come first anyway
              {"kind", "file"},
              {"path", "/etc/systemd/system/app@.service"},
              {"content", "[Service]\nExecStart=/bin/app %i\n[Install]\nWantedBy=x\n"}};
  json inst = Service("app", {{"unit", "app@a.service"}, {"enabled", true}});
  services_.AddUnit("app@a.service", {});
  ASSERT_EQ(apply(Decl({tpl, inst})).result, ApplyResult::kOk);
  ASSERT_TRUE(services_.ReadUnit("app@a.service")->Running());
  ASSERT_EQ(services_.ReadUnit("app@a.service")->unit_file_state, "enabled");
  const std::string tpl_file = dir_.Sub("root/etc/systemd/system/app@.service");
  bool file_there_when_disabled = false;
  services_.on_set_enabled = [&](const std::string& unit, bool enabled) {
    if (unit == "app@a.service" && !enabled) file_there_when_disabled = testing::Exists(tpl_file);
  };
  ApplyReport r = apply(Decl(json::array(), 2));
  EXPECT_EQ(r.result, ApplyResult::kOk);
  EXPECT_FALSE(services_.ReadUnit("app@a.service")->Running()) << "stopped with its definition";
  EXPECT_EQ(services_.ReadUnit("app@a.service")->unit_file_state, "disabled");
  EXPECT_TRUE(file_there_when_disabled) << "disabled while systemd could still read its file";
  EXPECT_FALSE(testing::Exists(tpl_file));
}

// An instance dropped while its template, a `file` the host made, stays
// declared for the others: its unit file is the host's, so it is the
// host's to stop, as a unit_text's is. It was "left … (not the host's: no
// unit_text)" and ran on with no record of it.
TEST_F(UnitsTest, AnInstanceOfTheHostsTemplateDroppedAloneIsStopped) {
  auto apply = [&](const json& decl) { return ApplyWithUnitsInRoot(decl); };
  json tpl = {{"id", "a-tpl"},
              {"kind", "file"},
              {"path", "/etc/systemd/system/app@.service"},
              {"content", "[Service]\nExecStart=/bin/app %i\n[Install]\nWantedBy=x\n"}};
  json a = Service("app-a", {{"unit", "app@a.service"}});
  json b = Service("app-b", {{"unit", "app@b.service"}, {"enabled", true}});
  services_.AddUnit("app@a.service", {});
  services_.AddUnit("app@b.service", {});
  services_.SetFragmentPath("app@b.service", dir_.Sub("root/etc/systemd/system/app@.service"));
  ASSERT_EQ(apply(Decl({tpl, a, b})).result, ApplyResult::kOk);
  ApplyReport r = apply(Decl({tpl, a}, 2));
  EXPECT_EQ(r.result, ApplyResult::kOk);
  EXPECT_FALSE(services_.ReadUnit("app@b.service")->Running()) << r.outcomes.back().detail;
  EXPECT_EQ(services_.ReadUnit("app@b.service")->unit_file_state, "disabled");
  EXPECT_TRUE(services_.ReadUnit("app@a.service")->Running()) << "the other instance runs on";
  EXPECT_TRUE(testing::Exists(dir_.Sub("root/etc/systemd/system/app@.service")));
  // An operator's own template, never the host's: its instance is left.
  testing::WriteText(dir_.Sub("root/etc/systemd/system/ops@.service"), "[Service]\n");
  services_.AddUnit("ops@x.service", {});
  ASSERT_EQ(apply(Decl({tpl, a, Service("ops", {{"unit", "ops@x.service"}})}, 3)).result,
            ApplyResult::kOk);
  ApplyReport left = apply(Decl({tpl, a}, 4));
  EXPECT_TRUE(services_.ReadUnit("ops@x.service")->Running());
  EXPECT_THAT(left.outcomes.back().detail, HasSubstr("not the host's: no unit_text"));
  // An instance with a unit file of its own, the operator's: systemd loads
  // it rather than the host's template, so it is the operator's to keep.
  testing::WriteText(dir_.Sub("root/etc/systemd/system/app@c.service"), "[Service]\n");
  services_.AddUnit("app@c.service", {});
  services_.SetFragmentPath("app@c.service", dir_.Sub("root/etc/systemd/system/app@c.service"));
  ASSERT_EQ(apply(Decl({tpl, a, Service("app-c", {{"unit", "app@c.service"}})}, 5)).result,
            ApplyResult::kOk);
  ApplyReport own = apply(Decl({tpl, a}, 6));
  EXPECT_TRUE(services_.ReadUnit("app@c.service")->Running());
  EXPECT_THAT(own.outcomes.back().detail, HasSubstr("not the host's: no unit_text"));
}

// An instance with a unit file of its own is loaded from it, never from
// its template's file (only the template's drop-ins reach it): a change of
// the template restarted it for nothing, a new run of the same definition.
TEST_F(UnitsTest, AnInstanceWithItsOwnFileIsNotRestartedForItsTemplatesFile) {
  auto apply = [&](const json& decl) { return ApplyWithUnitsInRoot(decl); };
  auto decl = [](const std::string& tpl_flag, const std::string& drop_in, uint64_t generation) {
    json tpl = {{"id", "tpl"},
                {"kind", "file"},
                {"path", "/etc/systemd/system/app@.service"},
                {"content", "[Service]\nExecStart=/bin/app %i " + tpl_flag + "\n"}};
    json drop = {{"id", "tpl-env"},
                 {"kind", "file"},
                 {"path", "/etc/systemd/system/app@.service.d/env.conf"},
                 {"content", "[Service]\nEnvironment=X=" + drop_in + "\n"}};
    json own = Service(
        "app-c", {{"unit", "app@c.service"}, {"unit_text", "[Service]\nExecStart=/bin/app own\n"}});
    json plain = Service("app-a", {{"unit", "app@a.service"}});
    return Decl({tpl, drop, own, plain}, generation);
  };
  services_.AddUnit("app@a.service", {});
  services_.AddUnit("app@c.service", {});
  services_.SetFragmentPath("app@a.service", dir_.Sub("root/etc/systemd/system/app@.service"));
  services_.SetFragmentPath("app@c.service", dir_.Sub("root/etc/systemd/system/app@c.service"));
  ASSERT_EQ(apply(decl("--v1", "1", 1)).result, ApplyResult::kOk);
  int own_starts = services_.StartsOf("app@c.service");
  int plain_starts = services_.StartsOf("app@a.service");
  ApplyReport r = apply(decl("--v2", "1", 2));
  EXPECT_EQ(r.result, ApplyResult::kOk);
  EXPECT_EQ(services_.StartsOf("app@c.service"), own_starts)
      << "its own file is what it runs: " << r.outcomes[2].detail;
  EXPECT_EQ(services_.StartsOf("app@a.service"), plain_starts + 1) << "the template's instance";
  apply(decl("--v2", "2", 3));
  EXPECT_EQ(services_.StartsOf("app@c.service"), own_starts + 1)
      << "the template's drop-ins reach it";
}

// The operator's own file of an instance (no unit_text), deleted by hand
// and not yet reloaded: FragmentPath still names it, and the template the
// instance falls back to at this apply's reload is its definition.
TEST_F(UnitsTest, AnInstanceWhoseOwnFileMayBeGoneIsRestartedForItsTemplate) {
  auto apply = [&](const std::string& flag, uint64_t generation) {
    json tpl = {{"id", "tpl"},
                {"kind", "file"},
                {"path", "/etc/systemd/system/app@.service"},
                {"content", "[Service]\nExecStart=/bin/app %i " + flag + "\n"}};
    return ApplyWithUnitsInRoot(
        Decl({tpl, Service("app-d", {{"unit", "app@d.service"}})}, generation));
  };
  testing::WriteText(dir_.Sub("root/etc/systemd/system/app@d.service"), "[Service]\n");
  services_.AddUnit("app@d.service", {});
  services_.SetFragmentPath("app@d.service", dir_.Sub("root/etc/systemd/system/app@d.service"));
  ASSERT_EQ(apply("--v1", 1).result, ApplyResult::kOk);
  int starts = services_.StartsOf("app@d.service");
  apply("--v2", 2);
  EXPECT_EQ(services_.StartsOf("app@d.service"), starts) << "its own file is what it runs";
  std::filesystem::remove(dir_.Sub("root/etc/systemd/system/app@d.service"));
  services_.SetNeedDaemonReload("app@d.service");
  apply("--v3", 3);
  EXPECT_EQ(services_.StartsOf("app@d.service"), starts + 1) << "in doubt, restarted";
}

// ... and one that cannot be read is neither stopped nor forgotten.
TEST_F(UnitsTest, AnUnreadableInstanceOfTheHostsTemplateIsKept) {
  auto apply = [&](const json& decl) { return ApplyWithUnitsInRoot(decl); };
  json tpl = {{"id", "a-tpl"},
              {"kind", "file"},
              {"path", "/etc/systemd/system/app@.service"},
              {"content", "[Service]\nExecStart=/bin/app %i\n"}};
  services_.AddUnit("app@a.service", {});
  ASSERT_EQ(apply(Decl({tpl, Service("app-a", {{"unit", "app@a.service"}})})).result,
            ApplyResult::kOk);
  services_.failing_reads = 1;  // the dropped unit's read
  ApplyReport r = apply(Decl({tpl}, 2));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_THAT(r.outcomes.back().detail, HasSubstr("not stopped, nothing deleted"));
  EXPECT_TRUE(services_.ReadUnit("app@a.service")->Running());
  ApplyReport again = apply(Decl({tpl}, 2));
  EXPECT_EQ(again.result, ApplyResult::kOk) << again.outcomes.back().detail;
  EXPECT_FALSE(services_.ReadUnit("app@a.service")->Running()) << "kept, then stopped";
}

// A resource that moves to another unit under the same id left the old
// one running, its unit file, drop-in and [Install] links in place, and no
// record of any of it. The old unit is now removed as a dropped resource's
// would be, under ID~UNIT.
TEST_F(UnitsTest, AResourceMovedToAnotherUnitRemovesTheOldOne) {
  auto web = [](const std::string& unit) {
    return Service(
        "web",
        {{"unit", unit},
         {"unit_text", "[Service]\nExecStart=/bin/web\n[Install]\nWantedBy=multi-user.target\n"},
         {"drop_ins", {{"10-env.conf", "[Service]\nEnvironment=A=1\n"}}},
         {"enabled", true}});
  };
  services_.AddUnit("web.service", {});
  services_.AddUnit("web2.service", {});
  ASSERT_EQ(Run(Decl({web("web.service")})).result, ApplyResult::kOk);
  ASSERT_TRUE(services_.ReadUnit("web.service")->Running());
  ApplyReport r = Run(Decl({web("web2.service")}, 2));
  EXPECT_EQ(r.result, ApplyResult::kOk);
  ASSERT_EQ(r.outcomes.size(), 2u);
  EXPECT_EQ(r.outcomes[1].id, "web~web.service");
  EXPECT_THAT(r.outcomes[1].detail, HasSubstr("stopped web.service"));
  EXPECT_FALSE(services_.ReadUnit("web.service")->Running());
  EXPECT_EQ(services_.ReadUnit("web.service")->unit_file_state, "disabled");
  EXPECT_FALSE(testing::Exists(dir_.Sub("units/web.service")));
  EXPECT_FALSE(testing::Exists(dir_.Sub("units/web.service.d/10-env.conf")));
  EXPECT_TRUE(services_.ReadUnit("web2.service")->Running());
  EXPECT_TRUE(testing::Exists(dir_.Sub("units/web2.service")));
  ApplyReport again = Run(Decl({web("web2.service")}, 2));
  EXPECT_THAT(Outcomes(again), ElementsAre("unchanged")) << "nothing of the old unit recorded";
}

// Renamed to a unit whose file cannot be written: the old unit is kept,
// running and enabled, until the new one is in place — it was disabled,
// its stop and deletion alone held back.
TEST_F(UnitsTest, AnOldUnitIsKeptWholeWhileItsSuccessorFailsAtItsWrite) {
  auto web = [](const std::string& unit) {
    return Service(
        "web",
        {{"unit", unit},
         {"unit_text", "[Service]\nExecStart=/bin/web\n[Install]\nWantedBy=multi-user.target\n"},
         {"enabled", true}});
  };
  services_.AddUnit("web.service", {});
  services_.AddUnit("web2.service", {});
  ASSERT_EQ(Run(Decl({web("web.service")})).result, ApplyResult::kOk);
  ASSERT_EQ(services_.ReadUnit("web.service")->unit_file_state, "enabled");
  fakes::FaultyFileSystem faulty(*units_);
  faulty.FailWrites("/web2.service", ENOSPC);
  ReconcilerPorts ports = Ports();
  ports.units = &faulty;
  ApplyReport r = Reconciler(ports, Options()).Apply(Decl({web("web2.service")}, 2).dump());
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  ASSERT_EQ(r.outcomes.size(), 2u);
  EXPECT_EQ(core::FormatOutcomeLine(r.outcomes[1]),
            "failed web~web.service (service): kept: web failed, and what it left stays until "
            "it is in place");
  EXPECT_TRUE(services_.ReadUnit("web.service")->Running());
  EXPECT_EQ(services_.ReadUnit("web.service")->unit_file_state, "enabled") << "not disabled";
  EXPECT_TRUE(testing::Exists(dir_.Sub("units/web.service")));
}

// Renamed to a unit that failed at its write (its old unit's removal then
// pending, recorded as ID~UNIT), then moved: the old tree was forgotten.
TEST_F(UnitsTest, APathMovedWhileItsOldUnitsRemovalIsPendingLeavesNothing) {
  services_.AddUnit("app.service", {});
  services_.AddUnit("app2.service", {});
  std::string sha = Bundle("app.tar.gz", {{TarMember::kFile, "bin/serve", "#!/bin/sh\n", 0755}});
  auto app = [&](const std::string& unit, const std::string& path, int generation) {
    return Decl({{{"id", "app"},
                  {"kind", "process"},
                  {"path", path},
                  {"source", "app.tar.gz"},
                  {"sha256", sha},
                  {"unit", unit},
                  {"unit_text", "[Service]\nExecStart=" + path + "/bin/serve\n"}}},
                generation);
  };
  ASSERT_EQ(Run(app("app.service", "/opt/app", 1)).result, ApplyResult::kOk);
  fakes::FaultyFileSystem faulty(*units_);
  faulty.FailWrites("/app2.service", ENOSPC);
  ReconcilerPorts ports = Ports();
  ports.units = &faulty;
  ASSERT_EQ(Reconciler(ports, Options()).Apply(app("app2.service", "/opt/app", 2).dump()).result,
            ApplyResult::kFailed);
  ASSERT_TRUE(Record()["resources"].contains("app~app.service"));
  for (int k = 0; k < 3; ++k) Run(app("app2.service", "/opt/app2", 3));
  EXPECT_FALSE(testing::Exists(Root("/opt/app"))) << "the old tree goes";
  EXPECT_TRUE(testing::Exists(Root("/opt/app2/bin/serve")));
  EXPECT_THAT(Outcomes(Run(app("app2.service", "/opt/app2", 3))), ElementsAre("unchanged"));
}

// Its old unit file deleted already (by an apply killed after the delete,
// before its record): the removal said "deleted unit file web.service" of a
// file that was not there.
TEST_F(UnitsTest, AnOldUnitFileGoneAlreadyIsNotSaidDeleted) {
  auto web = [](const std::string& unit) {
    return Service("web", {{"unit", unit}, {"unit_text", "[Service]\nExecStart=/bin/web\n"}});
  };
  services_.AddUnit("web.service", {});
  services_.AddUnit("web2.service", {});
  ASSERT_EQ(Run(Decl({web("web.service")})).result, ApplyResult::kOk);
  ASSERT_EQ(::unlink(dir_.Sub("units/web.service").c_str()), 0);
  int reloads = services_.daemon_reloads();
  ApplyReport r = Run(Decl({web("web2.service")}, 2));
  EXPECT_EQ(r.result, ApplyResult::kOk);
  ASSERT_EQ(r.outcomes.size(), 2u);
  EXPECT_THAT(r.outcomes[1].detail, HasSubstr("unit file web.service already gone"));
  EXPECT_THAT(r.outcomes[1].detail, ::testing::Not(HasSubstr("deleted unit file")));
  EXPECT_GT(services_.daemon_reloads(), reloads) << "systemd is still told";
}

// The old unit of a moved resource whose stop reads its unit file keeps
// the file until it no longer runs, as a dropped one's does.
TEST_F(UnitsTest, AnOldUnitWhoseStopReadsItsFileKeepsItUntilStopped) {
  auto web = [](const std::string& unit) {
    return Service("web", {{"unit", unit}, {"unit_text", "[Service]\nExecStart=/bin/web\n"}});
  };
  fakes::FakeServiceManager::UnitScript drain;
  drain.exec_stop = 1;
  drain.stop_delay = 2s;
  services_.AddUnit("web.service", drain);
  services_.AddUnit("web2.service", {});
  ASSERT_EQ(Run(Decl({web("web.service")})).result, ApplyResult::kOk);
  ApplyReport r = Run(Decl({web("web2.service")}, 2));
  EXPECT_EQ(r.result, ApplyResult::kOk);
  ASSERT_EQ(r.outcomes.size(), 2u);
  EXPECT_EQ(r.outcomes[1].id, "web~web.service");
  EXPECT_THAT(r.outcomes[1].detail,
              HasSubstr("its unit file goes once web.service no longer runs"));
  EXPECT_TRUE(testing::Exists(dir_.Sub("units/web.service")));
  EXPECT_TRUE(services_.ReadUnit("web2.service")->Running());
  clock_.Advance(2s);
  ApplyReport stopped = Run(Decl({web("web2.service")}, 2));
  ASSERT_EQ(stopped.outcomes.size(), 2u) << "the removal kept in the record";
  EXPECT_THAT(stopped.outcomes[1].detail, HasSubstr("deleted unit file web.service"));
  EXPECT_FALSE(testing::Exists(dir_.Sub("units/web.service")));
  ApplyReport again = Run(Decl({web("web2.service")}, 2));
  EXPECT_THAT(Outcomes(again), ElementsAre("unchanged")) << "nothing of the old unit recorded";
}

// The old unit cannot be read when the resource moves: neither stopped nor
// forgotten. Not in the record under its own id until now, it is recorded
// so by the removal that fails, and the next apply removes it.
TEST_F(UnitsTest, AnOldUnitThatCannotBeReadIsKeptUntilItIsRemoved) {
  auto web = [](const std::string& unit) {
    return Service("web", {{"unit", unit}, {"unit_text", "[Service]\nExecStart=/bin/web\n"}});
  };
  services_.AddUnit("web.service", {});
  services_.AddUnit("web2.service", {});
  ASSERT_EQ(Run(Decl({web("web.service")})).result, ApplyResult::kOk);
  services_.unreadable.insert("web.service");
  ApplyReport r = Run(Decl({web("web2.service")}, 2));
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  ASSERT_EQ(r.outcomes.size(), 2u);
  EXPECT_EQ(r.outcomes[1].id, "web~web.service");
  EXPECT_THAT(r.outcomes[1].detail, HasSubstr("not stopped, nothing deleted"));
  EXPECT_TRUE(testing::Exists(dir_.Sub("units/web.service")));
  services_.unreadable.clear();
  ApplyReport again = Run(Decl({web("web2.service")}, 2));
  EXPECT_EQ(again.result, ApplyResult::kOk);
  ASSERT_EQ(again.outcomes.size(), 2u) << "the removal kept in the record";
  EXPECT_THAT(again.outcomes[1].detail, HasSubstr("stopped web.service"));
  EXPECT_FALSE(services_.ReadUnit("web.service")->Running());
  EXPECT_FALSE(testing::Exists(dir_.Sub("units/web.service")));
  EXPECT_THAT(Outcomes(Run(Decl({web("web2.service")}, 2))), ElementsAre("unchanged"));
}

// A refused push shows the recorded truth (recorded.cc): each unit held to
// its own declared state, as the record proof and the plan hold it. A
// unit declared stopped and found running read "as recorded" before.
TEST_F(UnitsTest, ARefusedPushShowsEachUnitAgainstItsDeclaredState) {
  services_.AddUnit("web.service", {});
  services_.AddUnit("idle.service", {});
  ASSERT_EQ(Run(Decl({Service("web"), Service("idle", {{"state", "stopped"}})})).result,
            ApplyResult::kOk);
  services_.Kill("web.service");
  services_.RestartedByOther("idle.service");
  ReconcilerOptions options = Options();
  options.recorded_on_refusal = true;
  ApplyReport r = Reconciler(Ports(), options).Apply("{not json");
  ASSERT_EQ(r.result, ApplyResult::kRefused);
  ASSERT_TRUE(r.recorded.has_value());
  ASSERT_EQ(r.recorded->resources.size(), 2u);
  const auto& rs = r.recorded->resources;
  const core::ResourceOutcome& web = rs[0].id == "web" ? rs[0] : rs[1];
  const core::ResourceOutcome& idle = rs[0].id == "web" ? rs[1] : rs[0];
  EXPECT_EQ(idle.outcome, core::Outcome::kFailed) << idle.detail;
  EXPECT_THAT(idle.detail, HasSubstr("idle.service active (running) now, not stopped as recorded"));
  EXPECT_EQ(web.outcome, core::Outcome::kFailed) << web.detail;
  EXPECT_THAT(web.detail, HasSubstr("now, not running as recorded"));
  EXPECT_FALSE(web.unit->up);
  // Put back as declared, both read as recorded.
  services_.RestartedByOther("web.service");
  services_.Kill("idle.service");
  ApplyReport again = Reconciler(Ports(), options).Apply("{not json");
  ASSERT_TRUE(again.recorded.has_value());
  for (const core::ResourceOutcome& o : again.recorded->resources) {
    EXPECT_NE(o.outcome, core::Outcome::kFailed) << o.id << ": " << o.detail;
    EXPECT_THAT(o.detail, HasSubstr("the declaration is refused: nothing changed"));
  }
}

// Issue 38 (9): what a restarted daemon shows before its first apply ends.
// A crash loop whose start is owed reads "active" for a moment in every
// run: it is never up, whenever the look falls. A healthy unit is.
TEST_F(UnitsTest, TheRecordAtStartNeverCallsACrashLoopUp) {
  services_.AddUnit("web.service", {});
  services_.AddUnit("loop.service", {.behavior = Behavior::kCrashLoop, .delay = 300ms});
  ASSERT_EQ(Run(Decl({Service("web"), Service("loop")})).result, ApplyResult::kFailed);
  Reconciler reconciler(Ports(), Options());
  int looked_active = 0;
  for (int i = 0; i < 20; ++i) {
    clock_.Advance(70ms);
    std::optional<core::RecordedState> r = reconciler.Recorded(RecordedFor::kStart);
    ASSERT_TRUE(r.has_value());
    ASSERT_EQ(r->resources.size(), 2u);
    for (const core::ResourceOutcome& o : r->resources) {
      ASSERT_TRUE(o.unit.has_value()) << o.id;
      if (o.id == "web") {
        EXPECT_TRUE(o.unit->up) << o.detail;
        EXPECT_THAT(o.detail, HasSubstr("the host has just started: its first apply is under way"));
      } else {
        looked_active += o.unit->active_state == "active";
        EXPECT_FALSE(o.unit->up) << "at " << i << ": " << o.unit->active_state;
        EXPECT_EQ(o.outcome, core::Outcome::kFailed) << o.detail;
        EXPECT_THAT(o.detail,
                    HasSubstr("(the host has just started: its first apply is under way)"));
      }
    }
  }
  EXPECT_GT(looked_active, 0) << "no look fell on a run: the test proves nothing";
}

// No record: nothing to show before the first apply.
TEST_F(UnitsTest, NoRecordNothingAtStart) {
  EXPECT_FALSE(Reconciler(Ports(), Options()).Recorded(RecordedFor::kStart).has_value());
}

// Review of issue 38: a disable systemd refused still let the dropped
// unit's drop-ins go (its unit file stayed): half a definition, recorded
// as nothing. Its files stay together until the disable goes through.
TEST_F(UnitsTest, ADroppedUnitWhoseDisableIsRefusedKeepsAllItsFiles) {
  services_.AddUnit("web.service", {});
  json web =
      Service("web", {{"unit_text", "[Service]\nExecStart=/bin/web\n[Install]\nWantedBy=x\n"},
                      {"enabled", true},
                      {"drop_ins", {{"10-env.conf", "[Service]\nEnvironment=A=1\n"}}}});
  ASSERT_EQ(Run(Decl({web})).result, ApplyResult::kOk);
  services_.refuse_unit_files = "DisableUnitFiles: Access denied";
  ApplyReport refused = Run(Decl(json::array(), 2));
  EXPECT_EQ(refused.result, ApplyResult::kFailed);
  EXPECT_TRUE(testing::Exists(dir_.Sub("units/web.service")));
  EXPECT_TRUE(testing::Exists(dir_.Sub("units/web.service.d/10-env.conf"))) << "kept with it";
  services_.refuse_unit_files.clear();
  ApplyReport done = Run(Decl(json::array(), 3));
  EXPECT_EQ(done.result, ApplyResult::kOk) << done.error;
  EXPECT_THAT(Outcomes(done), ElementsAre("removed"));
  EXPECT_FALSE(testing::Exists(dir_.Sub("units/web.service")));
  EXPECT_FALSE(testing::Exists(dir_.Sub("units/web.service.d/10-env.conf")));
  EXPECT_EQ(services_.ReadUnit("web.service")->unit_file_state, "disabled");
}

// Its stop went through, its disable did not: the removal fails and stays,
// and the record says the unit was stopped on purpose (a daemon started
// beside a refused push reads the record: "running" there called the
// stopped unit dead).
TEST_F(UnitsTest, AStopThatWentThroughIsRecordedWhateverElseFailed) {
  services_.AddUnit("web.service", {});
  json web = Service(
      "web",
      {{"unit_text", "[Service]\nExecStart=/bin/web\n[Install]\nWantedBy=x\n"}, {"enabled", true}});
  ASSERT_EQ(Run(Decl({web})).result, ApplyResult::kOk);
  ASSERT_EQ(Record()["resources"]["web"]["state"], "running");
  services_.refuse_unit_files = "DisableUnitFiles: Access denied";
  ApplyReport refused = Run(Decl(json::array(), 2));
  EXPECT_EQ(refused.result, ApplyResult::kFailed);
  EXPECT_FALSE(services_.ReadUnit("web.service")->Running());
  EXPECT_EQ(Record()["resources"]["web"]["state"], "stopped");
}

// What a removal that waits, or fails on its stop, did to the unit's
// links is said in its own apply and recorded: the final apply said
// "disabled" of links an earlier one had removed, and a later apply that
// declared the unit again called them "drifted ... on the machine".
TEST_F(UnitsTest, ARemovalThatWaitsOrFailsSaysAndRecordsItsDisable) {
  fakes::FakeServiceManager::UnitScript drain;
  drain.exec_stop = 1;
  drain.stop_delay = 2s;
  services_.AddUnit("web.service", drain);
  json web = Service(
      "web",
      {{"unit_text", "[Service]\nExecStart=/bin/web\n[Install]\nWantedBy=x\n"}, {"enabled", true}});
  ASSERT_EQ(Run(Decl({web})).result, ApplyResult::kOk);
  ApplyReport waits = Run(Decl(json::array(), 2));
  ASSERT_EQ(waits.outcomes.size(), 1u);
  EXPECT_THAT(
      waits.outcomes[0].detail,
      HasSubstr("stopped web.service (not waited on), disabled web.service; its unit file"));
  EXPECT_EQ(Record()["resources"]["web"]["enabled"], false);
  clock_.Advance(2s);
  ApplyReport done = Run(Decl(json::array(), 2));
  ASSERT_EQ(done.outcomes.size(), 1u);
  EXPECT_THAT(done.outcomes[0].detail, Not(HasSubstr("disabled"))) << "said once, when done";
  EXPECT_THAT(done.outcomes[0].detail, HasSubstr("deleted unit file web.service"));
  // A stop refused: the disable it came with is said beside the failure.
  ASSERT_EQ(Run(Decl({web}, 3)).result, ApplyResult::kOk);
  services_.refuse_stop = "org.freedesktop.systemd1.OnlyByDependency: Operation refused";
  ApplyReport refused = Run(Decl(json::array(), 4));
  ASSERT_EQ(refused.outcomes.size(), 1u);
  EXPECT_THAT(refused.outcomes[0].detail, HasSubstr("; disabled web.service"));
  services_.refuse_stop.clear();
  ApplyReport again = Run(Decl({web}, 5));
  ASSERT_EQ(again.outcomes.size(), 1u);
  EXPECT_THAT(again.outcomes[0].detail, Not(HasSubstr("drifted"))) << again.outcomes[0].detail;
  EXPECT_EQ(services_.ReadUnit("web.service")->unit_file_state, "enabled");
}

TEST(UnitFileOfTest, TheFileAUnitIsLoadedFrom) {
  EXPECT_TRUE(core::UnitFileOf("web.service", "web.service"));
  EXPECT_TRUE(core::UnitFileOf("app@.service", "app@a.service"));
  EXPECT_FALSE(core::UnitFileOf("app@.socket", "app@a.service"));
  EXPECT_FALSE(core::UnitFileOf("app@.service", "app.service"));
  EXPECT_FALSE(core::UnitFileOf("foo-.service", "foo-bar.service")) << "a drop-in prefix only";
  EXPECT_FALSE(core::UnitFileOf("service", "web.service"));
  EXPECT_FALSE(core::UnitFileOf("ap@.service", "app@a.service"));
}

TEST(PartOfDefinitionTest, WhatSystemdReadsForAUnit) {
  EXPECT_TRUE(core::PartOfDefinition("web.service", "web.service"));
  EXPECT_TRUE(core::PartOfDefinition("app@.service", "app@a.service"));
  EXPECT_TRUE(core::PartOfDefinition("service", "app@a.service")) << "service.d/";
  EXPECT_TRUE(core::PartOfDefinition("foo-.service", "foo-bar-baz.service"));
  EXPECT_TRUE(core::PartOfDefinition("foo-bar-.service", "foo-bar-baz.service"));
  EXPECT_FALSE(core::PartOfDefinition("app@.service", "app.service"));
  EXPECT_FALSE(core::PartOfDefinition("app@.socket", "app@a.service"));
  EXPECT_FALSE(core::PartOfDefinition("foo.service", "foo-bar.service"));
  EXPECT_FALSE(core::PartOfDefinition("web.service", "webx.service"));
  EXPECT_FALSE(core::PartOfDefinition("timer", "app@a.service"));
}

// Review of issue 15: a unit file moving from a `file` resource to a
// service's unit_text (and back) was deleted under its new owner: the
// removal ran after the write, and the unit went down.
TEST_F(UnitsTest, AUnitFileMovingBetweenAFileAndAUnitTextIsNeverDeleted) {
  auto apply = [&](const json& decl) { return ApplyWithUnitsInRoot(decl); };
  const std::string text = "[Service]\nExecStart=/bin/web\n";
  const std::string unit_file = dir_.Sub("root/etc/systemd/system/web.service");
  json as_file = {{"id", "web-unit"},
                  {"kind", "file"},
                  {"path", "/etc/systemd/system/web.service"},
                  {"content", text}};
  services_.AddUnit("web.service", {});
  ASSERT_EQ(apply(Decl({as_file, Service("web")})).result, ApplyResult::kOk);
  ApplyReport moved = apply(Decl({Service("web", {{"unit_text", text}})}, 2));
  EXPECT_EQ(moved.result, ApplyResult::kOk) << moved.error;
  EXPECT_TRUE(testing::Exists(unit_file)) << "moved to unit_text: kept";
  ApplyReport back = apply(Decl({as_file, Service("other.web")}, 3));
  EXPECT_TRUE(testing::Exists(unit_file)) << "moved back to a file: kept";
  for (const auto& o : back.outcomes) {
    if (o.id == "web") {
      EXPECT_THAT(o.detail, HasSubstr("declared by another resource now"));
    }
  }
}

TEST_F(UnitsTest, PlanActsOnNothing) {
  services_.AddUnit("p.service", {});
  ApplyReport r = Run(Decl({Service("p")}), /*dry_run=*/true);
  EXPECT_THAT(Outcomes(r), ElementsAre("started"));
  EXPECT_THAT(r.outcomes[0].detail, HasSubstr("would start"));
  EXPECT_TRUE(services_.calls().empty());
}

// Issue 16: `enabled` makes the [Install] links through systemd (the
// fake's EnableUnitFiles), one daemon-reload loads them, and the unit
// itself is not restarted for it.
TEST_F(UnitsTest, EnabledIsMadeThroughSystemdWithoutARestart) {
  services_.AddUnit("web.service", {Behavior::kHealthy, {}, /*running_initially=*/true});
  ASSERT_EQ(Run(Decl({Service("web")})).result, ApplyResult::kOk);
  int starts = services_.StartsOf("web.service");
  EXPECT_EQ(services_.enablements(), 0) << "enabled absent: left alone";

  json decl = Decl({Service("web", {{"enabled", true}})}, 2);
  ApplyReport first = Run(decl);
  ASSERT_EQ(first.result, ApplyResult::kOk) << first.error;
  EXPECT_THAT(Outcomes(first), ElementsAre("updated"));
  EXPECT_THAT(first.outcomes[0].detail, HasSubstr("enabled web.service (it starts at boot)"));
  EXPECT_EQ(services_.enablements(), 1);
  EXPECT_FALSE(services_.links_changed_unloaded()) << "no daemon-reload after the links changed";
  EXPECT_EQ(services_.StartsOf("web.service"), starts) << "enabling restarted the unit";

  for (bool from_record : {true, false}) {
    ApplyReport again = Run(decl, /*dry_run=*/false, from_record);
    EXPECT_THAT(Outcomes(again), ElementsAre("unchanged")) << from_record;
    EXPECT_EQ(again.from_record, from_record);
  }
  EXPECT_EQ(services_.enablements(), 1);

  // An operator's `systemctl disable`: put back, said as drift. The record
  // proof sees it too (it must not prove a no-op).
  services_.SetUnitFileState("web.service", "disabled");
  ApplyReport drifted = Run(decl);
  EXPECT_FALSE(drifted.from_record);
  EXPECT_THAT(Outcomes(drifted), ElementsAre("updated"));
  EXPECT_THAT(drifted.outcomes[0].detail,
              HasSubstr("drifted: web.service was disabled on the machine, put back; enabled "
                        "web.service"));
  EXPECT_EQ(services_.StartsOf("web.service"), starts);

  ApplyReport off = Run(Decl({Service("web", {{"enabled", false}})}, 3));
  EXPECT_THAT(off.outcomes[0].detail,
              HasSubstr("disabled web.service (it no longer starts at boot)"));
  EXPECT_THAT(Outcomes(Run(Decl({Service("web", {{"enabled", false}})}, 3))),
              ElementsAre("unchanged"));
}

// A unit that dies after its restart fails; links systemd refused to make
// in the same apply are said after that: before, a refused enable went
// unsaid beside the death.
TEST_F(UnitsTest, WhatBecameOfItsLinksIsSaidBesideAUnitsFailure) {
  services_.AddUnit("jail.service", {Behavior::kDiesAfter, 221ms, /*running_initially=*/true});
  json svc = Service("jail", {{"restart_on", {"jail.conf"}}});
  testing::WriteText(Root("/etc/jail.conf"), "good");
  ASSERT_EQ(Run(Decl({Conf("good"), svc})).result, ApplyResult::kOk);
  svc["enabled"] = true;
  services_.refuse_unit_files = "EnableUnitFiles: Access denied";
  ApplyReport refused = Run(Decl({Conf("bad"), svc}, 2));
  EXPECT_THAT(Outcomes(refused), ElementsAre("updated", "failed"));
  EXPECT_THAT(refused.outcomes[1].detail,
              HasSubstr("failed (Result=exit-code) 1.0 s after restart"));
  EXPECT_THAT(refused.outcomes[1].detail,
              HasSubstr("; cannot enable jail.service: EnableUnitFiles: Access denied"));

  // Links made are not said beside the failure: its words are held or
  // owed with it, and would be repeated by later applies.
  services_.refuse_unit_files.clear();
  ApplyReport made = Run(Decl({Conf("worse"), svc}, 3));
  EXPECT_THAT(Outcomes(made), ElementsAre("updated", "failed"));
  EXPECT_THAT(made.outcomes[1].detail, Not(HasSubstr("enable")));
}

TEST_F(UnitsTest, EnabledForAUnitWithoutInstallFailsAndPlanSaysWhatItWouldDo) {
  fakes::FakeServiceManager::UnitScript script{Behavior::kHealthy, {}, /*running_initially=*/true};
  script.unit_file_state = "static";
  services_.AddUnit("static.service", script);
  services_.AddUnit("web.service", {Behavior::kHealthy, {}, /*running_initially=*/true});
  json decl = Decl({Service("static", {{"enabled", true}}), Service("web", {{"enabled", true}})});
  ApplyReport plan = Run(decl, /*dry_run=*/true);
  EXPECT_THAT(Outcomes(plan), ElementsAre("failed", "updated"));
  EXPECT_THAT(plan.outcomes[1].detail, HasSubstr("would enable web.service"));
  EXPECT_EQ(services_.enablements(), 0) << "a plan enabled something";

  ApplyReport applied = Run(decl);
  EXPECT_THAT(Outcomes(applied), ElementsAre("failed", "updated"));
  EXPECT_EQ(applied.outcomes[0].detail,
            "static.service is static (no [Install] section): it cannot be enabled");
  // `enabled: false` of a static unit holds: there are no links.
  ApplyReport off =
      Run(Decl({Service("static", {{"enabled", false}}), Service("web", {{"enabled", true}})}, 2));
  EXPECT_THAT(Outcomes(off), ElementsAre("unchanged", "unchanged"));
}

// A unit_text without an [Install] section declared enabled: the plan read
// "would enable", exit 0, and the apply failed. Both fail now. Given an
// [Install] section, the next apply enables it: never enabled, it is no
// drift put back.
TEST_F(UnitsTest, AUnitTextWithoutInstallFailsToEnableInThePlanAsInTheApply) {
  services_.AddUnit("en.service", {});
  auto en = [](const std::string& install) {
    return Service("en",
                   {{"enabled", true}, {"unit_text", "[Service]\nExecStart=/bin/en\n" + install}});
  };
  const std::string words =
      "cannot enable en.service: its unit_text has no [Install] section with WantedBy=, "
      "RequiredBy=, UpheldBy= or Alias=: there is nothing to enable";
  ApplyReport plan = Run(Decl({en("")}), /*dry_run=*/true);
  ASSERT_THAT(Outcomes(plan), ElementsAre("failed"));
  EXPECT_EQ(plan.outcomes[0].detail, words);
  ApplyReport applied = Run(Decl({en("")}));
  ASSERT_THAT(Outcomes(applied), ElementsAre("failed"));
  EXPECT_EQ(applied.outcomes[0].detail, words);
  for (const char* install : {"[Install]\n", "[Install]\nAlso=other.service\n",
                              "[Install]\n[Unit]\nWantedBy=multi-user.target\n"}) {
    ApplyReport empty = Run(Decl({en(install)}), /*dry_run=*/true);
    EXPECT_EQ(empty.outcomes[0].detail, words) << install;
  }
  // An [Install] section the declaration gives elsewhere (a drop-in
  // declared as a file): systemd reads it, the plan does not guess.
  json dropin = {{"id", "en.install"},
                 {"kind", "file"},
                 {"path", "/units/en.service.d/install.conf"},
                 {"content", "[Install]\nWantedBy=multi-user.target\n"}};
  ApplyReport elsewhere = Run(Decl({en(""), dropin}), /*dry_run=*/true);
  EXPECT_NE(elsewhere.outcomes[0].outcome, core::Outcome::kFailed) << elsewhere.outcomes[0].detail;
  ApplyReport mended = Run(Decl({en("[Install]\nWantedBy=multi-user.target\n")}, 2));
  ASSERT_THAT(Outcomes(mended), ElementsAre("updated")) << mended.outcomes[0].detail;
  EXPECT_THAT(mended.outcomes[0].detail, HasSubstr("enabled en.service (it starts at boot)"));
  EXPECT_THAT(mended.outcomes[0].detail, ::testing::Not(HasSubstr("drifted")));
}

// A unit file written by this apply is not loaded yet: its state is
// unknown before the write, and it is enabled after it.
TEST_F(UnitsTest, ANewUnitTextIsEnabledBeforeItsFirstStart) {
  services_.AddUnit("new.service", {});
  ApplyReport r = Run(Decl({Service(
      "new", {{"enabled", true},
              {"unit_text",
               "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"}})}));
  ASSERT_EQ(r.result, ApplyResult::kOk) << r.error;
  EXPECT_THAT(r.outcomes[0].detail, HasSubstr("enabled new.service"));
  EXPECT_EQ(services_.daemon_reloads(), 1) << "one daemon-reload for the unit file and the links";
  EXPECT_FALSE(services_.links_changed_unloaded());
}

// Issue 16: drop_ins are the unit's definition: written to UNIT.d/, one
// daemon-reload, then a restart; unchanged after; drift put back; a
// dropped drop-in deleted (and the unit restarted without it).
TEST_F(UnitsTest, DropInsAreTheUnitsDefinition) {
  services_.AddUnit("web.service", {Behavior::kHealthy, {}, /*running_initially=*/true});
  std::string path = dir_.Sub("units/web.service.d/10-limits.conf");
  json drop_ins = {{"10-limits.conf", "[Service]\nLimitNOFILE=4096\n"}};
  json decl = Decl({Service("web", {{"drop_ins", drop_ins}})});
  ApplyReport first = Run(decl);
  ASSERT_EQ(first.result, ApplyResult::kOk) << first.error;
  EXPECT_THAT(Outcomes(first), ElementsAre("created"));
  EXPECT_THAT(first.outcomes[0].detail, HasSubstr("wrote drop-in web.service.d/10-limits.conf"));
  EXPECT_EQ(testing::ReadText(path), "[Service]\nLimitNOFILE=4096\n");
  EXPECT_EQ(services_.daemon_reloads(), 1);
  int starts = services_.StartsOf("web.service");
  EXPECT_EQ(starts, 1) << "the running unit was not restarted onto its drop-in";

  for (bool from_record : {true, false}) {
    ApplyReport again = Run(decl, /*dry_run=*/false, from_record);
    EXPECT_THAT(Outcomes(again), ElementsAre("unchanged")) << from_record;
    EXPECT_EQ(again.from_record, from_record);
  }
  EXPECT_EQ(services_.daemon_reloads(), 1);

  testing::WriteText(path, "[Service]\nLimitNOFILE=1\n");
  ApplyReport drifted = Run(decl);
  EXPECT_FALSE(drifted.from_record) << "the record proof missed an edited drop-in";
  EXPECT_THAT(drifted.outcomes[0].detail,
              HasSubstr("drifted: drop-in 10-limits.conf changed on the machine, put back"));
  EXPECT_EQ(testing::ReadText(path), "[Service]\nLimitNOFILE=4096\n");
  EXPECT_EQ(services_.StartsOf("web.service"), starts + 1);
  EXPECT_EQ(services_.daemon_reloads(), 2);

  drop_ins["20-env.conf"] = "[Service]\nEnvironment=A=1\n";
  drop_ins.erase("10-limits.conf");
  ApplyReport moved = Run(Decl({Service("web", {{"drop_ins", drop_ins}})}, 2));
  EXPECT_THAT(Outcomes(moved), ElementsAre("updated"));
  EXPECT_THAT(moved.outcomes[0].detail, HasSubstr("wrote drop-in web.service.d/20-env.conf"));
  EXPECT_THAT(moved.outcomes[0].detail, HasSubstr("deleted drop-in web.service.d/10-limits.conf"));
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_EQ(services_.daemon_reloads(), 3);

  // The resource dropped: its drop-ins go with it.
  ApplyReport gone = Run(Decl(json::array(), 3));
  EXPECT_THAT(gone.outcomes[0].detail, HasSubstr("deleted 1 drop-in"));
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("units/web.service.d/20-env.conf")));
}

// A resource renamed on the same unit keeps what the host wrote of it as
// the host's: its drop-ins too, not only its unit file. Before, the new id
// took them for the operator's, and a drop of the unit left them behind
// for any future unit of that name.
TEST_F(UnitsTest, ARenamedResourcesDropInsStayTheHosts) {
  services_.AddUnit("web.service", {});
  json drop_ins = {{"10-a.conf", "[Service]\nEnvironment=A=1\n"}};
  json unit_text = "[Service]\nExecStart=/bin/web\n";
  auto svc = [&](const std::string& id) {
    json s = Service("web", {{"unit_text", unit_text}, {"drop_ins", drop_ins}});
    s["id"] = id;
    return s;
  };
  ASSERT_EQ(Run(Decl({svc("svc")})).result, ApplyResult::kOk);
  ASSERT_EQ(Run(Decl({svc("web")}, 2)).result, ApplyResult::kOk);
  ApplyReport gone = Run(Decl(json::array(), 3));
  EXPECT_THAT(gone.outcomes[0].detail, Not(HasSubstr("there before the host wrote it")));
  EXPECT_FALSE(testing::Exists(dir_.Sub("units/web.service.d/10-a.conf")));
  EXPECT_FALSE(testing::Exists(dir_.Sub("units/web.service")));
}

// A drop-in someone changed after the host wrote it, then no longer
// declared: left, said, and forgotten.
TEST_F(UnitsTest, ADroppedDropInChangedByHandIsLeft) {
  services_.AddUnit("web.service", {Behavior::kHealthy, {}, /*running_initially=*/true});
  std::string path = dir_.Sub("units/web.service.d/10-a.conf");
  Run(Decl({Service("web", {{"drop_ins", {{"10-a.conf", "[Service]\n"}}}})}));
  testing::WriteText(path, "[Service]\n# mine now\n");
  ApplyReport r = Run(Decl({Service("web")}, 2));
  EXPECT_THAT(r.outcomes[0].detail,
              HasSubstr("left drop-in web.service.d/10-a.conf: changed since the host wrote it"));
  EXPECT_EQ(testing::ReadText(path), "[Service]\n# mine now\n");
  EXPECT_EQ(Record()["resources"]["web"].count("drop_ins"), 0u) << "not forgotten";
}

// Review: `enabled` on a process is recorded too, so the no-op proof
// checks it; an operator's disable is seen at the next apply.
TEST_F(UnitsTest, EnabledOnAProcessIsCheckedBetweenChanges) {
  std::string sha = Bundle("p.tar.gz", {{TarMember::kFile, "run", "#!/bin/sh\n", 0755}});
  services_.AddUnit("p.service", {Behavior::kHealthy, {}, /*running_initially=*/true});
  json decl = Decl({{{"id", "p"},
                     {"kind", "process"},
                     {"path", "/opt/p"},
                     {"source", "p.tar.gz"},
                     {"sha256", sha},
                     {"unit", "p.service"},
                     {"unit_text", "[Service]\nExecStart=/opt/p/run\n[Install]\nWantedBy=x\n"},
                     {"enabled", true}}});
  ASSERT_EQ(Run(decl).result, ApplyResult::kOk);
  EXPECT_EQ(Record()["resources"]["p"]["enabled"], true);
  EXPECT_THAT(Outcomes(Run(decl)), ElementsAre("unchanged"));
  services_.SetUnitFileState("p.service", "disabled");
  ApplyReport r = Run(decl);
  EXPECT_FALSE(r.from_record) << "the proof took a disabled process for unchanged";
  EXPECT_THAT(r.outcomes[0].detail, HasSubstr("was disabled on the machine, put back"));
}

// Review: a drop-in moving from a `file` resource into drop_ins is never
// deleted under its new owner; an operator's drop-in the host wrote over
// is left when no longer declared.
TEST_F(UnitsTest, DropInsMovingOwnersAndOperatorsOwnAreNotDeleted) {
  services_.AddUnit("web.service", {Behavior::kHealthy, {}, /*running_initially=*/true});
  std::string dir = dir_.Sub("root/etc/systemd/system/web.service.d");
  ApplyReport as_file =
      ApplyWithUnitsInRoot(Decl({Service("web"),
                                 {{"id", "limits"},
                                  {"kind", "file"},
                                  {"path", "/etc/systemd/system/web.service.d/10.conf"},
                                  {"content", "[Service]\n"}}}));
  ASSERT_EQ(as_file.result, ApplyResult::kOk) << as_file.error;
  ApplyReport moved =
      ApplyWithUnitsInRoot(Decl({Service("web", {{"drop_ins", {{"10.conf", "[Service]\n"}}}})}, 2));
  ASSERT_EQ(moved.result, ApplyResult::kOk) << moved.error;
  EXPECT_TRUE(std::filesystem::exists(dir + "/10.conf")) << "deleted under its new owner";

  testing::WriteText(dir + "/20-theirs.conf", "[Service]\n# theirs\n");
  ApplyWithUnitsInRoot(Decl(
      {Service("web",
               {{"drop_ins", {{"10.conf", "[Service]\n"}, {"20-theirs.conf", "[Service]\n"}}}})},
      3));
  ApplyReport dropped = ApplyWithUnitsInRoot(Decl({Service("web")}, 4));
  EXPECT_TRUE(std::filesystem::exists(dir + "/20-theirs.conf"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/10.conf"));
  EXPECT_THAT(
      dropped.outcomes[0].detail,
      HasSubstr("left drop-in web.service.d/20-theirs.conf: there before the host wrote it"));
}

}  // namespace
}  // namespace mesh::reconcile
