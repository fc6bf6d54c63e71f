// The sd-bus adapter against a real systemd (run by sdbus_adapter_test.sh
// inside the project's sandboxed systemd): what it reads of a unit, and
// that it keeps no job result but the host's own.
#include <gtest/gtest.h>
#include <signal.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "host/adapters/sdbus_service_manager.h"

namespace mesh::adapters {
namespace {

using namespace std::chrono_literals;

class SdbusAdapterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* dir = std::getenv("SDBOX_DIR");
    if (dir == nullptr || std::getenv("DBUS_SYSTEM_BUS_ADDRESS") == nullptr) {
      GTEST_SKIP() << "run by sdbus_adapter_test.sh inside the sandboxed systemd";
    }
    units_ = std::string(dir) + "/units/";
  }
  void Unit(const std::string& name, const std::string& text) {
    std::ofstream(units_ + name) << text;
  }
  static void Busctl(const std::string& args) {
    std::string cmd =
        "busctl call org.freedesktop.systemd1 /org/freedesktop/systemd1 "
        "org.freedesktop.systemd1.Manager " +
        args + " >/dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  std::string units_;
};

// The live watch with no systemd to ask: before, an empty list at once, as
// if nothing changed — the watch went quiet with no word and, called again
// at once, spun a core. Now it fails, saying why.
TEST_F(SdbusAdapterTest, TheWatchFailsWhenThereIsNoBus) {
  std::string saved = std::getenv("DBUS_SYSTEM_BUS_ADDRESS");
  setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=/nonexistent/bus", 1);
  SdbusServiceManager host;
  auto changed = host.WaitForUnitChanges({"x.service"}, 30s);
  setenv("DBUS_SYSTEM_BUS_ADDRESS", saved.c_str(), 1);
  ASSERT_FALSE(changed.has_value()) << "an empty list reads as 'nothing changed'";
  EXPECT_NE(changed.error().message.find("no systemd answers on the system bus"), std::string::npos)
      << changed.error().message;
  // With the bus back, a watch works again.
  Unit("w.service", "[Service]\nExecStart=/bin/sleep infinity\n");
  SdbusServiceManager again;
  ASSERT_TRUE(again.ReloadDaemon().has_value());
  EXPECT_TRUE(again.WaitForUnitChanges({"w.service"}, 100ms).has_value());
}

// A bus that answers, with no systemd on it: connecting works, everything
// after is refused. Each call says so; none returns an empty answer that
// reads as "nothing changed" or "queued".
TEST_F(SdbusAdapterTest, ABusWithoutSystemdIsRefusedEverywhereAndSaid) {
  const char* empty = std::getenv("EMPTY_BUS_ADDRESS");
  ASSERT_NE(empty, nullptr) << "sdbus_adapter_test.sh starts a bus with no systemd on it";
  std::string saved = std::getenv("DBUS_SYSTEM_BUS_ADDRESS");
  setenv("DBUS_SYSTEM_BUS_ADDRESS", empty, 1);
  SdbusServiceManager host;
  auto changed = host.WaitForUnitChanges({"x.service"}, 30s);
  auto reloaded = host.ReloadDaemon();
  auto enabled = host.SetUnitFileEnabled("x.service", true);
  auto read = host.ReadUnits({"x.service", "y.service"});
  auto queued = host.EnqueueAll({{"x.service", ports::JobKind::kRestart}});
  auto stop = host.Enqueue("x.service", ports::JobKind::kStop);
  auto done = host.WaitForJobs({"/org/freedesktop/systemd1/job/1"}, 100ms);
  setenv("DBUS_SYSTEM_BUS_ADDRESS", saved.c_str(), 1);

  ASSERT_FALSE(changed.has_value()) << "an empty list reads as 'nothing changed'";
  EXPECT_NE(changed.error().message.find("Subscribe"), std::string::npos)
      << changed.error().message;
  EXPECT_FALSE(reloaded.has_value());
  EXPECT_FALSE(enabled.has_value());
  ASSERT_EQ(read.size(), 2u);
  for (const auto& r : read) EXPECT_FALSE(r.has_value());
  ASSERT_EQ(queued.size(), 1u);
  EXPECT_FALSE(queued[0].has_value()) << "a job path no systemd gave";
  EXPECT_FALSE(stop.has_value());
  EXPECT_FALSE(done.has_value()) << "a wait on no systemd reads as jobs still pending";
  EXPECT_EQ(host.jobs_held(), 0u);
}

// Issue 14: the adapter kept every JobRemoved on the machine and erased
// only the host's own: the daemon grew without bound.
TEST_F(SdbusAdapterTest, JobsOfOthersAreNotKept) {
  Unit("other.service", "[Service]\nExecStart=/bin/sleep infinity\n");
  SdbusServiceManager host;
  ASSERT_TRUE(host.ReloadDaemon().has_value());
  for (int i = 0; i < 20; ++i) {
    Busctl("StartUnit ss other.service replace");
    Busctl("StopUnit ss other.service replace");
  }
  // The signals are read while the host waits on the bus for anything.
  (void)host.WaitForUnitChanges({"other.service"}, 500ms);
  (void)host.WaitForUnitChanges({"other.service"}, 200ms);
  EXPECT_EQ(host.jobs_held(), 0u);
}

TEST_F(SdbusAdapterTest, TheHostsOwnJobsAreWaitedForThenForgotten) {
  Unit("mine.service", "[Service]\nExecStart=/bin/sleep infinity\n");
  SdbusServiceManager host;
  ASSERT_TRUE(host.ReloadDaemon().has_value());
  auto queued = host.EnqueueAll({{"mine.service", ports::JobKind::kStart}});
  ASSERT_TRUE(queued[0].has_value()) << queued[0].error().message;
  auto done = host.WaitForJobs({*queued[0]}, 5s);
  ASSERT_TRUE(done.has_value()) << done.error().message;
  EXPECT_EQ((*done)[*queued[0]], "done");
  EXPECT_EQ(host.jobs_held(), 0u);
  // A stop is never waited on; its result is not kept either.
  ASSERT_TRUE(host.Enqueue("mine.service", ports::JobKind::kStop).has_value());
  (void)host.WaitForUnitChanges({"mine.service"}, 500ms);
  EXPECT_EQ(host.jobs_held(), 0u);
}

// Review of issue 38: each started unit was held (Unit.Ref) for the life
// of the connection, so a daemon pinned every unit it ever started. A stop
// lets it go; a start holds it again.
TEST_F(SdbusAdapterTest, AStartHoldsTheUnitAndAStopLetsItGo) {
  Unit("held.service", "[Service]\nExecStart=/bin/sleep infinity\n");
  SdbusServiceManager host;
  ASSERT_TRUE(host.ReloadDaemon().has_value());
  auto refs = [] {
    std::string out;
    FILE* p = popen(
        "busctl get-property org.freedesktop.systemd1 /org/freedesktop/systemd1/unit/"
        "held_2eservice org.freedesktop.systemd1.Unit Refs 2>&1",
        "r");
    char buf[512];
    while (p != nullptr && fgets(buf, sizeof buf, p) != nullptr) out += buf;
    if (p != nullptr) pclose(p);
    return out;
  };
  auto started = host.EnqueueAll({{"held.service", ports::JobKind::kStart}});
  ASSERT_TRUE(started[0].has_value()) << started[0].error().message;
  ASSERT_TRUE(host.WaitForJobs({*started[0]}, 5s).has_value());
  EXPECT_EQ(refs().rfind("as 1 ", 0), 0u) << refs();
  ASSERT_TRUE(host.Enqueue("held.service", ports::JobKind::kStop).has_value());
  EXPECT_EQ(refs(), "as 0\n") << "the stop let it go";
  auto again = host.EnqueueAll({{"held.service", ports::JobKind::kStart}});
  ASSERT_TRUE(again[0].has_value()) << again[0].error().message;
  ASSERT_TRUE(host.WaitForJobs({*again[0]}, 5s).has_value());
  EXPECT_EQ(refs().rfind("as 1 ", 0), 0u) << "held again: " << refs();
  ASSERT_TRUE(host.Enqueue("held.service", ports::JobKind::kStop).has_value());
}

// A dropped unit's failure is forgotten; one systemd no longer holds is
// forgotten already, which is no error.
TEST_F(SdbusAdapterTest, AFailedUnitIsResetAndAnUnknownOneIsNoError) {
  Unit("fails.service", "[Service]\nExecStart=/bin/false\n");
  SdbusServiceManager host;
  ASSERT_TRUE(host.ReloadDaemon().has_value());
  auto started = host.EnqueueAll({{"fails.service", ports::JobKind::kStart}});
  ASSERT_TRUE(started[0].has_value()) << started[0].error().message;
  (void)host.WaitForJobs({*started[0]}, 5s);
  auto state = [&] { return host.ReadUnits({"fails.service"})[0]->active_state; };
  for (int i = 0; i < 100 && state() != "failed"; ++i) std::this_thread::sleep_for(20ms);
  ASSERT_EQ(state(), "failed");
  auto reset = host.ResetFailed("fails.service");
  ASSERT_TRUE(reset.has_value()) << reset.error().message;
  EXPECT_EQ(state(), "inactive");
  auto unknown = host.ResetFailed("never-loaded.service");
  EXPECT_TRUE(unknown.has_value()) << unknown.error().message;
}

TEST_F(SdbusAdapterTest, ReadsWhatTheVerdictsNeed) {
  Unit("t.service",
       "[Service]\nExecStart=/bin/sleep infinity\nTimeoutStopSec=7\n"
       "ExecStop=/bin/true\nExecStop=/bin/true\nExecStop=/bin/true\nExecStopPost=/bin/true\n");
  SdbusServiceManager host;
  ASSERT_TRUE(host.ReloadDaemon().has_value());
  auto s = host.ReadUnits({"t.service"})[0];
  ASSERT_TRUE(s.has_value()) << s.error().message;
  EXPECT_EQ(s->timeout_stop, 7s);
  EXPECT_EQ(s->exec_stop, 3u) << "each gets TimeoutStopSec= of its own";
  EXPECT_EQ(s->exec_stop_post, 1u);
  EXPECT_FALSE(s->need_daemon_reload);
  // Running, so systemd keeps it loaded (an idle unit is unloaded and read
  // afresh: it never needs a reload).
  Busctl("StartUnit ss t.service replace");
  std::this_thread::sleep_for(1100ms);  // a new mtime, by the second
  Unit("t.service", "[Service]\nExecStart=/bin/sleep 1000\nTimeoutStopSec=7\n");
  EXPECT_TRUE(host.ReadUnits({"t.service"})[0]->need_daemon_reload);
  ASSERT_TRUE(host.ReloadDaemon().has_value());
  EXPECT_FALSE(host.ReadUnits({"t.service"})[0]->need_daemon_reload);
}

// Each of the service's own properties the verdicts read (asked for one by
// one, not with the interface's GetAll), beside the unit's.
TEST_F(SdbusAdapterTest, ReadsTheServicesOwnProperties) {
  Unit("ran.service", "[Service]\nType=oneshot\nExecStart=/bin/false\n");
  Unit("loops.service",
       "[Unit]\nStartLimitIntervalSec=0\n[Service]\nExecStart=/bin/false\n"
       "Restart=always\nRestartSec=50ms\n");
  SdbusServiceManager host;
  ASSERT_TRUE(host.ReloadDaemon().has_value());
  auto queued = host.EnqueueAll(
      {{"ran.service", ports::JobKind::kStart}, {"loops.service", ports::JobKind::kStart}});
  ASSERT_TRUE(queued[0].has_value()) << queued[0].error().message;
  ASSERT_TRUE(queued[1].has_value()) << queued[1].error().message;
  (void)host.WaitForJobs({*queued[0], *queued[1]}, 5s);
  std::vector<core::Result<core::UnitStatus>> seen;
  for (int i = 0; i < 100; ++i) {  // systemd restarts it every 50 ms
    seen = host.ReadUnits({"ran.service", "loops.service", "absent.service"});
    if (seen[1].has_value() && seen[1]->n_restarts >= 2) break;
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(seen[0].has_value()) << seen[0].error().message;
  EXPECT_EQ(seen[0]->type, "oneshot");
  EXPECT_EQ(seen[0]->result, "exit-code");
  EXPECT_EQ(seen[0]->active_state, "failed");
  EXPECT_EQ(seen[0]->timeout_stop, 90s) << "systemd's default";
  EXPECT_EQ(seen[0]->exec_stop, 0u);
  ASSERT_TRUE(seen[1].has_value()) << seen[1].error().message;
  EXPECT_EQ(seen[1]->type, "simple");
  EXPECT_GE(seen[1]->n_restarts, 2u);
  // A unit systemd does not know is read, not refused: its service part
  // is not asked for.
  ASSERT_TRUE(seen[2].has_value()) << seen[2].error().message;
  EXPECT_EQ(seen[2]->load_state, "not-found");
  EXPECT_EQ(seen[2]->type, "");
  Busctl("StopUnit ss loops.service replace");
}

// More calls than dbus-daemon lets one connection await at once (128 on
// the system bus, then it refuses each further call with LimitsExceeded):
// every start is queued and every unit read.
TEST_F(SdbusAdapterTest, ManyUnitsAtOnce) {
  constexpr int kUnits = 150;
  std::vector<std::pair<std::string, ports::JobKind>> starts, stops;
  std::vector<std::string> names;
  for (int i = 0; i < kUnits; ++i) {
    names.push_back("many" + std::to_string(i) + ".service");
    Unit(names.back(), "[Service]\nExecStart=/bin/sleep infinity\n");
    starts.emplace_back(names.back(), ports::JobKind::kStart);
    stops.emplace_back(names.back(), ports::JobKind::kStop);
  }
  SdbusServiceManager host;
  ASSERT_TRUE(host.ReloadDaemon().has_value());
  auto queued = host.EnqueueAll(starts);
  std::vector<std::string> jobs;
  for (int i = 0; i < kUnits; ++i) {
    ASSERT_TRUE(queued[i].has_value()) << names[i] << ": " << queued[i].error().message;
    jobs.push_back(*queued[i]);
  }
  auto done = host.WaitForJobs(jobs, 30s);
  ASSERT_TRUE(done.has_value()) << done.error().message;
  EXPECT_EQ(done->size(), jobs.size());
  auto seen = host.ReadUnits(names);
  for (int i = 0; i < kUnits; ++i) {
    ASSERT_TRUE(seen[i].has_value()) << names[i] << ": " << seen[i].error().message;
    EXPECT_EQ(seen[i]->active_state, "active") << names[i];
    EXPECT_EQ(seen[i]->type, "simple") << names[i];
  }
  for (const auto& stopped : host.EnqueueAll(stops)) {
    EXPECT_TRUE(stopped.has_value()) << stopped.error().message;
  }
}

// The name org.freedesktop.systemd1 on a bus, taken by the test: each
// method call sent to it is handed to `answer` on a thread of the peer's
// own, until the peer is destroyed or told to stop reading.
class SystemdPeer {
 public:
  using Answer = std::function<void(sd_bus_message* call)>;
  SystemdPeer(const char* address, Answer answer) : answer_(std::move(answer)) {
    ok_ = sd_bus_new(&bus_) >= 0 && sd_bus_set_address(bus_, address) >= 0 &&
          sd_bus_set_bus_client(bus_, 1) >= 0 && sd_bus_start(bus_) >= 0 &&
          sd_bus_request_name(bus_, "org.freedesktop.systemd1", 0) >= 0 &&
          sd_bus_add_filter(bus_, nullptr, Filter, this) >= 0;
    if (ok_) thread_ = std::thread([this] { Serve(); });
  }
  ~SystemdPeer() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    sd_bus_close_unref(bus_);
  }
  SystemdPeer(const SystemdPeer&) = delete;
  SystemdPeer& operator=(const SystemdPeer&) = delete;
  bool ok() const { return ok_; }
  sd_bus* bus() { return bus_; }
  // Reads nothing more (its bus is gone).
  void StopReading() { reading_ = false; }

 private:
  static int Filter(sd_bus_message* m, void* userdata, sd_bus_error*) {
    static_cast<SystemdPeer*>(userdata)->answer_(m);
    return 1;  // handled: sd-bus answers nothing on its own either
  }
  void Serve() {
    while (!stop_) {
      while (reading_ && sd_bus_process(bus_, nullptr) > 0) {
      }
      if (!reading_) {
        std::this_thread::sleep_for(50ms);
        continue;
      }
      sd_bus_wait(bus_, 50'000);  // µs: stop_ is seen within 50 ms
    }
  }
  Answer answer_;
  sd_bus* bus_ = nullptr;
  bool ok_ = false;
  std::atomic<bool> reading_{true};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A stand-in for systemd on the bus with no systemd (EMPTY_BUS_ADDRESS).
// Silent, it answers Subscribe and nothing else; old, it also answers a
// look as a systemd older than 235 would, which has no NRestarts.
class StandInSystemd {
 public:
  enum class Kind { kSilent, kOld };
  StandInSystemd(const char* address, Kind kind)
      : kind_(kind), peer_(address, [this](sd_bus_message* m) { Answer(m); }) {}
  bool ok() const { return peer_.ok(); }
  int calls_left_unanswered() const { return unanswered_; }

 private:
  void Answer(sd_bus_message* m) {
    if (sd_bus_message_is_method_call(m, nullptr, "Subscribe") > 0) {
      sd_bus_reply_method_return(m, "");
    } else if (kind_ == Kind::kOld && sd_bus_message_is_method_call(m, nullptr, "GetAll") > 0) {
      sd_bus_reply_method_return(m, "a{sv}", 3, "LoadState", "s", "loaded", "ActiveState", "s",
                                 "active", "SubState", "s", "running");
    } else if (kind_ == Kind::kOld && sd_bus_message_is_method_call(m, nullptr, "Get") > 0) {
      const char* iface = nullptr;
      const char* property = nullptr;
      sd_bus_message_read(m, "ss", &iface, &property);
      std::string p = property != nullptr ? property : "";
      if (p == "TimeoutStopUSec") {
        sd_bus_reply_method_return(m, "v", "t", uint64_t{5'000'000});
      } else if (p == "Type" || p == "Result") {
        sd_bus_reply_method_return(m, "v", "s", p == "Type" ? "notify" : "success");
      } else {
        sd_bus_reply_method_errorf(m, "org.freedesktop.DBus.Error.UnknownProperty",
                                   "Unknown property %s", p.c_str());
      }
    } else if (sd_bus_message_is_method_call(m, nullptr, nullptr) > 0) {
      ++unanswered_;
    }
  }
  Kind kind_;
  std::atomic<int> unanswered_{0};
  SystemdPeer peer_;  // last: it answers with the members above
};

// A systemd that stops answering: the calls sent wait out their timeout
// (10 s), and the rest of the batch is not sent. dbus-daemon never times a
// call out, so sending the rest as each timed out would pile up calls it
// refuses, and queue jobs blind.
TEST_F(SdbusAdapterTest, NothingMoreIsSentToASystemdThatStoppedAnswering) {
  const char* empty = std::getenv("EMPTY_BUS_ADDRESS");
  ASSERT_NE(empty, nullptr) << "sdbus_adapter_test.sh starts a bus with no systemd on it";
  StandInSystemd silent(empty, StandInSystemd::Kind::kSilent);
  ASSERT_TRUE(silent.ok());
  std::vector<std::string> names;
  names.reserve(100);
  for (int i = 0; i < 100; ++i) names.push_back("s" + std::to_string(i) + ".service");
  std::string saved = std::getenv("DBUS_SYSTEM_BUS_ADDRESS");
  setenv("DBUS_SYSTEM_BUS_ADDRESS", empty, 1);
  std::vector<core::Result<core::UnitStatus>> seen;
  {
    SdbusServiceManager host;
    seen = host.ReadUnits(names);
  }
  setenv("DBUS_SYSTEM_BUS_ADDRESS", saved.c_str(), 1);
  ASSERT_EQ(seen.size(), names.size());
  for (const auto& s : seen) EXPECT_FALSE(s.has_value()) << "an answer no systemd gave";
  EXPECT_EQ(silent.calls_left_unanswered(), 64);
  EXPECT_NE(seen.back().error().message.find("not sent: systemd left a call unanswered"),
            std::string::npos)
      << seen.back().error().message;
}

// A property a systemd does not have (NRestarts came with 235) stays unset,
// as the interface's GetAll left it, and the rest of the unit is read.
TEST_F(SdbusAdapterTest, APropertyAnOlderSystemdLacksStaysUnset) {
  const char* empty = std::getenv("EMPTY_BUS_ADDRESS");
  ASSERT_NE(empty, nullptr) << "sdbus_adapter_test.sh starts a bus with no systemd on it";
  StandInSystemd old(empty, StandInSystemd::Kind::kOld);
  ASSERT_TRUE(old.ok());
  std::string saved = std::getenv("DBUS_SYSTEM_BUS_ADDRESS");
  setenv("DBUS_SYSTEM_BUS_ADDRESS", empty, 1);
  core::Result<core::UnitStatus> seen;
  {
    SdbusServiceManager host;
    seen = host.ReadUnits({"old.service"})[0];
  }
  setenv("DBUS_SYSTEM_BUS_ADDRESS", saved.c_str(), 1);
  ASSERT_TRUE(seen.has_value()) << seen.error().message;
  EXPECT_EQ(seen->active_state, "active");
  EXPECT_EQ(seen->type, "notify");
  EXPECT_EQ(seen->result, "success");
  EXPECT_EQ(seen->timeout_stop, 5s);
  EXPECT_EQ(seen->n_restarts, 0u);
  EXPECT_EQ(old.calls_left_unanswered(), 0);
}

// DBUS_SYSTEM_BUS_ADDRESS is `address` for the guard's life, whichever way
// the test leaves.
class BusAddress {
 public:
  explicit BusAddress(const std::string& address) : saved_(std::getenv("DBUS_SYSTEM_BUS_ADDRESS")) {
    setenv("DBUS_SYSTEM_BUS_ADDRESS", address.c_str(), 1);
  }
  ~BusAddress() { setenv("DBUS_SYSTEM_BUS_ADDRESS", saved_.c_str(), 1); }
  BusAddress(const BusAddress&) = delete;
  BusAddress& operator=(const BusAddress&) = delete;

 private:
  std::string saved_;
};

// A bus of the test's own (dbus-daemon at a short path of /tmp), which a
// stand-in for systemd can take down mid-batch, and which can be brought
// back at the same address.
class OwnBus {
 public:
  OwnBus() {
    // Under the script's directory (OWN_BUS_DIR), whose cleanup kills a
    // daemon a crashed test left (its pid file) and removes the rest.
    const char* base = std::getenv("OWN_BUS_DIR");
    std::string pattern = std::string(base != nullptr ? base : "/tmp") + "/own.XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) return;
    dir_ = pattern;
    address_ = "unix:path=" + dir_ + "/bus";
    std::ofstream(dir_ + "/bus.conf")
        << "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\"\n"
           " \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n"
           "<busconfig><type>session</type><listen>"
        << address_
        << "</listen><auth>EXTERNAL</auth><policy context=\"default\">"
           "<allow send_destination=\"*\" eavesdrop=\"true\"/><allow eavesdrop=\"true\"/>"
           "<allow own=\"*\"/></policy></busconfig>\n";
    Start();
  }
  ~OwnBus() {
    Kill();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  bool Start() {
    Kill();
    std::filesystem::remove(dir_ + "/bus");
    std::string cmd = "dbus-daemon --config-file=" + dir_ + "/bus.conf --fork --print-pid";
    FILE* out = popen(cmd.c_str(), "r");
    if (out == nullptr) return false;
    int pid = 0;
    if (std::fscanf(out, "%d", &pid) != 1) pid = 0;
    pclose(out);
    pid_ = pid;
    std::ofstream(dir_ + "/pid") << pid << "\n";
    return pid_ > 0;
  }
  void Kill() {
    int pid = pid_.exchange(0);
    if (pid <= 0) return;
    ::kill(pid, SIGKILL);
    std::filesystem::remove(dir_ + "/pid");
  }
  bool up() const { return pid_ > 0; }
  const std::string& address() const { return address_; }

 private:
  std::string dir_;
  std::string address_;
  std::atomic<int> pid_{0};
};

// A systemd whose bus goes away mid-batch: it answers Subscribe, the first
// `refs` Ref calls, the first `answered` StartUnit calls with a job and
// every property of a.service (a service whose run exited badly), then
// takes the bus down at the next call (after its answers have had time to
// reach the host). It counts the Refs it was sent.
class DyingSystemd {
 public:
  DyingSystemd(OwnBus& own, int answered, int refs = 1000)
      : own_(own),
        answered_(answered),
        refs_(refs),
        peer_(own.address().c_str(), [this](sd_bus_message* m) { Answer(m); }) {}
  bool ok() const { return peer_.ok(); }
  int refs_sent() const { return refs_sent_; }

 private:
  void Answer(sd_bus_message* m) {
    bool ref = sd_bus_message_is_method_call(m, nullptr, "Ref") > 0;
    if (ref) ++refs_sent_;
    std::string path = sd_bus_message_get_path(m) != nullptr ? sd_bus_message_get_path(m) : "";
    bool of_a = path.ends_with("/a_2eservice");
    if (sd_bus_message_is_method_call(m, nullptr, "Subscribe") > 0 || (ref && refs_ > 0)) {
      if (ref) --refs_;
      sd_bus_reply_method_return(m, "");
    } else if (sd_bus_message_is_method_call(m, nullptr, "GetAll") > 0) {
      sd_bus_reply_method_return(m, "a{sv}", 2, "LoadState", "s", "loaded", "ActiveState", "s",
                                 "failed");
    } else if (of_a && sd_bus_message_is_method_call(m, nullptr, "Get") > 0) {
      const char* iface = nullptr;
      const char* property = nullptr;
      sd_bus_message_read(m, "ss", &iface, &property);
      std::string p = property != nullptr ? property : "";
      if (p == "Result" || p == "Type") {
        sd_bus_reply_method_return(m, "v", "s", p == "Result" ? "exit-code" : "simple");
      } else {
        sd_bus_reply_method_errorf(m, "org.freedesktop.DBus.Error.UnknownProperty",
                                   "Unknown property %s", p.c_str());
      }
    } else if (sd_bus_message_is_method_call(m, nullptr, "StartUnit") > 0 && answered_ > 0) {
      --answered_;
      std::string job = "/org/freedesktop/systemd1/job/" + std::to_string(++jobs_);
      sd_bus_reply_method_return(m, "o", job.c_str());
    } else if (sd_bus_message_is_method_call(m, nullptr, nullptr) > 0) {
      ReachedTheHost(m);
      own_.Kill();
      peer_.StopReading();
    }
  }
  // Returns once the host has read every answer sent before `call`: a Ping
  // of the host's connection (sd-bus answers it itself) comes after them.
  void ReachedTheHost(sd_bus_message* call) {
    const char* host = sd_bus_message_get_sender(call);
    sd_bus_error error = SD_BUS_ERROR_NULL;
    if (host == nullptr || sd_bus_call_method(peer_.bus(), host, "/", "org.freedesktop.DBus.Peer",
                                              "Ping", &error, nullptr, "") < 0) {
      ADD_FAILURE() << "the host did not answer a Ping: "
                    << (error.message != nullptr ? error.message : "no sender");
    }
    sd_bus_error_free(&error);
  }
  OwnBus& own_;
  int answered_;
  int refs_;
  std::atomic<int> refs_sent_{0};
  int jobs_ = 0;
  SystemdPeer peer_;  // last: it answers with the members above
};

// Jobs queued on a connection that was lost before they were waited for:
// their JobRemoved went with it. Before, the wait made a new connection,
// waited out its timeout and called them still pending, which the port's
// contract forbids; now it fails at once, saying so.
TEST_F(SdbusAdapterTest, JobsQueuedOnALostConnectionAreNotCalledPending) {
  OwnBus own;
  ASSERT_TRUE(own.up());
  BusAddress address(own.address());
  std::vector<std::pair<std::string, ports::JobKind>> jobs;
  jobs.reserve(10);
  for (int i = 0; i < 10; ++i)
    jobs.emplace_back("s" + std::to_string(i) + ".service", ports::JobKind::kStart);
  SdbusServiceManager host;
  std::vector<core::Result<std::string>> queued;
  {
    DyingSystemd dying(own, /*answered=*/3);
    ASSERT_TRUE(dying.ok());
    queued = host.EnqueueAll(jobs);
  }
  ASSERT_EQ(queued.size(), jobs.size());
  std::vector<std::string> ids;
  for (const auto& q : queued) {
    if (q) ids.push_back(*q);
  }
  ASSERT_EQ(ids.size(), 3u) << "the stand-in answered three starts";
  // The bus is back, with a systemd that answers Subscribe and Ref.
  ASSERT_TRUE(own.Start());
  DyingSystemd back(own, /*answered=*/0);
  ASSERT_TRUE(back.ok());
  auto waited = host.WaitForJobs(ids, 2s);
  ASSERT_FALSE(waited.has_value()) << "jobs of a lost connection read as still pending";
  EXPECT_NE(waited.error().message.find("connection was lost"), std::string::npos)
      << waited.error().message;
}

// The bus restarted while a job was pending and nothing was being read (an
// apply's settle): the wait finds the connection closed and makes it again,
// and the job, whose JobRemoved went with the old one, is not called
// pending.
TEST_F(SdbusAdapterTest, AJobOfAConnectionFoundClosedIsNotCalledPending) {
  OwnBus own;
  ASSERT_TRUE(own.up());
  BusAddress address(own.address());
  SdbusServiceManager host;
  std::vector<core::Result<std::string>> queued;
  {
    DyingSystemd answering(own, /*answered=*/1);
    ASSERT_TRUE(answering.ok());
    queued = host.EnqueueAll({{"s0.service", ports::JobKind::kStart}});
  }
  ASSERT_TRUE(queued[0].has_value()) << queued[0].error().message;
  ASSERT_TRUE(own.Start()) << "the bus restarted (the one before killed)";
  DyingSystemd back(own, /*answered=*/0);
  ASSERT_TRUE(back.ok());
  auto waited = host.WaitForJobs({*queued[0]}, 2s);
  ASSERT_FALSE(waited.has_value()) << "a job of a closed connection read as still pending";
  EXPECT_NE(waited.error().message.find("connection was lost"), std::string::npos)
      << waited.error().message;
}

// Waited for once and still pending, then the bus restarted before the
// next wait (the confirm phase asks again until its first look): every
// wait forgot the connection its jobs were queued on, so the next one,
// on a new connection, called the job pending for good.
TEST_F(SdbusAdapterTest, AJobStillPendingIsNotCalledPendingOnceItsConnectionIsLost) {
  OwnBus own;
  ASSERT_TRUE(own.up());
  BusAddress address(own.address());
  SdbusServiceManager host;
  std::vector<core::Result<std::string>> queued;
  {
    DyingSystemd answering(own, /*answered=*/1);
    ASSERT_TRUE(answering.ok());
    queued = host.EnqueueAll({{"s0.service", ports::JobKind::kStart}});
    ASSERT_TRUE(queued[0].has_value()) << queued[0].error().message;
    auto pending = host.WaitForJobs({*queued[0]}, 100ms);
    ASSERT_TRUE(pending.has_value()) << pending.error().message;
    EXPECT_TRUE(pending->empty()) << "no JobRemoved was sent: still pending";
  }
  ASSERT_TRUE(own.Start()) << "the bus restarted (the one before killed)";
  DyingSystemd back(own, /*answered=*/0);
  ASSERT_TRUE(back.ok());
  auto waited = host.WaitForJobs({*queued[0]}, 2s);
  ASSERT_FALSE(waited.has_value()) << "a job of a lost connection read as still pending";
  EXPECT_NE(waited.error().message.find("connection was lost"), std::string::npos)
      << waited.error().message;
}

// The units a connection held loaded go with it. Before, a Ref answered
// before the connection was lost in the same batch put its unit back as
// held, so the next connection never asked for it again, and a oneshot
// it started could be unloaded before its run was looked at.
TEST_F(SdbusAdapterTest, UnitsHeldByALostConnectionAreHeldAgain) {
  OwnBus own;
  ASSERT_TRUE(own.up());
  BusAddress address(own.address());
  SdbusServiceManager host;
  {
    DyingSystemd dying(own, /*answered=*/0, /*refs=*/1);
    ASSERT_TRUE(dying.ok());
    (void)host.EnqueueAll(
        {{"s0.service", ports::JobKind::kStart}, {"s1.service", ports::JobKind::kStart}});
  }
  ASSERT_TRUE(own.Start());
  int refs_sent = -1;
  {
    DyingSystemd back(own, /*answered=*/1);
    ASSERT_TRUE(back.ok());
    auto queued = host.EnqueueAll({{"s0.service", ports::JobKind::kStart}});
    ASSERT_TRUE(queued[0].has_value()) << queued[0].error().message;
    refs_sent = back.refs_sent();
  }
  EXPECT_EQ(refs_sent, 1) << "s0.service is held by the new connection only if it asks";
}

// A unit read in part when the connection went: a.service's service
// properties were all read, b.service's calls found the bus gone, and the
// exit status of a.service's failed run was never asked for. Before, a
// came back as read, without what its run exited with; now it fails.
TEST_F(SdbusAdapterTest, AUnitReadInPartIsNotCalledRead) {
  OwnBus own;
  ASSERT_TRUE(own.up());
  BusAddress address(own.address());
  std::vector<core::Result<core::UnitStatus>> seen;
  {
    DyingSystemd dying(own, /*answered=*/0);
    ASSERT_TRUE(dying.ok());
    SdbusServiceManager host;
    seen = host.ReadUnits({"a.service", "b.service"});
  }
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_FALSE(seen[1].has_value()) << "b.service's properties were never answered";
  ASSERT_FALSE(seen[0].has_value())
      << "a.service read without its exit status: result " << seen[0]->result;
  EXPECT_NE(seen[0].error().message.find("not sent: the connection was lost"), std::string::npos)
      << seen[0].error().message;
}

}  // namespace
}  // namespace mesh::adapters
