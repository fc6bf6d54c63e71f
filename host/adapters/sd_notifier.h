// SdNotifier: the Notifier port over libsystemd's sd_notify. Without
// NOTIFY_SOCKET (not run by systemd) every call is a no-op, and libsystemd
// is not loaded for it.
#pragma once

#include "host/ports/notifier.h"

namespace mesh::adapters {

class SdNotifier : public ports::Notifier {
 public:
  void Ready() override;
  void Status(const std::string& line) override;
  void Watchdog() override;
  void Stopping() override;
  void ExtendTimeout(std::chrono::nanoseconds by) override;
  std::chrono::nanoseconds WatchdogInterval() override;
  std::string Unavailable() override;
};

}  // namespace mesh::adapters
