// The daemon's loop on a fake clock: applies at start and every interval,
// one apply for a burst of declaration changes, a SIGHUP or a SIGTERM that
// arrives during an apply, the watchdog petted on time, and a failed event
// source. Real reconciler on a temporary root (reconciler_fixture.h), fake
// event source and notifier: hours of intervals run in microseconds.
#include "host/daemon/daemon.h"

#include <gmock/gmock.h>

#include <atomic>
#include <map>
#include <mutex>
#include <new>
#include <thread>

#include "host/adapters/file_declaration.h"
#include "host/daemon/schedule.h"
#include "tests/fakes/fake_event_source.h"
#include "tests/fakes/fake_notifier.h"
#include "tests/host/reconcile/reconciler_fixture.h"

namespace mesh::daemon {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using Kind = ports::Event::Kind;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

class DaemonTest : public reconcile::ReconcilerTest {
 protected:
  void SetUp() override {
    ReconcilerTest::SetUp();
    Declare("one");
  }
  // The declaration file: one file resource with this content.
  void Declare(const std::string& content, uint64_t generation = 1) {
    testing::WriteText(
        dir_.Sub("declaration.json"),
        Decl({{{"id", "conf"}, {"kind", "file"}, {"path", "/etc/app.conf"}, {"content", content}}},
             generation)
            .dump());
  }
  DaemonOptions Options() {
    DaemonOptions options;
    options.declaration = dir_.Sub("declaration.json");
    options.open_declaration = [this]() -> core::Result<std::unique_ptr<ports::DeclarationSource>> {
      ++opened_;
      if (on_open_) on_open_(opened_);
      auto opened = adapters::FileDeclaration::Open(dir_.Sub("declaration.json"));
      if (!opened) return std::unexpected(opened.error());
      return std::move(*opened);
    };
    options.interval = minutes(5);
    options.debounce = milliseconds(200);
    return options;
  }
  int RunDaemon(const DaemonOptions& options, fakes::FakeNotifier& notifier) {
    reconcile::ReconcilerOptions ro = ReconcilerTest::Options();
    reconcile::Reconciler reconciler(Ports(), ro);
    Log log;
    Daemon daemon(options, reconciler, board_, metrics_, /*watch=*/nullptr, notifier, events_,
                  clock_, log);
    return daemon.Run();
  }
  // Each apply's STATUS= line, with when it was sent.
  std::vector<std::pair<std::chrono::nanoseconds, std::string>> Applies(
      fakes::FakeNotifier& notifier) {
    std::vector<std::pair<std::chrono::nanoseconds, std::string>> out;
    for (const auto& c : notifier.calls()) {
      if (c.what.starts_with("STATUS ")) out.emplace_back(c.at, c.what.substr(7));
    }
    return out;
  }
  static std::string Why(const std::string& status) {
    auto open = status.rfind('(');
    return status.substr(open + 1, status.find(',', open) - open - 1);
  }

  // Declares `resources` (JSON objects) as the declaration file.
  void DeclareAll(const std::vector<nlohmann::json>& resources, uint64_t generation) {
    testing::WriteText(dir_.Sub("declaration.json"), Decl(resources, generation).dump());
  }
  static nlohmann::json Service(const std::string& id, const nlohmann::json& extra = {}) {
    nlohmann::json r = {
        {"id", id}, {"kind", "service"}, {"unit", id + ".service"}, {"state", "running"}};
    if (extra.is_object()) r.update(extra);
    return r;
  }

