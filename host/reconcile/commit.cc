#include "host/reconcile/commit.h"

#include "host/reconcile/words.h"

namespace mesh::reconcile {
namespace {

using core::Outcome;
using core::ResourceOutcome;
using State = Acted::State;

// Why the unit was acted on, with the generation that first owed it; a
// dead unit's "was failed" is followed by what was done of it ("started"),
// not in a plan, which says what it would do.
std::string WhyOf(const UnitPlan& u, bool dry_run) {
  std::string why = u.why;
  if (u.reason == core::RestartReason::kWasDead && !dry_run && !why.empty()) why += ", started";
  if (u.owed_since.has_value()) {
    std::string owed = OwedSince(*u.owed_since);
    why = why.empty() ? owed : why + " (" + owed + ")";
  }
  if (!u.also_seen.empty()) why += (why.empty() ? "" : "; ") + u.also_seen;
  return why;
}

// An action held back or refused, when an earlier apply already owed it.
std::string StillOwed(const UnitPlan& u) {
  if (!u.owed_since.has_value() || !u.action.has_value()) return "";
  return " (" + std::string(core::UnitActionVerb(*u.action)) + " " + OwedSince(*u.owed_since) + ")";
}

void Fail(ResourceOutcome& o, std::string detail) {
  o.outcome = Outcome::kFailed;
  o.detail = std::move(detail);
}

void SettleStopped(const SettleInputs& in, const core::Resource& r, const Step& step,
                   const UnitPlan& u, ResourceOutcome& o) {
  std::string before = step.changes() ? step.detail + "; " : "";
  if (u.stop) {
    o.outcome = step.changes() ? step.outcome : Outcome::kStopped;
    o.detail = before + StoppedNotWaited(in.dry_run, r.unit().name);
  } else if (u.stopping) {
    // systemd stamps every change of stop phase: the time is this phase's.
    bool overdue = u.status.in_state_for > core::StopPhaseBound(u.status);
    o.outcome = overdue ? Outcome::kFailed : step.changes() ? step.outcome : Outcome::kStopped;
    o.detail = before + (overdue ? StopPastBudget(r.unit().name, u.status)
                                 : StillStopping(r.unit().name, u.status));
  } else {
    o.detail = before + StoppedAsDeclared(r.unit().name);
  }
}

const core::UnitStatus* SettleActed(const SettleInputs& in, const core::Resource& r,
                                    const Step& step, const UnitPlan& u, const Acted& a,
                                    const std::optional<Confirmation>& c, ResourceOutcome& o) {
  std::string why = WhyOf(u, in.dry_run || !c.has_value());
  if (in.dry_run || !c.has_value()) {
    o.outcome = step.changes() ? step.outcome : OutcomeOf(*u.action);
    o.detail = (step.changes() ? step.detail + ", "
                : why.empty()  ? ""
                               : why + "; ") +
               "would " + std::string(core::UnitActionVerb(*u.action)) + " " + r.unit().name;
    return nullptr;
  }
  // A reload that failed leaves the daemon running on its old config: the
  // resource fails, the unit is still up (it is not a dead daemon).
  bool up =
      c->verdict.accepted || (*u.action == core::UnitAction::kReload && core::UnitUp(c->last));
  o.unit = UnitSnapshotOf(r.unit().name, c->last, up);
  // A start of a unit that runs (systemd restarted it on its own) is a
  // job systemd ends without touching the daemon, the same run seen after
  // it: it has the unit looked at twice and restarts nothing. Counted as
  // the host's restart, MeshHostUnitFlapping saw each of systemd's twice.
  core::UnitAction asked = AskedOf(u, a);
  bool started_nothing = asked == core::UnitAction::kStart && u.status.Running() &&
                         !u.status.invocation_id.empty() &&
                         c->last.invocation_id == u.status.invocation_id;
  o.mutable_declared().restart_reason =
      *u.action == core::UnitAction::kReload || started_nothing ? std::nullopt : u.reason;
  o.host_acted = true;
  if (!c->verdict.accepted) {
    Fail(o, (r.unit().name != r.id ? r.unit().name + " " : "") + c->verdict.detail + StillOwed(u));
    o.confirm_failed = true;
    o.never_ran = c->verdict.not_run;
  } else if (!u.start_failed.empty()) {
    o.unit->up = false;  // never seen up since it failed
    Fail(o, u.start_failed + "; started again: " + c->verdict.detail + StillOwed(u));
  } else {
    std::string instead = a.restart_for_start ? "started by someone else after the host looked: "
                                                "restarted onto the change, "
                                              : "";
    if (step.changes()) {
      o.outcome = step.outcome;
      o.detail = step.detail + ", " + instead + "running as " + r.unit().name + " (" +
                 c->verdict.detail + ")";
    } else {
      o.outcome = OutcomeOf(asked);
      o.detail =
          (why.empty() ? "" : why + "; ") + instead + r.unit().name + " " + c->verdict.detail;
    }
  }
  return c->verdict.accepted ? &c->last : nullptr;
}

// `enabled`: what the enable phase made of the unit's [Install] links,
// said after the unit's state. A unit that cannot be made as declared
// fails; one made so is `updated` if nothing else happened to it. After a
// failure of the unit's own, links it could not make are said after it
// (and are held or owed with it); links made are not.
void SettleEnablement(const SettleInputs& in, size_t k, ResourceOutcome& o) {
  const UnitPlan& u = in.plan->units[k];
  const core::Resource& r = in.declaration->resources[u.index];
  const bool failed_before = o.outcome == Outcome::kFailed;
  auto fail = [&](std::string why) {
    if (failed_before) {
      o.detail += "; " + why;
    } else {
      Fail(o, std::move(why));
    }
  };
  if (!u.enable_impossible.empty()) return fail(u.enable_impossible);
  if (!u.set_enabled.has_value()) return;
  const char* verb = *u.set_enabled ? "enable" : "disable";
  const SystemdAnswer answer =
      in.enabled != nullptr && k < in.enabled->size() ? (*in.enabled)[k] : SystemdAnswer{};
  if (!in.dry_run && !answer.asked()) return;  // not asked: failed before
  if (!in.dry_run && answer.refused()) {
    return fail("cannot " + std::string(verb) + " " + r.unit().name + ": " + answer.error);
  }
  if (failed_before) return;
  std::string words =
      in.dry_run ? "would " + std::string(verb) + " " + r.unit().name
                 : std::string(*u.set_enabled ? "enabled " : "disabled ") + r.unit().name +
                       (*u.set_enabled ? " (it starts at boot)" : " (it no longer starts at boot)");
  if (u.enabled_drifted) {
    words = "drifted: " + r.unit().name + " was " + (*u.set_enabled ? "disabled" : "enabled") +
            " on the machine, put back; " + words;
  }
  o.detail = o.detail.empty() ? words : o.detail + "; " + words;
  if (o.outcome == Outcome::kUnchanged) o.outcome = Outcome::kUpdated;
}

// The unit's part of a service's or process's outcome. Returns the look at
// which a unit declared running was found as declared (none: it was not).
const core::UnitStatus* SettleUnit(const SettleInputs& in, size_t k, ResourceOutcome& o) {
  const UnitPlan& u = in.plan->units[k];
  const core::Resource& r = in.declaration->resources[u.index];
  const Step& step = in.plan->steps[u.index];
  const Acted& a = (*in.acts)[k];
  if (!u.failed.empty()) {
    Fail(o, u.failed);
    return nullptr;
  }
  o.unit = UnitSnapshotOf(r.unit().name, u.status, u.up);
  if (a.state == State::kBlocked || a.state == State::kRefused) {
    Fail(o, a.detail + StillOwed(u));
    return nullptr;
  }
  if (r.unit().state == core::UnitState::kStopped) {
    SettleStopped(in, r, step, u, o);
    return nullptr;
  }
  if (r.unit().state == core::UnitState::kTriggered) {
    std::string loaded = u.daemon_reload && !in.dry_run
                             ? "; its next activation runs the new definition (a run in "
                               "progress keeps the one it started with)"
                             : "";
    o.detail = Then(step.detail, LeftToTrigger(r.unit().name, u.status) + loaded +
                                     (u.why.empty() ? "" : "; " + u.why));
    return nullptr;
  }
  if (!u.action.has_value()) {
    // Restarted or stopped by systemd with a unit this apply acted on:
    // judged on the looks taken with those.
    if (const auto& c = (*in.confirmed)[k]; c.has_value()) {
      const bool up = c->verdict.accepted && core::UnitUp(c->last);
      o.unit = UnitSnapshotOf(r.unit().name, c->last, up);
      std::string words = Then(step.detail, r.unit().name + " " + c->verdict.detail);
      if (!c->verdict.accepted) {
        Fail(o, std::move(words));
        return nullptr;
      }
      o.detail = std::move(words);
      return up ? &c->last : nullptr;
    }
    // Loaded again alone (plan_units.cc: LoadingAgainIsEnough).
    std::string loaded = !u.daemon_reload || u.why.empty() ? ""
                         : in.dry_run
                             ? u.why + ": would load it again (daemon-reload), not restart it"
                             : u.why + ": loaded again (daemon-reload), not restarted";
    std::string state = UnitStatePhrase(r.unit().name, u.status);
    o.detail = loaded.empty()        ? Then(step.detail, state)
               : step.detail.empty() ? loaded + "; " + state
                                     : step.detail + "; " + loaded + "; " + state;
    return u.up ? &u.status : nullptr;
  }
  return SettleActed(in, r, step, u, a, (*in.confirmed)[k], o);
}

// The record remembers the look at which a unit declared running was last
// found as declared (core::UnitBaseline). A unit not found as declared
// keeps what was remembered before. A look taken before this apply's
// daemon-reload saw a reload systemd has forgotten since.
void Remember(const core::UnitStatus* up, bool before_daemon_reload, const core::RecordEntry* old,
              const core::RecordEntry*& entry, std::optional<core::RecordEntry>& filled) {
  core::UnitBaseline base = core::BaselineOfRecord(old);
  if (up != nullptr) base = core::BaselineOf(*up);
  if (up != nullptr && before_daemon_reload) base.reload_began_us = 0;
  if (core::BaselineOfRecord(entry) == base) return;
  if (!filled.has_value()) filled = *entry;
  filled->mutable_unit().n_restarts = base.n_restarts;
  filled->mutable_unit().finished = base.finished;
  filled->mutable_unit().starting = base.starting;
  filled->mutable_unit().run_began_us = base.run_began_us;
  filled->mutable_unit().reload_began_us = base.reload_began_us;
  entry = &*filled;
}

// A unit that failed keeps the state the record had for it (triggered,
// stopped): what the host did not do while it was so — restart it onto a
// change — is still judged by the next apply (plan_units.cc,
// ChangedSinceItsRun), which would otherwise find it recorded as declared.
// So does its `enabled` (none for a new one): a unit never enabled is not
// "disabled on the machine" at the apply that enables it.
void KeepRecordedState(const core::RecordEntry* old, const core::RecordEntry*& entry,
                       std::optional<core::RecordEntry>& filled) {
  if (entry == nullptr) return;
  const std::string& state = old != nullptr ? old->unit().state : entry->unit().state;
  const std::optional<bool> enabled = old != nullptr ? old->unit().enabled : std::nullopt;
  if (entry->unit().state == state && entry->unit().enabled == enabled) return;
  if (!filled.has_value() || entry != &*filled) filled = *entry;
  filled->mutable_unit().state = state;
  filled->mutable_unit().enabled = enabled;
  entry = &*filled;
}

ResourceOutcome SettleResource(const SettleInputs& in, size_t i, size_t* unit_k, Settled& out) {
  const core::Resource& r = in.declaration->resources[i];
  Step& step = in.plan->steps[i];
  // None when nothing was written (Writes::steps); then no step changes.
  Written* written = in.writes->steps.empty() ? nullptr : &in.writes->steps[i];
  ResourceOutcome o;
  o.id = r.id;
  o.kind = std::string(core::KindName(r.kind));
  if (r.HasUnit()) {
    o.mutable_declared().unit = r.unit().name;
    o.mutable_declared().state = std::string(core::UnitStateName(r.unit().state));
    o.mutable_declared().rollback = r.unit().rollback;
  }
  // What the record holds of it now: the new entry, or the old one when it
  // failed (writes are atomic: the old entry still describes the disk) or
  // in a plan that would change it.
  const core::RecordEntry* entry = step.entry ? &*step.entry : step.keeps_old ? step.old : nullptr;
  std::optional<core::RecordEntry> filled;
  if (step.failed() || (written != nullptr && !written->status)) {
    Fail(o, step.failed() ? step.detail : written->status.error().message);
    // The old entry, of another kind too (a file declared a bundle now
    // under its id): what it wrote is still on the machine, and the host's.
    entry = step.old != nullptr                                  ? step.old
            : in.olds != nullptr && i < in.olds->recorded.size() ? in.olds->recorded[i]
                                                                 : nullptr;
  } else {
    o.outcome = step.outcome;
    o.detail = step.detail;
    if (in.dry_run && step.changes()) {
      entry = step.old;
    } else if (step.changes()) {
      filled = std::move(*step.entry);
      step.entry = std::nullopt;
      if (step.write_files) filled->written[0].fingerprint = std::move(written->fingerprint);
      if (step.write_unit_file)
        filled->mutable_unit().file_fingerprint = written->unit().file_fingerprint;
      for (const auto& [name, fp] : written->unit().drop_in_fingerprints) {
        filled->mutable_unit().drop_ins[name] =
            std::string(core::DropInPreexisting(filled->mutable_unit().drop_ins[name]) ? "pre:"
                                                                                       : "") +
            fp;
      }
      entry = &*filled;
    }
  }
  if (r.HasUnit()) {
    if (o.outcome != Outcome::kFailed) {
      const core::UnitStatus* up = SettleUnit(in, *unit_k, o);
      SettleEnablement(in, *unit_k, o);
      if (o.outcome == Outcome::kFailed && !in.dry_run) KeepRecordedState(step.old, entry, filled);
      bool running = r.unit().state == core::UnitState::kRunning;
      // A look the two looks did not take is the plan's, from before the
      // daemon-reload.
      const bool before_reload =
          !(*in.confirmed)[*unit_k].has_value() && in.reloaded != nullptr && in.reloaded->done();
      if (running && entry != nullptr && !in.dry_run) {
        Remember(up, before_reload, step.old, entry, filled);
      }
    }
    ++*unit_k;
  }
  o.digest = entry != nullptr ? entry->digest : "";
  o.applied_at = entry != nullptr ? entry->applied_at : "";
  // Only what differs from the record is kept: a no-op copies nothing.
  const core::RecordEntry* recorded = in.olds->recorded[i];
  if (entry != nullptr) {
    if (recorded == nullptr || (recorded != entry && !(*recorded == *entry))) {
      if (filled.has_value() && entry == &*filled) {
        out.entries[r.id] = std::move(*filled);
      } else if (step.entry.has_value() && entry == &*step.entry) {
        out.entries[r.id] = std::move(*step.entry);
        step.entry = std::nullopt;
      } else {
        out.entries[r.id] = *entry;  // the loaded record's
      }
    }
  } else if (!in.dry_run && recorded != nullptr) {
    out.entries[r.id] = std::nullopt;
  }
  return o;
}

const std::vector<std::string> kNothingLeft;

// What systemd took of removal `k`'s unit. Stopped and disabled on
// purpose, whatever else failed or waits: recorded so, lest the record's
// view of it (the daemon's at its start, beside a refused push) call it
// dead, or a later apply call its links gone a drift.
Writes::Asked RecordAsked(const SettleInputs& in, size_t k, Settled& out) {
  const Removal& rm = in.plan->removals[k];
  Writes::Asked asked =
      !in.dry_run && k < in.writes->asked.size() ? in.writes->asked[k] : Writes::Asked{};
  if ((asked.stopped || asked.disabled) && (!in.writes->removals[k] || !rm.until_stopped.empty())) {
    core::RecordEntry entry = rm.entry;
    if (asked.stopped && entry.unit().state == "running") entry.mutable_unit().state = "stopped";
    if (asked.disabled) entry.mutable_unit().enabled = false;
    out.entries[rm.id] = std::move(entry);
  }
  return asked;
}

ResourceOutcome SettleRemoval(const SettleInputs& in, size_t k, Settled& out) {
  const Removal& rm = in.plan->removals[k];
  const core::Status& done = in.writes->removals[k];
  ResourceOutcome o;
  o.id = rm.id;
  o.kind = rm.entry.kind;
  o.outcome = Outcome::kRemoved;
  o.applied_at = in.now;
  std::string kept = KeptThisApply(rm, *in.declaration, *in.writes);
  // What a resource left is in the record only while its removal is not
  // done: as it was, unless recorded stopped below.
  if (rm.left_behind && !in.dry_run && (!kept.empty() || !rm.until_stopped.empty() || !done)) {
    out.entries[rm.id] = rm.entry;
  }
  if (!kept.empty()) {
    Fail(o, kept);
    o.digest = rm.entry.digest;
    return o;
  }
  Writes::Asked asked = RecordAsked(in, k, out);
  const std::string& unit = rm.entry.unit().name;
  std::string disabled = asked.disabled ? "disabled " + unit : "";
  // Before the wait for the stop: a stop or disable refused is no wait.
  if (!done) {
    std::string did = Then(asked.stopped ? StoppedNotWaited(in.dry_run, unit) : "", disabled);
    Fail(o, "removing: " + done.error().message + (did.empty() ? "" : "; " + did));
    o.digest = rm.entry.digest;
    return o;
  }
  if (!rm.until_stopped.empty()) {
    // Stays recorded: the next apply finds it dropped again and, the unit
    // stopped, removes the rest.
    std::string did = Then(rm.stop ? StoppedNotWaited(in.dry_run, unit) : "", disabled);
    o.detail = did.empty() ? rm.until_stopped : did + "; " + rm.until_stopped;
    o.digest = rm.entry.digest;
    out.pending = true;
    return o;
  }
  const std::vector<std::string>& held =
      in.writes->removals_left.empty() ? kNothingLeft : in.writes->removals_left[k];
  std::vector<std::string> left = rm.left;
  left.insert(left.end(), held.begin(), held.end());
  if (rm.stop) o.detail = StoppedNotWaited(in.dry_run, rm.entry.unit().name);
  if (size_t n = rm.delete_paths.size() + rm.delete_empty_dirs.size() - held.size(); n > 0) {
    o.detail = Then(o.detail, DidOrWould(in.dry_run, "deleted", "delete", Plural(n, "path")));
  }
  for (size_t j = 0; j < rm.taken_over.size() && j < 3; ++j) {
    o.detail = Then(o.detail, rm.taken_over[j]);
  }
  if (rm.taken_over.size() > 3) {
    o.detail = Then(o.detail, Plural(rm.taken_over.size() - 3, "more path") + " replaced so");
  }
  // Named, at most a few: a tree left whole is one path.
  for (size_t j = 0; j < left.size() && j < 3; ++j) o.detail = Then(o.detail, "left " + left[j]);
  if (left.size() > 3) {
    o.detail = Then(o.detail, "left " + Plural(left.size() - 3, "more path") + " the host kept");
  }
  if (rm.disable) {
    o.detail = Then(o.detail, DidOrWould(in.dry_run, "disabled", "disable", rm.entry.unit().name));
  }
  if (rm.delete_unit_file) {
    o.detail =
        Then(o.detail, rm.unit_file_gone ? "unit file " + rm.entry.unit().name + " already gone"
                                         : DidOrWould(in.dry_run, "deleted", "delete",
                                                      "unit file " + rm.entry.unit().name));
  }
  if (!rm.delete_drop_ins.empty()) {
    o.detail = Then(o.detail, DidOrWould(in.dry_run, "deleted", "delete",
                                         Plural(rm.delete_drop_ins.size(), "drop-in")));
  }
  if (o.detail.empty()) o.detail = "no longer declared";
  // What was deleted or stopped is said first; a removal that deleted
  // nothing says that the host let go, not that something went.
  if (!rm.stop && rm.delete_paths.size() + rm.delete_empty_dirs.size() == held.size() &&
      !rm.delete_unit_file && rm.delete_drop_ins.empty() && !left.empty()) {
    o.detail = "no longer managed; " + o.detail;
  }
  if (!in.dry_run) out.entries[rm.id] = std::nullopt;  // recorded: it is a removal
  return o;
}

// What is still owed: the plan's intent, less what was done and confirmed.
// An action held back because a write failed stays owed until the write
// succeeds: a write that "failed" may still have landed (a tree swapped in
// whose old copy could not be deleted, a file renamed then not re-read),
// and the next apply could find it matching and never restart.
core::Intent StillOwedAfter(const SettleInputs& in) {
  core::Intent next = std::move(in.plan->intent);  // spent, as the steps are
  next.applying = false;
  bool reloaded = in.reloaded->done();
  for (size_t k = 0; k < in.plan->units.size(); ++k) {
    const UnitPlan& u = in.plan->units[k];
    auto it = next.owed.find(in.declaration->resources[u.index].id);
    if (it == next.owed.end()) continue;
    core::Owed& owed = it->second;
    if (reloaded) owed.daemon_reload = false;
    const auto& c = (*in.confirmed)[k];
    // A start found failed stays owed until a start is seen through.
    if (c.has_value() && c->verdict.accepted && u.start_failed.empty()) owed.action.reset();
    if (!owed.action.has_value() && !owed.daemon_reload) next.owed.erase(it);
  }
  return next;
}

}  // namespace

Settled Settle(const SettleInputs& in) {
  Settled out;
  size_t n = in.declaration->resources.size();
  out.outcomes.reserve(n + in.plan->removals.size());
  size_t unit_k = 0;
  // Each outcome judged as it is made, while it is in the cache.
  for (size_t i = 0; i < n; ++i) {
    out.failed |=
        out.outcomes.emplace_back(SettleResource(in, i, &unit_k, out)).outcome == Outcome::kFailed;
    in.declaration->resources[i].content = std::string();
  }
  for (size_t k = 0; k < in.plan->removals.size(); ++k) {
    out.failed |= out.outcomes.emplace_back(SettleRemoval(in, k, out)).outcome == Outcome::kFailed;
  }
  out.intent = in.dry_run ? std::move(in.plan->intent) : StillOwedAfter(in);
  if (!in.dry_run) {
    out.intent.failed.clear();
    for (size_t i = 0; out.failed && i < out.outcomes.size(); ++i) {
      const ResourceOutcome& o = out.outcomes[i];
      if (o.outcome == Outcome::kFailed) {
        out.intent.LeaveFailed(o.id, o.kind, o.detail, in.declaration->generation);
      }
    }
  }
  return out;
}

core::Status Commit(const ReconcilerPorts& ports, const CommitInputs& in, Settled&& settled) {
  const core::Record& old = *in.record;
  const core::Declaration& decl = *in.declaration;
  // Settled only when nothing failed and nothing is owed: the next apply of
  // these same bytes may then be proven from the record alone.
  std::string settled_digest =
      settled.failed || settled.pending || !settled.intent.owed.empty() ? "" : decl.digest;
  std::optional<core::OwnerIds> owners =
      in.owners != nullptr ? core::RecordableOwners(*in.owners) : old.owners;
  bool same_record = in.had_record && settled.entries.empty() && old.machine == decl.machine &&
                     old.generation == decl.generation && old.declaration_digest == decl.digest &&
                     old.version == core::Record::kVersion &&
                     old.want_version == core::Record::kWantVersion &&
                     old.settled_declaration_digest == settled_digest && old.owners == owners;
  if (same_record) {
    // Nothing more will be recorded: what this apply names as created is
    // held by the record already, or is not there (a write that failed
    // leaves nothing; an orphan removed), or an orphan that could not be
    // removed (left, and said). Kept named, a name would stand for
    // whatever is put at that path later, taken then for the host's
    // leftover and deleted; and no later apply would be proven a no-op.
    settled.intent.ForgetCreating();
  }
  // A resource still failing keeps what was saved of it (its words may
  // hold a time that moves): a failing apply does not rewrite the intent
  // for that alone.
  for (auto& [id, f] : settled.intent.failed) {
    auto saved = in.saved->failed.find(id);
    if (saved != in.saved->failed.end() && saved->second.kind == f.kind) f = saved->second;
  }
  bool same_intent = settled.intent == *in.saved;
  if (same_record && same_intent) return core::Ok();
  // What was renamed and removed reaches the disk before the intent or the
  // record says so.
  core::Status flushed = ports.root->Flush();
  if (flushed) flushed = ports.units->Flush();
  if (!flushed) return core::Fail("record not saved: " + flushed.error().message);
  if (!same_intent) {
    if (auto st = ports.records->SaveIntent(settled.intent); !st) {
      return core::Fail("intent not saved: " + st.error().message);
    }
  }
  if (same_record) return core::Ok();
  core::Record next = old;
  // Node by node: the settled entries and the new record's are not both
  // held whole at the apply's peak.
  while (!settled.entries.empty()) {
    auto node = settled.entries.extract(settled.entries.begin());
    if (node.mapped().has_value()) {
      next.resources.insert_or_assign(std::move(node.key()), std::move(*node.mapped()));
    } else {
      next.resources.erase(node.key());
    }
  }
  next.machine = decl.machine;
  next.generation = decl.generation;
  next.declaration_digest = decl.digest;
  next.version = core::Record::kVersion;  // as Save writes it, whatever was read
  next.want_version = core::Record::kWantVersion;
  next.settled_declaration_digest = settled_digest;
  next.owners = std::move(owners);
  if (auto st = ports.records->Save(std::move(next)); !st) {
    return core::Fail("record not saved: " + st.error().message);
  }
  // What this apply created stayed named in the intent until the record
  // holds it: a kill in between leaves it named, not orphaned.
  if (settled.intent.Creating()) {
    core::Intent done = settled.intent;
    done.ForgetCreating();
    if (auto st = ports.records->SaveIntent(done); !st) {
      return core::Fail("intent not saved: " + st.error().message);
    }
  }
  return core::Ok();
}

}  // namespace mesh::reconcile
