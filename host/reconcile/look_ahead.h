// The look ahead: a full pass stats every declared path before it plans, and
// most of them are the recorded ones. Taken on another core while the
// declaration is read and parsed, they are there when the observation
// starts: a stat taken those few milliseconds earlier is as good as one
// taken then (nothing under the root is written in between, and a file that
// changes after its stat is caught by the next apply either way; a file read
// is still checked against the stat it was read for).
//
// A seam of the pipeline, not a phase: the observation reads a StatCache,
// and this fills one or fills nothing. It holds the job and its result; the
// apply holds the record it reads.
#pragma once

#include <memory>
#include <optional>

#include "host/core/record.h"
#include "host/ports/background.h"
#include "host/ports/file_system.h"
#include "host/reconcile/observe.h"

namespace mesh::reconcile {

class LookAhead {
 public:
  // A record of fewer paths is not worth a thread.
  static constexpr size_t kWorthAt = 256;

  LookAhead() = default;
  LookAhead(const LookAhead&) = delete;
  LookAhead& operator=(const LookAhead&) = delete;
  // Waits for the job (a Job's destructor does), allocating nothing: it may
  // run while an out-of-memory error unwinds the apply.
  ~LookAhead() { job_.reset(); }

  // Starts statting the recorded paths of `record` under `root` on
  // `background`, when there is one and the record is large enough.
  void Start(ports::Background* background, ports::FileSystem* root,
             std::shared_ptr<const core::Record> record);
  // Waits for the job, and hands over what it saw: nullopt when none ran or
  // it failed (the observation then stats as it goes).
  std::optional<StatCache> Take();

 private:
  StatCache stats_;  // filled by the job; read only after it was waited for
  // Last: destroyed (so waited for) before what its work fills.
  std::unique_ptr<ports::Background::Job> job_;
};

}  // namespace mesh::reconcile
