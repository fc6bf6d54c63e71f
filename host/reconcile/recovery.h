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
// The units AdoptCutShortUnits took (in `olds`) are left to their removal.
std::vector<std::string> RecoverFromCutShort(const core::Declaration& declaration,
                                             const core::Record& record, const core::Intent& intent,
                                             const OldEntries& olds, ports::FileSystem& root,
                                             ports::FileSystem& units, Observation& observed);

// The units an apply cut short created (their unit files, `unit_text` it
// wrote) that no resource declares now and the record does not hold: that
// apply may have enabled and started them. Each is taken into `olds` as a
// dropped unit the host wrote (under the id cut-short~UNIT, recorded only
// while its removal is pending), so that it is disabled, stopped and its
// file deleted as any other: deleting the file alone would leave the
// daemon running, with no definition and no record. A unit file that is no
// longer a regular file is someone else's, and left (RecoverFromCutShort
// says so).
void AdoptCutShortUnits(const core::Declaration& declaration, const core::Record& record,
                        const core::Intent& intent, ports::FileSystem& units, OldEntries& olds);

// What an apply cut short created is the host's, though it is on disk and
// not in the record: marks it so in `observed` (never preexisting).
void ClaimWhatWasBeingCreated(const core::Declaration& declaration, const core::Intent& intent,
                              Observation& observed);

}  // namespace mesh::reconcile
