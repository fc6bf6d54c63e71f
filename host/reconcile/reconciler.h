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

#include <optional>
#include <string_view>

#include "host/ports/declaration_source.h"
#include "host/reconcile/apply_ports.h"
#include "host/reconcile/noop_step.h"
#include "host/reconcile/progress.h"
#include "host/reconcile/recorded.h"

namespace mesh::reconcile {

class Reconciler {
 public:
  Reconciler(ReconcilerPorts ports, ReconcilerOptions options)
      : ports_(ports), options_(std::move(options)) {
    ports_.progress = &progress_;
  }

  ApplyReport Apply(ports::DeclarationSource& declaration, const OutcomeSink& sink = nullptr);
  // The same for a declaration already in memory (tests, benchmarks).
  ApplyReport Apply(std::string_view declaration_text, const OutcomeSink& sink = nullptr);

  // What the record says is on the machine, its units read now
  // (recorded.h): what a daemon shows from its start until its first apply
  // ends (kStart), or beside a refusal it made itself (kRefusal: the
  // declaration file could not be opened). None when there is no record, or
  // it cannot be read (the apply then says why). Not while an Apply runs.
  std::optional<core::RecordedState> Recorded(RecordedFor why);

  const ReconcilerOptions& options() const { return options_; }
  // The daemon stops asking for the recorded truth once it has shown an
  // apply or the record (each refusal would read every recorded unit).
  void set_recorded_on_refusal(bool on) { options_.recorded_on_refusal = on; }
  // Advanced as applies make progress; read from any thread.
  const Progress& progress() const { return progress_; }
  // The daemon's: it says when an apply's report is shown (Progress::Shown).
  Progress& progress() { return progress_; }

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
