#include "host/reconcile/write.h"

#include "host/core/want.h"

namespace mesh::reconcile {
namespace {

using core::Resource;

Written WriteResource(const Resource& r, const Step& step, const BundlesById& bundles,
                      const FilesSeen& seen, const WritePorts& ports) {
  Written w;
  if (step.write_files && r.IsTree()) {
    const std::vector<core::TreeEntry>& bundle = *bundles.at(r.id);
    if (auto st = ports.root->ReplaceTree(r.path, bundle); !st) return {st, "", ""};
    auto rescan = ports.root->ScanTree(r.path, /*hash_contents=*/false);
    if (!rescan) return {std::unexpected(rescan.error()), "", ""};
    w.fingerprint = core::TreeFingerprint(*rescan);
  } else if (step.write_files) {
    auto after = ports.root->WriteFileAtomic(r.path, r.content,
                                             ports::Ownership{r.mode, seen.uid, seen.gid});
    if (!after) return {std::unexpected(after.error()), "", ""};
    w.fingerprint = core::FileFingerprint(*after);
  }
  if (step.write_unit_file) {
    auto after =
        ports.units->WriteFileAtomic("/" + r.unit, *r.unit_text, ports::Ownership{0644, 0, 0});
    if (!after) return {std::unexpected(after.error()), "", ""};
    w.unit_file_fingerprint = core::FileFingerprint(*after);
  }
  return w;
}

core::Status Remove(const Removal& rm, const WritePorts& ports) {
  core::Status first;
  auto keep_first = [&](core::Status st) {
    if (!st && first) first = std::move(st);
  };
  if (rm.stop && ports.services != nullptr) {
    auto job = ports.services->Enqueue(rm.entry.unit, ports::JobKind::kStop);
    if (!job) keep_first(std::unexpected(job.error()));
  }
  for (const std::string& path : rm.delete_paths) keep_first(ports.root->Remove(path));
  if (rm.delete_unit_file) keep_first(ports.units->Remove("/" + rm.entry.unit));
  return first;
}

}  // namespace

Writes NoWrites(const Plan& plan) {
  Writes writes;
  writes.steps.resize(plan.steps.size());
  writes.removals.resize(plan.removals.size());
  return writes;
}

Writes Write(const core::Declaration& decl, const Plan& plan, const BundlesById& bundles,
             const Seen& seen, const WritePorts& ports) {
  Writes writes = NoWrites(plan);
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step& step = plan.steps[i];
    if (!step.changes()) continue;
    writes.steps[i] = WriteResource(decl.resources[i], step, bundles, seen.files[i], ports);
    if (ports.progress != nullptr) ports.progress->Step();
    writes.unit_files_changed |=
        (step.write_unit_file || (step.unit_definition && step.write_files)) &&
        writes.steps[i].status.has_value();
  }
  for (size_t k = 0; k < plan.removals.size(); ++k) {
    writes.removals[k] = Remove(plan.removals[k], ports);
    writes.unit_files_changed |=
        plan.removals[k].delete_unit_file || plan.removals[k].deletes_unit_definition;
  }
  return writes;
}

}  // namespace mesh::reconcile
