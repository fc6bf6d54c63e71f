// One apply's values, and the phases that fill them in turn: the pipeline
// the whole pass (reconciler.cc) and each chunk of a chunked first apply
// (chunked.cc) both run, so that neither restates a phase's inputs.
//
// Each phase library keeps explicit inputs (its own tests call it so); an
// ApplyState is what the pipeline hands from one phase to the next, and
// the phase table of docs/architecture.md reads down its fields.
#pragma once

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "host/core/declaration.h"
#include "host/core/intent.h"
#include "host/core/record.h"
#include "host/reconcile/act.h"
#include "host/reconcile/apply_ports.h"
#include "host/reconcile/commit.h"
#include "host/reconcile/confirm.h"
#include "host/reconcile/observe.h"
#include "host/reconcile/plan.h"
#include "host/reconcile/systemd_answer.h"
#include "host/reconcile/write.h"

namespace mesh::reconcile {

struct ApplyState {
  // Given. Each resource's content is emptied by Settle; the resources
  // go before the commit (ApplyRun::Carry).
  core::Declaration decl{};
  const core::Record* record = nullptr;  // as loaded (an empty one when none)
  bool had_record = false;
  const core::Intent* owed = nullptr;  // what earlier applies left owed
  std::string now{};                   // applied_at of what this apply writes
  bool dry_run = false;
  const HostDirs* dirs = nullptr;  // may be null: no declared path is a unit definition
  // Observe: the record's entries by resource index, each resource's want
  // digest, and what the machine has.
  OldEntries olds{};
  std::vector<std::string> wants{};
  Observation observed{};
  // What the record's `owners` will hold: out of `observed`, which the
  // write lets go.
  core::OwnerIds owners{};
  // Plan.
  Plan plan{};
  // Write, enable, daemon-reload, act, confirm.
  Writes writes{};
  std::vector<SystemdAnswer> enabled{};  // by plan.units index
  SystemdAnswer reloaded{};
  std::vector<Acted> acts{};
  std::vector<std::optional<Confirmation>> confirmed{};
};

// What the machine has of `state`'s declaration, as its record and wants
// say to look (observe.h). `kept_bundles`: bundles a hold swapped in, whose
// kept copies may serve.
core::Result<Observation> ObserveOf(const ApplyState& state, const ReconcilerPorts& ports,
                                    StatCache& cache,
                                    const std::set<std::string>* kept_bundles = nullptr);
// The plan of what `state` observed (plan.h: pure). `services`: a service
// manager is there.
Plan PlanOf(const ApplyState& state, bool services);

// Writes (in a dry run: says what would be written), lets go of what was
// observed, then enables, reloads, acts, confirms, and settles. The unit
// phases have nothing to do for a plan without units (a chunk's).
Settled WriteAndSettle(ApplyState& state, const ReconcilerPorts& ports,
                       std::chrono::nanoseconds settle);

}  // namespace mesh::reconcile
