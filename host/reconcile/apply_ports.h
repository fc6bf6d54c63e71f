// What one apply is given: the ports it speaks through and the options it
// runs under. Every phase of host/reconcile that speaks through a port takes
// ReconcilerPorts whole, so that a port is named in one place and a test
// names the ones it fills (designated initializers: a port given in the
// wrong place does not compile into another's).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "host/core/apply_report.h"
#include "host/core/minisign.h"
#include "host/core/outcome.h"
#include "host/ports/archive_reader.h"
#include "host/ports/background.h"
#include "host/ports/clock.h"
#include "host/ports/file_system.h"
#include "host/ports/record_store.h"
#include "host/ports/service_manager.h"
#include "host/ports/unit_journal.h"
#include "host/reconcile/plan.h"
#include "host/reconcile/progress.h"

namespace mesh::reconcile {

struct ReconcilerPorts {
  ports::FileSystem* root = nullptr;       // declared paths, confined under --root
  ports::FileSystem* artifacts = nullptr;  // bundles, under --artifacts
  ports::FileSystem* units = nullptr;      // unit files, under --unit-dir
  ports::ArchiveReader* archives = nullptr;
  ports::ServiceManager* services = nullptr;  // may be null: units then fail
  ports::RecordStore* records = nullptr;
  ports::Clock* clock = nullptr;
  // May be null: a full pass then looks at the recorded paths only when it
  // observes, not while it parses.
  ports::Background* background = nullptr;
  // May be null: a failed unit is then shown without its journal lines.
  ports::UnitJournal* journal = nullptr;
  // Advanced at every step an apply completes (progress.h). The Reconciler
  // points it at its own, so an apply always has one; a phase run alone (a
  // test) may be given none.
  Progress* progress = nullptr;
};

struct ReconcilerOptions {
  std::string machine;
  HostDirs dirs;  // where the host lives: no declared path may overlap it
  std::chrono::nanoseconds settle = std::chrono::seconds(1);
  // Plan: decide everything, write nothing, restart nothing, save nothing.
  bool dry_run = false;
  // Prove a no-op from the record alone when it can (see ApplyReport::
  // from_record). Off only where the full pass must run regardless: the
  // tests that hold the two to the same report, and the benchmark.
  bool confirm_from_record = true;
  // --verify-key (signature.h).
  std::optional<core::MinisignKey> verify_key;
  // Plan only (`plan --diff`): fill ApplyReport::diffs (diff.h).
  bool diff = false;
  // A refused declaration's report carries what the record holds
  // (ApplyReport::recorded): the daemon's, whose /status would be blind.
  bool recorded_on_refusal = false;
  // A first apply of files this large is carried this many resources at a
  // time, never held whole (chunked.h); 0: always whole. The one-shot
  // `apply` sets it; the daemon keeps every outcome for /status anyway.
  size_t chunk = 0;
};

// The report is a value of the core (core/apply_report.h); these names are
// the reconciler's vocabulary too.
using core::ApplyReport;
using core::ApplyResult;
using core::ApplyResultName;

// Receives each resource's outcome, in declaration order, once the apply has
// decided it; the report then keeps none. `mesh-host apply` prints each line
// and forgets it: a no-op proven from the record hands them over one at a
// time, so the outcomes of a large declaration are never held at once.
using OutcomeSink = std::function<void(const core::ResourceOutcome&)>;

}  // namespace mesh::reconcile
