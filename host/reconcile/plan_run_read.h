// What a unit's current run read: whether it began, and was loaded by
// systemd, after each file it reads last changed — its unit file and
// drop-ins, the files its restart_on and reload_on name, the declared
// files that define it. Where the host cannot tell that its run read what
// is there now, the unit is restarted onto it. Internal to the plan
// library (plan_units.cc asks).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/reconcile/plan.h"

namespace mesh::reconcile {

// Whether a file the host wrote (`recorded`: its fingerprint then) may
// hold other bytes now: its size or mtime moved. A chmod, a chown, a
// relabel or a hard link moves only its ctime, and leaves what systemd
// reads as it was.
bool ContentMoved(std::string_view recorded, const std::string& now);

// Why the unit's run may not have read the first of its own definition
// parts found already as declared (Step::adopted_definitions): it changed
// after the run began, or systemd loaded it only after (a restart before
// the daemon-reload runs what was loaded before). Nothing when the run
// read them all.
std::optional<std::string> AdoptedSinceItsRun(const PlanInputs& in, size_t i, const Step& step);

// A unit declared running that the record has as `triggered` or
// `stopped`: the host left its changes to its trigger (or to whoever
// started it) meanwhile, so its run may predate what it reads. What it
// reads is named when one last changed (its ctime) after the run began;
// nothing otherwise, nor for a unit declared running before (its changes
// were restarted for as they came).
std::optional<std::string> ChangedSinceItsRun(const PlanInputs& in, size_t i,
                                              const std::vector<Step>& steps, const UnitPlan& u);

// A file the unit reads, as declared and unchanged by this apply, changed
// since the host recorded it (its ctime: edited, then put back, by a copy
// that keeps the old mtime too) after what read it last began: a run, or a
// oneshot's last run, that is not the one the host recorded (someone else
// started it), or else a reload the host did not ask for (`systemctl
// reload` onto an edit) — while the file may have held other bytes. A
// reload_on file changed at all since then counts when a daemon-reload
// came during the run: systemd forgets every reload at one. What the
// daemon read is not known. `what` names the file and says why;
// `reload` says it is only in reload_on. Nothing when none is so.
struct Rewritten {
  std::string what;
  bool reload = false;
  // A part of its definition: loaded again before the restart, which would
  // otherwise run what systemd loaded (the edit).
  bool definition = false;
};
std::optional<Rewritten> RewrittenUnderItsRun(const PlanInputs& in, size_t i,
                                              const std::vector<Step>& steps, const UnitPlan& u);

// Whether a daemon-reload alone makes what systemd loaded of the unit match
// its definition again: systemd finds its files newer than its last load
// (NeedDaemonReload: a touch, the same bytes copied over, an edit loaded
// and put back), yet they are as declared and the record holds this very
// want, under the run the host recorded, up as recorded (no restart by
// Restart= since) and reloaded since by none but the host (a reload runs
// the ExecReload= systemd had loaded then). That run began on the
// declared definition; a restart would touch a unit that is right. (What a cut-short apply still
// owes is merged in after, restart and all.)
bool LoadingAgainIsEnough(const Step& step, const UnitPlan& u);

}  // namespace mesh::reconcile
