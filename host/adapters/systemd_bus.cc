#include "host/adapters/systemd_bus.h"

#include <systemd/sd-bus.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>

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
  X(sd_bus_is_open)                 \
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
constexpr const char* kDefaultAddress = "unix:path=/run/dbus/system_bus_socket";

struct ErrorGuard {
  sd_bus_error e = SD_BUS_ERROR_NULL;
  ~ErrorGuard() { sd_bus_error_free(&e); }
};
using Message = std::unique_ptr<sd_bus_message, SystemdBus::MessageDeleter>;

// A hung systemd must not hang the host: every call is bounded by this
// (a daemon-reload's by the caller's own).
constexpr std::chrono::seconds kCallTimeout{10};
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

uint64_t Usec(std::chrono::nanoseconds d) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(d).count());
}

std::string Describe(std::string_view what, const sd_bus_error& e, int r) {
  return DescribeBusError(what, "", e.name != nullptr ? e.name : "",
                          e.message != nullptr ? e.message : "", r);
}

// The call as a message into `out`, its arguments appended; sd-bus's
// negative errno when it cannot be made (a closed connection among them).
int NewCall(sd_bus* bus, const SystemdBus::Call& c, Message& out) {
  using Args = SystemdBus::Args;
  sd_bus_message* m = nullptr;
  int r = sd_bus_message_new_method_call(bus, &m, kDest, c.path.c_str(), c.iface, c.member);
  if (r < 0) return r;
  out.reset(m);
  // sd_bus_message_append reads C strings and ints of the exact width.
  const char* a = c.first.c_str();
  const char* b = c.second.c_str();
  switch (c.args) {
    case Args::kNone:
      break;
    case Args::kString:
      r = sd_bus_message_append(m, "s", a);
      break;
    case Args::kTwoStrings:
      r = sd_bus_message_append(m, "ss", a, b);
      break;
    case Args::kEnableFile:
      r = sd_bus_message_append(m, "asbb", 1, a, 0, 0);
      break;
    case Args::kDisableFile:
      r = sd_bus_message_append(m, "asb", 1, a, 0);
      break;
  }
  if (r < 0) out.reset();
  return r;
}

// The reply (or its absence, with sd-bus's `r`) into `out`, where no error
// is said yet.
void TakeReply(Message reply, int r, SystemdBus::Reply& out) {
  if (!out.error.empty()) return;
  if (reply == nullptr) {
    out.error = out.what + ": " + (r < 0 ? std::strerror(-r) : "no reply");
  } else if (sd_bus_message_is_method_error(reply.get(), nullptr)) {
    const sd_bus_error* e = sd_bus_message_get_error(reply.get());
    out.error = Describe(out.what, *e, -EIO);
    out.error_name = e->name != nullptr ? e->name : "";
  } else {
    out.message = std::move(reply);
  }
}

// ExecStart= and the like (a(sasbttttuii), inside its variant): each
// command's path, and when the first last began (its start timestamp).
int ReadCommands(sd_bus_message* m, PropertyValue& v) {
  int r;
  if ((r = sd_bus_message_enter_container(m, 'v', "a(sasbttttuii)")) < 0) return r;
  if ((r = sd_bus_message_enter_container(m, 'a', "(sasbttttuii)")) < 0) return r;
  while ((r = sd_bus_message_enter_container(m, 'r', "sasbttttuii")) > 0) {
    const char* path = nullptr;
    if ((r = sd_bus_message_read(m, "s", &path)) < 0) return r;
    if ((r = sd_bus_message_skip(m, "asb")) < 0) return r;
    uint64_t started = 0;
    if ((r = sd_bus_message_read(m, "t", &started)) < 0) return r;
    if (v.command_paths.empty()) v.number = started;
    v.command_paths.emplace_back(path != nullptr ? path : "");
    if ((r = sd_bus_message_skip(m, "tttuii")) < 0) return r;
    if ((r = sd_bus_message_exit_container(m)) < 0) return r;
  }
  if (r < 0) return r;
  if ((r = sd_bus_message_exit_container(m)) < 0) return r;
  return sd_bus_message_exit_container(m);
}

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
    case Wire::kJob: {
      uint32_t id = 0;
      const char* path = nullptr;
      r = sd_bus_message_read(m, "v", "(uo)", &id, &path);
      v.number = id;
      return r;
    }
    case Wire::kBytes: {
      if ((r = sd_bus_message_enter_container(m, 'v', "ay")) < 0) return r;
      const void* bytes = nullptr;
      size_t len = 0;
      if ((r = sd_bus_message_read_array(m, 'y', &bytes, &len)) < 0) return r;
      const auto* b = static_cast<const uint8_t*>(bytes);
      v.bytes.assign(b, b + len);
      return sd_bus_message_exit_container(m);
    }
    case Wire::kCommands:
      return ReadCommands(m, v);
    case Wire::kStrings: {
      if ((r = sd_bus_message_enter_container(m, 'v', "as")) < 0) return r;
      if ((r = sd_bus_message_enter_container(m, 'a', "s")) < 0) return r;
      const char* text = nullptr;
      while ((r = sd_bus_message_read(m, "s", &text)) > 0) v.strings.emplace_back(text);
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

}  // namespace

