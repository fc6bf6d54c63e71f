#include "host/adapters/sd_notifier.h"

#include <systemd/sd-daemon.h>

#include <string>

namespace mesh::adapters {

void SdNotifier::Ready() { sd_notify(0, "READY=1"); }

void SdNotifier::Status(const std::string& line) { sd_notify(0, ("STATUS=" + line).c_str()); }

void SdNotifier::Watchdog() { sd_notify(0, "WATCHDOG=1"); }

void SdNotifier::Stopping() { sd_notify(0, "STOPPING=1"); }

void SdNotifier::ExtendStart(std::chrono::nanoseconds by) {
  auto usec = std::chrono::duration_cast<std::chrono::microseconds>(by).count();
  sd_notify(0, ("EXTEND_TIMEOUT_USEC=" + std::to_string(usec)).c_str());
}

std::chrono::nanoseconds SdNotifier::WatchdogInterval() {
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) return std::chrono::nanoseconds(0);
  return std::chrono::microseconds(usec / 2);
}

}  // namespace mesh::adapters