  fakes::FakeEventSource events_{clock_};
  status::StatusBoard board_;
  metrics::HostMetrics metrics_{"test"};
  int opened_ = 0;
  std::function<void(int)> on_open_;
};

// The live watch's own systemd, on the watch's thread: what the test says
// of a unit (else active, running), read as often as the watch likes. Held
// still while frozen, as a watch waiting for a signal is.
class ScriptedWatch : public fakes::FakeServiceManager {
 public:
  explicit ScriptedWatch(fakes::FakeClock& clock) : FakeServiceManager(clock) {}
  void Say(const std::string& unit, core::UnitStatus status) {
    std::lock_guard lock(mu_);
    said_[unit] = std::move(status);
  }
  // Frozen: the watch's next wait for a change lasts until thawed (30 s at
  // most).
  void Freeze(bool frozen) {
    frozen_ = frozen;
    if (!frozen) {
      std::lock_guard lock(mu_);
      waits_.clear();
      thawed_ = true;
    }
  }
  // The timeouts of the waits begun since the last thaw.
  std::vector<std::chrono::nanoseconds> WaitsSinceThaw() {
    std::lock_guard lock(mu_);
    return waits_;
  }
  core::Result<std::vector<std::string>> WaitForUnitChanges(
      const std::vector<std::string>& units, std::chrono::nanoseconds timeout) override {
    {
      std::lock_guard lock(mu_);
      if (thawed_) waits_.push_back(timeout);
    }
    std::this_thread::sleep_for(milliseconds(2));
    parked_ = frozen_.load();
    for (int i = 0; i < 15000 && frozen_; ++i) std::this_thread::sleep_for(milliseconds(2));
    parked_ = false;
    return units;
  }
  // Frozen, and waiting: it reads nothing until thawed.
  bool parked() const { return parked_; }
  // The next `n` reads throw, as an allocation that fails at an apply's
  // peak does.
  void ThrowOnReads(int n) { throws_ = n; }
  int reads() {
    std::lock_guard lock(mu_);
    return reads_;
  }
  std::vector<core::Result<core::UnitStatus>> ReadUnits(
      const std::vector<std::string>& units) override {
    std::lock_guard lock(mu_);
    ++reads_;
    if (throws_ > 0 && throws_-- > 0) throw std::bad_alloc();
    std::vector<core::Result<core::UnitStatus>> out;
    for (const std::string& u : units) {
      auto it = said_.find(u);
      if (it != said_.end()) {
        out.emplace_back(it->second);
        continue;
      }
      core::UnitStatus running;
      running.load_state = "loaded";
      running.active_state = "active";
      running.sub_state = "running";
      running.invocation_id = "run-of-" + u;
      out.emplace_back(running);
    }
    return out;
  }

 private:
  std::mutex mu_;
  std::map<std::string, core::UnitStatus> said_;
  int reads_ = 0;
  std::vector<std::chrono::nanoseconds> waits_;
  bool thawed_ = false;
  std::atomic<bool> frozen_{false};
  std::atomic<bool> parked_{false};
  std::atomic<int> throws_{0};
};

// Tells the test what the board said of a unit as each apply's summary was
// sent (the summary goes out with the picture, before the watch may look
// again).
class BoardAtStatus : public fakes::FakeNotifier {
 public:
  BoardAtStatus(fakes::FakeClock& clock, status::StatusBoard& board, std::string unit)
      : FakeNotifier(clock), board_(board), unit_(std::move(unit)) {}
  void Status(const std::string& line) override {
    FakeNotifier::Status(line);
    auto snap = board_.Get();
    for (const core::ResourceOutcome& r : snap->resources) {
      if (r.declared_unit() == unit_) failing.push_back(status::Failing(r));
    }
  }
  std::vector<bool> failing;  // per apply

