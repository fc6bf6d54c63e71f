#include "host/status/status_board.h"

#include <array>
#include <iterator>

#include "host/core/printable.h"
#include "host/core/time_format.h"

namespace mesh::status {

StatusBoard::StatusBoard(std::chrono::nanoseconds settle)
    : settle_(settle), current_(std::make_shared<Snapshot>()) {}

// Counted per outcome by its place in the enum: kAllOutcomes lists them
// all, each at its own value's place.
namespace {
constexpr bool OutcomesInEnumOrder() {
  for (size_t i = 0; i < core::kAllOutcomes.size(); ++i) {
    if (static_cast<size_t>(core::kAllOutcomes[i]) != i) return false;
  }
  return static_cast<size_t>(core::Outcome::kFailed) + 1 == core::kAllOutcomes.size();
}
static_assert(OutcomesInEnumOrder());

// Whether the picture of the unit changed.
bool ShowLook(core::UnitSnapshot& u, const core::UnitStatus& status, bool up) {
  bool changed = u.active_state != status.active_state || u.sub_state != status.sub_state ||
                 u.n_restarts != status.n_restarts || u.result != status.result || u.up != up;
  u.active_state = status.active_state;
  u.sub_state = status.sub_state;
  u.result = status.result;
  u.n_restarts = status.n_restarts;
  u.up = up;
  return changed;
}

}  // namespace

void ShowLaterLook(core::ApplyReport& report, const std::string& unit,
                   const core::UnitStatus& status, bool up) {
  for (core::ResourceOutcome& r : report.outcomes) {
    if (r.declared_unit() == unit && r.unit.has_value()) ShowLook(*r.unit, status, up);
  }
}

void StatusBoard::PublishApply(core::ApplyReport report) {
  std::lock_guard<std::mutex> lock(mu_);
  auto next = std::make_shared<Snapshot>();
  if (report.result == core::ApplyResult::kRefused || report.changed_nothing) {
    // The last applied state stays in force, and so does its picture.
    *next = *current_;
  } else {
    // Not the old resources: copied only to be replaced below.
    static_cast<ApplySummary&>(*next) = *current_;
  }
  next->stalled.reset();
  next->reconciled = true;
  next->started_at = core::FormatTimestamp(report.started_at);
  next->finished_at = core::FormatTimestamp(report.finished_at);
  next->duration_seconds = std::chrono::duration<double>(report.duration).count();
  next->result = std::string(core::ApplyResultName(report.result));
  next->counts.clear();
  if (report.result == core::ApplyResult::kRefused) {
    for (core::Outcome o : core::kAllOutcomes) next->counts[std::string(core::OutcomeName(o))] = 0;
    next->error = report.error;
    bool shown_nothing = next->machine.empty() && next->resources.empty();
    if ((next->from_record || shown_nothing) && report.recorded.has_value()) {
      // Nothing applied shown yet (the daemon started on a refused
      // declaration): the recorded truth, beside the refusal.
      ShowRecorded(*next, std::move(*report.recorded));
    }
    current_ = std::move(next);
    return;
  }
  if (report.changed_nothing) {
    // Nothing it says it would have done was done: the picture stays, and
    // the apply's failure is said beside it.
    for (core::Outcome o : core::kAllOutcomes) next->counts[std::string(core::OutcomeName(o))] = 0;
    next->apply_error = report.error;
    current_ = std::move(next);
    return;
  }
  next->from_record = false;
  next->error.reset();
  next->apply_error.reset();
  if (!report.error.empty()) next->apply_error = report.error;
  next->machine = report.machine;
  next->generation = report.generation;
  next->declaration_digest = report.declaration_digest;
  next->signer = std::move(report.signer);
  HoldLoopsLocked(report);
  // Only the units of this declaration are followed.
  std::map<std::string, Streak> watched = std::move(streaks_);
  streaks_.clear();
  std::array<int, std::size(core::kAllOutcomes)> counts{};
  next->resources.reserve(report.outcomes.size());
  for (core::ResourceOutcome& o : report.outcomes) {
    ++counts[static_cast<size_t>(o.outcome)];
    if (o.outcome == core::Outcome::kRemoved) continue;
    core::ResourceOutcome& r = next->resources.emplace_back(std::move(o));
    if (!r.declared_unit().empty()) TakeUnit(r, watched);
  }
  // Only this declaration's units are counted on: a fleet that names a
  // unit per release would otherwise grow the map for the daemon's life.
  // Not after an apply that failed whole (no outcomes to go by).
  if (report.error.empty()) {
    std::erase_if(host_restarts_, [&](const auto& e) { return !streaks_.contains(e.first); });
    std::erase_if(runs_, [&](const auto& e) { return !streaks_.contains(e.first); });
  }
  for (core::Outcome o : core::kAllOutcomes) {
    next->counts[std::string(core::OutcomeName(o))] = counts[static_cast<size_t>(o)];
  }
  current_ = std::move(next);
}

// With mu_ held: a declared unit's picture and streak after an apply.
void StatusBoard::TakeUnit(core::ResourceOutcome& r, const std::map<std::string, Streak>& watched) {
  if (r.host_acted && r.restart_reason().has_value()) host_restarts_[r.declared_unit()]++;
  if (r.declared.value_or_empty().rollback_restart) host_restarts_[r.declared_unit()]++;
  if (!r.unit.has_value()) {
    r.unit = core::UnitSnapshot{};
    r.unit->name = r.declared_unit();
  }
  streaks_[r.declared_unit()] = StreakAfter(r, watched);
  // A run the watch saw end, not yet known to have crashed, is not the
  // next crash's: the apply's look is the baseline now.
  if (auto runs = runs_.find(r.declared_unit()); runs != runs_.end()) {
    runs->second.last_run = std::chrono::nanoseconds(0);
  }
  r.unit->host_restarts = host_restarts_[r.declared_unit()];
}

void StatusBoard::PublishRecorded(core::RecordedState recorded) {
  std::lock_guard<std::mutex> lock(mu_);
  auto next = std::make_shared<Snapshot>(*current_);
  ShowRecorded(*next, std::move(recorded));
  current_ = std::move(next);
}

// With mu_ held.
void StatusBoard::ShowRecorded(Snapshot& next, core::RecordedState recorded) {
  next.from_record = true;
  next.machine = std::move(recorded.machine);
  next.generation = recorded.generation;
  next.declaration_digest = std::move(recorded.declaration_digest);
  next.resources.clear();
  streaks_.clear();
  for (core::ResourceOutcome& r : recorded.resources) {
    if (!r.declared_unit().empty()) {
      streaks_[r.declared_unit()] =
          Streak{.confirmed = r.unit.has_value() && r.unit->up, .since = {}, .invocation = {}};
    }
    next.resources.push_back(std::move(r));
  }
}

bool StatusBoard::PublishUnit(const std::string& unit, const core::UnitStatus& status,
                              std::chrono::steady_clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  auto next = std::make_shared<Snapshot>(*current_);
  bool changed = false;
  bool up = false;
  for (core::ResourceOutcome& r : next->resources) {
    if (r.declared_unit() != unit || !r.unit.has_value()) continue;
    core::UnitSnapshot& u = *r.unit;
    Streak& streak = streaks_[unit];
    // Down, or a new run since the streak began (a death between two
    // looks, missed by both): the streak starts again.
    bool breaks = !core::UpSince(status, u.n_restarts) ||
                  (streak.since.has_value() && status.invocation_id != streak.invocation);
    Runs& runs = runs_[unit];
    NoteRuns(runs, streak, breaks, status, now, u);
    if (breaks) streak = {};
    if (core::UpSince(status, u.n_restarts) && !streak.confirmed) {
      if (!streak.since.has_value()) {
        streak.since = now;
        streak.invocation = status.invocation_id;
        runs.last_run = std::chrono::nanoseconds(0);  // a run ended by other than a crash
      }
      streak.confirmed = now - *streak.since >= settle_ + u.loop_longest_run;
    }
    up = streak.confirmed;
    changed = ShowLook(u, status, up) || changed;
  }
  if (changed) current_ = std::move(next);
  return up;
}

void StatusBoard::HoldLoops(core::ApplyReport& report, std::chrono::steady_clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  // Pruned here too: a watch that cannot see systemd prunes nothing.
  for (auto& [unit, runs] : runs_) {
    while (!runs.crashes.empty() && now - runs.crashes.front().at > kLoopWindow) {
      runs.crashes.pop_front();
    }
  }
  HoldLoopsLocked(report);
}

namespace {

// Whether the apply began a new run of `r`'s unit: a start or a restart
// (a reload, a stop, a daemon-reload alone do not).
bool NewRun(const core::ResourceOutcome& r) {
  return r.host_acted &&
         (r.outcome == core::Outcome::kStarted || r.outcome == core::Outcome::kRestarted);
}

}  // namespace

// With mu_ held. The apply's two looks may fall within one run of a crash
// loop: such a unit is up as the watch says (PublishUnit), its run timed
// from the watch's look; one the apply started anew is in a new run, up
// once the watch has seen it outlast the loop's.
void StatusBoard::HoldLoopsLocked(core::ApplyReport& report) const {
  if (runs_.empty()) return;  // no unit seen yet: a no-op of many files pays nothing
  for (core::ResourceOutcome& r : report.outcomes) {
    if (r.declared_unit().empty() || !r.unit.has_value()) continue;
    auto runs = runs_.find(r.declared_unit());
    if (runs == runs_.end()) continue;
    ShowLoop(runs->second, *r.unit);
    if (!r.unit->crash_loop) continue;
    auto streak = streaks_.find(r.declared_unit());
    r.unit->up = r.unit->up && !NewRun(r) && streak != streaks_.end() && streak->second.confirmed;
  }
}

// With mu_ held: the watch's streak of a unit in a crash loop that the
// apply left alone goes on (its run already timed); any other starts from
// the apply's word.
StatusBoard::Streak StatusBoard::StreakAfter(const core::ResourceOutcome& r,
                                             const std::map<std::string, Streak>& watched) {
  auto was = watched.find(r.declared_unit());
  if (r.unit->crash_loop && !NewRun(r) && was != watched.end()) return was->second;
  return Streak{.confirmed = r.unit->up, .since = {}, .invocation = {}};
}

void StatusBoard::NoteRuns(Runs& runs, const Streak& streak, bool breaks,
                           const core::UnitStatus& status,
                           std::chrono::steady_clock::time_point now, core::UnitSnapshot& u) {
  // The run a break ends, as seen; held until systemd's restart says it
  // ended in a crash, or a new run is seen (PublishUnit).
  if (breaks && streak.since.has_value()) runs.last_run = now - *streak.since;
  if (core::RestartedSince(status.n_restarts, u.n_restarts)) {
    // Each restart the count grew by: the first ended the run seen, the
    // others runs unseen.
    uint32_t grown =
        status.n_restarts > u.n_restarts ? status.n_restarts - u.n_restarts : status.n_restarts;
    runs.crashes.push_back({now, runs.last_run});
    for (uint32_t k = 1; k < std::min<uint32_t>(grown, kLoopRestarts + 1); ++k) {
      runs.crashes.push_back({now, std::chrono::nanoseconds(0)});
    }
    runs.last_run = std::chrono::nanoseconds(0);
  }
  while (!runs.crashes.empty() && now - runs.crashes.front().at > kLoopWindow) {
    runs.crashes.pop_front();
  }
  ShowLoop(runs, u);
}

void StatusBoard::ShowLoop(const Runs& runs, core::UnitSnapshot& u) {
  u.crash_loop = runs.crashes.size() > kLoopRestarts;
  u.loop_longest_run = std::chrono::nanoseconds(0);
  if (!u.crash_loop) return;
  // The loop's latest runs: the run before it began (days, perhaps) is
  // not one of its own.
  for (size_t k = runs.crashes.size() - kLoopRestarts; k < runs.crashes.size(); ++k) {
    u.loop_longest_run = std::max(u.loop_longest_run, runs.crashes[k].ran);
  }
}

std::vector<std::string> StatusBoard::WatchedUnits() const {
  auto snap = Get();
  std::vector<std::string> units;
  for (const core::ResourceOutcome& r : snap->resources) {
    if (!r.declared_unit().empty()) units.push_back(r.declared_unit());
  }
  return units;
}

std::shared_ptr<const Snapshot> StatusBoard::Get() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_;
}

