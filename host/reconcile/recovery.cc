#include "host/reconcile/recovery.h"

#include <algorithm>
#include <set>
#include <string_view>
#include <unordered_set>

#include "host/reconcile/plan.h"

namespace mesh::reconcile {
namespace {

using core::Declaration;
using core::Resource;

// In every directory the host writes into: parents of declared, recorded
// and in-flight paths, and the unit directory.
void SweepTemporaries(const Declaration& decl, const core::Record& record,
                      const core::Intent& intent, ports::FileSystem& root, ports::FileSystem& units,
                      std::vector<std::string>& warnings) {
  std::set<std::string> dirs;
  auto add_parent = [&](const std::string& path) {
    size_t slash = path.rfind('/');
    dirs.insert(slash == 0 ? "/" : path.substr(0, slash));
  };
  for (const Resource& r : decl.resources) {
    if (r.HasFiles()) add_parent(r.path);
  }
  for (const auto& [id, e] : record.resources) {
    for (const core::WrittenPath& w : e.written) add_parent(w.path);
  }
  for (const std::string& path : intent.creating) add_parent(path);
  int removed = 0;
  auto sweep = [&](ports::FileSystem& fs, const std::string& dir) {
    auto n = fs.RemoveStaleTemporaries(dir);
    if (n) {
      removed += *n;
    } else {
      // Left for the next interrupted apply's sweep; said, not dropped.
      warnings.push_back("temporary files left in " + dir + " not removed: " + n.error().message);
    }
  };
  for (const std::string& dir : dirs) sweep(root, dir);
  sweep(units, "/");
  warnings.push_back("the previous apply was interrupted; removed " + std::to_string(removed) +
                     " temporary file(s) it left");
}

void RemoveOrphans(const Declaration& decl, const core::Record& record, const core::Intent& intent,
                   ports::FileSystem& root, ports::FileSystem& units,
                   std::vector<std::string>& warnings) {
  for (const std::string& path : Orphans(intent, decl, record)) {
    // Only what the cut-short apply was creating: a file where it wrote a
    // file, a directory where it unpacked a tree. Anything else was put
    // there since, by someone else.
    bool tree = std::find(intent.creating_trees.begin(), intent.creating_trees.end(), path) !=
                intent.creating_trees.end();
    auto info = root.Stat(path);
    if (!info || info->type != (tree ? core::FileType::kDirectory : core::FileType::kRegular)) {
      if (info && info->type != core::FileType::kMissing) {
        warnings.push_back("left " + path +
                           ": an apply cut short was creating it, but what is there now is not "
                           "what it was writing");
      }
      continue;
    }
    auto removed = tree ? root.Remove(path) : root.RemoveFile(path);
    warnings.push_back(removed ? "removed " + path +
                                     ": created by an apply cut short, and no longer "
                                     "declared"
                               : "could not remove " + path + " (created by an apply cut short): " +
                                     removed.error().message);
  }
  for (const std::string& unit : OrphanUnitFiles(intent, decl, record)) {
    auto removed = units.RemoveFile("/" + unit);
    warnings.push_back(removed
                           ? "removed unit file " + unit +
                                 ": created by an apply cut short, and no longer declared"
                           : "could not remove unit file " + unit +
                                 " (created by an apply cut short): " + removed.error().message);
  }
}

}  // namespace

std::vector<std::string> RecoverFromCutShort(const Declaration& decl, const core::Record& record,
                                             const core::Intent& intent, ports::FileSystem& root,
                                             ports::FileSystem& units) {
  std::vector<std::string> warnings;
  if (intent.applying) SweepTemporaries(decl, record, intent, root, units, warnings);
  RemoveOrphans(decl, record, intent, root, units, warnings);
  return warnings;
}

void ClaimWhatWasBeingCreated(const Declaration& decl, const core::Intent& intent,
                              Observation& observed) {
  if (intent.creating.empty() && intent.creating_unit_files.empty()) return;
  // A set: an apply of 100,000 files cut short names them all.
  std::unordered_set<std::string_view> creating(intent.creating.begin(), intent.creating.end());
  auto holds = [](const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  for (size_t i = 0; i < decl.resources.size(); ++i) {
    const Resource& r = decl.resources[i];
    if (r.HasFiles() && creating.contains(r.path)) {
      observed.seen.files[i].preexisting = false;
    }
    if (r.unit().text.has_value() && holds(intent.creating_unit_files, r.unit().name)) {
      if (auto it = observed.seen.unit_files.find(i); it != observed.seen.unit_files.end()) {
        it->second.preexisting = false;
      }
    }
  }
}

}  // namespace mesh::reconcile