 private:
  status::StatusBoard& board_;
  std::string unit_;
};

class DaemonWatchTest : public DaemonTest {
 protected:
  // Applies generation 1, then on a SIGHUP generation 2 (`second`). While
  // the second apply asks systemd for `during` (its first job; empty: as it
  // opens its declaration, before it has read anything), the watch's
  // systemd says each unit of `said` is so, and the test waits until the
  // board shows every one of them failing or the watch has shown three
  // reads since: `seen` says which it showed while the apply ran. Then the
  // watch holds still until that apply is shown and counted ended;
  // systemd's answer to the apply's own looks stays what it was. Returns, per apply, whether the
  // board showed web failing as the apply's summary was sent.
  std::vector<bool> SayDuring(const std::vector<nlohmann::json>& second, const std::string& during,
                              const std::map<std::string, core::UnitStatus>& said,
                              std::map<std::string, bool>& seen, bool apply_sees_it = false) {
    events_.At(minutes(1), Kind::kReload, "SIGHUP");
    events_.At(minutes(2), Kind::kStop, "Terminated");
    auto say = [&] {
      for (const auto& [name, status] : said) watch_.Say(name, status);
      if (apply_sees_it) {
        for (const auto& [name, status] : said) services_.Kill(name);
      }
      const int reads = watch_.reads();
      auto all_seen = [&] {
        // Held: a range-for keeps no temporary of its range's expression
        // alive, and the watch may replace the snapshot meanwhile.
        std::shared_ptr<const status::Snapshot> snap = board_.Get();
        for (const core::ResourceOutcome& r : snap->resources) {
          if (said.contains(r.declared_unit()) && status::Failing(r))
            seen[r.declared_unit()] = true;
        }
        return seen.size() == said.size();
      };
      // Three reads since, each shown: the watch counts a read as it begins,
      // and shows it after, so the third is shown once a fourth began.
      for (int i = 0; i < 5000 && !all_seen() && watch_.reads() < reads + 4; ++i) {
        std::this_thread::sleep_for(milliseconds(1));
      }
      watch_.Freeze(true);
      for (int i = 0; i < 5000 && !watch_.parked(); ++i) {
        std::this_thread::sleep_for(milliseconds(1));
      }
    };
    on_open_ = [&](int n) {
      if (n != 2) return;
      DeclareAll(second, 2);
      if (during.empty()) say();
    };
    services_.on_enqueue = [&](const std::string& unit) {
      if (unit == during && opened_ == 2) say();
    };
    BoardAtStatus notifier(clock_, board_, "web.service");
    DaemonOptions options = Options();
    // Once the apply is shown and counted ended, the watch goes on, and
    // takes one more turn before the daemon stops.
    options.release_memory = [&] {
      if (opened_ != 2 || !watch_.parked()) return;
      watch_.Freeze(false);
      for (int i = 0; i < 5000 && watch_.WaitsSinceThaw().size() < 2; ++i) {
        std::this_thread::sleep_for(milliseconds(1));
      }
    };
    reconcile::Reconciler reconciler(Ports(), ReconcilerTest::Options());
    Log log;
    Daemon daemon(options, reconciler, board_, metrics_, &watch_, notifier, events_, clock_, log);
    EXPECT_EQ(daemon.Run(), 0);
    services_.on_enqueue = nullptr;
    return notifier.failing;
  }
  static core::UnitStatus Dead() {
    core::UnitStatus dead;
    dead.load_state = "loaded";
    dead.active_state = "failed";
    dead.sub_state = "failed";
    dead.result = "signal";
    dead.invocation_id = "dead";
    return dead;
  }

