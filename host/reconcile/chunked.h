// A first apply of a declaration too large to hold whole, in chunks.
//
// The whole pass holds every resource's pieces at once (the declared
// resource, what was seen, the step, the write, the outcome, the new record
// entry): about 2 KB a file, 200 MiB at 100,000. This path holds one chunk
// of them at a time, and for the whole declaration only the text, the paths
// it creates, and where each record entry waits on disk.
//
// Two passes over the same bytes in memory. The first checks everything the
// whole pass checks before it touches anything — every resource as parsed,
// ids and paths unique, the host's own places, machine and generation, no
// path leading out of the root — and stats every path: what is missing is
// what the apply creates, saved in the intent before the first write, as the
// whole pass saves it. The second parses the resources again, a chunk at a
// time, and carries each chunk through the whole pass's own pipeline
// (pipeline.h: observe, plan, write with one syncfs, settle); its outcomes go out at once and its
// record entries to the store's RecordBuilder, which keeps them on disk. A
// path a chunk creates that the first pass did not see missing is added to
// the intent before the chunk writes. The commit is the whole pass's: writes
// flushed, the intent (naming what the chunks created), the record (sorted
// by id), the intent's `creating` cleared.
//
// It is taken only where the whole pass has nothing to do across resources:
// files and credentials, none of them inside --unit-dir (no daemon-reload),
// no record entries (nothing to remove, nothing to match), nothing owed and
// no apply cut short (nothing to sweep). Anything else — and any refusal,
// which the whole pass then words — is left to the whole pass before a
// byte is written.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "host/core/apply_report.h"
#include "host/core/outcome.h"
#include "host/core/record.h"
#include "host/reconcile/apply_ports.h"
#include "host/reconcile/plan.h"

namespace mesh::reconcile {

struct ChunkedApply {
  const ReconcilerPorts* ports = nullptr;
  std::string_view text;                 // the declaration, whole
  size_t chunk = 0;                      // resources at a time
  const core::Record* record = nullptr;  // as loaded: no entries
  bool had_record = false;
  std::string_view machine;
  const HostDirs* dirs = nullptr;
  std::string now;  // applied_at of what this apply writes
  // Each outcome, in declaration order, as soon as its chunk settles.
  std::function<void(core::ResourceOutcome&&)> emit;
  // Lets go of `text` once the last chunk is carried (may be null): the
  // commit writes the intent and the record without it.
  std::function<void()> release_text;
};

// False when this path does not take the declaration: nothing was written
// and `report` is untouched. True when it applied it: `report` holds what
// the whole pass would say (but the outcomes, which went to `emit`).
bool ApplyInChunks(const ChunkedApply& in, core::ApplyReport& report);

}  // namespace mesh::reconcile
