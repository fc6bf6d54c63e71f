// Recovery: what the host does first after an apply that was cut short
// (killed, power lost) — before it plans anything on top of what that apply
// left. The intent says an apply was under way (`applying`) and names what
// it was creating; this removes the temporary files it left and what it
// created that is now neither declared nor recorded (nothing else would
// ever remove them), and makes sure what it created is never taken for
// "there before the host".
#pragma once

#include <string>
#include <vector>

#include "host/core/declaration.h"
#include "host/core/intent.h"
#include "host/core/record.h"
#include "host/ports/file_system.h"
#include "host/reconcile/observe.h"

namespace mesh::reconcile {

// Sweeps temporaries (only when `intent.applying`) in every directory the
// host writes into, and removes what the cut-short apply created (the
// intent's `creating`, `creating_unit_files`, `creating_drop_ins`) that is
// now neither declared nor recorded and still what it was writing. A drop-in
// of a unit still declared is not removed here: it is marked `cut_short` in
// `observed`, for the plan to delete with the restart it owes. Returns the
// warnings that say what was removed or left, and why.
std::vector<std::string> RecoverFromCutShort(const core::Declaration& declaration,
                                             const core::Record& record, const core::Intent& intent,
                                             ports::FileSystem& root, ports::FileSystem& units,
                                             Observation& observed);

// What an apply cut short created is the host's, though it is on disk and
// not in the record: marks it so in `observed` (never preexisting).
void ClaimWhatWasBeingCreated(const core::Declaration& declaration, const core::Intent& intent,
                              Observation& observed);

}  // namespace mesh::reconcile
