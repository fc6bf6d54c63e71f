// The reconciler: one apply (or plan) of a declaration onto the machine.
//
// It is the application core: it speaks only through the ports (FileSystem,
// ArchiveReader, ServiceManager, RecordStore, Clock) and the pure functions of
// host/core, so every rule is tested over fakes or a temporary root. A no-op
// is proven from the record alone when it can be (record_proof.h); else the
// declaration is checked whole and the apply runs as its phases, each in its
// own file: observe, plan (pure), intent (what is owed, saved before the
// first write), write, daemon-reload, act, confirm (two looks sharing one
// pause), commit (outcomes, then intent and record). A resource that fails
// never stops the others; what it owes is never forgotten.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/apply_report.h"
#include "host/core/declaration.h"
#include "host/core/minisign.h"
#include "host/core/outcome.h"
#include "host/ports/archive_reader.h"
#include "host/ports/background.h"
#include "host/ports/clock.h"
#include "host/ports/declaration_source.h"
#include "host/ports/file_system.h"
#include "host/ports/record_store.h"
#include "host/ports/service_manager.h"
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
  // --verify-key: every declaration must carry a signature by this key over
  // its exact bytes, checked before anything else — the no-op proof
  // included, so a signature replaced under an unchanged declaration is
  // caught.
  std::optional<core::MinisignKey> verify_key;
  // Plan only (`plan --diff`): fill ApplyReport::diffs (diff.h).
  bool diff = false;
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

class RecordProof;

// The no-op's proof gathered from a record the store keeps (a daemon's),
// kept for the next apply: what it gathered depends on that record alone.
// The record is referred to weakly: the proof keeps none alive, and a
// record that died is never taken for a new one at its address.
struct KeptProof {
  KeptProof();
  ~KeptProof();
  KeptProof(KeptProof&&) noexcept;
  KeptProof& operator=(KeptProof&&) noexcept;
  std::weak_ptr<const core::Record> record;
  std::unique_ptr<RecordProof> proof;
};

class Reconciler {
 public:
  Reconciler(ReconcilerPorts ports, ReconcilerOptions options)
      : ports_(ports), options_(std::move(options)) {}

  ApplyReport Apply(ports::DeclarationSource& declaration, const OutcomeSink& sink = nullptr);
  // The same for a declaration already in memory (tests, benchmarks).
  ApplyReport Apply(std::string_view declaration_text, const OutcomeSink& sink = nullptr);

  const ReconcilerOptions& options() const { return options_; }
  // Advanced as applies make progress; read from any thread.
  const Progress& progress() const { return progress_; }

 private:
  ReconcilerPorts ports_;
  ReconcilerOptions options_;
  Progress progress_;
  // No parsed declaration is kept between applies: a no-op is proven from
  // the record without one. What is kept is the proof gathered from the
  // record the store keeps (about 170 bytes per resource, next to the
  // record's own 600).
  KeptProof kept_proof_;
};

}  // namespace mesh::reconcile