  fakes::FakeClock watch_clock_;
  ScriptedWatch watch_{watch_clock_};
};

// Issue: a daemon that died while an apply ran was not shown until the
// apply ended, and then not at all for an apply that took no second look:
// its report, from its look before the death, called the unit up. Here
// the apply only stops a dropped unit, not waited on: the watch shows the
// death while it runs, and the apply's look at web as it ends fails it.
TEST_F(DaemonWatchTest, ADeathSeenDuringAnApplyIsNotUndoneByItsReport) {
  services_.AddUnit("web.service", {});
  services_.AddUnit("old.service", {});
  nlohmann::json old = Service("old", {{"unit_text", "[Service]\nExecStart=/bin/sleep 1d\n"}});
  DeclareAll({Service("web"), old}, 1);
  std::map<std::string, bool> seen;
  std::vector<bool> failing = SayDuring({Service("web")}, "old.service", {{"web.service", Dead()}},
                                        seen, /*apply_sees_it=*/true);
  EXPECT_TRUE(seen["web.service"]) << "the watch follows web while the apply stops old";
  EXPECT_THAT(failing, ElementsAre(false, true));
}

// Before an apply has acted on any unit (it reads its declaration, the
// record, the machine; a large tree's observation takes minutes) the watch
// follows every unit: it was blind until the apply's plan was made.
TEST_F(DaemonWatchTest, ADeathBeforeAnApplyActsShowsWhileItRuns) {
  services_.AddUnit("web.service", {});
  DeclareAll({Service("web")}, 1);
  std::map<std::string, bool> seen;
  std::vector<bool> failing = SayDuring({Service("web")}, "", {{"web.service", Dead()}}, seen);
  EXPECT_TRUE(seen["web.service"]) << "shown while the apply opened its declaration";
  // The apply's own systemd says web runs, and its observation read web
  // after the watch did: its report shows that later look.
  EXPECT_THAT(failing, ElementsAre(false, false));
}

// Whatever a watch turn throws (an allocation at an apply's peak) is a
// look the watch did not take: said, and tried again, never the daemon's
// end (std::terminate on the watch's thread).
TEST_F(DaemonWatchTest, AWatchTurnThatThrowsIsSaidAndTriedAgain) {
  services_.AddUnit("web.service", {});
  DeclareAll({Service("web")}, 1);
  watch_.ThrowOnReads(2);
  std::map<std::string, bool> seen;
  ::testing::internal::CaptureStderr();
  SayDuring({Service("web")}, "", {{"web.service", Dead()}}, seen);
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(log, HasSubstr("the live unit watch failed: std::bad_alloc"));
  EXPECT_TRUE(seen["web.service"]) << "read again after the turns that threw";
}

// A unit with a job of systemd's queued while an apply runs is most likely
// moved by it (a restart carried to a unit that Requires= the one
// restarted): the watch leaves it to the apply, and follows the others.
TEST_F(DaemonWatchTest, AUnitWithAJobQueuedDuringAnApplyIsLeftToIt) {
  for (const char* u :
       {"web.service", "db.service", "app.service", "api.service", "jvm.service", "old.service"}) {
    services_.AddUnit(u, {});
  }
  nlohmann::json old = Service("old", {{"unit_text", "[Service]\nExecStart=/bin/sleep 1d\n"}});
  DeclareAll({Service("web"), Service("db"), Service("app"), Service("api"), Service("jvm"), old},
             1);
  core::UnitStatus stopped_with_it = Dead();
  stopped_with_it.active_state = "inactive";
  stopped_with_it.sub_state = "dead";
  stopped_with_it.result = "success";
  stopped_with_it.job_queued = true;
  // Killed, its own Restart= start queued behind a unit it is ordered
  // after (NRestarts counted it): dead all the same.
  core::UnitStatus killed_and_queued = stopped_with_it;
  killed_and_queued.result = "signal";
  killed_and_queued.n_restarts = 1;
  // Stopped with the unit the apply acts on, and exiting 143 on systemd's
  // SIGTERM (as Java does): failed, but its start is that job's.
  core::UnitStatus exited_on_the_stop = stopped_with_it;
  exited_on_the_stop.active_state = "failed";
  exited_on_the_stop.sub_state = "failed";
  exited_on_the_stop.result = "exit-code";
  // systemd 254 and later: waiting for its Restart=, that start queued.
  core::UnitStatus restart_queued = stopped_with_it;
  restart_queued.active_state = "activating";
  restart_queued.sub_state = "auto-restart-queued";
  std::map<std::string, bool> seen;
  std::vector<bool> failing =
      SayDuring({Service("web"), Service("db"), Service("app"), Service("api"), Service("jvm")},
                "old.service",
                {{"web.service", stopped_with_it},
                 {"db.service", Dead()},
                 {"app.service", killed_and_queued},
                 {"api.service", restart_queued},
                 {"jvm.service", exited_on_the_stop}},
                seen);
  EXPECT_TRUE(seen["db.service"]) << "db, dead with no job, is shown during the apply";
  EXPECT_TRUE(seen["app.service"]) << "app's run ended badly: a queued start hides nothing";
  EXPECT_TRUE(seen["api.service"]) << "dead, its Restart= start queued";
  EXPECT_FALSE(seen["web.service"]);
  EXPECT_FALSE(seen["jvm.service"]) << "exited non-zero on the stop its queued start follows";
  EXPECT_THAT(failing, ElementsAre(false, false));
}

// Right after an apply the watch reads at once, not after waiting for a
// signal: one it heard while the apply ended was dropped with that turn.
TEST_F(DaemonWatchTest, TheWatchReadsAtOnceWhenAnApplyEnds) {
  services_.AddUnit("web.service", {});
  services_.AddUnit("old.service", {});
  nlohmann::json old = Service("old", {{"unit_text", "[Service]\nExecStart=/bin/sleep 1d\n"}});
  DeclareAll({Service("web"), old}, 1);
  std::map<std::string, bool> seen;
  SayDuring({Service("web")}, "old.service", {{"web.service", Dead()}}, seen);
  std::vector<std::chrono::nanoseconds> after = watch_.WaitsSinceThaw();
  ASSERT_FALSE(after.empty());
  EXPECT_EQ(after.front(), std::chrono::nanoseconds(0)) << "the first wait once the apply is shown";
}

// The apply restarts the server and looks again at web after the watch
// did: its own look (web running) is the later one and stands.
TEST_F(DaemonWatchTest, TheApplysLaterLookStandsOverTheWatchs) {
  services_.AddUnit("web.service", {});
  services_.AddUnit("server.service", {});
  nlohmann::json conf = {
      {"id", "conf"}, {"kind", "file"}, {"path", "/etc/app.conf"}, {"content", "a"}};
  nlohmann::json server = Service("server", {{"restart_on", {"conf"}}});
  DeclareAll({conf, Service("web"), server}, 1);
  conf["content"] = "b";
  std::map<std::string, bool> seen;
  std::vector<bool> failing =
      SayDuring({conf, Service("web"), server}, "server.service", {{"web.service", Dead()}}, seen);
  EXPECT_TRUE(seen["web.service"]) << "the watch follows web while the apply restarts the server";
  EXPECT_THAT(failing, ElementsAre(false, false));
}

TEST_F(DaemonTest, AppliesAtStartThenEveryIntervalAfterTheLast) {
  fakes::FakeNotifier notifier(clock_);
  events_.At(minutes(16), Kind::kStop, "Terminated");
  EXPECT_EQ(RunDaemon(Options(), notifier), 0);
  auto applies = Applies(notifier);
  ASSERT_EQ(applies.size(), 4u);
  EXPECT_EQ(applies[0].first, minutes(0));
  EXPECT_EQ(Why(applies[0].second), "start");
  for (int k = 1; k < 4; ++k) {
    EXPECT_EQ(applies[k].first, minutes(5 * k)) << k;
    EXPECT_EQ(Why(applies[k].second), "interval") << k;
  }
  EXPECT_EQ(notifier.calls().back().what, "STOPPING");
  // It never waits past what is due next, nor more than a minute blind.
  for (auto w : events_.waits()) EXPECT_LE(w, Schedule::kMaxWait);
}

// Every apply is followed by handing freed memory back, after its report
// is published (which frees the last picture's outcomes).
TEST_F(DaemonTest, MemoryIsReleasedAfterEveryApply) {
  fakes::FakeNotifier notifier(clock_);
  events_.At(minutes(16), Kind::kStop, "Terminated");
  DaemonOptions options = Options();
  size_t released = 0;
  size_t published_before = 0;
  options.release_memory = [&] {
    ++released;
    published_before = Applies(notifier).size();
  };
  ASSERT_EQ(RunDaemon(options, notifier), 0);
  EXPECT_EQ(released, Applies(notifier).size());
  EXPECT_EQ(published_before, released) << "released before the apply was published";
}

// Started by systemd but unable to tell it anything, the daemon says why in
// its log: systemd itself would only see no READY=1.
// A machine the host never applied to has no generation in force: a
// refusal there said "generation 0 stays in force".
TEST_F(DaemonTest, ARefusalOnAMachineNeverAppliedToSaysNothingIsInForce) {
  testing::WriteText(dir_.Sub("declaration.json"), "{\"machine\": ");
  fakes::FakeNotifier notifier(clock_);
  events_.At(minutes(1), Kind::kStop, "Terminated");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(RunDaemon(Options(), notifier), 0);
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(log, HasSubstr("; nothing was ever applied here: the machine is left as it is\n"));
  EXPECT_THAT(log, Not(HasSubstr("generation 0")));
}

TEST_F(DaemonTest, ANotifierThatCannotReachSystemdIsLoggedAtStart) {
  fakes::FakeNotifier notifier(clock_);
  notifier.unavailable = "libsystemd.so.0 could not be loaded: no such file";
  events_.At(minutes(1), Kind::kStop, "Terminated");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(RunDaemon(Options(), notifier), 0);
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("cannot notify systemd (no READY=1, no watchdog): libsystemd.so.0 could "
                     "not be loaded: no such file\n"),
            std::string::npos)
      << log;
}

