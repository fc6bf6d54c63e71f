#include "host/daemon/daemon.h"

#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <stop_token>
#include <thread>

#include "host/core/time_format.h"
#include "host/daemon/stall_watch.h"

namespace mesh::daemon {
namespace {

using Clock = std::chrono::steady_clock;

// While the first apply runs, the start timeout is pushed this far out,
// this often.
constexpr std::chrono::seconds kExtendBy{30};
constexpr std::chrono::seconds kExtendEvery{10};
// ... but not for ever: a first apply that never ends (a local file system
// that hangs) lets systemd's start timeout act rather than block the boot.
constexpr std::chrono::minutes kExtendAtMost{30};

sigset_t DaemonSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

std::pair<std::string, std::string> SplitPath(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

Priority PriorityOf(core::Outcome o) {
  switch (o) {
    case core::Outcome::kFailed:
      return Priority::kErr;
    case core::Outcome::kUnchanged:
      return Priority::kInfo;
    default:
      return Priority::kNotice;
  }
}

}  // namespace

void BlockSignals() {
  sigset_t set = DaemonSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

Daemon::Daemon(DaemonOptions options, reconcile::Reconciler& reconciler, status::StatusBoard& board,
               metrics::HostMetrics& metrics, ports::ServiceManager* watch,
               ports::Notifier& notifier, ports::Clock& clock, Log& log)
    : options_(std::move(options)),
      reconciler_(reconciler),
      board_(board),
      metrics_(metrics),
      watch_(watch),
      notifier_(notifier),
      clock_(clock),
      log_(log) {}

Daemon::~Daemon() {
  stopping_ = true;
  if (watch_thread_.joinable()) watch_thread_.join();
}

void Daemon::ApplyOnce(const std::string& why, bool starting) {
  // An apply may rightly outlast the watchdog's period (the first apply of
  // 100,000 files takes over a minute; a restart's settle pause alone can
  // exceed a short WatchdogSec), and the main loop cannot pet while it runs:
  // systemd would kill the daemon mid-apply, and again after every restart.
  // Every call an apply makes is bounded, so it is kept alive while it runs.
  // The first apply runs before READY=1, under systemd's start timeout: it
  // is extended the same way, so a machine's first convergence at boot is
  // not killed half-way (units ordered after mesh-host start once it is).
  std::jthread keepalive;
  auto pet = notifier_.WatchdogInterval();
  if (pet.count() > 0 || starting) {
    auto every = pet.count() > 0 ? std::min<std::chrono::nanoseconds>(pet, kExtendEvery)
                                 : std::chrono::nanoseconds(kExtendEvery);
    auto extend_until = clock_.Monotonic() + kExtendAtMost;
    keepalive = std::jthread([this, every, pet, starting, extend_until](std::stop_token stop) {
      std::mutex m;
      std::condition_variable_any cv;
      std::unique_lock lock(m);
      StallWatch stall(options_.stall_after, reconciler_.progress().steps(), clock_.Monotonic());
      bool told = false;
      do {
        auto now = clock_.Monotonic();
        if (stall.Progressing(reconciler_.progress().steps(), now)) {
          if (starting && now < extend_until) notifier_.ExtendStart(kExtendBy);
          if (pet.count() > 0) notifier_.Watchdog();
          if (told) board_.SetStalled(std::nullopt);
          told = false;
        } else if (!told) {
          std::string why = "the apply under way has made no progress for " +
                            core::FormatSeconds(stall.Still(now)) +
                            "; no longer telling systemd's watchdog the host is alive";
          log_.Line(Priority::kErr, why);
          board_.SetStalled(why);
          told = true;
        }
        cv.wait_for(lock, stop, every, [] { return false; });  // wakes on stop
      } while (!stop.stop_requested());
    });
  }
  reconcile::ApplyReport report;
  auto declaration = options_.open_declaration();
  if (!declaration) {
    report.result = reconcile::ApplyResult::kRefused;
    report.error = declaration.error().message;
    report.started_at = report.finished_at = clock_.Now();
  } else {
    report = reconciler_.Apply(**declaration);
  }
  for (const std::string& w : report.warnings) log_.Line(Priority::kWarning, "warning: " + w);
  size_t failed = 0, changed = 0;
  for (const core::ResourceOutcome& o : report.outcomes) {
    if (options_.verbose || o.outcome != core::Outcome::kUnchanged) {
      log_.Line(PriorityOf(o.outcome), core::FormatOutcomeLine(o));
    }
    failed += o.outcome == core::Outcome::kFailed;
    changed += o.outcome != core::Outcome::kUnchanged && o.outcome != core::Outcome::kFailed;
  }
  std::string summary;
  if (report.result == reconcile::ApplyResult::kRefused) {
    summary =
        "declaration refused: " +
        (report.refusals.empty() ? report.error : report.error.substr(0, report.error.find(':'))) +
        "; generation " + std::to_string(board_.Get()->generation) + " stays in force";
    log_.Line(Priority::kErr, summary);
    for (const std::string& r : report.refusals) log_.Line(Priority::kErr, "  " + r);
  } else {
    if (!report.error.empty()) log_.Line(Priority::kErr, report.error);
    summary = "generation " + std::to_string(report.generation) + ": " +
              std::to_string(report.outcomes.size()) + " resource(s), " + std::to_string(changed) +
              " changed, " + std::to_string(failed) + " failed (" + why + ", " +
              core::FormatSeconds(report.duration) + ")";
    log_.Line(failed > 0 ? Priority::kErr : Priority::kInfo,
              "apply " + std::string(reconcile::ApplyResultName(report.result)) + ": " + summary);
  }
  board_.PublishApply(report);
  metrics_.ObserveApply(report);
  notifier_.Status(summary);
  // An apply allocates and frees a lot (the declaration, the record); hand
  // the freed pages back so the idle daemon stays small.
  malloc_trim(0);
}

void Daemon::WatchLoop() {
  auto last_full = clock_.Monotonic() - options_.watch_refresh;
  while (!stopping_) {
    std::vector<std::string> units = board_.WatchedUnits();
    if (units.empty() || watch_ == nullptr) {
      clock_.SleepFor(std::chrono::milliseconds(200));
      continue;
    }
    std::vector<std::string> changed = watch_->WaitForUnitChanges(units, std::chrono::seconds(1));
    bool full = clock_.Monotonic() - last_full >= options_.watch_refresh;
    if (changed.empty() && !full) continue;
    if (full) {
      changed = units;
      last_full = clock_.Monotonic();
    }
    // Read at once (pipelined): the full refresh reads every declared unit.
    std::vector<core::Result<core::UnitStatus>> statuses = watch_->ReadUnits(changed);
    for (size_t i = 0; i < changed.size(); ++i) {
      const std::string& unit = changed[i];
      const core::Result<core::UnitStatus>& status = statuses[i];
      if (!status) continue;
      bool up = board_.PublishUnit(unit, *status, clock_.Monotonic());
      auto was = unit_up_.find(unit);
      if (was != unit_up_.end() && was->second && !up) {
        log_.Line(Priority::kErr, "unit " + unit + " is " + status->active_state + " (" +
                                      status->sub_state + ", Result=" + status->result +
                                      ", NRestarts " + std::to_string(status->n_restarts) +
                                      ") between applies");
      }
      unit_up_[unit] = up;
      metrics_.ObserveUnit(unit, *status, up);
    }
  }
}

int Daemon::Run() {
  sigset_t set = DaemonSignals();
  int sfd = signalfd(-1, &set, SFD_CLOEXEC);
  if (sfd < 0) {
    log_.Line(Priority::kErr, std::string("signalfd: ") + std::strerror(errno));
    return 1;
  }
  auto [dir, name] = SplitPath(options_.declaration);
  int ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (ifd < 0 || inotify_add_watch(ifd, dir.c_str(),
                                   IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE) < 0) {
    log_.Line(Priority::kWarning, "cannot watch " + dir + " (" + std::strerror(errno) +
                                      "); changes are seen at the next interval or SIGHUP");
  }

  ApplyOnce("start", /*starting=*/true);
  notifier_.Ready();
  watch_thread_ = std::thread([this] { WatchLoop(); });

  auto now = Clock::now();
  auto next_apply = now + options_.interval;
  std::optional<Clock::time_point> change_seen;
  auto pet_every = notifier_.WatchdogInterval();
  auto next_pet = pet_every.count() > 0 ? now : Clock::time_point::max();
  int code = 0;
  for (;;) {
    now = Clock::now();
    if (now >= next_pet) {
      notifier_.Watchdog();
      next_pet = now + pet_every;
    }
    auto wake = std::min(next_apply, next_pet);
    if (change_seen) wake = std::min(wake, *change_seen + options_.debounce);
    auto wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count();
    pollfd fds[2] = {{sfd, POLLIN, 0}, {ifd, POLLIN, 0}};
    int n = poll(fds, ifd >= 0 ? 2 : 1, static_cast<int>(std::clamp<long long>(wait_ms, 0, 60000)));
    if (n < 0 && errno != EINTR) {
      log_.Line(Priority::kErr, std::string("poll: ") + std::strerror(errno));
      code = 1;
      break;
    }
    bool stop = false;
    if (n > 0 && (fds[0].revents & POLLIN)) {
      signalfd_siginfo si;
      while (read(sfd, &si, sizeof si) == sizeof si) {
        if (si.ssi_signo == SIGHUP) {
          if (options_.on_sighup) options_.on_sighup();
          ApplyOnce("SIGHUP");
          next_apply = Clock::now() + options_.interval;
        } else {
          log_.Line(Priority::kNotice, std::string("stopping on ") + strsignal(si.ssi_signo));
          stop = true;
        }
        break;
      }
    }
    if (stop) break;
    if (n > 0 && ifd >= 0 && (fds[1].revents & POLLIN)) {
      alignas(inotify_event) char buf[4096];
      ssize_t len;
      while ((len = read(ifd, buf, sizeof buf)) > 0) {
        for (char* p = buf; p < buf + len;) {
          auto* ev = reinterpret_cast<inotify_event*>(p);
          // The signature is read with the declaration (--verify-key).
          if (ev->len > 0 && (name == ev->name || name + ".minisig" == ev->name)) {
            change_seen = Clock::now();
          }
          p += sizeof(inotify_event) + ev->len;
        }
      }
    }
    now = Clock::now();
    if (change_seen && now >= *change_seen + options_.debounce) {
      change_seen.reset();
      ApplyOnce("declaration changed");
      next_apply = Clock::now() + options_.interval;
    } else if (now >= next_apply) {
      ApplyOnce("interval");
      next_apply = Clock::now() + options_.interval;
    }
  }
  notifier_.Stopping();
  stopping_ = true;
  if (watch_thread_.joinable()) watch_thread_.join();
  close(sfd);
  if (ifd >= 0) close(ifd);
  return code;
}

}  // namespace mesh::daemon
