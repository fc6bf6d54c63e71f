// The recorded truth: what the record says the last applied generation
// left on the machine, as outcomes, with its units as systemd shows them
// now. A daemon whose declaration is refused from its start shows this
// (ApplyReport::recorded), never an empty machine at generation 0.
#pragma once

#include "host/core/apply_report.h"
#include "host/core/intent.h"
#include "host/core/record.h"
#include "host/ports/service_manager.h"

namespace mesh::reconcile {

// Each recorded resource in declaration order: `unchanged` as recorded,
// or `failed` where an action is still owed or its unit is not as declared
// now. `services` may be null: the units are then not read (and not up).
core::RecordedState RecordedTruth(const core::Record& record, const core::Intent& owed,
                                  ports::ServiceManager* services);

}  // namespace mesh::reconcile
