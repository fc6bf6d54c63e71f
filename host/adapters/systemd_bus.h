// SystemdBus: one connection to systemd over D-Bus, the transport under
// SdbusServiceManager.
//
// Its .cc is the only file in mesh-host that includes <systemd/sd-bus.h>. It
// loads libsystemd and connects on the first Connect (DBUS_SYSTEM_BUS_ADDRESS
// when set, as sd_bus_open_system would), every call bounded by a timeout
// from the Hello on; it sends a batch of calls pipelined, never more than
// dbus-daemon lets one connection await, and decodes replies into the
// host's shapes (an object path, a flag, a unit's properties through
// unit_properties.h). It hands the manager's JobRemoved and, once asked,
// PropertiesChanged signals to its handlers. Which calls to make, and what
// their answers mean for jobs and units, is SdbusServiceManager's.
//
// A lost connection is let go of (the `disconnected` handler hears it) and
// made again by the next Connect. Every error is a value naming the call and
// the D-Bus error.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/result.h"
#include "host/core/unit_status.h"

// sd-bus's message type, declared so this header need not include sd-bus.
struct sd_bus_message;

namespace mesh::adapters {

inline constexpr const char* kSystemdPath = "/org/freedesktop/systemd1";
inline constexpr const char* kManagerIface = "org.freedesktop.systemd1.Manager";
inline constexpr const char* kUnitIface = "org.freedesktop.systemd1.Unit";
inline constexpr const char* kServiceIface = "org.freedesktop.systemd1.Service";
inline constexpr const char* kPropertiesIface = "org.freedesktop.DBus.Properties";
inline constexpr const char* kUnknownProperty = "org.freedesktop.DBus.Error.UnknownProperty";

class SystemdBus {
 public:
  // The argument shapes of the methods the host calls.
  enum class Args {
    kNone,
    kString,       // s: first
    kTwoStrings,   // ss: first, second
    kEnableFile,   // asbb: [first], runtime=false, force=false
    kDisableFile,  // asb: [first], runtime=false
  };
  struct Call {
    std::string path;  // the object's
    const char* iface;
    const char* member;
    Args args = Args::kNone;
    std::string first{};
    std::string second{};
    std::string what;  // names the call in an error ("GetAll … u.service")
  };

  struct MessageDeleter {
    void operator()(sd_bus_message* m) const;
  };
  // One call's reply, or why there is none (`error`, and the D-Bus error's
  // name when systemd answered with one).
  struct Reply {
    std::unique_ptr<sd_bus_message, MessageDeleter> message;
    std::string what;
    std::string error;
    std::string error_name;

    bool ok() const { return error.empty(); }
    // Each reads the message from where the last read left it: one of them,
    // once, per reply. The reply's one value, of the shape named (o, b).
    core::Result<std::string> ObjectPath() const;
    core::Result<bool> Flag() const;
    // A Get's variant of shape as.
    core::Result<std::vector<std::string>> Strings() const;
    // A GetAll's a{sv}, each property the host reads set into `s`
    // (unit_properties.h).
    core::Status Properties(core::UnitStatus& s) const;
    // A Get's variant, the value of property `name`.
    core::Status Property(std::string_view name, core::UnitStatus& s) const;
  };

  struct Handlers {
    std::function<void(const char* job, const char* result)> job_removed;
    std::function<void(const char* path)> properties_changed;
    std::function<void()> disconnected;
  };

  explicit SystemdBus(Handlers handlers);
  ~SystemdBus();
  SystemdBus(const SystemdBus&) = delete;
  SystemdBus& operator=(const SystemdBus&) = delete;

  // Loads libsystemd, connects, subscribes to JobRemoved and to the
  // manager's signals; nothing when connected.
  core::Status Connect();
  bool connected() const { return bus_ != nullptr; }
  void Disconnect();
  // Subscribes this connection to PropertiesChanged (once per connection).
  core::Status WatchPropertiesChanged();

  // Sends the calls, at most kCallsInFlight awaiting their replies at once,
  // and collects every reply, each bounded by the call timeout; once one
  // goes unanswered that long, the rest are not sent.
  std::vector<Reply> CallAll(const std::vector<Call>& calls);
  // One call, waited for up to `timeout`; zero: the bus's call timeout (a
  // daemon-reload is given longer).
  Reply CallOne(const Call& call, std::chrono::nanoseconds timeout = {});

  // Processes what the bus delivers until `done()` or `deadline`. An error
  // when the connection is lost (at once; it is let go of) or, at the
  // deadline, the last error met on the way (the connection kept).
  core::Status ProcessUntil(const std::function<bool()>& done,
                            std::chrono::steady_clock::time_point deadline);

  // The unit's object path, computed as systemd escapes it: reaching it
  // loads the unit as LoadUnit would, so no round trip asks for it.
  core::Result<std::string> UnitPath(const std::string& unit) const;

  // Whether an error ended the connection (the `r` of sd-bus's calls).
  static bool ConnectionLost(int r);

 private:
  struct Connection;  // sd-bus state, kept out of this header
  // ProcessUntil's loop: 0 when done; a lost connection's negative errno at
  // once; at the deadline, the last error met on the way (0 if none).
  int Process(const std::function<bool()>& done, std::chrono::steady_clock::time_point deadline);
  // Dispatches everything queued on the connection: sd-bus's last answer
  // (0: nothing left; negative: an error, a lost connection among them).
  int Drain();
  // `what` failed with sd-bus's `r`: a lost connection is let go of.
  core::Status Failed(std::string what, int r);
  Handlers handlers_;
  std::unique_ptr<Connection> bus_;
};

}  // namespace mesh::adapters
