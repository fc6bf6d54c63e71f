#include "host/reconcile/rollback.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "host/core/printable.h"
#include "host/core/unit_status.h"
#include "host/reconcile/words.h"

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
  // Judged against the declaration, not against what an earlier hold of
  // this loop swapped in: two units held over one file both stand.
  const std::vector<std::string> declared = wants;
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
      if (d == nullptr || declared[IndexOf(decl, d)] != want || k == kept.resources.end() ||
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

void SayHold(uint64_t generation, const core::Hold& hold, const std::string& unit, bool of_unit,
             ResourceOutcome& o) {
  core::HeldAt held{generation, hold.generation, hold.since};
  // Compared with what was swapped in, the last good: "as declared" of
  // the machine would say the refused content is there.
  const std::string as_at = "as at generation " + std::to_string(generation);
  if (of_unit) {
    // A process's own tree held too ("1 file(s) as declared, app.service
    // active (running)").
    if (size_t at = o.detail.find(kAsDeclared);
        hold.wants.contains(o.id) && at != std::string::npos) {
      o.detail.replace(at, kAsDeclared.size(), as_at);
    }
    o.mutable_declared().held = held;
    FailWith(o, held.Words() + " (" + hold.refused + ")" +
                    (hold.rollback_failed ? "; its restart onto the last good failed too" : ""));
  } else {
    if (o.detail.ends_with(kAsDeclared)) {
      o.detail.replace(o.detail.size() - kAsDeclared.size(), kAsDeclared.size(), as_at);
    }
    FailWith(o, "held at generation " + std::to_string(generation) + " since " + hold.since +
                    ": generation " + std::to_string(hold.generation) + " refused by " + unit);
  }
}

void SayHeld(const HeldUnit& h, const core::Declaration& decl, size_t i, ResourceOutcome& o) {
  SayHold(h.generation, h.hold, decl.resources[h.index].unit().name, i == h.index, o);
}

bool SayPutBack(const HeldUnit& h, const std::vector<const core::RecordEntry*>& recorded,
                std::vector<ResourceOutcome>& outcomes, core::LastGood& last_good) {
  ResourceOutcome& o = outcomes[h.index];
  // Written now over the refused want the record held: not a held unit
  // merely started or repaired, nor one whose record was lost. A write that
  // failed keeps the refused want; a unit's own resource may have failed
  // after its write (its restart failing too) and still be put back.
  auto put_back = [&](size_t i) {
    const ResourceOutcome& r = outcomes[i];
    auto refused = h.hold.wants.find(r.id);
    return recorded[i] != nullptr && refused != h.hold.wants.end() &&
           recorded[i]->digest == refused->second && r.digest != refused->second &&
           r.outcome != Outcome::kUnchanged;
  };
  if (!o.host_acted || std::none_of(h.held.begin(), h.held.end(), put_back)) return false;
  bool running = RunningAt(o) && o.outcome != Outcome::kFailed;
  o.mutable_declared().rolled_back = true;
  o.detail += (o.detail.empty() ? "" : "; ") + std::string("rolled back to generation ") +
              std::to_string(h.generation) + (running ? ": running" : ": failed too");
  auto kept = last_good.units.find(o.id);
  if (running || kept == last_good.units.end() || !kept->second.hold ||
      kept->second.hold->rollback_failed) {
    return false;
  }
  kept->second.hold->rollback_failed = true;
  return true;
}

namespace {

// What putting `u` back to its last good `k` would mean (r.refused), or
// why it cannot be (r.impossible).
void PlanRollback(const RollbackScope::Unit& u, const core::KeptUnit& k,
                  const std::function<std::string(const core::Resource&)>& missing,
                  const std::set<std::string>& unchanged, Rollback& r) {
  r.to_generation = k.generation;
  std::string gen = "generation " + std::to_string(k.generation);
  std::string added, dropped, unkept;
  // A file of its definition that a host of an earlier version did not
  // keep (it did not count them) has no kept copy: left as it is when this
  // apply did not change it and something else can be put back.
  for (const auto& [id, want] : u.wants) {
    if (k.wants.contains(id)) continue;
    std::string& to = u.definitions.contains(id) && unchanged.contains(id) ? unkept : added;
    to += (to.empty() ? "" : ", ") + id;
  }
  for (const auto& [id, want] : k.wants) {
    if (!u.wants.contains(id)) dropped += (dropped.empty() ? "" : ", ") + id;
  }
  if (!added.empty() || !dropped.empty()) {
    r.impossible = "its definition is not made of " + gen + "'s resources (" +
                   (added.empty() ? "" : "added " + added) +
                   (!added.empty() && !dropped.empty() ? "; " : "") +
                   (dropped.empty() ? "" : "dropped " + dropped) +
                   "): a rollback puts content back, never resources";
    return;
  }
  for (const auto& [id, want] : u.wants) {
    auto kept = k.wants.find(id);
    if (kept != k.wants.end() && kept->second != want) r.refused[id] = u.declared.at(id);
  }
  if (r.refused.empty()) {
    r.impossible = unkept.empty()
                       ? "nothing to roll back (it runs " + gen + "'s definition, the last good)"
                       : "its definition is not made of " + gen + "'s resources (added " + unkept +
                             "): a rollback puts content back, never resources";
    return;
  }
  for (const auto& [id, want] : r.refused) {
    const core::Resource& was = k.resources.at(id);
    const core::Resource& now = u.resources.at(id);
    std::string why =
        was.kind != now.kind ? "it was a " + std::string(core::KindName(was.kind)) + " then"
        // Content is put back, never a path: generation N's bytes at a
        // path it never had are not generation N.
        : was.path != now.path ? "it was at " + was.path + " then, " + now.path + " now"
        : was.HasUnit() && was.unit().name != now.unit().name
            ? "it was unit " + was.unit().name + " then, " + now.unit().name + " now"
            : missing(was);
    if (why.empty()) continue;
    r.impossible = gen + "'s " + id + " cannot be put back: " + why;
    r.refused.clear();
    return;
  }
}

// The want `unit`'s last good holds for resource `id`; "" when none.
std::string_view KeptWant(const core::LastGood& last_good, const std::string& unit,
                          const std::string& id) {
  auto kept = last_good.units.find(unit);
  if (kept == last_good.units.end()) return {};
  auto want = kept->second.wants.find(id);
  return want == kept->second.wants.end() ? std::string_view() : std::string_view(want->second);
}

// A resource several units run on is put back only when all of them roll
// back, each onto the same kept content (a file holds one): until no
// rollback is made impossible by another that is.
void KeepWhatOthersRunOn(const RollbackScope& scope, const core::LastGood& last_good,
                         std::vector<Rollback>& rollbacks) {
  for (bool changed = true; changed;) {
    changed = false;
    std::set<std::string_view> rolling;
    for (const Rollback& r : rollbacks) {
      if (r.impossible.empty()) rolling.insert(scope.units[r.unit].id);
    }
    for (Rollback& r : rollbacks) {
      if (!r.impossible.empty()) continue;
      const RollbackScope::Unit& u = scope.units[r.unit];
      for (const auto& [id, want] : r.refused) {
        auto users = u.shared.find(id);
        if (users == u.shared.end()) continue;
        auto other = std::find_if(users->second.begin(), users->second.end(),
                                  [&](const std::string& o) { return !rolling.contains(o); });
        std::string why = " runs on it too and is not rolled back";
        if (other == users->second.end()) {
          std::string_view mine = KeptWant(last_good, u.id, id);
          other = std::find_if(users->second.begin(), users->second.end(),
                               [&](const auto& o) { return KeptWant(last_good, o, id) != mine; });
          why = " runs on it too and its last good holds another " + id;
        }
        if (other == users->second.end()) continue;
        r.impossible = "generation " + std::to_string(r.to_generation) + "'s " + id +
                       " cannot be put back: " + *other + why;
        r.refused.clear();
        changed = true;
        break;
      }
    }
  }
}

// Whether the unit's run began after every file its start reads last
// changed on disk: a file changed while it ran (written while not in its
// restart_on, edited by hand) was never read by it. Unknown: not.
bool RanOnItsDefinition(const RollbackScope::Unit& u, const ResourceOutcome& o) {
  return o.unit.has_value() && core::RunBeganSince(o.unit->started_realtime, u.read_changed_ns);
}

// The same resources, each at any want.
bool SameIds(const std::map<std::string, std::string>& a,
             const std::map<std::string, std::string>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const auto& x, const auto& y) { return x.first == y.first; });
}

}  // namespace