// The report is handed to the metrics and to /status's picture, which keeps
// its outcomes: both see every resource, whichever takes it first.
TEST_F(DaemonTest, EachApplyReachesTheMetricsAndTheStatus) {
  fakes::FakeNotifier notifier(clock_);
  events_.At(minutes(1), Kind::kStop, "Terminated");
  ASSERT_EQ(RunDaemon(Options(), notifier), 0);
  auto picture = board_.Get();
  ASSERT_EQ(picture->resources.size(), 1u);
  EXPECT_EQ(picture->resources[0].id, "conf");
  EXPECT_EQ(picture->resources[0].outcome, core::Outcome::kCreated);
  EXPECT_EQ(picture->counts.at("created"), 1);
  std::string text = metrics_.Serialize();
  EXPECT_THAT(text, HasSubstr("mesh_host_resources{kind=\"file\"} 1\n"));
  EXPECT_THAT(
      text, HasSubstr("mesh_host_resource_outcomes_total{kind=\"file\",outcome=\"created\"} 1\n"));
}

TEST_F(DaemonTest, ABurstOfChangesIsOneApplyAndTheIntervalCountsFromIt) {
  fakes::FakeNotifier notifier(clock_);
  // An atomic replace is several events; a link may write twice.
  events_.At(minutes(1), Kind::kDeclarationChanged);
  events_.At(minutes(1) + milliseconds(50), Kind::kDeclarationChanged);
  events_.At(minutes(1) + milliseconds(150), Kind::kDeclarationChanged);
  events_.At(minutes(6) + milliseconds(100), Kind::kStop, "Terminated");
  on_open_ = [this](int n) {
    if (n == 2) Declare("two", 2);
  };
  ASSERT_EQ(RunDaemon(Options(), notifier), 0);
  auto applies = Applies(notifier);
  ASSERT_EQ(applies.size(), 2u) << "not 4 (one per event), and no interval at 5 min";
  EXPECT_EQ(applies[1].first, minutes(1) + milliseconds(350)) << "200 ms after the last event";
  EXPECT_EQ(Why(applies[1].second), "declaration changed");
  EXPECT_EQ(testing::ReadText(Root("/etc/app.conf")), "two");
}

