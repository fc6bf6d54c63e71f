// A service's or process's own files in the plan: its unit file
// (`unit_text`) and drop-ins, each written, kept, or found already as a
// changed declaration says (adopted); and the two helpers every part of
// the plan's steps shares. Internal to the plan library.
#pragma once

#include <string>

#include "host/reconcile/plan.h"

namespace mesh::reconcile {

// `step` failed for `detail`: nothing of it is written, nothing recorded.
Step Failed(Step step, std::string detail);

// Whether something found already as a changed declaration says (the
// record held another want) counts as that change made, for what runs on
// it to be restarted.
bool MayAdoptChange(const PlanInputs& in);

// The unit file of a service or process, when the declaration gives its text.
void PlanUnitFile(const PlanInputs& in, const core::Resource& r, const UnitFileSeen& seen,
                  Step& step);

// The unit's drop-ins: each declared one written unless it is as declared;
// each recorded one no longer declared deleted while it is still as the
// host wrote it (else left, and forgotten).
void PlanDropIns(const PlanInputs& in, const core::Resource& r, const UnitFileSeen& seen,
                 Step& step);

}  // namespace mesh::reconcile
