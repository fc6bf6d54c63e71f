#include "host/reconcile/write.h"

#include <algorithm>
#include <functional>
#include <set>

#include "host/core/want.h"

namespace mesh::reconcile {
namespace {

using core::Resource;

Written WriteResource(const Resource& r, const Step& step, const BundlesById& bundles,
                      const FilesSeen& seen, const WritePorts& ports) {
  Written w;
  if (step.write_files && r.IsTree()) {
    const std::vector<core::TreeEntry>& bundle = *bundles.at(r.id);
    if (auto st = ports.root->ReplaceTree(r.path, bundle); !st) return {st, "", "", {}};
    auto rescan = ports.root->ScanTree(r.path, /*hash_contents=*/false);
    if (!rescan) return {std::unexpected(rescan.error()), "", "", {}};
    w.fingerprint = core::TreeFingerprint(*rescan);
  } else if (step.write_files && r.kind == core::Kind::kDirectory) {
    auto after = ports.root->MakeDirectory(r.path, ports::Ownership{r.mode, seen.uid, seen.gid});
    if (!after) return {std::unexpected(after.error()), "", "", {}};
    w.fingerprint = core::DirectoryFingerprint(*after);
  } else if (step.write_files && r.kind == core::Kind::kSymlink) {
    auto after = ports.root->MakeSymlink(r.path, r.target);
    if (!after) return {std::unexpected(after.error()), "", "", {}};
    w.fingerprint = core::FileFingerprint(*after);
  } else if (step.write_files) {
    auto after = ports.root->WriteFileAtomic(r.path, r.content,
                                             ports::Ownership{r.mode, seen.uid, seen.gid});
    if (!after) return {std::unexpected(after.error()), "", "", {}};
    w.fingerprint = core::FileFingerprint(*after);
  }
  if (step.write_unit_file) {
    auto after =
        ports.units->WriteFileAtomic("/" + r.unit, *r.unit_text, ports::Ownership{0644, 0, 0});
    if (!after) return {std::unexpected(after.error()), "", "", {}};
    w.unit_file_fingerprint = core::FileFingerprint(*after);
  }
  for (const std::string& name : step.write_drop_ins) {
    const std::string path = "/" + r.unit + ".d/" + name;
    auto after =
        ports.units->WriteFileAtomic(path, r.drop_ins.at(name), ports::Ownership{0644, 0, 0});
    if (!after) {
      w.status = core::Fail("drop-in " + r.unit + ".d/" + name + ": " + after.error().message);
      return w;
    }
    w.drop_in_fingerprints[name] = core::FileFingerprint(*after);
  }
  for (const std::string& name : step.delete_drop_ins) {
    if (auto st = ports.units->Remove("/" + r.unit + ".d/" + name); !st) {
      w.status = core::Fail("drop-in " + r.unit + ".d/" + name + ": " + st.error().message);
      return w;
    }
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
  for (const std::string& drop_in : rm.delete_drop_ins)
    keep_first(ports.units->Remove("/" + drop_in));
  return first;
}

// Every removal's directories, once their files are gone, deepest first
// (a path sorts after its parent). One still holding something is left and
// forgotten — unless what it holds is the host's own, whose removal failed
// in this apply: then it fails too, stays recorded, and the next apply
// removes both.
void RemoveDirectories(const Plan& plan, const WritePorts& ports, Writes& writes) {
  std::vector<std::pair<std::string_view, size_t>> dirs;
  std::set<std::string_view> failed;  // paths of the removals that failed
  for (size_t k = 0; k < plan.removals.size(); ++k) {
    for (const std::string& dir : plan.removals[k].delete_empty_dirs) dirs.emplace_back(dir, k);
    if (!writes.removals[k]) {
      failed.insert(plan.removals[k].delete_paths.begin(), plan.removals[k].delete_paths.end());
    }
  }
  std::sort(dirs.begin(), dirs.end(), std::greater<>());
  for (const auto& [dir, k] : dirs) {
    core::Status st = ports.root->RemoveEmptyDirectory(std::string(dir));
    if (st) continue;
    std::string prefix = std::string(dir) + "/";
    auto inside = failed.lower_bound(prefix);
    bool ours_failed = inside != failed.end() && inside->starts_with(prefix);
    if (st.error().kind == core::ErrorKind::kNotEmpty && !ours_failed) {
      writes.removals_left[k].push_back(std::string(dir) + ": not empty");
    } else if (writes.removals[k]) {
      if (ours_failed) st.error().message += " (" + std::string(*inside) + " could not be removed)";
      writes.removals[k] = std::move(st);
      failed.insert(dir);
    }
  }
}

}  // namespace

Writes NoWrites(const Plan& plan) {
  Writes writes;
  writes.steps.resize(plan.steps.size());
  writes.removals.resize(plan.removals.size());
  writes.removals_left.resize(plan.removals.size());
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
    // A drop-in write that failed may have followed one that landed.
    writes.unit_files_changed |=
        ((step.write_unit_file || (step.unit_definition && step.write_files)) &&
         writes.steps[i].status.has_value()) ||
        !writes.steps[i].drop_in_fingerprints.empty() ||
        (step.changes_drop_ins() && writes.steps[i].status.has_value());
  }
  for (size_t k = 0; k < plan.removals.size(); ++k) {
    writes.removals[k] = Remove(plan.removals[k], ports);
    writes.unit_files_changed |= plan.removals[k].delete_unit_file ||
                                 plan.removals[k].deletes_unit_definition ||
                                 !plan.removals[k].delete_drop_ins.empty();
  }
  RemoveDirectories(plan, ports, writes);
  return writes;
}

}  // namespace mesh::reconcile