TEST_F(DaemonTest, ASighupDuringAnApplyIsOneMoreApplyAfterIt) {
  fakes::FakeNotifier notifier(clock_);
  int reloads = 0;
  DaemonOptions options = Options();
  options.on_sighup = [&] { ++reloads; };
  on_open_ = [&](int n) {
    if (n == 1) events_.Push(Kind::kReload, "SIGHUP");  // arrives while the first apply runs
  };
  events_.At(minutes(1), Kind::kStop, "Terminated");
  ASSERT_EQ(RunDaemon(options, notifier), 0);
  auto applies = Applies(notifier);
  ASSERT_EQ(applies.size(), 2u) << "neither lost nor run inside the first";
  EXPECT_EQ(Why(applies[1].second), "SIGHUP");
  EXPECT_EQ(applies[1].first, minutes(0)) << "at once, not at the next interval";
  EXPECT_EQ(reloads, 1);
}

TEST_F(DaemonTest, ASigtermDuringAnApplyLetsItFinishThenStops) {
  fakes::FakeNotifier notifier(clock_);
  on_open_ = [this](int n) {
    if (n == 2) {
      Declare("two", 2);
      events_.Push(Kind::kStop, "Terminated");  // arrives while the second apply runs
    }
  };
  ASSERT_EQ(RunDaemon(Options(), notifier), 0);
  EXPECT_EQ(opened_, 2) << "no apply after the stop";
  // The apply under way finished whole: the file written, the record saved.
  EXPECT_EQ(testing::ReadText(Root("/etc/app.conf")), "two");
  EXPECT_EQ(Record()["generation"], 2);
  auto calls = notifier.calls();
  ASSERT_GE(calls.size(), 2u);
  EXPECT_THAT(calls[calls.size() - 2].what, HasSubstr("generation 2: 1 resource(s), 1 changed"));
  EXPECT_EQ(calls.back().what, "STOPPING");
}

TEST_F(DaemonTest, AnApplyFrozenWithoutAWatchdogTurnsHealthzUnhealthy) {
  fakes::FakeNotifier notifier(clock_);  // no WatchdogSec=: nothing restarts the host
  DaemonOptions options = Options();
  options.stall_after = milliseconds(20);
  bool unhealthy = false;
  on_open_ = [&](int n) {
    if (n != 2) return;
    clock_.Advance(minutes(1));  // the second apply, frozen in one call for a minute
    for (int i = 0; i < 5000 && !unhealthy; ++i) {  // bounded: 5 s at most
      unhealthy = !status::Judge(*board_.Get()).healthy;
      std::this_thread::sleep_for(milliseconds(1));
    }
    events_.Push(Kind::kStop, "Terminated");
  };
  events_.At(minutes(1), Kind::kReload, "SIGHUP");
  ASSERT_EQ(RunDaemon(options, notifier), 0);
  EXPECT_TRUE(unhealthy) << "a frozen apply must not leave /healthz saying ok";
  EXPECT_EQ(notifier.Count("WATCHDOG"), 0);
}

