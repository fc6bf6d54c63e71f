// LinuxEventSource: the daemon's EventSource on Linux — SIGHUP, SIGTERM and
// SIGINT read from a signalfd, and the declaration's directory watched with
// inotify (so the link's atomic rename over the file is seen, and a new
// .minisig beside it), both waited on with poll.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <deque>
#include <memory>
#include <string>

#include "host/adapters/unique_fd.h"
#include "host/core/result.h"
#include "host/ports/event_source.h"

namespace mesh::adapters {

// Blocks SIGHUP, SIGTERM and SIGINT in the calling thread and every thread
// started after it, so that only the signalfd receives them. Call first
// thing in main, before any thread exists.
void BlockDaemonSignals();

class LinuxEventSource : public ports::EventSource {
 public:
  // Fails only when the signals cannot be read. A directory that cannot be
  // watched leaves `warning` set: changes are then seen at the next
  // interval or SIGHUP, until the directory can be watched (it is tried
  // again at every wait).
  static core::Result<std::unique_ptr<LinuxEventSource>> Open(const std::string& declaration,
                                                              std::string* warning);

  ports::Event Wait(std::chrono::nanoseconds timeout) override;
  // SIGTERM or SIGINT pending: blocked in every thread, a signal waits in
  // the process's pending set until the signalfd is read.
  bool StopPending() const override;

 private:
  LinuxEventSource(UniqueFd signals, UniqueFd watch, std::string dir, std::string name);
  void ReadSignals();
  void ReadWatch();
  // The watch again, when its directory went away and is back.
  void Rewatch();
  // When the declaration is a link into another directory (a release
  // directory beside the one it is named in), that directory is watched
  // too: a file renamed over there, or written in place, moves nothing in
  // the declaration's own. Followed as the link is pointed elsewhere.
  void WatchTarget();
  // What one wait read, as what the daemon must act on (see .cc).
  void Collapse();

  // What the declaration's path leads to, links followed: all zero when
  // nothing is there.
  struct Identity {
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    time_t mtime = 0;
    long mtime_ns = 0;
    time_t ctime = 0;
    long ctime_ns = 0;
    bool operator==(const Identity&) const = default;
  };
  Identity Look() const;

  UniqueFd signals_;
  UniqueFd watch_;  // invalid when inotify could not be had
  bool watched_ = true;
  Identity seen_;
  std::string dir_;
  std::string name_;
  int dir_wd_ = -1;  // the watch of the declaration's own directory
  // The watch of the directory above it, for the name of its own: a
  // watch follows the directory it was made on, so one moved away (or a
  // link to it re-pointed) for another in its place is watched again.
  int parent_wd_ = -1;
  int target_wd_ = -1;      // the target's directory's watch, when another's
  std::string target_dir_;  // that directory, as realpath names it
  std::deque<ports::Event> ready_;
};

}  // namespace mesh::adapters