void SystemdBus::MessageDeleter::operator()(sd_bus_message* m) const { sd_bus_message_unref(m); }

core::Result<std::string> SystemdBus::Reply::ObjectPath() const {
  const char* path = nullptr;
  if (message == nullptr || sd_bus_message_read(message.get(), "o", &path) < 0) {
    return core::Fail(what + ": unreadable reply");
  }
  return std::string(path);
}

core::Result<bool> SystemdBus::Reply::Flag() const {
  int flag = 0;
  if (message == nullptr || sd_bus_message_read(message.get(), "b", &flag) < 0) {
    return core::Fail(what + ": unreadable reply");
  }
  return flag != 0;
}

core::Result<std::vector<std::string>> SystemdBus::Reply::Strings() const {
  PropertyValue value;
  if (message == nullptr || ReadWire(message.get(), Wire::kStrings, value) < 0) {
    return core::Fail(what + ": unreadable reply");
  }
  return std::move(value.strings);
}

core::Status SystemdBus::Reply::Properties(core::UnitStatus& s) const {
  auto bad = [&] { return core::Fail(what + ": unreadable reply"); };
  sd_bus_message* m = message.get();
  int rr;
  PropertyContext context;
  context.monotonic_now = MonotonicNow();
  if (m == nullptr || sd_bus_message_enter_container(m, 'a', "{sv}") < 0) return bad();
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

core::Status SystemdBus::Reply::Property(std::string_view name, core::UnitStatus& s) const {
  PropertyContext alone;
  if (message == nullptr || ReadProperty(message.get(), name, s, alone) < 0) {
    return core::Fail(what + ": unreadable reply");
  }
  return core::Ok();
}

struct SystemdBus::Connection {
  sd_bus* bus = nullptr;
  sd_bus_slot* job_removed = nullptr;
  sd_bus_slot* properties_changed = nullptr;
  ~Connection() {
    sd_bus_slot_unref(properties_changed);
    sd_bus_slot_unref(job_removed);
    sd_bus_flush_close_unref(bus);
  }
};

SystemdBus::SystemdBus(Handlers handlers) : handlers_(std::move(handlers)) {}
SystemdBus::~SystemdBus() = default;

bool SystemdBus::ConnectionLost(int r) {
  return r == -ECONNRESET || r == -ENOTCONN || r == -EPIPE || r == -ESHUTDOWN || r == -ECONNREFUSED;
}

void SystemdBus::Disconnect() {
  bus_.reset();
  if (handlers_.disconnected) handlers_.disconnected();
}

core::Status SystemdBus::Failed(std::string what, int r) {
  if (ConnectionLost(r)) Disconnect();
  return core::Fail(std::move(what));
}

core::Status SystemdBus::Connect() {
  if (bus_ != nullptr) {
    // A connection whose bus went while it lay idle (dbus-daemon restarted)
    // says so only once read: what is there is read first, and a closed
    // one is made again rather than failing the calls about to be sent.
    int r = Drain();
    if (!(r < 0 && ConnectionLost(r)) && sd_bus_is_open(bus_->bus) > 0) return core::Ok();
    Disconnect();
  }
  if (auto st = LoadSdBus(); !st) return st;
  auto c = std::make_unique<Connection>();
  const char* address = std::getenv("DBUS_SYSTEM_BUS_ADDRESS");
  // As sd_bus_open_system, but with the call timeout set before the bus's
  // Hello is sent: a bus that never answers it is bounded like any call.
  int r = sd_bus_new(&c->bus);
  if (r >= 0) r = sd_bus_set_address(c->bus, address != nullptr ? address : kDefaultAddress);
  if (r >= 0) r = sd_bus_set_bus_client(c->bus, 1);
  if (r >= 0) r = sd_bus_set_method_call_timeout(c->bus, Usec(kCallTimeout));
  if (r >= 0) r = sd_bus_start(c->bus);
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
      c->bus, &c->job_removed, kDest, kSystemdPath, kManagerIface, "JobRemoved",
      [](sd_bus_message* m, void* userdata, sd_bus_error*) -> int {
        auto* self = static_cast<SystemdBus*>(userdata);
        uint32_t id;
        const char *job, *unit, *result;
        if (sd_bus_message_read(m, "uoss", &id, &job, &unit, &result) >= 0 &&
            self->handlers_.job_removed) {
          self->handlers_.job_removed(job, result);
        }
        return 0;
      },
      this);
  if (r < 0) return core::Fail(std::string("subscribe to JobRemoved: ") + std::strerror(-r));
  ErrorGuard err;
  r = sd_bus_call_method(c->bus, kDest, kSystemdPath, kManagerIface, "Subscribe", &err.e, nullptr,
                         "");
  if (r < 0) return core::Fail(Describe("Subscribe", err.e, r));
  bus_ = std::move(c);
  return core::Ok();
}

