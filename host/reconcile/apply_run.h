// ApplyRun: one apply as the reconciler carries it, shared by the files
// that carry its phases (reconciler.cc; apply_rollback.cc for
// on_failure: rollback). Internal to host/reconcile: Reconciler is the
// interface.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/declaration.h"
#include "host/core/intent.h"
#include "host/core/last_good.h"
#include "host/core/record.h"
#include "host/ports/declaration_source.h"
#include "host/reconcile/apply_ports.h"
#include "host/reconcile/commit.h"
#include "host/reconcile/look_ahead.h"
#include "host/reconcile/noop_step.h"
#include "host/reconcile/observe.h"
#include "host/reconcile/pipeline.h"
#include "host/reconcile/plan.h"
#include "host/reconcile/rollback.h"

namespace mesh::reconcile::apply_internal {

using core::Declaration;
using core::Resource;
using core::ResourceOutcome;
using core::Result;

class ApplyRun {
 public:
  ApplyRun(const ReconcilerPorts& ports, const ReconcilerOptions& options, const OutcomeSink& sink,
           ApplyReport& report, KeptProof& kept_proof)
      : ports_(ports), options_(options), sink_(sink), report_(report), kept_proof_(kept_proof) {}

  void Run(ports::DeclarationSource& source);

 private:
  void LoadRecord();
  // What the look ahead saw, into stats_ (look_ahead.h).
  void TakeLookAhead();
  // False when the intent cannot be read (the apply then changes nothing).
  bool LoadIntent();
  // A first apply too large to hold whole, in chunks (chunked.h): false
  // when it is not one, and nothing was done.
  bool ApplyInChunks(ports::DeclarationSource& source, std::string_view text, const HostDirs& dirs);
  // The host's places, with the declaration where `source` opened it.
  const HostDirs& DirsAsOpened(const ports::DeclarationSource& source);
  void Refuse(const core::Error& error) {
    report_.error = error.message;
    report_.refusals = error.details;
    report_.result = ApplyResult::kRefused;
    if (options_.recorded_on_refusal) RecordTruth();
  }
  // The recorded truth beside the refusal (recorded.h).
  void RecordTruth();
  // Saves what the plan will owe before it changes anything; false when it
  // could not (the apply then changes nothing).
  bool SaveIntent(const Plan& plan);
  // The digest key, read only when the declaration holds credentials.
  std::string CredentialKey(const Declaration& decl);
  void Apply(Declaration decl);
  // The pipeline's write-to-settle phases (pipeline.h), then the commit;
  // what the state holds is let go of before the commit.
  void Carry(ApplyState& state);
  // False when last-good.json is there and cannot be read (the apply then
  // changes nothing: a hold forgotten would push refused content again).
  bool LoadLastGood();
  // Whether last-good.json keeps each of these units (false when it cannot
  // be read: the full pass says why).
  void LeaveOutWhatCannotBeRead();
  bool LastGoodKeeps(const std::vector<std::string>& ids, const NoopInputs::RecordedWant& recorded);
  // on_failure: rollback, before the plan: swaps the kept content in where
  // a hold stands, and notes what the units' definitions are made of.
  void TakeHolds(Declaration& decl, std::vector<std::string>& wants, const std::string& key);
  // After the observation, before anything is written: when each rollback
  // unit's start-read files last changed (RollbackScope::Unit).
  void NoteWhatStartsRead(const Declaration& decl, const Seen& seen);
  // Before the commit: what the two looks found of the rollback units
  // (Decide), and the last good of each confirmed, saved. A confirmation
  // is kept before the record says its apply happened: a kill between the
  // two never leaves a unit recorded as unchanged on a definition whose
  // confirmation was lost.
  void KeepConfirmed();
  // After the commit: puts back the units found dead (a second pass over
  // the declaration, read again).
  void AfterCommit();
  void RollBack(std::vector<Rollback> rollbacks);
  void SaveLastGood();
  // Keeps a copy of each bundle `last_good` is made of that is not kept
  // yet (RecordStore::KeepArtifact); says each that cannot be kept when
  // `say`.
  void KeepBundles(const core::LastGood& last_good, bool say);
  static std::set<std::string> BundlesOf(const core::LastGood& last_good);

  const ReconcilerPorts& ports_;
  const ReconcilerOptions& options_;
  const OutcomeSink& sink_;
  ApplyReport& report_;
  KeptProof& kept_proof_;

  // The loaded record, shared with the store; read-only during the pass.
  std::shared_ptr<const core::Record> record_ = std::make_shared<const core::Record>();
  bool had_record_ = false;
  bool record_loaded_ = false;
  std::optional<core::Intent> intent_;  // what earlier applies owe (loaded once)
  std::string intent_unreadable_;       // why it could not be read
  std::string record_unreadable_;       // why the record could not be (not corrupt)
  core::Intent saved_;                  // the intent as it stands on disk
  StatCache stats_;                     // paths a failed record proof, or the look ahead, looked at
  // on_failure: rollback (rollback.h).
  core::LastGood last_good_;
  std::set<std::string> loaded_bundles_;  // the bundles of the last good as loaded
  bool last_good_changed_ = false;
  std::vector<HeldUnit> held_;
  RollbackScope scope_;
  AfterApply after_;  // Decide's, taken by KeepConfirmed for AfterCommit
  // Read again (and its digest checked) for a rollback's second pass.
  ports::DeclarationSource* source_ = nullptr;
  // options_.dirs, but for the declaration opened elsewhere (DirsAsOpened).
  std::optional<HostDirs> dirs_as_opened_;
  // This run is a rollback's second pass: it acts on these units only (the
  // others' owed actions stay owed), and its outcomes are merged, not said.
  bool rollback_pass_ = false;
  std::vector<size_t> only_units_;
  // Last: destroyed (so waited for) before the rest of the run.
  LookAhead look_ahead_;
};

}  // namespace mesh::reconcile::apply_internal
