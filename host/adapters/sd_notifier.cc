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
// by systemd does not load it for these. A load that failed is tried again
// at the next call; until one succeeds the calls do nothing and
// Unavailable() says why.
struct SdDaemon {
  decltype(&::sd_notify) notify = nullptr;
  decltype(&::sd_watchdog_enabled) watchdog_enabled = nullptr;
  std::string error;
};

SdDaemon Libsystemd() {
  static std::mutex mu;
  static SdDaemon loaded;
  static bool done = false;
  std::lock_guard<std::mutex> lock(mu);
  if (done) return loaded;
  if (std::getenv("NOTIFY_SOCKET") == nullptr && std::getenv("WATCHDOG_USEC") == nullptr) {
    done = true;
    return loaded;
  }
  SdDaemon d;
  auto lib = SharedLibrary::Open("libsystemd.so.0");
  core::Status bound = lib ? lib->Bind("sd_notify", d.notify) : std::unexpected(lib.error());
  if (bound) bound = lib->Bind("sd_watchdog_enabled", d.watchdog_enabled);
  if (!bound) return SdDaemon{nullptr, nullptr, bound.error().message};
  loaded = d;
  done = true;
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

std::string SdNotifier::Unavailable() { return Libsystemd().error; }

}  // namespace mesh::adapters