AfterApply Decide(const RollbackScope& scope, const std::vector<ResourceOutcome>& outcomes,
                  const core::LastGood& last_good,
                  const std::function<std::string(const core::Resource&)>& missing) {
  AfterApply after;
  for (size_t k = 0; k < scope.units.size(); ++k) {
    const RollbackScope::Unit& u = scope.units[k];
    const ResourceOutcome& o = outcomes[u.index];
    bool deps_ok = std::none_of(u.deps.begin(), u.deps.end(),
                                [&](size_t d) { return outcomes[d].outcome == Outcome::kFailed; });
    auto kept = last_good.units.find(u.id);
    bool acted = o.host_acted && !o.confirm_failed;
    if (u.held) {
      if (acted && RunningAt(o) && kept != last_good.units.end() && kept->second.hold &&
          kept->second.hold->rollback_failed) {
        after.recovered.push_back(k);
      }
      // Put back by this apply (SayPutBack): said and marked already.
      if (o.declared.has_value() && o.declared->rolled_back) continue;
    } else if (deps_ok && RunningAt(o) &&
               (acted ||
                // Not acted on: its first last good, or one an apply
                // confirmed without saving it (running as recorded on other
                // wants of the same resources than those kept). Either only
                // when its run began after what it runs on was written.
                ((kept == last_good.units.end() ||
                  (o.outcome == Outcome::kUnchanged && !kept->second.hold &&
                   kept->second.wants != u.wants && SameIds(kept->second.wants, u.wants))) &&
                 RanOnItsDefinition(u, o)))) {
      after.confirmed.push_back(k);
      continue;
    }
    // Not found dead after an action: up, or never started on what was
    // written (its job still queued behind another unit's).
    if (!o.confirm_failed || o.never_ran || (o.unit && o.unit->up)) continue;
    after.rollbacks.push_back(Rollback{k, {}, "", 0});
  }
  for (Rollback& r : after.rollbacks) {
    const RollbackScope::Unit& u = scope.units[r.unit];
    auto kept = last_good.units.find(u.id);
    if (kept == last_good.units.end()) {
      r.impossible = "no last good to roll back to (" + u.unit +
                     " was never confirmed running under on_failure: rollback)";
    } else {
      std::set<std::string> unchanged;
      for (size_t d : u.deps) {
        if (outcomes[d].outcome == Outcome::kUnchanged) unchanged.insert(outcomes[d].id);
      }
      PlanRollback(u, kept->second, missing, unchanged, r);
    }
  }
  KeepWhatOthersRunOn(scope, last_good, after.rollbacks);
  return after;
}

