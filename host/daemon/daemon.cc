#include "host/daemon/daemon.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <stop_token>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "host/core/time_format.h"
#include "host/daemon/keepalive.h"
#include "host/daemon/schedule.h"

namespace mesh::daemon {
namespace {

// How long the live watch waits before it tries a bus it could not use.
constexpr std::chrono::seconds kWatchRetry{1};

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

Daemon::Daemon(DaemonOptions options, reconcile::Reconciler& reconciler, status::StatusBoard& board,
               metrics::HostMetrics& metrics, ports::ServiceManager* watch,
               ports::Notifier& notifier, ports::EventSource& events, ports::Clock& clock, Log& log)
    : options_(std::move(options)),
      reconciler_(reconciler),
      board_(board),
      metrics_(metrics),
      watch_(watch),
      notifier_(notifier),
      events_(events),
      clock_(clock),
      log_(log),
      sight_(options_.watch_refresh) {}

Daemon::~Daemon() {
  stopping_ = true;
  if (watch_thread_.joinable()) watch_thread_.join();
}

bool Daemon::ApplyOnce(const std::string& why, bool starting) {
  {
    std::lock_guard<std::mutex> lock(publish_mu_);
    ++apply_edges_;
    later_looks_.clear();
  }
  core::ApplyReport report = ApplyUnderKeepalive(starting);
  bool removal_waits = report.removal_waits;
  {
    // Held until the apply is counted ended: no look of the watch's is
    // published between its verdicts and the picture made of them.
    std::lock_guard<std::mutex> lock(publish_mu_);
    // Where the watch looked at a unit after the apply last did (one it
    // did not act on, and did not read again once the watch's read had
    // begun), the watch's look is the newer: a death it saw is not undone
    // by the apply's older picture.
    for (const auto& [unit, look] : later_looks_) {
      if (!reconciler_.progress().ApplysLookStands(unit, look.at)) {
        status::ShowLaterLook(report, unit, look.status, look.up);
      }
    }
    later_looks_.clear();
    Publish(std::move(report), why);
    ++apply_edges_;
    reconciler_.progress().Shown();
  }
  if (options_.release_memory) options_.release_memory();
  return removal_waits;
}

core::ApplyReport Daemon::ApplyUnderKeepalive(bool starting) {
  // Told while the apply runs, on a thread of its own (keepalive.h). Every
  // call an apply makes is bounded, so a tick is never far off.
  Keepalive keepalive(
      notifier_, starting, options_.stall_after, reconciler_.progress().steps(), clock_.Monotonic(),
      [this](const std::optional<std::string>& why) {
        board_.SetStalled(why);  // shown, then said
        if (why) log_.Line(Priority::kErr, *why);
      },
      [this] { return events_.StopPending(); });
  // A thread not made (a tasks limit) must not end the daemon: the apply
  // runs untold, and the watchdog may act on it.
  std::jthread ticks;
  try {
    // NOLINTNEXTLINE(performance-unnecessary-value-param): as std::jthread passes it
    ticks = std::jthread([this, &keepalive](std::stop_token stop) {
      std::mutex m;
      std::condition_variable_any cv;
      std::unique_lock lock(m);
      do {
        keepalive.Tick(reconciler_.progress().steps(), clock_.Monotonic());
        cv.wait_for(lock, stop, keepalive.Every(), [] { return false; });  // wakes on stop
      } while (!stop.stop_requested());
    });
  } catch (const std::system_error& e) {
    log_.Line(Priority::kWarning, std::string("no thread to tell systemd the apply is alive (") +
                                      e.what() + "): the watchdog is not petted during it");
  }
  auto declaration = options_.open_declaration();
  if (declaration) return reconciler_.Apply(**declaration);
  core::ApplyReport report;
  report.result = core::ApplyResult::kRefused;
  report.error = declaration.error().message;
  report.started_at = report.finished_at = clock_.Now();
  // As the reconciler's own refusals do, while nothing accepted is shown.
  if (reconciler_.options().recorded_on_refusal) {
    report.recorded = reconciler_.Recorded(reconcile::RecordedFor::kRefusal);
  }
  return report;
}

void Daemon::Publish(core::ApplyReport report, const std::string& why) {
  for (const std::string& w : report.warnings) log_.Line(Priority::kWarning, "warning: " + w);
  size_t failed = 0, changed = 0;
  for (const core::ResourceOutcome& o : report.outcomes) {
    if (options_.verbose || o.outcome != core::Outcome::kUnchanged) {
      log_.Line(PriorityOf(o.outcome), core::FormatOutcomeLine(o));
      for (const std::string& line : core::FormatJournalLines(o)) {
        log_.Line(PriorityOf(o.outcome), line);
      }
    }
    failed += o.outcome == core::Outcome::kFailed;
    changed += o.outcome != core::Outcome::kUnchanged && o.outcome != core::Outcome::kFailed;
  }
  // The apply's closing lines are logged once /status, /metrics, /healthz
  // and systemd's STATUS= show it: whoever waits for "apply ..." or
  // "declaration refused" and then asks the host hears the same apply.
  std::vector<std::pair<Priority, std::string>> closing;
  std::string summary;
  if (report.result == core::ApplyResult::kRefused) {
    // Before any apply was shown, what stays in force is what is recorded,
    // and on a machine the host never applied to, nothing.
    auto shown = board_.Get();
    bool none_shown = shown->machine.empty();
    std::string in_force =
        none_shown && !report.recorded.has_value()
            ? "nothing was ever applied here: the machine is left as it is"
            : "generation " +
                  std::to_string(none_shown ? report.recorded->generation : shown->generation) +
                  " stays in force";
    summary =
        "declaration refused: " +
        (report.refusals.empty() ? report.error : report.error.substr(0, report.error.find(':'))) +
        "; " + in_force;
    closing.emplace_back(Priority::kErr, summary);
    for (const std::string& r : report.refusals) closing.emplace_back(Priority::kErr, "  " + r);
  } else {
    if (!report.error.empty()) closing.emplace_back(Priority::kErr, report.error);
    // An apply that became a plan changed nothing, whatever it would have.
    summary = "generation " + std::to_string(report.generation) + ": " +
              std::to_string(report.outcomes.size()) + " resource(s), " +
              (report.changed_nothing ? std::string("nothing") : std::to_string(changed)) +
              " changed, " + std::to_string(failed) + " failed (" + why + ", " +
              core::FormatSeconds(report.duration) + ")";
    closing.emplace_back(
        failed > 0 ? Priority::kErr : Priority::kInfo,
        "apply " + std::string(core::ApplyResultName(report.result)) + ": " + summary);
  }
  // The metrics and the board say alike of a crash loop.
  board_.HoldLoops(report, clock_.Monotonic());
  metrics_.ObserveApply(report);
  if (report.result != core::ApplyResult::kRefused || report.recorded.has_value()) {
    reconciler_.set_recorded_on_refusal(false);  // shown: later refusals keep it
  }
  board_.PublishApply(std::move(report));  // last of the views: it keeps the outcomes
  notifier_.Status(summary);
  for (const auto& [priority, line] : closing) log_.Line(priority, line);
}

void Daemon::ShowRecorded() {
  if (recorded_shown_) return;
  recorded_shown_ = true;
  std::optional<core::RecordedState> recorded =
      reconciler_.Recorded(reconcile::RecordedFor::kStart);
  if (!recorded.has_value()) return;
  metrics_.ObserveRecordedAtStart(*recorded);
  board_.PublishRecorded(std::move(*recorded));
}

// While an apply runs, its own looks judge the units it acts on (a
// restart's stop is no death): the watch follows the others only (all of
// them until the apply says which it has in hand, before its first
// write), so a daemon that dies while an apply observes a large tree, or
// waits minutes on another unit's stop, shows within seconds. After
// each apply every unit is read again at once, judged from the apply's
// verdicts.
void Daemon::WatchLoop() {
  WatchState state{.last_full = clock_.Monotonic() - options_.watch_refresh};
  while (!stopping_) {
    // Whatever fails in a turn (an allocation while an apply is at its
    // peak) is a turn the watch did not see: said as any blind look is,
    // and tried again, never the daemon's end.
    auto began = clock_.Monotonic();
    try {
      WatchTurn(state);
    } catch (const std::exception& e) {
      try {
        TellSight(sight_.Failed(std::string("the live unit watch failed: ") + e.what(),
                                clock_.Monotonic(), began),
                  Priority::kWarning);
      } catch (
          const std::exception&) {  // NOLINT(bugprone-empty-catch): nothing left to say it with
      }
      clock_.SleepFor(kWatchRetry);
    }
  }
}

// An apply ended (another may have begun since): the watch starts from its
// verdicts, and looks at every unit at once.
void Daemon::TakeVerdicts(WatchState& w, uint64_t ended) {
  w.applies_seen = ended;
  last_seen_.clear();
  // Held here: a range-for keeps no temporary of its range's expression
  // alive, and the next apply frees the snapshot it replaces.
  std::shared_ptr<const status::Snapshot> verdicts = board_.Get();
  for (const core::ResourceOutcome& r : verdicts->resources) {
    if (r.unit.has_value() && !r.declared_unit().empty()) {
      last_seen_[r.declared_unit()] = {r.unit->up, r.unit->n_restarts};
    }
  }
  w.last_full = clock_.Monotonic() - options_.watch_refresh;
  w.read_now = true;
  w.unconfirmed.clear();  // the read finds them again, of the units declared now
}

void Daemon::WatchTurn(WatchState& w) {
  std::vector<std::string> units = board_.WatchedUnits();
  if (units.empty() || watch_ == nullptr) {
    TellSight(sight_.NothingToWatch(), Priority::kNotice);
    clock_.SleepFor(std::chrono::milliseconds(200));
    return;
  }
  // Counted at the last apply's end: the one under way, if any, has not
  // published.
  uint64_t ended = apply_edges_ & ~uint64_t{1};
  if (ended != w.applies_seen) TakeVerdicts(w, ended);
  auto began = clock_.Monotonic();
  // Right after an apply, what changed while it ran is read at once: a
  // signal the last turn heard then was dropped with it.
  auto waited = watch_->WaitForUnitChanges(
      units, w.read_now ? std::chrono::seconds(0) : std::chrono::seconds(1));
  w.read_now = false;
  if (!waited) {
    // /status keeps the last look at each unit meanwhile, until sight
    // has been lost for a refresh period; then /healthz says so.
    TellSight(sight_.Failed(waited.error().message, clock_.Monotonic(), began), Priority::kWarning);
    clock_.SleepFor(kWatchRetry);
    return;
  }
  std::vector<std::string> changed = std::move(*waited);
  uint64_t edges_now = apply_edges_;
  std::vector<std::string> in_hand;
  if (edges_now != *w.applies_seen) {
    if (edges_now != *w.applies_seen + 1) return;  // an apply ended: above
    in_hand = reconciler_.progress().InHand();
  }
  // After a failure every unit is read: a change while the watch was
  // blind sent no signal it heard.
  bool full = sight_.failing() || clock_.Monotonic() - w.last_full >= options_.watch_refresh;
  if (full) {
    changed = units;
    w.last_full = clock_.Monotonic();
  } else {
    // Up again and not yet for a settle: looked at every turn, so it is
    // called up a settle after it came back, not at the next refresh.
    changed.insert(changed.end(), w.unconfirmed.begin(), w.unconfirmed.end());
    std::sort(changed.begin(), changed.end());
    changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
  }
  std::erase_if(changed, [&](const std::string& unit) {
    return std::binary_search(in_hand.begin(), in_hand.end(), unit);
  });
  if (changed.empty()) return;
  began = clock_.Monotonic();
  std::optional<std::string> unread = WatchLook(changed, edges_now, w.unconfirmed);
  if (!unread.has_value()) return;  // an apply began: its report says
  if (!unread->empty()) {
    TellSight(sight_.Failed(*unread, clock_.Monotonic(), began), Priority::kWarning);
  } else if (full) {
    TellSight(sight_.Saw(), Priority::kNotice);
  }
}

// Logged after the views change, as an apply's closing line is (Publish).
void Daemon::TellSight(const WatchSight::Say& say, Priority priority) {
  if (say.unseen.has_value()) {
    metrics_.SetUnitsUnseen(!say.unseen->empty());
    board_.SetUnitsUnseen(say.unseen->empty() ? std::nullopt : say.unseen);
  }
  if (say.log.has_value()) log_.Line(priority, *say.log);
}

std::optional<std::string> Daemon::WatchLook(const std::vector<std::string>& units, uint64_t edges,
                                             std::set<std::string>& unconfirmed) {
  const bool during_apply = edges % 2 == 1;
  // Before the read: an apply's look that ended after this is the newer.
  const uint64_t at = reconciler_.progress().Now();
  // Read at once (pipelined): the full refresh reads every declared unit.
  std::vector<core::Result<core::UnitStatus>> statuses = watch_->ReadUnits(units);
  std::string unread;
  for (size_t i = 0; i < units.size(); ++i) {
    const std::string& unit = units[i];
    const core::Result<core::UnitStatus>& status = statuses[i];
    if (!status) {
      if (unread.empty()) unread = status.error().message;
      continue;
    }
    // With a job of systemd's queued while an apply runs, and not
    // restarted by its own Restart= since the watch last looked: most
    // likely stopped by the apply, through a unit it acts on (a restart
    // carried to a unit that Requires= it, which may exit non-zero on the
    // SIGTERM systemd sends), and started again by that job. The apply's
    // report, then the next look, say how it ends. One that systemd is
    // restarting on its own (NRestarts grown, auto-restart) died.
    auto seen = last_seen_.find(unit);
    const uint32_t restarts_seen =
        seen == last_seen_.end() ? status->n_restarts : seen->second.n_restarts;
    if (during_apply && status->job_queued && !core::AwaitingAutoRestart(*status) &&
        !core::RestartedSince(status->n_restarts, restarts_seen)) {
      continue;
    }
    bool up = false;
    {
      std::lock_guard<std::mutex> lock(publish_mu_);
      // Read before an apply began, or before one ended: what it shows may
      // be the apply's own action half done. The apply's report says how
      // it ended.
      if (apply_edges_ != edges) return std::nullopt;
      // Taken in hand since the watch chose what to read (a rollback's
      // pass): the apply judges it.
      if (during_apply && reconciler_.progress().InHandNow(unit)) continue;
      up = board_.PublishUnit(unit, *status, clock_.Monotonic());
      metrics_.ObserveUnit(unit, *status, up);  // next to the picture, before any log line
      if (during_apply) later_looks_[unit] = {*status, up, at};
    }
    if (!up && core::UnitUp(*status)) {
      unconfirmed.insert(unit);
    } else {
      unconfirmed.erase(unit);
    }
    if (seen != last_seen_.end() && seen->second.up && !up) {
      log_.Line(Priority::kErr, "unit " + unit + " is " + status->active_state + " (" +
                                    status->sub_state + ", Result=" + status->result +
                                    ", NRestarts " + std::to_string(status->n_restarts) + ") " +
                                    (during_apply ? "while an apply runs" : "between applies"));
    }
    last_seen_[unit] = {up, status->n_restarts};
  }
  return unread;
}

int Daemon::Run() {
  if (std::string why = notifier_.Unavailable(); !why.empty()) {
    log_.Line(Priority::kErr, "cannot notify systemd (no READY=1, no watchdog): " + why);
  }
  ShowRecorded();
  bool removal_waits = ApplyOnce("start", /*starting=*/true);
  notifier_.Ready();
  if (watch_ != nullptr) {
    try {
      watch_thread_ = std::thread([this] { WatchLoop(); });
    } catch (const std::system_error& e) {
      // Not followed between applies: said as a watch that cannot see is
      // (/healthz, MeshHostUnitsUnseen), for the daemon's life.
      std::string why = std::string("no thread for the live unit watch (") + e.what() +
                        "): the units are not followed between applies";
      log_.Line(Priority::kErr, why);
      metrics_.SetUnitsUnseen(true);
      board_.SetUnitsUnseen(why);
    }
  }

  Schedule schedule(options_.interval, options_.debounce, notifier_.WatchdogInterval(),
                    clock_.Monotonic());
  if (removal_waits) schedule.Applied(clock_.Monotonic(), removal_waits, /*asked=*/true);
  int code = 0;
  for (;;) {
    if (schedule.PetDue(clock_.Monotonic())) notifier_.Watchdog();
    ports::Event event = events_.Wait(schedule.WaitFrom(clock_.Monotonic()));
    auto now = clock_.Monotonic();
    if (event.kind == ports::Event::Kind::kError) {
      log_.Line(Priority::kErr, event.detail);
      code = 1;
      break;
    }
    if (event.kind == ports::Event::Kind::kStop) {
      log_.Line(Priority::kNotice, "stopping on " + event.detail);
      break;
    }
    std::optional<std::string> why;
    if (event.kind == ports::Event::Kind::kReload) {
      if (options_.on_sighup) options_.on_sighup();
      why = "SIGHUP";
    } else {
      if (event.kind == ports::Event::Kind::kDeclarationChanged) schedule.ChangeSeen(now);
      if (auto due = schedule.ApplyDue(now)) why = std::string(*due);
    }
    if (why) {
      removal_waits = ApplyOnce(*why);
      schedule.Applied(clock_.Monotonic(), removal_waits,
                       event.kind == ports::Event::Kind::kReload);
    }
  }
  notifier_.Stopping();
  stopping_ = true;
  if (watch_thread_.joinable()) watch_thread_.join();
  return code;
}

}  // namespace mesh::daemon