nlohmann::json ToJson(const Snapshot& s) {
  using json = nlohmann::json;
  json resources = json::array();
  for (const core::ResourceOutcome& r : s.resources) {
    json item = {{"id", r.id},
                 {"kind", r.kind},
                 {"outcome", std::string(core::OutcomeName(r.outcome))},
                 {"detail", r.detail},
                 {"applied_at", r.applied_at.empty() ? json(nullptr) : json(r.applied_at)},
                 {"digest", r.digest.empty() ? json(nullptr) : json(r.digest)}};
    if (r.unit.has_value()) {
      // systemd names every unit's state, so none is a unit not read (the
      // bus lost, the apply refused first): null, not a state of "".
      auto read = [&](const auto& v) {
        return r.unit->active_state.empty() ? json(nullptr) : json(v);
      };
      item["unit"] = {{"name", r.unit->name},
                      {"active_state", read(r.unit->active_state)},
                      {"sub_state", read(r.unit->sub_state)},
                      {"result", read(r.unit->result)},
                      {"n_restarts", read(r.unit->n_restarts)},
                      {"host_restarts", r.unit->host_restarts},
                      {"declared_state", r.declared.value_or_empty().state},
                      // As /healthz holds it (declared running): up, as two
                      // looks and the live watch say.
                      {"up", r.unit->up},
                      {"held", nullptr},
                      {"journal", nullptr}};
      if (!r.unit->journal.empty() || !r.unit->journal_note.empty()) {
        item["unit"]["journal"] = {
            {"lines", r.unit->journal},
            {"note", r.unit->journal_note.empty() ? json(nullptr) : json(r.unit->journal_note)}};
      }
      if (const auto& held = r.declared.value_or_empty().held; held.has_value()) {
        item["unit"]["held"] = {{"generation", held->generation},
                                {"refused_generation", held->refused_generation},
                                {"since", held->since},
                                {"summary", held->Words()}};
      }
    }
    resources.push_back(std::move(item));
  }
  Health h = Judge(s);
  json last = nullptr;
  if (s.reconciled) {
    last = {{"started_at", s.started_at},
            {"finished_at", s.finished_at},
            {"duration_seconds", s.duration_seconds},
            {"result", s.result},
            {"counts", s.counts},
            {"error", s.apply_error.has_value() ? json(*s.apply_error) : json(nullptr)}};
  }
  return {{"machine", s.machine},
          {"generation", s.generation},
          {"declaration_digest", s.declaration_digest},
          {"healthy", h.healthy},
          {"last_reconcile", last},
          {"error", s.error.has_value() ? json(*s.error) : json(nullptr)},
          {"apply_stalled", s.stalled.has_value() ? json(*s.stalled) : json(nullptr)},
          {"units_unseen", s.units_unseen.has_value() ? json(*s.units_unseen) : json(nullptr)},
          {"signature", s.signer.has_value() ? json{{"key_id", s.signer->key_id},
                                                    {"trusted_comment", s.signer->trusted_comment}}
                                             : json(nullptr)},
          {"resources", std::move(resources)}};
}