core::Status SystemdBus::WatchPropertiesChanged() {
  if (auto st = Connect(); !st) return st;
  if (bus_->properties_changed != nullptr) return core::Ok();
  int r = sd_bus_match_signal(
      bus_->bus, &bus_->properties_changed, kDest, nullptr, kPropertiesIface, "PropertiesChanged",
      [](sd_bus_message* m, void* userdata, sd_bus_error*) -> int {
        auto* self = static_cast<SystemdBus*>(userdata);
        const char* path = sd_bus_message_get_path(m);
        if (path != nullptr && self->handlers_.properties_changed) {
          self->handlers_.properties_changed(path);
        }
        return 0;
      },
      this);
  if (r < 0) return core::Fail(std::string("subscribe to PropertiesChanged: ") + std::strerror(-r));
  return core::Ok();
}

SystemdBus::Reply SystemdBus::CallOne(const Call& call, std::chrono::nanoseconds timeout) {
  Reply out;
  out.what = call.what;
  if (auto st = Connect(); !st) {
    out.error = st.error().message;
    return out;
  }
  // The message's own error (a closed bus) is judged as the call's.
  Message m;
  ErrorGuard err;
  sd_bus_message* reply = nullptr;
  int r = NewCall(bus_->bus, call, m);
  if (r >= 0) r = sd_bus_call(bus_->bus, m.get(), Usec(timeout), &err.e, &reply);
  out.message.reset(reply);
  if (r < 0) {
    out.error = Failed(Describe(call.what, err.e, r), r).error().message;
    out.error_name = err.e.name != nullptr ? err.e.name : "";
    out.message.reset();
  }
  return out;
}

namespace {

// A call of CallAll's on its way: its reply, once there.
struct PendingCall {
  sd_bus_message* reply = nullptr;
  bool done = false;

  static int OnReply(sd_bus_message* m, void* userdata, sd_bus_error* /*error*/) {
    auto* p = static_cast<PendingCall*>(userdata);
    p->reply = sd_bus_message_ref(m);
    p->done = true;
    return 0;
  }
};

}  // namespace

