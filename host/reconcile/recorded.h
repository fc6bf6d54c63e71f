// The recorded truth: what the record says the last applied generation
// left on the machine, as outcomes, with its units as systemd shows them
// now. A daemon shows it from its start until its first apply ends, and
// beside a declaration refused from its start (ApplyReport::recorded):
// never an empty machine at generation 0, never a unit series that is
// absent while the host restarts.
#pragma once

#include "host/core/apply_report.h"
#include "host/core/intent.h"
#include "host/core/last_good.h"
#include "host/core/record.h"
#include "host/ports/service_manager.h"

namespace mesh::reconcile {

// Why the recorded truth is shown: what its words say of the apply.
enum class RecordedFor {
  kRefusal,  // the declaration is refused: nothing was done
  kStart,    // the host has just started: its first apply is under way
};

// Each recorded resource in declaration order: `unchanged` as recorded,
// or `failed` where an action is still owed or its unit is not as declared
// now. A unit whose start is owed is not up, whatever it reads at this
// instant: no two looks ever passed for it (a crash loop reads "active"
// for a moment in every run). One owed a restart or reload runs on its old
// configuration and is judged as seen. A unit held at its last good
// (`last_good`, may be null) and what was put back under it fail as held,
// as the apply that recorded them said. `services` may be null: the units
// are then not read (and not up).
core::RecordedState RecordedTruth(const core::Record& record, const core::Intent& owed,
                                  const core::LastGood* last_good, ports::ServiceManager* services,
                                  RecordedFor why);

}  // namespace mesh::reconcile
