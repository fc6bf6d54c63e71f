// The daemon's log: one line per event on stderr. When stderr is the
// journal (JOURNAL_STREAM), lines carry the syslog priority prefix, so
// `journalctl -p err` finds failures.
#pragma once

#include <mutex>
#include <string>

namespace mesh::daemon {

enum class Priority { kErr = 3, kWarning = 4, kNotice = 5, kInfo = 6 };

class Log {
 public:
  Log();
  void Line(Priority priority, const std::string& text);

 private:
  bool journal_;
  std::mutex mu_;
};

}  // namespace mesh::daemon
