// The apply's first step: a no-op proven from the record alone
// (record_proof.h), or nothing — then the full pass runs. It never parses
// the declaration: the declaration's digest must be the one the record was
// settled from, every fingerprint and unit state must still hold, and
// nothing may be owed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "host/reconcile/apply_ports.h"
#include "host/reconcile/observe.h"

namespace mesh::reconcile {

class RecordProof;

// The proof gathered from a record the store keeps in memory (a daemon's),
// kept for the next apply under the store's number for that record
// (RecordStore::KeptRecordVersion): what was gathered depends on that
// record alone, and it is used again only while the store hands out the
// same one.
struct KeptProof {
  KeptProof();
  ~KeptProof();
  KeptProof(KeptProof&&) noexcept;
  KeptProof& operator=(KeptProof&&) noexcept;
  uint64_t version = 0;
  std::unique_ptr<RecordProof> proof;
};

struct NoopInputs {
  const ReconcilerPorts& ports;
  const ReconcilerOptions& options;
  const std::string& digest;  // the declaration's
  const OutcomeSink& sink;
  // Whether earlier applies owe nothing (the intent is read only once the
  // record proved everything else).
  std::function<bool()> nothing_owed;
  // Whether a last good is kept for each of these units (declared
  // on_failure: rollback), and of the wants the record holds for its
  // resources (`recorded`: a resource's recorded want digest by id): one
  // that has none, or an older one (not saved after its confirmation), is
  // kept by the full pass, never by a no-op (which keeps nothing). Null:
  // not asked.
  using RecordedWant = std::function<std::string_view(std::string_view id)>;
  std::function<bool(const std::vector<std::string>& ids, const RecordedWant& recorded)>
      last_good_kept;
  // Users other than its owner can read the declaration: a record holding
  // a credential then proves nothing, and the full pass refuses the file
  // (private_declaration.h). A record without one proves a declaration of
  // its digest has none either.
  bool exposed = false;
};

// True: `report` holds the no-op's outcomes (or handed them to the sink)
// and whatever touched files' new fingerprints were worth recording were
// recorded. False: the full pass decides; `looked` then holds the stats
// the proof took, for it to reuse.
bool ProveNoop(const NoopInputs& in, KeptProof& kept, ApplyReport& report, StatCache& looked);

}  // namespace mesh::reconcile