std::vector<SystemdBus::Reply> SystemdBus::CallAll(const std::vector<Call>& calls) {
  std::vector<Reply> out(calls.size());
  for (size_t i = 0; i < calls.size(); ++i) out[i].what = calls[i].what;
  if (auto st = Connect(); !st) {
    for (Reply& o : out) o.error = st.error().message;
    return out;
  }
  std::vector<PendingCall> pending(calls.size());
  std::vector<sd_bus_slot*> slots(calls.size(), nullptr);
  bool lost = false;
  // A call sd-bus gave up on after kCallTimeout: dbus-daemon still counts it
  // as awaiting its reply (it never times calls out), and what is sent to a
  // systemd that stalled would run blind. Nothing more is sent.
  bool stalled = false;
  size_t sent = 0;
  size_t answered = 0;  // calls 0..answered-1 have their reply
  auto can_send = [&] {
    return !lost && !stalled && sent < calls.size() && sent - answered < kCallsInFlight;
  };
  auto send_more = [&] {
    while (can_send()) {
      size_t i = sent++;
      Message call;
      int r = NewCall(bus_->bus, calls[i], call);
      if (r >= 0) {
        r = sd_bus_call_async(bus_->bus, &slots[i], call.get(), PendingCall::OnReply, &pending[i],
                              Usec(kCallTimeout));
      }
      if (r < 0) {
        pending[i].done = true;
        out[i].error = out[i].what + ": " + std::strerror(-r);
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
    r = Process(
        [&] {
          count_answered();
          return answered == sent || can_send();
        },
        std::chrono::steady_clock::now() + kRepliesDeadline);
    lost = lost || (r < 0 && ConnectionLost(r));
    count_answered();
    if (lost || r < 0 || answered == before) break;
  }
  // A bus that closed answers every call awaiting its reply itself
  // ("Connection terminated"), so the batch ends as if answered: the
  // connection is lost all the same.
  lost = lost || sd_bus_is_open(bus_->bus) <= 0;
  for (size_t i = sent; i < calls.size(); ++i) {
    out[i].error = out[i].what + ": not sent: " +
                   (lost      ? std::string("the connection was lost")
                    : stalled ? "systemd left a call unanswered for " +
                                    std::to_string(kCallTimeout.count()) + " s"
                              : std::string("the bus stopped answering"));
  }
  for (size_t i = 0; i < pending.size(); ++i) {
    sd_bus_slot_unref(slots[i]);
    TakeReply(Message(pending[i].reply), r, out[i]);
  }
  if (lost || (r < 0 && ConnectionLost(r))) Disconnect();
  return out;
}

int SystemdBus::Drain() {
  int r;
  while ((r = sd_bus_process(bus_->bus, nullptr)) > 0) {
  }
  return r;
}

int SystemdBus::Process(const std::function<bool()>& done,
                        std::chrono::steady_clock::time_point deadline) {
  int failed = 0;
  for (;;) {
    // Everything queued (signals may have arrived with method replies).
    int r = Drain();
    if (r < 0 && ConnectionLost(r)) return r;
    if (r < 0) failed = r;
    auto now = std::chrono::steady_clock::now();
    if (done()) return 0;
    if (now >= deadline) return failed;
    sd_bus_wait(bus_->bus, Usec(deadline - now));
  }
}

core::Status SystemdBus::ProcessUntil(const std::function<bool()>& done,
                                      std::chrono::steady_clock::time_point deadline) {
  if (auto st = Connect(); !st) return st;
  int r = Process(done, deadline);
  if (r >= 0) return core::Ok();
  if (!ConnectionLost(r)) return core::Fail(std::string("reading the bus: ") + std::strerror(-r));
  Disconnect();
  return core::Fail(std::string("the bus connection was lost (") + std::strerror(-r) + ")");
}

core::Result<std::string> SystemdBus::UnitPath(const std::string& unit) const {
  if (auto st = LoadSdBus(); !st) return std::unexpected(st.error());
  char* path = nullptr;
  int r = sd_bus_path_encode("/org/freedesktop/systemd1/unit", unit.c_str(), &path);
  if (r < 0) return core::Fail("unit path of " + unit + ": " + std::strerror(-r));
  std::string out = path;
  free(path);
  return out;
}

}  // namespace mesh::adapters
