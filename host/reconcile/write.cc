#include "host/reconcile/write.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <set>

#include "host/core/want.h"
#include "host/reconcile/stop_order.h"

namespace mesh::reconcile {
namespace {

using core::Resource;

// `staged`: a file's or credential's content, staged and made durable
// (StageBatch), to be put in place here.
Written WriteResource(const Resource& r, const Step& step, const BundlesById& bundles,
                      const FilesSeen& seen, const ports::StagedFile* staged,
                      const ReconcilerPorts& ports) {
  Written w;
  if (step.write_files && r.IsTree()) {
    const std::vector<core::TreeEntry>& bundle = *bundles.at(r.id);
    auto swapped_in = ports.root->ReplaceTree(r.path, bundle);
    if (!swapped_in) return {std::unexpected(swapped_in.error()), "", {}};
    w.fingerprint = core::TreeFingerprint(*swapped_in);
  } else if (step.write_files && r.kind == core::Kind::kDirectory) {
    auto after = ports.root->MakeDirectory(r.path, ports::Ownership{r.mode, seen.uid, seen.gid});
    if (!after) return {std::unexpected(after.error()), "", {}};
    w.fingerprint = core::DirectoryFingerprint(*after);
  } else if (step.write_files && r.kind == core::Kind::kSymlink) {
    auto after = ports.root->MakeSymlink(r.path, r.target);
    if (!after) return {std::unexpected(after.error()), "", {}};
    w.fingerprint = core::FileFingerprint(*after);
  } else if (step.write_files && staged != nullptr) {
    auto after = ports.root->PlaceStaged(*staged, ports::Ownership{r.mode, seen.uid, seen.gid});
    if (!after) return {std::unexpected(after.error()), "", {}};
    w.fingerprint = core::FileFingerprint(*after);
  } else if (step.write_files) {
    return {core::Fail("write " + r.path + ": not staged"), "", {}};
  }
  if (step.write_unit_file) {
    auto after = ports.units->WriteFileAtomic("/" + r.unit().name, *r.unit().text,
                                              ports::Ownership{0644, 0, 0});
    if (!after) return {std::unexpected(after.error()), "", {}};
    w.mutable_unit().file_fingerprint = core::FileFingerprint(*after);
  }
  for (const std::string& name : step.write_drop_ins) {
    const std::string path = "/" + r.unit().name + ".d/" + name;
    auto after = ports.units->WriteFileAtomic(path, r.unit().drop_ins.at(name),
                                              ports::Ownership{0644, 0, 0});
    if (!after) {
      w.status =
          core::Fail("drop-in " + r.unit().name + ".d/" + name + ": " + after.error().message);
      return w;
    }
    w.mutable_unit().drop_in_fingerprints[name] = core::FileFingerprint(*after);
  }
  for (const std::string& name : step.delete_drop_ins) {
    if (auto st = ports.units->RemoveFile("/" + r.unit().name + ".d/" + name); !st) {
      w.status = core::Fail("drop-in " + r.unit().name + ".d/" + name + ": " + st.error().message);
      return w;
    }
  }
  // Its last drop-in gone, UNIT.d/ goes too, as for a dropped unit. Best
  // effort: an operator's file in it keeps it.
  if (step.delete_drop_in_dir) (void)ports.units->RemoveEmptyDirectory("/" + r.unit().name + ".d");
  return w;
}

// `disabled`: how the removal's disable went (Write does every disable
// first); a failed one keeps the unit file.
// `stop_job`: its stop's job, when one was queued.
core::Status Remove(const Removal& rm, const ReconcilerPorts& ports, core::Status disabled,
                    std::string& stop_job) {
  if (!rm.not_now.empty()) return core::Ok();  // nothing of it now (PlanRemovals said why)
  core::Status first = std::move(disabled);
  auto keep_first = [&](core::Status st) {
    if (!st && first) first = std::move(st);
  };
  if (rm.stop && ports.services != nullptr) {
    auto job = ports.services->Enqueue(rm.entry.unit().name, ports::JobKind::kStop);
    if (job) stop_job = *job;
    if (!job) keep_first(std::unexpected(job.error()));
  }
  // A file's path is unlinked, never emptied as a directory: only a tree
  // the host unpacked is removed whole.
  bool tree = rm.entry.kind == core::KindName(core::Kind::kArchive) ||
              rm.entry.kind == core::KindName(core::Kind::kProcess);
  for (const std::string& path : rm.delete_paths) {
    keep_first(tree ? ports.root->Remove(path) : ports.root->RemoveFile(path));
  }
  if (rm.delete_unit_file && first) {
    keep_first(ports.units->RemoveFile("/" + rm.entry.unit().name));
  }
  // The host's unit, dropped, is forgotten by systemd too: one that had
  // failed stays listed failed, with no file, until a reboot. Best effort,
  // as the drop-in directory below: all a failure leaves is systemd's
  // list, which `systemctl reset-failed` clears.
  if (rm.forget_failure && first && ports.services != nullptr) {
    (void)ports.services->ResetFailed(rm.entry.unit().name);
  }
  // The unit's files go together, once its stop and disable went through:
  // else all stay, it stays recorded, and the next apply removes them.
  if (first) {
    for (const std::string& drop_in : rm.delete_drop_ins) {
      keep_first(ports.units->RemoveFile("/" + drop_in));
    }
  }
  if (rm.delete_drop_in_dir && first) {
    // Best effort: an operator's file in it, or none there, keeps it.
    (void)ports.units->RemoveEmptyDirectory("/" + rm.entry.unit().name + ".d");
  }
  return first;
}

// Every removal's directories, once their files are gone, deepest first
// (a path sorts after its parent). One still holding something is left and
// forgotten — unless what it holds is the host's own, whose removal failed
// or is kept in this apply: then it fails too, stays recorded, and the
// next apply removes both.
void RemoveDirectories(const Plan& plan, const std::vector<bool>& kept,
                       const ReconcilerPorts& ports, Writes& writes) {
  std::vector<std::pair<std::string_view, size_t>> dirs;
  std::set<std::string_view> failed;  // paths of the removals that failed
  for (size_t k = 0; k < plan.removals.size(); ++k) {
    if (!kept[k]) {
      for (const std::string& dir : plan.removals[k].delete_empty_dirs) dirs.emplace_back(dir, k);
    }
    if (kept[k] || !writes.removals[k]) {
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

// A batch of staged files holds one open directory per distinct parent,
// and every file's content is written before any is placed: bounded so an
// apply of any size stays within the default 1,024 descriptors and does
// not hold gigabytes of dirty pages.
constexpr size_t kBatchFiles = 4096;
constexpr size_t kBatchDirectories = 256;
constexpr uint64_t kBatchBytes = 64ull << 20;

// Stages the files and credentials written from step `first` on, up to a
// batch's bounds, then makes them durable in one step: one flush per batch,
// not one per file. A file that fails here fails its resource; the others
// go on; if the durable step fails, every file of the batch fails and none
// is placed. Returns the step after the last one considered.
size_t StageBatch(const core::Declaration& decl, const Plan& plan, size_t first,
                  const ReconcilerPorts& ports,
                  std::vector<std::optional<ports::StagedFile>>& staged, Writes& writes) {
  std::set<std::string_view> dirs;
  size_t files = 0;
  uint64_t bytes = 0;
  size_t i = first;
  for (; i < plan.steps.size(); ++i) {
    const Resource& r = decl.resources[i];
    if (!plan.steps[i].write_files) continue;
    // A batch is a run of files: a directory's, a symlink's or a tree's own
    // step runs before any file after it is staged, as it did when each file
    // was written in turn. A file under a directory declared private is
    // never written while the directory is not (nor is the directory made
    // by the staging, 0755).
    if (!r.IsFile()) break;
    std::string_view dir(r.path.data(), std::max<size_t>(r.path.rfind('/'), 1));
    if (files > 0 && (files == kBatchFiles || bytes + r.content.size() > kBatchBytes ||
                      (!dirs.contains(dir) && dirs.size() == kBatchDirectories))) {
      break;
    }
    dirs.insert(dir);
    ++files;
    bytes += r.content.size();
    auto s = ports.root->StageFile(r.path, r.content);
    if (ports.progress != nullptr) ports.progress->Step();
    if (!s) {
      writes.steps[i].status = std::unexpected(s.error());
      continue;
    }
    staged[i] = std::move(*s);
  }
  if (files == 0) return i;
  if (core::Status durable = ports.root->MakeStagedDurable(); !durable) {
    for (size_t k = first; k < i; ++k) {
      if (!staged[k]) continue;
      ports.root->DiscardStaged(*staged[k]);
      staged[k].reset();
      writes.steps[k].status = std::unexpected(durable.error());
    }
  }
  return i;
}

}  // namespace

std::string KeptThisApply(const Removal& rm, const core::Declaration& declaration,
                          const Writes& writes) {
  if (!rm.not_now.empty()) return rm.not_now;
  if (rm.left_by.has_value() && !writes.Ok(*rm.left_by)) {
    return KeptForItsSuccessor(declaration.resources[*rm.left_by].id);
  }
  if (rm.taken_by.has_value() && !writes.Ok(*rm.taken_by)) {
    return "kept as the host's: its paths lie in the path of " +
           declaration.resources[*rm.taken_by].id +
           ", which failed; removed once that bundle takes its path";
  }
  return "";
}

Writes NoWrites(const Plan& plan) {
  Writes writes;
  writes.steps.resize(plan.steps.size());
  writes.removals.resize(plan.removals.size());
  writes.removals_left.resize(plan.removals.size());
  return writes;
}

Writes Write(const core::Declaration& decl, const Plan& plan, const BundlesById& bundles,
             const Seen& seen, const ReconcilerPorts& ports) {
  Writes writes;
  writes.removals.resize(plan.removals.size());
  writes.removals_left.resize(plan.removals.size());
  std::vector<std::optional<ports::StagedFile>> staged;
  if (std::any_of(plan.steps.begin(), plan.steps.end(),
                  [](const Step& s) { return s.changes(); })) {
    writes.steps.resize(plan.steps.size());
    staged.resize(plan.steps.size());
  }
  // However Write ends (an allocation failure unwinds through it), no file
  // stays staged: its directory would stay held, proven, for a later apply.
  struct DiscardLeft {
    std::vector<std::optional<ports::StagedFile>>& staged;
    ports::FileSystem& fs;
    ~DiscardLeft() {
      for (auto& s : staged) {
        if (s) fs.DiscardStaged(*s);
      }
    }
  } discard_left{staged, *ports.root};
  size_t staged_to = 0;  // steps before this one were considered for staging
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step& step = plan.steps[i];
    if (!step.changes()) continue;
    if (step.write_files && decl.resources[i].IsFile() && i >= staged_to) {
      staged_to = StageBatch(decl, plan, i, ports, staged, writes);
    }
    if (!writes.steps[i].status) continue;  // failed while staged
    writes.steps[i] = WriteResource(decl.resources[i], step, bundles, seen.files[i],
                                    staged[i] ? &*staged[i] : nullptr, ports);
    staged[i].reset();  // placed, or discarded by the failed placement
    if (ports.progress != nullptr) ports.progress->Step();
    // A drop-in write that failed may have followed one that landed.
    writes.unit_files_changed |=
        ((step.write_unit_file || (step.unit_definition && step.write_files)) &&
         writes.steps[i].status.has_value()) ||
        !writes.steps[i].unit().drop_in_fingerprints.empty() ||
        (step.changes_drop_ins() && writes.steps[i].status.has_value());
  }
  // Asked once: the writes it depends on are done.
  std::vector<bool> kept(plan.removals.size());
  for (size_t k = 0; k < kept.size(); ++k) {
    kept[k] = !KeptThisApply(plan.removals[k], decl, writes).empty();
  }
  // Every disable before any deletion: a unit loaded from another
  // removal's file (a `file` resource inside --unit-dir) loses its
  // [Install] links while systemd can still read that file.
  std::vector<core::Status> disabled(plan.removals.size());
  for (size_t k = 0; k < plan.removals.size(); ++k) {
    const Removal& rm = plan.removals[k];
    if (rm.disable && ports.services != nullptr && !kept[k]) {
      disabled[k] = ports.services->SetUnitFileEnabled(rm.entry.unit().name, false);
    }
  }
  // Its unit file deleted, a service its trigger started again ran on with
  // no definition: triggers first (stop_order.h).
  StopTriggersFirst(
      plan.removals.size(), [&](size_t k) { return plan.removals[k].stops_a_trigger; },
      [&](size_t k) {
        std::string stop_job;
        if (kept[k]) return stop_job;
        const Removal& rm = plan.removals[k];
        bool disable_done = rm.disable && ports.services != nullptr && disabled[k];
        writes.removals[k] = Remove(rm, ports, std::move(disabled[k]), stop_job);
        if (!stop_job.empty() || disable_done) {
          writes.asked.resize(plan.removals.size());
          writes.asked[k] = {.stopped = !stop_job.empty(), .disabled = disable_done};
        }
        writes.unit_files_changed |=
            rm.delete_unit_file || rm.deletes_unit_definition || !rm.delete_drop_ins.empty();
        return stop_job;
      },
      ports.services);
  RemoveDirectories(plan, kept, ports, writes);
  return writes;
}

}  // namespace mesh::reconcile