std::vector<std::string> LeaveOutWhatDoesNotFit(core::LastGood& last_good, std::string_view machine,
                                                uint64_t budget) {
  std::vector<std::string> order;
  order.reserve(last_good.units.size());
  for (const auto& [id, kept] : last_good.units) order.push_back(id);
  std::stable_partition(order.begin(), order.end(), [&](const std::string& id) {
    return last_good.units.at(id).hold.has_value();
  });
  std::vector<std::string> said;
  uint64_t total = 0;
  for (const std::string& id : order) {
    auto bytes = core::KeptUnitBytes(id, last_good.units.at(id), machine);
    std::string why =
        !bytes ? bytes.error().message
        : total + *bytes > budget
            ? "the last good of " + id + " does not fit beside the others' in last-good.json"
            : "";
    if (why.empty()) {
      total += *bytes;
      continue;
    }
    said.push_back(why + ": not kept, so " + id + " cannot be rolled back");
    last_good.units.erase(id);
  }
  return said;
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
  for (size_t k : after.recovered) {
    core::KeptUnit& kept = last_good.units.at(scope.units[k].id);
    if (kept.hold.has_value()) kept.hold->rollback_failed = false;
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
                   std::string_view why_not, const core::LastGood& before,
                   core::LastGood& last_good) {
  std::vector<bool> said(outcomes.size(), false);
  for (const Rollback& r : rollbacks) {
    const RollbackScope::Unit& u = scope.units[r.unit];
    ResourceOutcome& o = outcomes[u.index];
    said[u.index] = true;
    const ResourceOutcome* back = u.index < again.size() ? &again[u.index] : nullptr;
    auto found = last_good.units.find(u.id);
    if (found == last_good.units.end()) {
      o.detail += "; not rolled back: its last good is not kept";
      continue;
    }
    core::KeptUnit& kept = found->second;
    // What the second pass put back: the record holds the kept want of it.
    auto put_back = [&](size_t d) {
      auto want = kept.wants.find(outcomes[d].id);
      return d < again.size() && want != kept.wants.end() && again[d].digest == want->second;
    };
    bool any_put_back = back != nullptr && std::any_of(u.deps.begin(), u.deps.end(), [&](size_t d) {
                          return r.refused.contains(outcomes[d].id) && put_back(d);
                        });
    if (back == nullptr || (!back->host_acted && !any_put_back)) {
      // Nothing was put back: the hold it would have stood on goes.
      std::string why = back == nullptr                     ? std::string(why_not)
                        : back->outcome == Outcome::kFailed ? back->detail
                                                            : "the second pass did not restart it";
      o.detail += "; not rolled back: " + (why.empty() ? std::string("it was refused") : why);
      auto was = before.units.find(u.id);
      if (was != before.units.end()) last_good.units[u.id] = was->second;
      continue;
    }
    // Put back on disk but not restarted onto (systemd refused the job, the
    // daemon-reload failed): a rollback that failed too. The hold stays, or
    // the next apply would write the refused config again.
    bool running = back->host_acted && RunningAt(*back) && back->outcome != Outcome::kFailed;
    std::string gen = "generation " + std::to_string(r.to_generation);
    o.outcome = Outcome::kFailed;
    o.detail += "; rolled back to " + gen + ": " +
                (running ? std::string("running") : "failed too: " + back->detail);
    // The unit as the second pass left it, beside what the refused run
    // logged (the first pass's journal lines: why it was rolled back).
    core::Boxed<core::UnitSnapshot> refused = std::move(o.unit);
    o.unit = back->unit;
    if (refused.has_value() && o.unit.has_value() && o.unit->journal.empty() &&
        o.unit->journal_note.empty()) {
      o.unit->journal = std::move(refused->journal);
      o.unit->journal_note = std::move(refused->journal_note);
    }
    o.digest = back->digest;
    o.applied_at = back->applied_at;
    o.mutable_declared().rolled_back = true;
    if (back->host_acted) o.mutable_declared().rollback_restart = back->restart_reason();
    o.mutable_declared().rollback_confirm_failed = back->confirm_failed;
    if (kept.hold.has_value()) {
      o.mutable_declared().held =
          core::HeldAt{r.to_generation, kept.hold->generation, kept.hold->since};
      if (!running) kept.hold->rollback_failed = true;
    }
    for (const auto& [id, want] : r.refused) {
      auto d = std::find_if(u.deps.begin(), u.deps.end(),
                            [&](size_t j) { return outcomes[j].id == id; });
      if (d == u.deps.end() || *d == u.index || !put_back(*d)) continue;
      ResourceOutcome& dep = outcomes[*d];
      dep.outcome = Outcome::kFailed;
      dep.detail += "; " + u.unit + " failed on it: put back as at " + gen;
      dep.digest = again[*d].digest;
      dep.applied_at = again[*d].applied_at;
      said[*d] = true;
    }
  }
  // What the second pass did to any other declared resource is the later
  // truth (it removes nothing: removals keep the first pass's words).
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
