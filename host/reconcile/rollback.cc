#include "host/reconcile/rollback.h"

#include <algorithm>

#include "host/core/printable.h"

namespace mesh::reconcile {
namespace {

using core::Outcome;
using core::ResourceOutcome;

size_t IndexOf(const core::Declaration& decl, const core::Resource* r) {
  return static_cast<size_t>(r - decl.resources.data());
}

void FailWith(ResourceOutcome& o, const std::string& first) {
  o.outcome = Outcome::kFailed;
  o.detail = o.detail.empty() ? first : first + "; " + o.detail;
}

// Up on what it was restarted onto: not still on its way up.
bool RunningAt(const ResourceOutcome& o) {
  return o.unit && o.unit->up && o.unit->active_state != "activating";
}

}  // namespace

std::vector<RollbackUnit> RollbackUnits(const core::Declaration& decl) {
  std::vector<RollbackUnit> out;
  for (size_t i = 0; i < decl.resources.size(); ++i) {
    const core::Resource& r = decl.resources[i];
    if (!r.HasUnit() || !r.unit().rollback) continue;
    RollbackUnit u{i, {i}};
    for (const auto* list : {&r.unit().restart_on, &r.unit().reload_on}) {
      for (const std::string& id : *list) {
        const core::Resource* d = decl.Find(id);
        if (d == nullptr) continue;  // refused by the parser: never here
        size_t j = IndexOf(decl, d);
        if (std::find(u.deps.begin(), u.deps.end(), j) == u.deps.end()) u.deps.push_back(j);
      }
    }
    out.push_back(std::move(u));
  }
  return out;
}

std::vector<HeldUnit> TakeHolds(core::Declaration& decl, std::vector<std::string>& wants,
                                core::LastGood& last_good,
                                const std::function<std::string(const core::Resource&)>& want_of,
                                bool* changed) {
  std::vector<HeldUnit> out;
  for (auto it = last_good.units.begin(); it != last_good.units.end();) {
    const core::Resource* r = decl.Find(it->first);
    if (r == nullptr || !r->HasUnit() || !r->unit().rollback) {
      it = last_good.units.erase(it);  // a credential's kept copy goes with it
      *changed = true;
      continue;
    }
    core::KeptUnit& kept = it->second;
    ++it;
    if (!kept.hold.has_value()) continue;
    bool stands = !kept.hold->wants.empty();
    for (const auto& [id, want] : kept.hold->wants) {
      const core::Resource* d = decl.Find(id);
      auto k = kept.resources.find(id);
      if (d == nullptr || wants[IndexOf(decl, d)] != want || k == kept.resources.end() ||
          k->second.kind != d->kind) {
        stands = false;
        break;
      }
    }
    if (!stands) {
      kept.hold.reset();  // the declaration moved past what the daemon refused
      *changed = true;
      continue;
    }
    HeldUnit h{IndexOf(decl, r), kept.generation, *kept.hold, {}};
    for (const auto& [id, want] : kept.hold->wants) {
      size_t j = IndexOf(decl, decl.Find(id));
      core::Substitute(decl.resources[j], kept.resources.at(id));
      wants[j] = want_of(decl.resources[j]);
      h.held.push_back(j);
    }
    out.push_back(std::move(h));
  }
  return out;
}

void SayHeld(const HeldUnit& h, const core::Declaration& decl, size_t i, ResourceOutcome& o) {
  const std::string& unit = decl.resources[h.index].unit().name;
  core::HeldAt held{h.generation, h.hold.generation, h.hold.since};
  std::string at = "held at generation " + std::to_string(h.generation) + " since " + h.hold.since;
  if (i == h.index) {
    o.mutable_declared().held = held;
    FailWith(o, held.Words() + " (" + h.hold.refused + ")" +
                    (h.hold.rollback_failed ? "; its restart onto the last good failed too" : ""));
  } else {
    FailWith(o, at + ": generation " + std::to_string(h.hold.generation) + " refused by " + unit);
  }
}

AfterApply Decide(const RollbackScope& scope, const std::vector<ResourceOutcome>& outcomes,
                  const core::LastGood& last_good,
                  const std::function<std::string(const core::Resource&)>& missing) {
  AfterApply after;
  for (size_t k = 0; k < scope.units.size(); ++k) {
    const RollbackScope::Unit& u = scope.units[k];
    const ResourceOutcome& o = outcomes[u.index];
    bool deps_ok = std::none_of(u.deps.begin(), u.deps.end(),
                                [&](size_t d) { return outcomes[d].outcome == Outcome::kFailed; });
    if (!u.held && deps_ok && RunningAt(o)) {
      after.confirmed.push_back(k);
      continue;
    }
    if (!o.confirm_failed || (o.unit && o.unit->up)) continue;  // not found dead after an action
    Rollback r{k, {}, "", 0};
    auto kept = last_good.units.find(u.id);
    if (kept == last_good.units.end()) {
      r.impossible = "no last good to roll back to (" + u.unit +
                     " was never confirmed running under on_failure: rollback)";
    } else {
      r.to_generation = kept->second.generation;
      for (const auto& [id, want] : u.wants) {
        auto was = kept->second.wants.find(id);
        if (was != kept->second.wants.end() && was->second != want)
          r.refused[id] = u.declared.at(id);
      }
      if (r.refused.empty()) {
        r.impossible = "nothing to roll back (it runs generation " +
                       std::to_string(r.to_generation) + "'s definition, the last good)";
      }
      for (const auto& [id, want] : r.refused) {
        std::string why = missing(kept->second.resources.at(id));
        if (why.empty()) continue;
        r.impossible = "generation " + std::to_string(r.to_generation) + "'s " + id +
                       " cannot be put back: " + why;
        r.refused.clear();
        break;
      }
    }
    after.rollbacks.push_back(std::move(r));
  }
  return after;
}

bool KeepConfirmed(const RollbackScope& scope, const AfterApply& after, std::string_view now,
                   core::LastGood& last_good) {
  bool changed = false;
  for (size_t k : after.confirmed) {
    const RollbackScope::Unit& u = scope.units[k];
    core::KeptUnit& kept = last_good.units[u.id];
    if (kept.wants == u.wants && !kept.hold.has_value()) continue;
    kept.generation = scope.generation;
    kept.confirmed_at = std::string(now);
    kept.resources = u.resources;
    kept.wants = u.wants;
    kept.hold.reset();
    changed = true;
  }
  return changed;
}

void RecordHolds(const RollbackScope& scope, const std::vector<Rollback>& rollbacks,
                 const std::vector<ResourceOutcome>& outcomes, std::string_view now,
                 core::LastGood& last_good) {
  for (const Rollback& r : rollbacks) {
    const RollbackScope::Unit& u = scope.units[r.unit];
    core::KeptUnit& kept = last_good.units.at(u.id);
    core::Hold hold = kept.hold.value_or(core::Hold{});
    hold.generation = scope.generation;
    hold.since = std::string(now);
    // The verdict's words only: a unit's outcome never carries content.
    hold.refused = core::Printable(outcomes[u.index].detail, 240);
    for (const auto& [id, want] : r.refused) hold.wants[id] = want;
    hold.rollback_failed = false;
    kept.hold = std::move(hold);
  }
}

void MergeRollback(const RollbackScope& scope, const std::vector<Rollback>& rollbacks,
                   std::vector<ResourceOutcome>& outcomes, std::vector<ResourceOutcome>&& again,
                   core::LastGood& last_good) {
  std::vector<bool> said(outcomes.size(), false);
  for (const Rollback& r : rollbacks) {
    const RollbackScope::Unit& u = scope.units[r.unit];
    if (u.index >= again.size()) continue;
    const ResourceOutcome& back = again[u.index];
    bool running = RunningAt(back) && back.outcome != Outcome::kFailed;
    std::string gen = "generation " + std::to_string(r.to_generation);
    ResourceOutcome& o = outcomes[u.index];
    o.outcome = Outcome::kFailed;
    o.detail += "; rolled back to " + gen + ": " +
                (running ? std::string("running") : "failed too: " + back.detail);
    o.unit = back.unit;
    o.digest = back.digest;
    o.applied_at = back.applied_at;
    o.mutable_declared().rolled_back = true;
    said[u.index] = true;
    core::KeptUnit& kept = last_good.units.at(u.id);
    if (kept.hold.has_value()) {
      o.mutable_declared().held =
          core::HeldAt{r.to_generation, kept.hold->generation, kept.hold->since};
      if (!running) kept.hold->rollback_failed = true;
    }
    for (const auto& [id, want] : r.refused) {
      auto d = std::find_if(u.deps.begin(), u.deps.end(),
                            [&](size_t j) { return outcomes[j].id == id; });
      if (d == u.deps.end() || *d == u.index) continue;
      ResourceOutcome& dep = outcomes[*d];
      dep.outcome = Outcome::kFailed;
      dep.detail += "; " + u.unit + " failed on it: put back as at " + gen;
      dep.digest = again[*d].digest;
      dep.applied_at = again[*d].applied_at;
      said[*d] = true;
    }
  }
  // What the second pass did to anything else is the later truth.
  for (size_t i = 0; i < again.size() && i < outcomes.size(); ++i) {
    if (!said[i] && again[i].outcome != Outcome::kUnchanged) outcomes[i] = std::move(again[i]);
  }
}

void SayNoRollback(const RollbackScope& scope, const Rollback& r,
                   std::vector<ResourceOutcome>& outcomes) {
  ResourceOutcome& o = outcomes[scope.units[r.unit].index];
  o.detail += "; not rolled back: " + r.impossible;
}

}  // namespace mesh::reconcile
