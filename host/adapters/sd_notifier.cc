#include "host/adapters/sd_notifier.h"

#include <systemd/sd-daemon.h>

#include <cstdlib>
#include <string>

#include "host/adapters/shared_library.h"

namespace mesh::adapters {
namespace {

// libsystemd is loaded only where a call can do something: without
// NOTIFY_SOCKET sd_notify sends nothing, and without WATCHDOG_USEC there is
// no watchdog (sd_notify(3), sd_watchdog_enabled(3)); a daemon not started
// by systemd does not load it for these. Where it cannot be loaded the
// calls do nothing, as they would outside systemd; systemd then sees no
// READY=1 and says so.
struct Daemon {
  decltype(&::sd_notify) notify = nullptr;
  decltype(&::sd_watchdog_enabled) watchdog_enabled = nullptr;
};

const Daemon& Libsystemd() {
  static const Daemon loaded = [] {
    Daemon d;
    if (std::getenv("NOTIFY_SOCKET") == nullptr && std::getenv("WATCHDOG_USEC") == nullptr)
      return d;
    auto lib = SharedLibrary::Open("libsystemd.so.0");
    if (!lib) return d;
    if (!lib->Bind("sd_notify", d.notify) ||
        !lib->Bind("sd_watchdog_enabled", d.watchdog_enabled)) {
      return Daemon{};
    }
    return d;
  }();
  return loaded;
}

void Notify(const std::string& line) {
  if (auto notify = Libsystemd().notify; notify != nullptr) notify(0, line.c_str());
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
  auto watchdog_enabled = Libsystemd().watchdog_enabled;
  uint64_t usec = 0;
  if (watchdog_enabled == nullptr || watchdog_enabled(0, &usec) <= 0 || usec == 0) {
    return std::chrono::nanoseconds(0);
  }
  return std::chrono::microseconds(usec / 2);
}

}  // namespace mesh::adapters
