#include "host/adapters/sd_notifier.h"

#include <systemd/sd-daemon.h>

#include <cstdlib>
#include <string>

#include "host/base/shared_library.h"

namespace mesh::adapters {
namespace {

// libsystemd is loaded only where a call can do something: without
// NOTIFY_SOCKET sd_notify sends nothing, and without WATCHDOG_USEC there is
// no watchdog (sd_notify(3), sd_watchdog_enabled(3)); a daemon not started
// by systemd does not load it for these. A load that failed is tried again
// at the next call; until one succeeds the calls do nothing and
// Unavailable() says why.
struct SdDaemon {
  decltype(&::sd_notify) notify = nullptr;
  decltype(&::sd_watchdog_enabled) watchdog_enabled = nullptr;
  std::string error;
};

SdDaemon Libsystemd() {
  if (std::getenv("NOTIFY_SOCKET") == nullptr && std::getenv("WATCHDOG_USEC") == nullptr) {
    return SdDaemon{};
  }
  static base::LoadOnce once;
  static SdDaemon loaded;
  auto bound = once([]() -> core::Status {
    auto lib = base::SharedLibrary::Open("libsystemd.so.0");
    if (!lib) return std::unexpected(lib.error());
    if (auto st = lib->Bind("sd_notify", loaded.notify); !st) return st;
    return lib->Bind("sd_watchdog_enabled", loaded.watchdog_enabled);
  });
  if (!bound) return SdDaemon{nullptr, nullptr, bound.error().message};
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

void SdNotifier::ExtendTimeout(std::chrono::nanoseconds by) {
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

std::string SdNotifier::Unavailable() { return Libsystemd().error; }

}  // namespace mesh::adapters
