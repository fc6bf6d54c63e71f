#include "host/adapters/sd_notifier.h"

#include <systemd/sd-daemon.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include "host/adapters/shared_library.h"

namespace mesh::adapters {
namespace {

// libsystemd is loaded only where a call can do something: without
// NOTIFY_SOCKET sd_notify sends nothing, and without WATCHDOG_USEC there is
// no watchdog (sd_notify(3), sd_watchdog_enabled(3)); a daemon not started
// by systemd never loads it for these. One started by systemd loads it for
// each call and closes it after: libsystemd brings six libraries
// (libgcrypt among them), 0.4-1 MiB of private memory, to keep between
// watchdog pings half a minute apart for a load of about 0.5 ms. A daemon
// that talks to systemd over sd-bus holds the library anyway
// (sdbus_service_manager.cc); the close then unmaps nothing.
bool Wanted() {
  return std::getenv("NOTIFY_SOCKET") != nullptr || std::getenv("WATCHDOG_USEC") != nullptr;
}

struct Loads {
  std::mutex mu;
  std::string unavailable;  // why the last load failed; guarded by mu
};
Loads& loads() {
  static auto* l = new Loads;  // never destroyed: a call may come at exit
  return *l;
}

// Runs `use` with libsystemd's functions bound, then closes the library.
// False (and Unavailable() says why) when it could not be loaded.
template <typename Use>
bool WithLibsystemd(Use use) {
  if (!Wanted()) return false;
  std::lock_guard<std::mutex> lock(loads().mu);
  std::string& unavailable = loads().unavailable;
  auto lib = SharedLibrary::Open("libsystemd.so.0");
  if (!lib) {
    unavailable = lib.error().message;
    return false;
  }
  decltype(&::sd_notify) notify = nullptr;
  decltype(&::sd_watchdog_enabled) watchdog_enabled = nullptr;
  core::Status bound = lib->Bind("sd_notify", notify);
  if (bound) bound = lib->Bind("sd_watchdog_enabled", watchdog_enabled);
  if (!bound) {
    unavailable = bound.error().message;
  } else {
    unavailable.clear();
    use(notify, watchdog_enabled);
  }
  lib->Close();
  return bound.has_value();
}

void Notify(const std::string& line) {
  WithLibsystemd([&](auto notify, auto) { notify(0, line.c_str()); });
}

}  // namespace

void SdNotifier::Ready() { Notify("READY=1"); }

void SdNotifier::Status(const std::string& line) { Notify("STATUS=" + line); }

void SdNotifier::Watchdog() { Notify("WATCHDOG=1"); }

void SdNotifier::Stopping() { Notify("STOPPING=1"); }

void SdNotifier::ExtendStart(std::chrono::nanoseconds by) {
  auto usec = std::chrono::duration_cast<std::chrono::microseconds>(by).count();
  Notify("EXTEND_TIMEOUT_USEC=" + std::to_string(usec));
}

std::chrono::nanoseconds SdNotifier::WatchdogInterval() {
  uint64_t usec = 0;
  int enabled = 0;
  WithLibsystemd([&](auto, auto watchdog_enabled) { enabled = watchdog_enabled(0, &usec); });
  if (enabled <= 0 || usec == 0) return std::chrono::nanoseconds(0);
  return std::chrono::microseconds(usec / 2);
}

std::string SdNotifier::Unavailable() {
  // A load tried now: the daemon asks before anything else was sent.
  WithLibsystemd([](auto, auto) {});
  std::lock_guard<std::mutex> lock(loads().mu);
  return Wanted() ? loads().unavailable : std::string();
}

}  // namespace mesh::adapters