void StatusBoard::SetStalled(std::optional<std::string> why) {
  std::lock_guard<std::mutex> lock(mu_);
  auto next = std::make_shared<Snapshot>(*current_);
  next->stalled = std::move(why);
  current_ = std::move(next);
}

void StatusBoard::SetUnitsUnseen(std::optional<std::string> why) {
  std::lock_guard<std::mutex> lock(mu_);
  auto next = std::make_shared<Snapshot>(*current_);
  next->units_unseen = std::move(why);
  current_ = std::move(next);
}

namespace {
bool UnitDown(const core::ResourceOutcome& r) {
  return r.unit_should_run() && r.unit.has_value() && !r.unit->active_state.empty() && !r.unit->up;
}

// A unit up again: systemd's Restart= counts its own restarts, and a start
// by anyone else (an operator's, a job's) sets the count to 0.
std::string WhoStartedItAgain(uint32_t n_restarts) {
  return n_restarts > 0 ? ", restarted by systemd (NRestarts " + std::to_string(n_restarts) + ")"
                        : ", started again (by an operator or a job: NRestarts 0)";
}

// What an up unit waits for to be called up again: a settle, or in a loop
// whose runs were seen to last (100 ms: the shortest --settle), more.
std::string NotYetUp(const core::UnitSnapshot& u) {
  if (!u.crash_loop || u.loop_longest_run < std::chrono::milliseconds(100)) {
    return " and not yet running for a whole --settle since";
  }
  char longest[32];
  std::snprintf(longest, sizeof longest, "%.1f s",
                std::chrono::duration<double>(u.loop_longest_run).count());
  return std::string(" more than twice in 15 minutes (a crash loop), and not yet running ") +
         "longer than its last runs (" + longest + ") and a --settle since";
}
}  // namespace

