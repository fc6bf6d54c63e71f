#include "host/reconcile/pipeline.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "host/reconcile/daemon_reload.h"
#include "host/reconcile/enable.h"
#include "host/reconcile/journal_lines.h"
#include "host/reconcile/loaded_files.h"

namespace mesh::reconcile {
namespace {

// A unit moved onto another file of its name, in a directory systemd reads
// before --unit-dir, after Act read it (Act asks nothing of one the apply's
// own reload moved: LoadedFiles): it runs that file, not the host's. Judged
// on the second look, as a death is.
void JudgeLoadedFiles(ApplyState& s, const ReconcilerPorts& ports) {
  LoadedFiles loaded(s.dirs, ports.services);
  for (size_t k = 0; k < s.plan.units.size() && k < s.confirmed.size(); ++k) {
    std::optional<Confirmation>& c = s.confirmed[k];
    if (!c.has_value() || !c->verdict.accepted) continue;
    const core::Resource& r = s.decl.resources[s.plan.units[k].index];
    std::optional<NotLoaded> why =
        loaded.NotTheHosts(r.unit().name, c->last, r.unit().text.has_value(), r.unit().drop_ins,
                           /*after_reload=*/true);
    if (!why.has_value()) continue;
    // Not a death on what the host wrote, which never ran: nothing is
    // rolled back, and what was asked stays pending.
    c->verdict.accepted = false;
    c->verdict.not_run = true;
    c->verdict.detail = std::move(why->words);
  }
}

}  // namespace

core::Result<Observation> ObserveOf(const ApplyState& state, const ReconcilerPorts& ports,
                                    StatCache& cache, const std::set<std::string>* kept_bundles) {
  return Observe(state.decl, *state.record, state.olds, state.wants, ports, state.dirs, cache,
                 kept_bundles);
}

Plan PlanOf(const ApplyState& state, bool services) {
  return MakePlan({.declaration = &state.decl,
                   .record = state.record,
                   .olds = &state.olds,
                   .owed = state.owed,
                   .seen = &state.observed.seen,
                   .wants = &state.wants,
                   .now = state.now,
                   .dry_run = state.dry_run,
                   .services = services,
                   .dirs = state.dirs});
}

// Everything these phases hold is freed by the caller after the settle;
// what was seen (the bundles' contents among it) as soon as the writes are
// done: nothing after them reads it, and the unit phase waits out the
// settle pause.
Settled WriteAndSettle(ApplyState& s, const ReconcilerPorts& ports,
                       std::chrono::nanoseconds settle) {
  auto step = [&] {
    if (ports.progress != nullptr) ports.progress->Step();
  };
  if (ports.progress != nullptr) {
    ports.progress->Handle(s.dry_run ? std::vector<std::string>() : s.plan.UnitsActedOn(s.decl));
  }
  s.writes = s.dry_run ? NoWrites(s.plan)
                       : Write(s.decl, s.plan, s.observed.bundles, s.observed.seen, ports);
  s.owners = std::move(s.observed.owners);
  s.observed = Observation();
  step();
  s.enabled = Enable(s.decl, s.plan, s.writes, ports.services, s.dry_run);
  if (!s.dry_run)
    s.reloaded = DaemonReload(s.plan, s.writes, ports.services, LinksChanged(s.enabled));
  step();
  s.acts = Act(s.decl, s.plan, s.writes, s.reloaded, ports.services, s.dry_run, s.dirs);
  s.confirmed = s.dry_run ? std::vector<std::optional<Confirmation>>(s.plan.units.size())
                          : Confirm(s.decl, s.plan, s.acts, ports.services, *ports.clock, settle,
                                    ports.progress);
  if (!s.dry_run) JudgeLoadedFiles(s, ports);
  // Settle lets go of the contents: the secrets a failed unit's journal
  // lines are cleaned of are taken first (only when a unit was acted on).
  Secrets secrets;
  if (!s.dry_run && ports.journal != nullptr && !s.plan.units.empty()) {
    for (const core::Resource& r : s.decl.resources) {
      if (r.kind == core::Kind::kCredential && !r.content.empty()) {
        secrets.emplace_back(r.id, r.content);
      }
    }
  }
  Settled settled = Settle({.declaration = &s.decl,
                            .record = s.record,
                            .olds = &s.olds,
                            .plan = &s.plan,
                            .owed = s.owed,
                            .writes = &s.writes,
                            .reloaded = &s.reloaded,
                            .acts = &s.acts,
                            .confirmed = &s.confirmed,
                            .now = s.now,
                            .dry_run = s.dry_run,
                            .enabled = &s.enabled});
  if (!s.dry_run) {
    AddJournalLines(ports.journal, secrets, s.plan, s.acts, s.confirmed, settled.outcomes);
  }
  return settled;
}

}  // namespace mesh::reconcile
