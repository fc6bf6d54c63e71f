// Commit: the last phase of an apply. What the phases did becomes each
// resource's outcome (the words of its log line), the record's changes and
// what is still owed (Settle, pure); then it is made durable (Commit), in
// this order: the writes flushed, the intent, the record.
//
// The order is what makes a kill anywhere safe. The intent is cleared of an
// action only after the action was confirmed; the record is saved after the
// intent, so a kill between the two leaves an old record (the next apply
// finds the files matching and adopts them) and no debt that was paid.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "host/core/declaration.h"
#include "host/core/intent.h"
#include "host/core/outcome.h"
#include "host/core/record.h"
#include "host/core/result.h"
#include "host/ports/file_system.h"
#include "host/ports/record_store.h"
#include "host/reconcile/act.h"
#include "host/reconcile/apply_ports.h"
#include "host/reconcile/confirm.h"
#include "host/reconcile/plan.h"
#include "host/reconcile/systemd_answer.h"
#include "host/reconcile/write.h"

namespace mesh::reconcile {

struct SettleInputs {
  // Each resource's content is emptied once the resource settles: nothing
  // after the settle reads a content. Its buffer goes with the resources,
  // before the commit (ApplyRun::Carry).
  core::Declaration* declaration = nullptr;
  const core::Record* record = nullptr;  // as loaded
  const OldEntries* olds = nullptr;      // the record's entries, by resource index
  // Spent by the settling: the new record entries are taken from its
  // steps, not copied (the apply's peak is here).
  Plan* plan = nullptr;
  const core::Intent* owed = nullptr;  // what earlier applies left owed
  Writes* writes = nullptr;            // spent as the plan is: fingerprints are taken
  const SystemdAnswer* reloaded = nullptr;
  const std::vector<Acted>* acts = nullptr;
  const std::vector<std::optional<Confirmation>>* confirmed = nullptr;
  std::string now;
  bool dry_run = false;
  // The enable phase's answers, by plan.units index (none: nothing asked).
  const std::vector<SystemdAnswer>* enabled = nullptr;
};

struct Settled {
  // The declared resources in declaration order, then the removed ones.
  std::vector<core::ResourceOutcome> outcomes;
  // The record's entries that differ from it (nullopt: to erase), by id.
  std::map<std::string, std::optional<core::RecordEntry>> entries;
  core::Intent intent;  // what is still owed
  bool failed = false;  // some resource failed
  // A removal waits for its unit to stop (Removal::until_stopped): the
  // record is not settled, so the next apply is a full pass that finds it.
  bool pending = false;
};

Settled Settle(const SettleInputs& in);

struct CommitInputs {
  // Only its machine, generation and digest are read: the apply lets go
  // of its resources before it commits.
  const core::Declaration* declaration = nullptr;
  const core::Record* record = nullptr;  // as loaded
  bool had_record = false;
  const core::Intent* saved = nullptr;  // the intent as it stands on disk now
  // What the paths' owners were checked under (null: as the record has it).
  const core::OwnerIds* owners = nullptr;
};

// Flushes, saves the intent when it changed and the record when it changed.
// An error names what could not be saved; the apply then fails. The
// settled entries are moved into the new record, each freed from `settled`
// as it goes.
core::Status Commit(const ReconcilerPorts& ports, const CommitInputs& in, Settled&& settled);

}  // namespace mesh::reconcile
