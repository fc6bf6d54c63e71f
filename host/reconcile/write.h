// Write: the phase that changes the machine's files — every file,
// credential, bundle and unit file the plan says differs, written
// atomically; and what is no longer declared, removed (its unit's stop
// queued first, never waited on).
//
// It runs only after the intent is saved (intent: what is owed), so a kill
// at any write leaves the next apply knowing what it still owes. A write
// that fails fails its resource and no other.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "host/core/boxed.h"
#include "host/core/declaration.h"
#include "host/core/file_info.h"
#include "host/core/result.h"
#include "host/ports/file_system.h"
#include "host/reconcile/apply_ports.h"
#include "host/reconcile/plan.h"

namespace mesh::reconcile {

// What the writes of a unit's definition did.
struct WrittenUnit {
  std::string file_fingerprint;
  std::map<std::string, std::string> drop_in_fingerprints;  // of the drop-ins written
};

// What the writes of one declared resource did. The unit's part is boxed:
// a large apply holds one of these per resource, most of them files.
struct Written {
  core::Status status;      // the first write that failed
  std::string fingerprint;  // of the file written or the tree unpacked
  core::Boxed<WrittenUnit> unit_written;

  const WrittenUnit& unit() const { return unit_written.value_or_empty(); }
  WrittenUnit& mutable_unit() { return unit_written.get_or_make(); }
};

struct Writes {
  // By resource index; empty when Write had no step to write (a no-op):
  // a full pass holds no slot per resource then.
  std::vector<Written> steps;
  std::vector<core::Status> removals;  // by plan.removals index
  // By plan.removals index, what systemd took of a removal's unit: a
  // removal may fail on something else, or wait, its unit stopped and
  // disabled all the same. Empty: nothing was.
  struct Asked {
    bool stopped = false;   // its stop was queued
    bool disabled = false;  // its [Install] links went
  };
  std::vector<Asked> asked;
  // By plan.removals index: directories found still holding something when
  // removed ("/srv/data: not empty"), left.
  std::vector<std::vector<std::string>> removals_left;
  bool unit_files_changed = false;  // a unit file was written or deleted

  bool Ok(size_t index) const { return steps.empty() || steps[index].status.has_value(); }
};

// Why nothing of removal `rm` is done in this apply, as the writes went:
// planned so (Removal::not_now); the resource that left it failed to take
// its place (left_by); or the bundle that takes its paths over failed to
// write them (taken_by), so they are still on the machine and the host's.
// Empty: it goes ahead. Write does nothing of a removal so kept, and the
// settle says these words of it.
std::string KeptThisApply(const Removal& rm, const core::Declaration& declaration,
                          const Writes& writes);

// Nothing written (a plan): every write "succeeded" in the plan's words.
Writes NoWrites(const Plan& plan);

Writes Write(const core::Declaration& declaration, const Plan& plan, const BundlesById& bundles,
             const Seen& seen, const ReconcilerPorts& ports);

}  // namespace mesh::reconcile
