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
// host writes into, and removes the orphans (plan.h's Orphans and
// OrphanUnitFiles) that are still what the cut-short apply was writing.
// Returns the warnings that say what was removed or left, and why.
std::vector<std::string> RecoverFromCutShort(const core::Declaration& declaration,
                                             const core::Record& record, const core::Intent& intent,
                                             ports::FileSystem& root, ports::FileSystem& units);

// What an apply cut short created is the host's, though it is on disk and
// not in the record: marks it so in `observed` (never preexisting).
void ClaimWhatWasBeingCreated(const core::Declaration& declaration, const core::Intent& intent,
                              Observation& observed);

}  // namespace mesh::reconcile