bool Failing(const core::ResourceOutcome& r) {
  return r.outcome == core::Outcome::kFailed || UnitDown(r);
}

Health Judge(const Snapshot& s, size_t most_lines) {
  std::vector<std::string> wrong;
  if (s.stalled.has_value()) wrong.push_back(*s.stalled);
  if (s.units_unseen.has_value()) wrong.push_back(*s.units_unseen);
  if (!s.reconciled) wrong.push_back("no reconcile has finished yet");
  if (s.error.has_value()) wrong.push_back("declaration refused: " + *s.error);
  if (s.apply_error.has_value()) wrong.push_back("the last apply failed: " + *s.apply_error);
  for (const core::ResourceOutcome& r : s.resources) {
    if (r.outcome == core::Outcome::kFailed) {
      wrong.push_back("resource " + r.id + " (" + r.kind + ") failed: " + r.detail);
    }
    if (UnitDown(r)) {
      core::UnitStatus seen;
      seen.active_state = r.unit->active_state;
      seen.sub_state = r.unit->sub_state;
      std::string restarted =
          core::UnitUp(seen) ? WhoStartedItAgain(r.unit->n_restarts) + NotYetUp(*r.unit) : "";
      wrong.push_back("unit " + r.unit->name + " is " + r.unit->active_state + " (" +
                      r.unit->sub_state + ")" + restarted + ", declared running");
    }
  }
  if (wrong.size() > most_lines) {
    size_t more = wrong.size() - most_lines;
    wrong.resize(most_lines);
    wrong.push_back("... and " + std::to_string(more) + " more (GET /status lists every resource)");
  }
  Health h;
  h.healthy = wrong.empty();
  if (h.healthy) {
    h.text = "ok\n";
  } else {
    // One line each: what came from outside (an unknown field's name, a
    // path) is escaped as the log escapes it, so none forges a line.
    for (const std::string& w : wrong) h.text += core::Printable(w) + "\n";
  }
  return h;
}

}  // namespace mesh::status
