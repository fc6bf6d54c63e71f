// StatusBoard: the truth about this machine as /status, /healthz and
// `mesh-host status` show it.
//
// Written by the apply loop and the live unit watch, read by HTTP handlers:
// readers take an immutable snapshot and never wait on an apply in progress.
// Credential contents never reach it; only digests.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "host/core/apply_report.h"
#include "host/core/outcome.h"
#include "host/core/unit_status.h"

namespace mesh::status {

// What a picture says of the last apply besides its resources: a new
// picture copies it whole and takes the resources from the new report.
struct ApplySummary {
  std::string machine;
  uint64_t generation = 0;
  std::string declaration_digest;
  bool reconciled = false;  // at least one reconcile has run
  // The resources are the record's (PublishRecorded, or a refusal's
  // recorded truth): no accepted apply has been shown yet.
  bool from_record = false;
  std::string started_at, finished_at;
  double duration_seconds = 0;
  std::string result;  // ok, failed, refused
  std::map<std::string, int> counts;
  std::optional<std::string> error;  // a refused declaration
  // A failure of the last apply outside any one resource (its record or
  // intent could not be saved): the machine is not known to be as reported.
  std::optional<std::string> apply_error;
  // The apply under way is stuck: it has taken no step for longer than the
  // daemon allows (daemon/stall_watch.h).
  std::optional<std::string> stalled;
  // The live unit watch has not seen systemd for a while: the units'
  // states shown are the last it saw (daemon/watch_sight.h).
  std::optional<std::string> units_unseen;
  // The signature the applied declaration was accepted under (--verify-key).
  std::optional<core::Signer> signer;
};

struct Snapshot : ApplySummary {
  std::vector<core::ResourceOutcome> resources;
};

struct Health {
  bool healthy = false;
  std::string text;  // "ok", or one line per thing wrong
};

class StatusBoard {
 public:
  // `settle`: how long a unit must have stayed up, between applies, before
  // the live view calls it up again (--settle, as for the two looks).
  explicit StatusBoard(std::chrono::nanoseconds settle = std::chrono::seconds(1));

  // Taken by value: the picture keeps the report's outcomes, moved rather
  // than copied when the caller is done with them (the daemon's no-op hands
  // over one per resource).
  void PublishApply(core::ApplyReport report);
  // What the record says, shown from the daemon's start until its first
  // apply ends (reconcile::Reconciler::Recorded). Nothing is reconciled yet, so
  // /healthz still says so; the units are judged as the record baseline
  // says, and the watch follows them from the first apply on.
  void PublishRecorded(core::RecordedState recorded);
  // The live watch: a declared unit's state between applies, looked at
  // `now`. Returns whether it is up: core::UnitUp, its NRestarts not grown
  // since the host's look before (the apply's or the watch's), and — once a
  // look found it down — up again for a settle since, as two looks would
  // say: a crash loop whose every run reads "active" for a moment is not up.
  // Once systemd restarted it more than twice in kLoopWindow (the
  // threshold of MeshHostUnitFlapping), a run must also outlast the longest
  // run of that window: a loop whose runs outlast a settle is not up either.
  bool PublishUnit(const std::string& unit, const core::UnitStatus& status,
                   std::chrono::steady_clock::time_point now);
  // A unit of `report` in a crash loop is up only as the watch says: the
  // apply's two looks may fall within one of its runs. PublishApply does
  // the same; called first by whoever shows the report elsewhere (metrics).
  // `now`: the window of crashes ends there (the watch may not have
  // looked for a while).
  void HoldLoops(core::ApplyReport& report, std::chrono::steady_clock::time_point now);
  // Set while the apply under way is stuck, cleared when it moves again or
  // ends (PublishApply).
  void SetStalled(std::optional<std::string> why);
  // Set while the live watch cannot see systemd, cleared when it sees it
  // again; applies keep it (the watch says when it sees again).
  void SetUnitsUnseen(std::optional<std::string> why);
  // Units the watch should follow: declared in the last accepted apply.
  std::vector<std::string> WatchedUnits() const;

  std::shared_ptr<const Snapshot> Get() const;

 private:
  // Per unit: up since the apply confirmed it, or since when it has been.
  // A unit seen up since `since`, all of it under one InvocationID: a
  // crash loop's runs, each shorter than a settle, never add up to one.
  struct Streak {
    bool confirmed = false;
    std::optional<std::chrono::steady_clock::time_point> since;
    std::string invocation;
  };

  void ShowRecorded(Snapshot& next, core::RecordedState recorded);

  // Per declared unit, across applies: the runs systemd ended and
  // restarted within kLoopWindow of the last look.
  struct Crash {
    std::chrono::steady_clock::time_point at;  // when the watch saw NRestarts grow
    std::chrono::nanoseconds ran{0};           // the run it ended, as seen (0: not seen)
  };
  struct Runs {
    std::deque<Crash> crashes;
    std::chrono::nanoseconds last_run{0};  // the last streak, when it broke
  };
  // Notes a look at `unit` in `runs` (the streak before it, whether it
  // breaks it, and whether systemd restarted the unit since `baseline`),
  // and sets the loop's figures on `u`.
  static void NoteRuns(Runs& runs, const Streak& streak, bool breaks,
                       const core::UnitStatus& status, std::chrono::steady_clock::time_point now,
                       core::UnitSnapshot& u);
  // Sets the loop's figures (crash_loop, loop_longest_run) on `u`.
  static void ShowLoop(const Runs& runs, core::UnitSnapshot& u);
  void HoldLoopsLocked(core::ApplyReport& report) const;
  void TakeUnit(core::ResourceOutcome& r, const std::map<std::string, Streak>& watched);
  static Streak StreakAfter(const core::ResourceOutcome& r,
                            const std::map<std::string, Streak>& watched);

  const std::chrono::nanoseconds settle_;
  mutable std::mutex mu_;
  std::shared_ptr<const Snapshot> current_;
  std::map<std::string, Streak> streaks_;
  std::map<std::string, uint64_t> host_restarts_;  // by declared unit, since start
  std::map<std::string, Runs> runs_;               // by declared unit, since start
};

// What makes a crash loop (MeshHostUnitFlapping's words): more than
// kLoopRestarts restarts by systemd within kLoopWindow.
inline constexpr size_t kLoopRestarts = 2;
inline constexpr std::chrono::minutes kLoopWindow{15};

// A look at `unit` taken after the apply's own (the live watch's, at a unit
// the apply did not act on, while it ran) over the report's picture of it:
// its state, restarts and whether it is up, as PublishUnit judged them. The
// apply's outcome stays what it did.
void ShowLaterLook(core::ApplyReport& report, const std::string& unit,
                   const core::UnitStatus& status, bool up);

nlohmann::json ToJson(const Snapshot& snapshot);
// Whether a resource is wrong now, as /healthz judges it: it failed, or its
// unit is declared running and is not up.
bool Failing(const core::ResourceOutcome& resource);
// Healthy, or a line for each thing wrong: the apply's own state, then
// every resource Failing.
// At most `most_lines` things wrong are said, then how many more.
Health Judge(const Snapshot& snapshot, size_t most_lines = SIZE_MAX);
// What /healthz says at most: it is written whole into the socket's buffer
// (a client that does not read it must not hold a worker), and read by
// people; /status lists everything.
inline constexpr size_t kHealthzLines = 20;

}  // namespace mesh::status
