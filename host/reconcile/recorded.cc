#include "host/reconcile/recorded.h"

#include <algorithm>
#include <string>
#include <vector>

#include "host/core/declaration.h"
#include "host/core/unit_status.h"
#include "host/reconcile/rollback.h"
#include "host/reconcile/words.h"

namespace mesh::reconcile {

namespace {

// Whether the record is what `kept`'s hold left: each refused resource
// recorded with its last good's want. A hold saved before an apply moved
// past it, and not taken back (killed before last-good.json was saved, or
// that save failed), is not shown on a machine that runs the newer one.
bool RecordedAsHeld(const core::KeptUnit& kept, const core::Record& record) {
  return std::all_of(kept.hold->wants.begin(), kept.hold->wants.end(), [&](const auto& refused) {
    auto entry = record.resources.find(refused.first);
    auto want = kept.wants.find(refused.first);
    return entry != record.resources.end() && want != kept.wants.end() &&
           entry->second.digest == want->second;
  });
}

// Or the record still holds what was refused: the hold was saved, and the
// apply that puts the last good back ended before its record was. The host
// holds the unit there from the save on (the next apply puts it back), so
// that is said from the start, not first after that apply.
bool RecordedAsRefused(const core::KeptUnit& kept, const core::Record& record) {
  return !kept.hold->wants.empty() &&
         std::all_of(kept.hold->wants.begin(), kept.hold->wants.end(), [&](const auto& refused) {
           auto entry = record.resources.find(refused.first);
           return entry != record.resources.end() && entry->second.digest == refused.second;
         });
}

// Each hold saved: its unit's resource and those put back under it.
void SayHolds(const core::LastGood& last_good, const core::Record& record,
              core::RecordedState& out) {
  for (const auto& [id, kept] : last_good.units) {
    auto entry = record.resources.find(id);
    if (!kept.hold.has_value() || entry == record.resources.end() ||
        entry->second.unit().name.empty() ||
        !(RecordedAsHeld(kept, record) || RecordedAsRefused(kept, record))) {
      continue;
    }
    for (core::ResourceOutcome& o : out.resources) {
      if (o.id != id && !kept.hold->wants.contains(o.id)) continue;
      // Before the words already there, which end with `nothing`.
      SayHold(kept.generation, *kept.hold, entry->second.unit().name, o.id == id, o);
    }
  }
}

// A resource the last apply left failed, in its words and when.
std::string LeftFailedWords(const core::LeftFailed& f, const std::string& nothing) {
  return f.detail + " (failed since generation " + std::to_string(f.generation) + ")" + nothing;
}

}  // namespace

core::RecordedState RecordedTruth(const core::Record& record, const core::Intent& owed,
                                  const core::LastGood* last_good, ports::ServiceManager* services,
                                  RecordedFor why) {
  core::RecordedState out{record.machine, record.generation, record.declaration_digest, {}};
  std::vector<const std::pair<const std::string, core::RecordEntry>*> entries;
  entries.reserve(record.resources.size());
  for (const auto& kv : record.resources) entries.push_back(&kv);
  std::stable_sort(entries.begin(), entries.end(), [](const auto* a, const auto* b) {
    return a->second.position.value_or(UINT64_MAX) < b->second.position.value_or(UINT64_MAX);
  });
  std::vector<std::string> units;
  for (const auto* kv : entries) {
    if (!kv->second.unit().name.empty()) units.push_back(kv->second.unit().name);
  }
  std::vector<core::Result<core::UnitStatus>> statuses;
  if (services != nullptr && !units.empty()) statuses = services->ReadUnits(units);
  // Why nothing was done to what is shown, the same words on every line.
  const std::string nothing = why == RecordedFor::kRefusal
                                  ? " (the declaration is refused: nothing changed)"
                                  : " (the host has just started: its first apply is under way)";
  const std::string as_recorded =
      "as recorded at generation " + std::to_string(record.generation) + nothing;
  size_t k = 0;
  out.resources.reserve(entries.size());
  for (const auto* kv : entries) {
    const auto& [id, e] = *kv;
    core::ResourceOutcome& o = out.resources.emplace_back();
    o.id = id;
    o.kind = e.kind;
    o.digest = e.digest;
    o.applied_at = e.applied_at;
    o.detail = as_recorded;
    if (auto it = owed.failed.find(id); it != owed.failed.end()) {
      o.outcome = core::Outcome::kFailed;
      o.detail = LeftFailedWords(it->second, nothing);
      // What failed is the kind declared then (a file declared a directory
      // since), whatever kind the record still holds of it.
      if (!it->second.kind.empty()) o.kind = it->second.kind;
    }
    bool never_up = false;  // a start owed: no look ever found it up
    if (auto it = owed.owed.find(id); it != owed.owed.end() && it->second.action.has_value()) {
      o.outcome = core::Outcome::kFailed;
      o.detail = std::string(core::UnitActionVerb(*it->second.action)) + " " +
                 OwedSince(it->second.since) + " not done: " + it->second.why + nothing;
      never_up = *it->second.action == core::UnitAction::kStart;
    }
    if (e.unit().name.empty()) continue;
    const std::string& unit = e.unit().name;
    bool run = e.unit().state == core::UnitStateName(core::UnitState::kRunning);
    o.mutable_declared().unit = unit;
    o.mutable_declared().state = e.unit().state;
    o.mutable_declared().rollback = e.unit().rollback;
    const core::Result<core::UnitStatus>* status = k < statuses.size() ? &statuses[k] : nullptr;
    ++k;
    if (status == nullptr || !status->has_value()) {
      o.unit = UnitSnapshotOf(unit, core::UnitStatus{}, false);
      continue;
    }
    core::UnitBaseline baseline = core::BaselineOfRecord(&e);
    o.unit =
        UnitSnapshotOf(unit, **status, run && !never_up && core::UpAsRecorded(**status, baseline));
    auto state = core::ParseUnitState(e.unit().state);
    if (state.has_value() && !core::AsDeclared(*state, **status, baseline) &&
        o.outcome != core::Outcome::kFailed) {
      o.outcome = core::Outcome::kFailed;
      o.detail = UnitStatePhrase(unit, **status) + " now, not " + e.unit().state + " as recorded" +
                 nothing;
    }
  }
  // Failed where the record holds nothing of them (a first write).
  for (const auto& [id, f] : owed.failed) {
    if (record.resources.contains(id)) continue;
    core::ResourceOutcome& o = out.resources.emplace_back();
    o.id = id;
    o.kind = f.kind;
    o.outcome = core::Outcome::kFailed;
    o.detail = LeftFailedWords(f, nothing);
  }
  if (last_good != nullptr) SayHolds(*last_good, record, out);
  return out;
}

}  // namespace mesh::reconcile
