// Back to the last good: the decisions of `on_failure: rollback`, pure.
//
// A unit so declared is confirmed running at some generation: what its
// definition was made of then (its own resource, those in its restart_on
// and reload_on) is kept (core/last_good.h). When a later apply restarts or
// reloads it and the two looks find it not running, the resources that
// differ from the kept ones are put back as kept — by a second pass of the
// same pipeline over the declaration with their content swapped — and the
// unit is held there: later applies of the same declaration swap the same
// content in before they plan, so they find the machine as the last good
// left it and restart nothing. The hold ends when the declaration changes
// any of the refused resources. Everything the reconciler does about it is
// one of the functions below; the reconciler only runs them in order.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "host/core/declaration.h"
#include "host/core/last_good.h"
#include "host/core/outcome.h"
#include "host/core/record.h"

namespace mesh::reconcile {

// A unit declared on_failure: rollback and what its definition is made of.
struct RollbackUnit {
  size_t index = 0;          // the unit's resource
  std::vector<size_t> deps;  // its own index first, then restart_on, reload_on (once each)
};
std::vector<RollbackUnit> RollbackUnits(const core::Declaration& decl);

// A hold that stands in this apply.
struct HeldUnit {
  size_t index = 0;         // the unit's resource
  uint64_t generation = 0;  // the last good it is held at
  core::Hold hold;
  std::vector<size_t> held;  // the resources whose content was swapped for the kept
};

// Before the apply plans: drops from `last_good` what no unit declared
// on_failure: rollback needs any more (units no longer so declared) and the
// holds the declaration has moved past (a refused resource now declared
// otherwise, or gone); swaps the kept content into the declaration for the
// holds that stand, and their want digests (`want_of`) into `wants`.
// Returns those holds, and says whether `last_good` changed.
std::vector<HeldUnit> TakeHolds(core::Declaration& decl, std::vector<std::string>& wants,
                                core::LastGood& last_good,
                                const std::function<std::string(const core::Resource&)>& want_of,
                                bool* changed);

// A held resource's outcome: failed, the hold said first.
void SayHeld(const HeldUnit& h, const core::Declaration& decl, size_t i, core::ResourceOutcome& o);
// A held unit this apply restarted onto kept content it wrote over the
// refused want the record held (`recorded`, by index: the record before
// this apply): the apply that saved the hold was cut short before its
// second pass put anything back, so this apply is the rollback, said and
// counted as one (DeclaredUnit::rolled_back). A restart that failed too is
// marked on the hold. Returns whether `last_good` changed.
bool SayPutBack(const HeldUnit& h, const std::vector<const core::RecordEntry*>& recorded,
                std::vector<core::ResourceOutcome>& outcomes, core::LastGood& last_good);
// The same words from the hold as saved (`generation`: the last good's):
// on the unit's own resource (`of_unit`, which also gets the held series)
// or on one put back under `unit`.
void SayHold(uint64_t generation, const core::Hold& hold, const std::string& unit, bool of_unit,
             core::ResourceOutcome& o);

// What an apply's outcomes mean for its rollback units, taken before the
// declaration is let go: the resources as they stood in the apply (the
// kept content swapped in where held) and their want digests.
struct RollbackScope {
  struct Unit {
    size_t index = 0;
    std::string id;
    std::string unit;  // the unit's name
    bool held = false;
    std::vector<size_t> deps;
    std::map<std::string, core::Resource> resources;  // KeptCopy of each dep, by id
    std::map<std::string, std::string> wants;         // each dep's want, as applied
    std::map<std::string, std::string> declared;      // each dep's want, as declared
    // Each dep that other units' definitions hold too (their own resource,
    // restart_on, reload_on): by dep id, those units' resource ids.
    std::map<std::string, std::vector<std::string>> shared;
    // The deps that are files of --unit-dir systemd reads as part of its
    // definition (a last good kept by a host of an earlier version lacks
    // them: PlanRollback).
    std::set<std::string> definitions;
    // The newest change (ctime, ns since the epoch) of the files its start
    // reads (its restart_on and definitions), as this apply found them
    // before writing; INT64_MAX when one is to be written or could not be
    // looked at. Not its reload_on (a reload reads those), nor a tree
    // (its fingerprint holds no time). What a last good not taken by an
    // action is judged by (Decide).
    int64_t read_changed_ns = 0;
  };
  std::vector<Unit> units;
  uint64_t generation = 0;
};

// A unit the two looks found dead after this apply's action, and what
// putting it back means.
struct Rollback {
  size_t unit = 0;  // into RollbackScope::units
  // The resources to put back, by id, with the declared want refused (what
  // the hold stands on). Empty with `impossible` set: nothing can be.
  std::map<std::string, std::string> refused;
  std::string impossible;  // why not, in words
  uint64_t to_generation = 0;
};

struct AfterApply {
  // Into scope.units: running on what the apply declared — after the
  // apply's own action, or as first found (nothing kept yet): a
  // definition written without a restart was never proven on the daemon.
  std::vector<size_t> confirmed;
  std::vector<Rollback> rollbacks;  // found dead after the apply acted on them
  // Held, and seen running after an action of this apply: a restart onto
  // the last good that failed once has since gone through.
  std::vector<size_t> recovered;
};

// `outcomes`: the apply's, by declaration index. `missing`: why a kept
// resource cannot be put back (empty: it can) — a bundle whose old bytes
// are neither under --artifacts nor kept (RecordStore::KeptArtifact). A rollback that cannot put
// back every refused resource puts back none: nor one whose definition's resources are not the kept
// ones (added, dropped, renamed, of another kind: a rollback swaps content, never resources), nor
// one whose refused resource another unit, not rolled back, runs on.
AfterApply Decide(const RollbackScope& scope, const std::vector<core::ResourceOutcome>& outcomes,
                  const core::LastGood& last_good,
                  const std::function<std::string(const core::Resource&)>& missing);

// Keeps what the confirmed units run on: their kept resources become the
// scope's, at its generation (`now`: RFC 3339), their holds go; a
// recovered unit's hold no longer says its restart failed. True when
// `last_good` changed (nothing to write when it runs what was kept).
bool KeepConfirmed(const RollbackScope& scope, const AfterApply& after, std::string_view now,
                   core::LastGood& last_good);

// Records the holds of the rollbacks about to run, merged with any the
// unit already had. `refused` in words: each rollback's unit's verdict.
void RecordHolds(const RollbackScope& scope, const std::vector<Rollback>& rollbacks,
                 const std::vector<core::ResourceOutcome>& outcomes, std::string_view now,
                 core::LastGood& last_good);

// The outcomes of the apply once the second pass (`again`, the declared
// resources by index; it removes nothing) put the rollbacks' units back:
// the unit and the resources put back fail with the rollback said; any
// other resource keeps the first pass's words unless the second did
// something to it. Marks a rollback whose own restart failed (its hold's
// rollback_failed). A rollback the second pass did not act on (a write
// failed, the pass was refused: `why_not` when it says why) is none: its
// hold is taken back from `last_good` (to what `before` held) and the
// unit says so.
void MergeRollback(const RollbackScope& scope, const std::vector<Rollback>& rollbacks,
                   std::vector<core::ResourceOutcome>& outcomes,
                   std::vector<core::ResourceOutcome>&& again, std::string_view why_not,
                   const core::LastGood& before, core::LastGood& last_good);

// Leaves out of `last_good` each unit whose kept resources would not read
// back, or do not fit in `budget` bytes beside those kept before it: the
// held units first (forgetting a hold pushes the refused content again),
// then the others in id order. Each unit left out is said, in the result.
std::vector<std::string> LeaveOutWhatDoesNotFit(core::LastGood& last_good, std::string_view machine,
                                                uint64_t budget);

// The words for a rollback that could not happen, said on the unit.
void SayNoRollback(const RollbackScope& scope, const Rollback& r,
                   std::vector<core::ResourceOutcome>& outcomes);

}  // namespace mesh::reconcile
