#include "host/adapters/sdbus_service_manager.h"

#include <systemd/sd-bus.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>

#include "host/adapters/unit_properties.h"
#include "host/base/shared_library.h"

namespace mesh::adapters {
namespace {

// libsystemd is loaded on the first connection (SharedLibrary says why).
// Each sd-bus function this file calls is a pointer of the same name and
// the header's type, declared here so that it hides the header's function
// in this file: the calls below read as sd-bus calls and go through the
// pointers, and the executable has no reference to libsystemd at all (the
// link fails if a call is missing from this list). Every call comes after
// Connect(), which loads the library first.
#define MESH_SD_BUS_FUNCTIONS(X)    \
  X(sd_bus_call)                    \
  X(sd_bus_call_async)              \
  X(sd_bus_call_method)             \
  X(sd_bus_error_free)              \
  X(sd_bus_flush_close_unref)       \
  X(sd_bus_match_signal)            \
  X(sd_bus_message_append)          \
  X(sd_bus_message_enter_container) \
  X(sd_bus_message_exit_container)  \
  X(sd_bus_message_get_error)       \
  X(sd_bus_message_get_path)        \
  X(sd_bus_message_is_method_error) \
  X(sd_bus_message_new_method_call) \
  X(sd_bus_message_read)            \
  X(sd_bus_message_read_array)      \
  X(sd_bus_message_ref)             \
  X(sd_bus_message_skip)            \
  X(sd_bus_message_unref)           \
  X(sd_bus_new)                     \
  X(sd_bus_path_encode)             \
  X(sd_bus_process)                 \
  X(sd_bus_set_address)             \
  X(sd_bus_set_bus_client)          \
  X(sd_bus_set_method_call_timeout) \
  X(sd_bus_slot_unref)              \
  X(sd_bus_start)                   \
  X(sd_bus_wait)
// NOLINTNEXTLINE(bugprone-macro-parentheses): a declaration, not an expression
#define MESH_SD_BUS_POINTER(fn) decltype(&::fn) fn = nullptr;
MESH_SD_BUS_FUNCTIONS(MESH_SD_BUS_POINTER)
#undef MESH_SD_BUS_POINTER

constexpr const char* kLibsystemd = "libsystemd.so.0";

// A failure is the connection's error, and the next connection tries
// again (LoadOnce).
core::Status LoadSdBus() {
  static base::LoadOnce once;
  return once([]() -> core::Status {
    auto lib = base::SharedLibrary::Open(kLibsystemd);
    if (!lib) return std::unexpected(lib.error());
#define MESH_SD_BUS_BIND(fn) \
  if (auto st = lib->Bind(#fn, fn); !st) return st;
    MESH_SD_BUS_FUNCTIONS(MESH_SD_BUS_BIND)
#undef MESH_SD_BUS_BIND
    return core::Ok();
  });
}
#undef MESH_SD_BUS_FUNCTIONS

constexpr const char* kDest = "org.freedesktop.systemd1";
constexpr const char* kPath = "/org/freedesktop/systemd1";
constexpr const char* kManager = "org.freedesktop.systemd1.Manager";
constexpr const char* kUnitIface = "org.freedesktop.systemd1.Unit";
constexpr const char* kServiceIface = "org.freedesktop.systemd1.Service";
constexpr const char* kProperties = "org.freedesktop.DBus.Properties";
constexpr const char* kDefaultAddress = "unix:path=/run/dbus/system_bus_socket";

// RAII for the sd-bus objects this file touches.
struct ErrorGuard {
  sd_bus_error e = SD_BUS_ERROR_NULL;
  ~ErrorGuard() { sd_bus_error_free(&e); }
};
struct MessageDeleter {
  void operator()(sd_bus_message* m) const { sd_bus_message_unref(m); }
};
using Message = std::unique_ptr<sd_bus_message, MessageDeleter>;

// A hung systemd must not hang the host: every call is bounded by this...
constexpr std::chrono::seconds kCallTimeout{10};
// ... but a daemon-reload, which returns once systemd has re-read every
// unit, by this.
constexpr std::chrono::seconds kReloadTimeout{90};
// sd-bus answers a call that times out with an error reply of its own; a
// wait for replies ends this much later only if the bus stops answering at
// all.
constexpr std::chrono::seconds kRepliesDeadline = kCallTimeout + std::chrono::seconds(1);

// dbus-daemon refuses a connection's call past 128 awaiting their replies
// (max_replies_per_connection, its default on the system bus): of a larger
// batch, a call is sent as an earlier one is answered.
constexpr size_t kCallsInFlight = 64;
// sd-bus's own answer to a call it gave up waiting for.
constexpr const char* kNoReply = "org.freedesktop.DBus.Error.NoReply";
constexpr const char* kUnknownProperty = "org.freedesktop.DBus.Error.UnknownProperty";

uint64_t Usec(std::chrono::nanoseconds d) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(d).count());
}

std::string Describe(std::string_view method, std::string_view unit, const sd_bus_error& e, int r) {
  return DescribeBusError(method, unit, e.name != nullptr ? e.name : "",
                          e.message != nullptr ? e.message : "", r);
}

bool ConnectionLost(int r) {
  return r == -ECONNRESET || r == -ENOTCONN || r == -EPIPE || r == -ESHUTDOWN || r == -ECONNREFUSED;
}

// A call of systemd's, its arguments appended (`types` as
// sd_bus_message_append reads them: C strings and integers of the exact
// width, never a std::string); null when it cannot be made, which CallAll
// says for that call.
template <typename... Args>
sd_bus_message* NewCall(sd_bus* bus, const char* path, const char* iface, const char* member,
                        const char* types = nullptr, Args... args) {
  sd_bus_message* m = nullptr;
  if (sd_bus_message_new_method_call(bus, &m, kDest, path, iface, member) < 0) return nullptr;
  if (types != nullptr && sd_bus_message_append(m, types, args...) < 0) {
    return sd_bus_message_unref(m);
  }
  return m;
}

}  // namespace

struct SdbusServiceManager::Bus {
  sd_bus* bus = nullptr;
  sd_bus_slot* job_removed = nullptr;
  sd_bus_slot* properties_changed = nullptr;
  ~Bus() {
    sd_bus_slot_unref(properties_changed);
    sd_bus_slot_unref(job_removed);
    sd_bus_flush_close_unref(bus);
  }
};

SdbusServiceManager::SdbusServiceManager() = default;
SdbusServiceManager::~SdbusServiceManager() = default;

void SdbusServiceManager::Disconnect() {
  bus_.reset();
  held_.clear();           // the references went with the connection
  watched_paths_.clear();  // object paths are re-resolved on the new connection
}

core::Status SdbusServiceManager::CallFailed(std::string what, int r) {
  if (ConnectionLost(r)) Disconnect();
  return core::Fail(std::move(what));
}

core::Status SdbusServiceManager::Connect() {
  if (bus_ != nullptr) return core::Ok();
  if (auto st = LoadSdBus(); !st) return st;
  auto bus = std::make_unique<Bus>();
  const char* address = std::getenv("DBUS_SYSTEM_BUS_ADDRESS");
  // As sd_bus_open_system, but with the call timeout set before the bus's
  // Hello is sent: a bus that never answers it is bounded like any call.
  int r = sd_bus_new(&bus->bus);
  if (r >= 0) r = sd_bus_set_address(bus->bus, address != nullptr ? address : kDefaultAddress);
  if (r >= 0) r = sd_bus_set_bus_client(bus->bus, 1);
  if (r >= 0) r = sd_bus_set_method_call_timeout(bus->bus, Usec(kCallTimeout));
  if (r >= 0) r = sd_bus_start(bus->bus);
  if (r < 0) {
    return core::Fail(std::string("no systemd answers on the system bus (") +
                      (address != nullptr ? std::string("DBUS_SYSTEM_BUS_ADDRESS=") + address
                                          : std::string(kDefaultAddress) +
                                                "; DBUS_SYSTEM_BUS_ADDRESS is not set") +
                      "): " + std::strerror(-r));
  }
  // JobRemoved is subscribed to before any job is asked for, so no result of
  // the host's can be missed between a method's reply and the wait.
  r = sd_bus_match_signal(
      bus->bus, &bus->job_removed, kDest, kPath, kManager, "JobRemoved",
      [](sd_bus_message* m, void* userdata, sd_bus_error*) -> int {
        auto* self = static_cast<SdbusServiceManager*>(userdata);
        uint32_t id;
        const char *job, *unit, *result;
        if (sd_bus_message_read(m, "uoss", &id, &job, &unit, &result) >= 0) {
          self->jobs_.Finished(job, result);
        }
        return 0;
      },
      this);
  if (r < 0) return core::Fail(std::string("subscribe to JobRemoved: ") + std::strerror(-r));
  ErrorGuard err;
  r = sd_bus_call_method(bus->bus, kDest, kPath, kManager, "Subscribe", &err.e, nullptr, "");
  if (r < 0) return core::Fail(Describe("Subscribe", "", err.e, r));
  bus_ = std::move(bus);
  return core::Ok();
}

core::Status SdbusServiceManager::ReloadDaemon() {
  if (auto st = Connect(); !st) return st;
  ErrorGuard err;
  // Reload returns once systemd has re-read its units; allow it time.
  // The call is made here, not by NewCall: its own error (a closed bus)
  // is what CallFailed judges.
  sd_bus_message* raw = nullptr;
  int r = sd_bus_message_new_method_call(bus_->bus, &raw, kDest, kPath, kManager, "Reload");
  Message call(raw);
  sd_bus_message* reply = nullptr;
  if (r >= 0) r = sd_bus_call(bus_->bus, call.get(), Usec(kReloadTimeout), &err.e, &reply);
  sd_bus_message_unref(reply);
  return r < 0 ? CallFailed(Describe("Reload", "", err.e, r), r) : core::Ok();
}

core::Status SdbusServiceManager::SetUnitFileEnabled(const std::string& unit, bool enabled) {
  if (auto st = Connect(); !st) return st;
  const char* method = enabled ? "EnableUnitFiles" : "DisableUnitFiles";
  ErrorGuard err;
  sd_bus_message* raw = nullptr;
  // runtime=false: links in /etc that survive a reboot; force=false: a
  // link an operator made to another file is not replaced.
  int r = enabled ? sd_bus_call_method(bus_->bus, kDest, kPath, kManager, method, &err.e, &raw,
                                       "asbb", 1, unit.c_str(), 0, 0)
                  : sd_bus_call_method(bus_->bus, kDest, kPath, kManager, method, &err.e, &raw,
                                       "asb", 1, unit.c_str(), 0);
  Message reply(raw);
  if (r < 0) return CallFailed(Describe(method, unit, err.e, r), r);
  if (enabled) {
    int carries_install_info = 0;
    if (sd_bus_message_read(reply.get(), "b", &carries_install_info) < 0) {
      return core::Fail(std::string(method) + " " + unit + ": unreadable reply");
    }
    if (!carries_install_info) {
      return core::Fail(unit +
                        " has no [Install] section (WantedBy=, RequiredBy=, ...): "
                        "there is nothing to enable");
    }
  }
  return core::Ok();
}

core::Result<std::string> SdbusServiceManager::Enqueue(const std::string& unit,
                                                       ports::JobKind kind) {
  // One job on its own (a removal's stop) does not start a new batch: the
  // act phase's jobs may still be waited for.
  return EnqueueJobs({{unit, kind}}, /*new_batch=*/false)[0];
}

core::Result<std::map<std::string, std::string>> SdbusServiceManager::WaitForJobs(
    const std::vector<std::string>& jobs, std::chrono::nanoseconds timeout) {
  if (jobs.empty()) return std::map<std::string, std::string>();
  if (auto st = Connect(); !st) return std::unexpected(st.error());
  int r = ProcessUntil([&] { return jobs_.AllFinished(jobs); },
                       std::chrono::steady_clock::now() + timeout);
  if (r < 0 && ConnectionLost(r)) {
    // The jobs' JobRemoved went with the connection: a new one never hears
    // of them. Forgotten here, and said.
    (void)jobs_.Take(jobs);
    Disconnect();
    return core::Fail(std::string("waiting for jobs: the bus connection was lost (") +
                      std::strerror(-r) + ")");
  }
  return jobs_.Take(jobs);
}

// A unit's object path is its name, escaped as systemd escapes it; an access
// to that path loads the unit as LoadUnit would (an unknown unit reads as
// "not-found"), so no round trip is spent asking systemd for paths.
core::Result<std::string> SdbusServiceManager::UnitPath(const std::string& unit) {
  char* path = nullptr;
  int r = sd_bus_path_encode("/org/freedesktop/systemd1/unit", unit.c_str(), &path);
  if (r < 0) return core::Fail("unit path of " + unit + ": " + std::strerror(-r));
  std::string out = path;
  free(path);
  return out;
}

core::Result<std::vector<std::string>> SdbusServiceManager::WaitForUnitChanges(
    const std::vector<std::string>& units, std::chrono::nanoseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  if (auto st = Connect(); !st) return std::unexpected(st.error());
  // Property changes are subscribed to only here, by the watch's own
  // connection: an apply's connection would otherwise receive every
  // PropertiesChanged of every unit systemd touches while it restarts.
  if (bus_->properties_changed == nullptr) {
    int r = sd_bus_match_signal(
        bus_->bus, &bus_->properties_changed, kDest, nullptr, kProperties, "PropertiesChanged",
        [](sd_bus_message* m, void* userdata, sd_bus_error*) -> int {
          auto* self = static_cast<SdbusServiceManager*>(userdata);
          const char* path = sd_bus_message_get_path(m);
          if (path == nullptr) return 0;
          auto it = self->watched_paths_.find(path);
          if (it != self->watched_paths_.end()) self->changed_units_.push_back(it->second);
          return 0;
        },
        this);
    if (r < 0)
      return core::Fail(std::string("subscribe to PropertiesChanged: ") + std::strerror(-r));
  }
  // The watch calls this every second: resolve object paths only when the
  // set of units changed (or the connection was re-made), not per call.
  if (units != watched_units_ || watched_paths_.empty()) {
    std::map<std::string, std::string> paths;
    for (const std::string& u : units) {
      auto path = UnitPath(u);
      if (!path) return std::unexpected(path.error());
      paths[*path] = u;
    }
    watched_paths_ = std::move(paths);
    watched_units_ = units;
  }
  int r = ProcessUntil([&] { return !changed_units_.empty(); }, deadline);
  if (r < 0) {
    // Whatever it is, the next call starts from a fresh connection: an
    // error that returned at once would otherwise be met again at once.
    Disconnect();
    return core::Fail(ConnectionLost(r) ? std::string("the bus connection was lost")
                                        : std::string("reading the bus: ") + std::strerror(-r));
  }
  std::vector<std::string> out;
  out.swap(changed_units_);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

struct SdbusServiceManager::Reply {
  Message message;  // the reply, when it was not an error
  std::string error;
  std::string error_name;  // the D-Bus error's name, when systemd answered with one
};

namespace {

// A call of CallAll's on its way: its reply, once there.
struct PendingCall {
  sd_bus_message* reply = nullptr;
  bool done = false;
};

// Each sent call's reply, or why there is none, into `out` (where no error
// is said yet); frees the slots and the replies not handed on. A template
// over the manager's private Reply.
template <typename Reply>
void TakeReplies(std::vector<PendingCall>& pending, std::vector<sd_bus_slot*>& slots, int r,
                 const std::vector<std::string>& what, std::vector<Reply>& out) {
  for (size_t i = 0; i < pending.size(); ++i) {
    sd_bus_slot_unref(slots[i]);
    Message reply(pending[i].reply);
    if (!out[i].error.empty()) continue;
    if (reply == nullptr) {
      out[i].error = what[i] + ": " + (r < 0 ? std::strerror(-r) : "no reply");
    } else if (sd_bus_message_is_method_error(reply.get(), nullptr)) {
      const sd_bus_error* e = sd_bus_message_get_error(reply.get());
      out[i].error = Describe(what[i], "", *e, -EIO);
      out[i].error_name = e->name != nullptr ? e->name : "";
    } else {
      out[i].message = std::move(reply);
    }
  }
}

}  // namespace

std::vector<SdbusServiceManager::Reply> SdbusServiceManager::CallAll(
    std::vector<sd_bus_message*> calls,  // NOLINT(performance-unnecessary-value-param): owned
    const std::vector<std::string>& what) {
  std::vector<Reply> out(calls.size());
  std::vector<PendingCall> pending(calls.size());
  std::vector<sd_bus_slot*> slots(calls.size(), nullptr);
  // Taken back by index as each call is sent; any left unsent are freed.
  std::vector<Message> owned;
  owned.reserve(calls.size());
  for (sd_bus_message* m : calls) owned.emplace_back(m);
  bool lost = false;
  // A call sd-bus gave up on after kCallTimeout: dbus-daemon still counts it
  // as awaiting its reply (it never times calls out), and what is sent to a
  // systemd that stalled would run blind. Nothing more is sent.
  bool stalled = false;
  size_t sent = 0;
  size_t answered = 0;  // calls 0..answered-1 have their reply
  auto can_send = [&] {
    return !lost && !stalled && sent < owned.size() && sent - answered < kCallsInFlight;
  };
  auto send_more = [&] {
    while (can_send()) {
      size_t i = sent++;
      Message call = std::move(owned[i]);
      int r = call == nullptr ? -ENOMEM
                              : sd_bus_call_async(
                                    bus_->bus, &slots[i], call.get(),
                                    [](sd_bus_message* m, void* userdata, sd_bus_error*) -> int {
                                      auto* p = static_cast<PendingCall*>(userdata);
                                      p->reply = sd_bus_message_ref(m);
                                      p->done = true;
                                      return 0;
                                    },
                                    &pending[i], Usec(kCallTimeout));
      if (r < 0) {
        pending[i].done = true;
        out[i].error = what[i] + ": " + std::strerror(-r);
        lost = lost || ConnectionLost(r);
      }
    }
  };
  auto count_answered = [&] {
    for (; answered < sent && pending[answered].done; ++answered) {
      sd_bus_message* reply = pending[answered].reply;
      if (reply != nullptr && sd_bus_message_is_method_error(reply, kNoReply) > 0) stalled = true;
    }
  };
  int r = 0;
  // Each wait has its own deadline, from the last reply: a large batch takes
  // as long as systemd needs, but a bus that stops answering ends it.
  for (;;) {
    send_more();
    count_answered();
    if (answered == sent) break;  // and nothing more can be sent
    size_t before = answered;
    r = ProcessUntil(
        [&] {
          count_answered();
          return answered == sent || can_send();
        },
        std::chrono::steady_clock::now() + kRepliesDeadline);
    lost = lost || (r < 0 && ConnectionLost(r));
    count_answered();
    if (lost || r < 0 || answered == before) break;
  }
  for (size_t i = sent; i < owned.size(); ++i) {
    out[i].error = what[i] + ": not sent: " +
                   (lost      ? std::string("the connection was lost")
                    : stalled ? "systemd left a call unanswered for " +
                                    std::to_string(kCallTimeout.count()) + " s"
                              : std::string("the bus stopped answering"));
  }
  TakeReplies(pending, slots, r, what, out);
  if (lost || (r < 0 && ConnectionLost(r))) Disconnect();
  return out;
}

namespace {

// Reads a value of shape `wire` (inside its variant, next in `m`) into `v`.
// Negative: unreadable.
int ReadWire(sd_bus_message* m, Wire wire, PropertyValue& v) {
  int r;
  switch (wire) {
    case Wire::kString: {
      const char* text = nullptr;
      if ((r = sd_bus_message_read(m, "v", "s", &text)) < 0) return r;
      v.text = text != nullptr ? text : "";
      return r;
    }
    case Wire::kUint32:
    case Wire::kInt32: {
      uint32_t n = 0;  // an int32 read as its bits
      r = sd_bus_message_read(m, "v", wire == Wire::kUint32 ? "u" : "i", &n);
      v.number = n;
      return r;
    }
    case Wire::kBool: {
      int b = 0;
      r = sd_bus_message_read(m, "v", "b", &b);
      v.number = b != 0;
      return r;
    }
    case Wire::kUint64:
      return sd_bus_message_read(m, "v", "t", &v.number);
    case Wire::kBytes: {
      if ((r = sd_bus_message_enter_container(m, 'v', "ay")) < 0) return r;
      const void* bytes = nullptr;
      size_t len = 0;
      if ((r = sd_bus_message_read_array(m, 'y', &bytes, &len)) < 0) return r;
      const auto* b = static_cast<const uint8_t*>(bytes);
      v.bytes.assign(b, b + len);
      return sd_bus_message_exit_container(m);
    }
    case Wire::kCommands: {
      if ((r = sd_bus_message_enter_container(m, 'v', "a(sasbttttuii)")) < 0) return r;
      if ((r = sd_bus_message_enter_container(m, 'a', "(sasbttttuii)")) < 0) return r;
      while ((r = sd_bus_message_enter_container(m, 'r', "sasbttttuii")) > 0) {
        const char* path = nullptr;
        if ((r = sd_bus_message_read(m, "s", &path)) < 0) return r;
        v.command_paths.emplace_back(path != nullptr ? path : "");
        if ((r = sd_bus_message_skip(m, "asbttttuii")) < 0) return r;
        if ((r = sd_bus_message_exit_container(m)) < 0) return r;
      }
      if (r < 0) return r;
      if ((r = sd_bus_message_exit_container(m)) < 0) return r;
      return sd_bus_message_exit_container(m);
    }
    case Wire::kConditions: {
      if ((r = sd_bus_message_enter_container(m, 'v', "a(sbbsi)")) < 0) return r;
      if ((r = sd_bus_message_enter_container(m, 'a', "(sbbsi)")) < 0) return r;
      const char *type = nullptr, *param = nullptr;
      int trigger = 0, negate = 0;
      int32_t state = 0;
      while ((r = sd_bus_message_read(m, "(sbbsi)", &type, &trigger, &negate, &param, &state)) >
             0) {
        v.conditions.push_back({type, trigger != 0, negate != 0, param, state});
      }
      if (r < 0) return r;
      if ((r = sd_bus_message_exit_container(m)) < 0) return r;
      return sd_bus_message_exit_container(m);
    }
  }
  return -EINVAL;
}

// Reads property `name` (its variant next in `m`) into `s` as its row says,
// or skips it when the host has no use for it. Negative: unreadable.
int ReadProperty(sd_bus_message* m, std::string_view name, core::UnitStatus& s,
                 PropertyContext& context) {
  const PropertyRow* row = FindProperty(name);
  if (row == nullptr) return sd_bus_message_skip(m, "v");
  PropertyValue value;
  int r = ReadWire(m, row->wire, value);
  if (r >= 0) row->set(value, s, context);
  return r;
}

std::chrono::nanoseconds MonotonicNow() {
  timespec now{};
  if (::clock_gettime(CLOCK_MONOTONIC, &now) != 0) return std::chrono::nanoseconds(0);
  return std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec);
}

// Reads one GetAll reply into `s`.
core::Status ParseProperties(sd_bus_message* m, core::UnitStatus& s, const std::string& what) {
  auto bad = [&] { return core::Fail(what + ": unreadable reply"); };
  int rr;
  PropertyContext context{.monotonic_now = MonotonicNow()};
  if (sd_bus_message_enter_container(m, 'a', "{sv}") < 0) return bad();
  while ((rr = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
    const char* name = nullptr;
    if (sd_bus_message_read(m, "s", &name) < 0) return bad();
    if (ReadProperty(m, name, s, context) < 0) return bad();
    if (sd_bus_message_exit_container(m) < 0) return bad();
  }
  if (rr < 0) return bad();
  FinishProperties(context, s);
  return core::Ok();
}

}  // namespace

core::Result<core::UnitStatus> SdbusServiceManager::ReadUnit(const std::string& unit) {
  return std::move(ReadUnits({unit})[0]);
}

// Pipelined rounds, whatever the number of units: one GetAll of the Unit
// interface each, then the service properties of loaded services, then, of
// the services whose run exited badly, its exit status and command (no
// cost while everything runs).
std::vector<core::Result<core::UnitStatus>> SdbusServiceManager::ReadUnits(
    const std::vector<std::string>& units) {
  std::vector<core::Result<core::UnitStatus>> out(units.size());
  if (units.empty()) return out;
  if (auto st = Connect(); !st) {
    for (auto& o : out) o = std::unexpected(st.error());
    return out;
  }
  std::vector<std::string> paths(units.size());
  for (size_t i = 0; i < units.size(); ++i) {
    auto path = UnitPath(units[i]);
    if (!path) {
      out[i] = std::unexpected(path.error());
      continue;
    }
    paths[i] = std::move(*path);
    out[i] = core::UnitStatus{};
  }
  for (int round : {0, 1, 2}) {
    const bool service_round = round > 0;
    if (bus_ == nullptr) break;  // the connection was lost: the errors say so
    std::vector<sd_bus_message*> calls;
    std::vector<std::string> what;
    std::vector<std::pair<size_t, const char*>> index;  // unit, property (null: GetAll)
    for (size_t i = 0; i < units.size(); ++i) {
      if (!out[i]) continue;
      if (!service_round) {
        calls.push_back(
            NewCall(bus_->bus, paths[i].c_str(), kProperties, "GetAll", "s", kUnitIface));
        what.push_back(std::string("GetAll ") + kUnitIface + " " + units[i]);
        index.emplace_back(i, nullptr);
        continue;
      }
      if (!ReadInRound(round, units[i], *out[i])) continue;
      for (const char* property : round == 1 ? ServiceProperties() : ExitProperties()) {
        calls.push_back(NewCall(bus_->bus, paths[i].c_str(), kProperties, "Get", "ss",
                                kServiceIface, property));
        what.push_back(std::string("Get ") + kServiceIface + "." + property + " " + units[i]);
        index.emplace_back(i, property);
      }
    }
    if (calls.empty()) continue;
    std::vector<Reply> replies = CallAll(std::move(calls), what);
    for (size_t k = 0; k < index.size(); ++k) {
      auto [i, property] = index[k];
      if (!out[i]) continue;  // an earlier property of this unit failed
      if (!replies[k].error.empty()) {
        // A property this systemd does not have (NRestarts came with 235)
        // stays unset, as the interface's GetAll would leave it.
        if (property != nullptr && replies[k].error_name == kUnknownProperty) continue;
        out[i] = core::Fail(replies[k].error);
      } else if (property == nullptr) {
        if (auto st = ParseProperties(replies[k].message.get(), *out[i], what[k]); !st) {
          out[i] = std::unexpected(st.error());
        }
      } else if (PropertyContext alone;
                 ReadProperty(replies[k].message.get(), property, *out[i], alone) < 0) {
        out[i] = core::Fail(what[k] + ": unreadable reply");
      }
    }
  }
  return out;
}

std::vector<core::Result<std::string>> SdbusServiceManager::EnqueueAll(
    const std::vector<std::pair<std::string, ports::JobKind>>& jobs) {
  return EnqueueJobs(jobs, /*new_batch=*/true);
}

int SdbusServiceManager::ProcessUntil(const std::function<bool()>& done,
                                      std::chrono::steady_clock::time_point deadline) {
  int failed = 0;
  for (;;) {
    // Drain everything queued (signals may have arrived with method replies).
    int r;
    while ((r = sd_bus_process(bus_->bus, nullptr)) > 0) {
    }
    if (r < 0 && ConnectionLost(r)) return r;
    if (r < 0) failed = r;
    auto now = std::chrono::steady_clock::now();
    if (done()) return 0;
    if (now >= deadline) return failed;
    sd_bus_wait(bus_->bus, Usec(deadline - now));
  }
}

// systemd unloads a unit that ended and that nothing references (a
// oneshot that ran, a start skipped on a false condition) at once: read
// again, it is loaded afresh and says nothing of that run. A reference of
// this connection's (Unit.Ref, systemd 235 and later) keeps it loaded for
// the looks, and goes with the connection. A stop lets it go (Unit.Unref):
// a stopped unit reads the same loaded or not, and the daemon's one
// connection must not pin every unit it ever started. Best effort: a unit
// not held reads as before, and one whose Ref failed is asked again.
void SdbusServiceManager::HoldLoaded(
    const std::vector<std::pair<std::string, ports::JobKind>>& jobs) {
  std::vector<sd_bus_message*> calls;
  std::vector<std::string> what, refs;
  for (const auto& [unit, kind] : jobs) {
    bool stop = kind == ports::JobKind::kStop;
    if (stop != held_.contains(unit)) continue;
    auto path = UnitPath(unit);
    if (!path) continue;
    calls.push_back(NewCall(bus_->bus, path->c_str(), kUnitIface, stop ? "Unref" : "Ref"));
    what.push_back((stop ? "Unref " : "Ref ") + unit);
    refs.push_back(stop ? "" : unit);
    if (stop) held_.erase(unit);
  }
  if (calls.empty()) return;
  std::vector<Reply> replies = CallAll(std::move(calls), what);
  for (size_t i = 0; i < replies.size(); ++i) {
    if (!refs[i].empty() && replies[i].error.empty()) held_.insert(refs[i]);
  }
}

std::vector<core::Result<std::string>> SdbusServiceManager::EnqueueJobs(
    const std::vector<std::pair<std::string, ports::JobKind>>& jobs, bool new_batch) {
  std::vector<core::Result<std::string>> out(jobs.size());
  if (jobs.empty()) return out;
  if (auto st = Connect(); !st) {
    for (auto& o : out) o = std::unexpected(st.error());
    return out;
  }
  size_t waited = std::count_if(jobs.begin(), jobs.end(),
                                [](const auto& j) { return j.second != ports::JobKind::kStop; });
  HoldLoaded(jobs);
  if (bus_ == nullptr) {  // the connection was lost while holding the units
    for (size_t i = 0; i < jobs.size(); ++i) {
      out[i] = core::Fail(std::string(JobMethod(jobs[i].second)) + " " + jobs[i].first +
                          ": not sent: the connection was lost");
    }
    return out;
  }
  if (waited > 0) jobs_.ExpectCalls(waited, new_batch);
  std::vector<sd_bus_message*> calls;
  std::vector<std::string> what;
  for (const auto& [unit, kind] : jobs) {
    const char* method = JobMethod(kind);
    calls.push_back(NewCall(bus_->bus, kPath, kManager, method, "ss", unit.c_str(), "replace"));
    what.push_back(std::string(method) + " " + unit);
  }
  std::vector<Reply> replies = CallAll(std::move(calls), what);
  std::vector<std::string> kept;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const char* job = nullptr;
    if (!replies[i].error.empty()) {
      out[i] = core::Fail(replies[i].error);
    } else if (sd_bus_message_read(replies[i].message.get(), "o", &job) < 0) {
      out[i] = core::Fail(what[i] + ": unreadable reply");
    } else {
      out[i] = std::string(job);
      if (jobs[i].second != ports::JobKind::kStop) kept.push_back(job);
    }
  }
  if (waited > 0) jobs_.KeepJobs(waited, kept);
  return out;
}

}  // namespace mesh::adapters