TEST_F(DaemonTest, TheLoopPetsTheWatchdogEveryPeriod) {
  fakes::FakeNotifier notifier(clock_, seconds(10));
  events_.At(seconds(35), Kind::kStop, "Terminated");
  ASSERT_EQ(RunDaemon(Options(), notifier), 0);
  std::vector<std::chrono::nanoseconds> pets;
  for (const auto& c : notifier.calls()) {
    // At 0 the first apply's keepalive may pet too (its own thread).
    if (c.what == "WATCHDOG" && c.at > seconds(0)) pets.push_back(c.at);
  }
  EXPECT_THAT(pets, ElementsAre(seconds(10), seconds(20), seconds(30)));
}

TEST_F(DaemonTest, AFailedEventSourceStopsTheDaemonWithAnError) {
  fakes::FakeNotifier notifier(clock_);
  events_.At(minutes(2), Kind::kError, "poll: Bad file descriptor");
  EXPECT_EQ(RunDaemon(Options(), notifier), 1);
  EXPECT_EQ(notifier.calls().back().what, "STOPPING");
}

// Issue 38 (9): a restarted daemon answered with no resource at all until
// its first apply ended. What the record says is shown from before the
// first apply, not yet healthy, in words that say why.
TEST_F(DaemonTest, TheRecordIsShownBeforeTheFirstApply) {
  fakes::FakeNotifier notifier(clock_);
  events_.At(minutes(1), Kind::kStop, "Terminated");
  ASSERT_EQ(RunDaemon(Options(), notifier), 0);

  status::StatusBoard board;
  metrics::HostMetrics metrics{"test"};
  reconcile::Reconciler reconciler(Ports(), ReconcilerTest::Options());
  Log log;
  Daemon daemon(Options(), reconciler, board, metrics, /*watch=*/nullptr, notifier, events_, clock_,
                log);
  daemon.ShowRecorded();
  auto shown = board.Get();
  EXPECT_TRUE(shown->from_record);
  EXPECT_EQ(shown->generation, 1u);
  ASSERT_EQ(shown->resources.size(), 1u);
  EXPECT_THAT(shown->resources[0].detail,
              HasSubstr("as recorded at generation 1 (the host has just started"));
  EXPECT_FALSE(status::Judge(*shown).healthy) << "no reconcile has finished yet";
  EXPECT_THAT(metrics.Serialize(), HasSubstr("mesh_host_declaration_generation 1"));
}

// A refusal the daemon makes itself (the declaration cannot be opened)
// carried no recorded view, so the start's words ("its first apply is
// under way") stayed for as long as the file was missing.
TEST_F(DaemonTest, ARefusalOfItsOwnShowsTheRecordInTheRefusalsWords) {
  fakes::FakeNotifier notifier(clock_);
  events_.At(minutes(1), Kind::kStop, "Terminated");
  ASSERT_EQ(RunDaemon(Options(), notifier), 0);

  DaemonOptions options = Options();
  options.open_declaration = []() -> core::Result<std::unique_ptr<ports::DeclarationSource>> {
    return core::Fail("declaration /etc/mesh-host/declaration.json: No such file or directory");
  };
  reconcile::ReconcilerOptions ro = ReconcilerTest::Options();
  ro.recorded_on_refusal = true;  // as the daemon is wired
  reconcile::Reconciler reconciler(Ports(), ro);
  status::StatusBoard board;
  metrics::HostMetrics metrics{"test"};
  Log log;
  events_.At(minutes(2), Kind::kStop, "Terminated");
  Daemon daemon(options, reconciler, board, metrics, /*watch=*/nullptr, notifier, events_, clock_,
                log);
  EXPECT_EQ(daemon.Run(), 0);
  auto shown = board.Get();
  ASSERT_EQ(shown->resources.size(), 1u);
  EXPECT_THAT(shown->resources[0].detail, HasSubstr("the declaration is refused: nothing changed"));
  EXPECT_THAT(*shown->error, HasSubstr("No such file or directory"));
}

}  // namespace
}  // namespace mesh::daemon
