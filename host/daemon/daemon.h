// The daemon of `mesh-host run`: reconcile now, every --interval, when the
// declaration file changes (inotify on its directory, so the link's atomic
// rename is seen; debounced), and on SIGHUP — never two applies at once; and
// between applies, and during one at the units it does not act on, follow
// the declared units live, so a daemon that dies shows on /status, /healthz
// and /metrics within seconds.
//
// Signals and declaration changes come from an EventSource, read between
// applies: an apply in progress always finishes (every file whole, the
// record saved) before a SIGTERM stops the daemon. When to apply and when to
// pet the watchdog is the Schedule's to say, on the injected Clock; what is
// told to systemd during an apply, the Keepalive's.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "host/core/result.h"
#include "host/daemon/log.h"
#include "host/daemon/watch_sight.h"
#include "host/ports/clock.h"
#include "host/ports/declaration_source.h"
#include "host/ports/event_source.h"
#include "host/ports/notifier.h"
#include "host/ports/service_manager.h"
#include "host/reconcile/reconciler.h"
#include "host/status/status_board.h"
#include "metrics/host_metrics.h"

namespace mesh::daemon {

struct DaemonOptions {
  // The declaration's path (its directory is watched) and how one apply
  // opens it (serve_main.cc: adapters::FileDeclaration).
  std::string declaration;
  std::function<core::Result<std::unique_ptr<ports::DeclarationSource>>()> open_declaration;
  std::chrono::nanoseconds interval = std::chrono::minutes(5);
  std::chrono::nanoseconds debounce = std::chrono::milliseconds(200);
  // The watch re-reads every unit this often even without a signal.
  std::chrono::nanoseconds watch_refresh = std::chrono::seconds(10);
  // An apply that takes no step for this long is stuck (stall_watch.h).
  // One step may rightly take minutes: unpacking a bundle of 200,000 files
  // fsyncs each, hashing a 1 GiB tree reads it all.
  std::chrono::nanoseconds stall_after = std::chrono::minutes(10);
  // Log `unchanged` outcomes too (--verbose); else a quiet interval leaves
  // one summary line, not one per resource.
  bool verbose = false;
  // Called on SIGHUP before the apply it triggers (serve_main.cc: reload the
  // --web-config).
  std::function<void()> on_sighup;
  // Called after every apply, which allocates and frees a lot (the
  // declaration, the record), to hand the freed pages back so the idle
  // daemon stays small (serve_main.cc: adapters::ReleaseFreedHeap).
  std::function<void()> release_memory;
};

class Daemon {
 public:
  // `watch`: null follows no unit between applies.
  Daemon(DaemonOptions options, reconcile::Reconciler& reconciler, status::StatusBoard& board,
         metrics::HostMetrics& metrics, ports::ServiceManager* watch, ports::Notifier& notifier,
         ports::EventSource& events, ports::Clock& clock, Log& log);
  ~Daemon();

  // Runs until a stop event (SIGTERM, SIGINT); returns the process exit
  // code (1 when the event source failed).
  int Run();
  // What the record says, for /status and the units' series until the
  // first apply ends: the machine's truth from the first scrape on. Called
  // before the listener opens; Run calls it if nobody did.
  void ShowRecorded();

 private:
  // `starting`: the first apply, before READY=1.
  // Whether a removal of that apply waits for a unit to stop.
  bool ApplyOnce(const std::string& why, bool starting = false);
  core::ApplyReport ApplyUnderKeepalive(bool starting);
  // The apply's outcomes and summary to the log, the board, the metrics
  // and systemd's STATUS=.
  void Publish(core::ApplyReport report, const std::string& why);
  // What the watch carries from one turn to the next.
  struct WatchState {
    std::chrono::steady_clock::time_point last_full;  // its last read of every unit
    std::optional<uint64_t> applies_seen;  // apply_edges_ at the last verdicts taken; none yet
    bool read_now = false;                 // an apply just ended: read without waiting for a signal
    // Units seen up but not yet for a settle (the board's streak).
    std::set<std::string> unconfirmed;
  };
  void WatchLoop();
  void WatchTurn(WatchState& state);
  void TakeVerdicts(WatchState& state, uint64_t ended);
  // The watch's look at `units`, taken while apply_edges_ reads `edges`
  // (odd: during an apply, at units it has not in hand): the first unit's
  // read error, or empty when every read worked; nothing when an apply
  // began or ended meanwhile (the apply's own looks judge what it does to
  // its units).
  // `unconfirmed`: what is seen up but not yet called up, kept current.
  std::optional<std::string> WatchLook(const std::vector<std::string>& units, uint64_t edges,
                                       std::set<std::string>& unconfirmed);
  // What WatchSight says, to the log and the board.
  void TellSight(const WatchSight::Say& say, Priority priority);

  DaemonOptions options_;
  reconcile::Reconciler& reconciler_;
  status::StatusBoard& board_;
  metrics::HostMetrics& metrics_;
  ports::ServiceManager* watch_;
  ports::Notifier& notifier_;
  ports::EventSource& events_;
  ports::Clock& clock_;
  Log& log_;
  std::atomic<bool> stopping_{false};
  // Counted up as an apply begins and as it ends (published): odd while one
  // runs. The watch publishes nothing it read while the count moved.
  std::atomic<uint64_t> apply_edges_{0};
  // Held by the watch from its check of apply_edges_ through its publish,
  // and by an apply as it begins and from its end through its Publish: a
  // look read before an apply is never published over that apply's
  // verdict, nor one read during it between the verdict and its picture.
  std::mutex publish_mu_;
  // The watch's last look at each unit it published while the apply under
  // way ran: laid over the apply's report where the apply's own look at
  // the unit came first. Under publish_mu_.
  struct LaterLook {
    core::UnitStatus status;
    bool up = false;  // as the board judged it
    uint64_t at = 0;  // Progress::Now() when the read began
  };
  std::map<std::string, LaterLook> later_looks_;
  bool recorded_shown_ = false;
  std::thread watch_thread_;
  // Each unit as the watch last saw it (or the apply's verdict said): up,
  // and its NRestarts. Watch thread only.
  struct LastSeen {
    bool up = false;
    uint32_t n_restarts = 0;
  };
  std::map<std::string, LastSeen> last_seen_;
  WatchSight sight_;  // watch thread only
};

}  // namespace mesh::daemon
