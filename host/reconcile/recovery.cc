#include "host/reconcile/recovery.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_set>

#include "host/core/want.h"
#include "host/reconcile/plan.h"

namespace mesh::reconcile {
namespace {

using core::Declaration;
using core::Resource;

// What an apply cut short created (its intent's `creating`) that is now
// neither recorded nor declared, nor over or under a declared path: the
// host's own leftovers, which nothing else would ever remove. And the same
// for the unit files and the drop-ins (UNIT.d/NAME) it created.
std::vector<std::string> Orphans(const core::Intent& intent, const core::Declaration& decl,
                                 const core::Record& record) {
  std::vector<std::string> out;
  if (intent.creating.empty()) return out;
  std::set<std::string_view> recorded;
  for (const auto& [id, e] : record.resources) {
    for (const core::WrittenPath& w : e.written) recorded.insert(w.path);
  }
  // Sorted, so that a path is matched with the declared ones it overlaps in
  // a few searches, not a scan: an apply of 100,000 files cut short names
  // them all, and the one after must not compare each with each.
  std::vector<std::string_view> declared;
  for (const Resource& r : decl.resources) {
    if (r.HasFiles()) declared.push_back(r.path);
  }
  std::sort(declared.begin(), declared.end());
  auto holds = [&](std::string_view path) {
    return std::binary_search(declared.begin(), declared.end(), path);
  };
  for (const std::string& path : intent.creating) {
    if (recorded.contains(path)) continue;
    // The path itself, one of its directories, or something inside it.
    auto inside = std::lower_bound(declared.begin(), declared.end(), path + "/");
    bool overlaps = holds(path) || core::AnyAncestor(path, holds) ||
                    (inside != declared.end() && inside->starts_with(path + "/"));
    if (!overlaps) out.push_back(path);
  }
  return out;
}

// Whether `unit`'s file, which an apply cut short created, is held: by a
// declared unit_text, or by an entry of the record (or one taken from the
// intent, in `olds`) that will remove it.
bool UnitFileKept(const std::string& unit, const core::Declaration& decl,
                  const core::Record& record, const OldEntries* olds) {
  for (const Resource& r : decl.resources) {
    if (r.unit().text.has_value() && r.unit().name == unit) return true;
  }
  for (const auto& [id, e] : record.resources) {
    if (e.unit().name == unit && !e.unit().file_fingerprint.empty()) return true;
  }
  for (size_t k = 0; olds != nullptr && k < olds->left_behind.size(); ++k) {
    if (olds->left_behind[k].second.unit().name == unit) return true;
  }
  return false;
}

std::vector<std::string> OrphanUnitFiles(const core::Intent& intent, const core::Declaration& decl,
                                         const core::Record& record, const OldEntries& olds) {
  std::vector<std::string> out;
  for (const std::string& unit : intent.creating_unit_files) {
    if (!UnitFileKept(unit, decl, record, &olds)) out.push_back(unit);
  }
  return out;
}

std::vector<std::string> OrphanDropIns(const core::Intent& intent, const core::Declaration& decl,
                                       const core::Record& record) {
  std::vector<std::string> out;
  for (const std::string& drop_in : intent.creating_drop_ins) {
    auto [unit, name] = core::SplitDropIn(drop_in);
    auto holds = [&](const auto& u) {
      return u.name == unit && u.drop_ins.contains(std::string(name));
    };
    bool kept = false;
    for (const Resource& r : decl.resources) kept |= holds(r.unit());
    for (const auto& [id, e] : record.resources) kept |= holds(e.unit());
    if (!kept) out.push_back(drop_in);
  }
  return out;
}

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
  // And the drop-in directories: a drop-in is written as a file is.
  std::set<std::string> drop_in_dirs;
  for (const Resource& r : decl.resources) {
    if (!r.unit().drop_ins.empty()) drop_in_dirs.insert("/" + r.unit().name + ".d");
  }
  for (const auto& [id, e] : record.resources) {
    if (!e.unit().drop_ins.empty()) drop_in_dirs.insert("/" + e.unit().name + ".d");
  }
  for (const std::string& drop_in : intent.creating_drop_ins) {
    drop_in_dirs.insert("/" + std::string(core::SplitDropIn(drop_in).first) + ".d");
  }
  for (const std::string& dir : drop_in_dirs) sweep(units, dir);
  warnings.push_back("the previous apply was interrupted; removed " + std::to_string(removed) +
                     " temporary file(s) it left");
}

// What a cut-short apply was creating at `path`, if it is still of the
// type it was writing; anything else there was put since, by someone else,
// and is left (said). Missing: nothing to do.
std::optional<core::FileInfo> StillAsCreated(ports::FileSystem& fs, const std::string& path,
                                             core::FileType type, std::string_view what,
                                             std::vector<std::string>& warnings) {
  auto info = fs.Stat(path);
  if (info && info->type == type) return *info;
  if (info && info->type != core::FileType::kMissing) {
    warnings.push_back("left " + std::string(what) +
                       ": an apply cut short was creating it, but what is there now is not what "
                       "it was writing");
  }
  return std::nullopt;
}

void SayRemoved(const core::Status& removed, const std::string& what,
                std::vector<std::string>& warnings) {
  warnings.push_back(removed ? "removed " + what +
                                   ": created by an apply cut short, and no longer declared"
                             : "could not remove " + what +
                                   " (created by an apply cut short): " + removed.error().message);
}

// The declared resource that manages `unit`, if any.
std::optional<size_t> DeclaredUnit(const Declaration& decl, std::string_view unit) {
  for (size_t i = 0; i < decl.resources.size(); ++i) {
    if (decl.resources[i].HasUnit() && decl.resources[i].unit().name == unit) return i;
  }
  return std::nullopt;
}

void RemoveOrphans(const Declaration& decl, const core::Record& record, const core::Intent& intent,
                   const OldEntries& olds, ports::FileSystem& root, ports::FileSystem& units,
                   Observation& observed, std::vector<std::string>& warnings) {
  for (const std::string& path : Orphans(intent, decl, record)) {
    // A file where it wrote a file, a directory where it unpacked a tree.
    bool tree = std::find(intent.creating_trees.begin(), intent.creating_trees.end(), path) !=
                intent.creating_trees.end();
    if (!StillAsCreated(root, path, tree ? core::FileType::kDirectory : core::FileType::kRegular,
                        path, warnings)) {
      continue;
    }
    SayRemoved(tree ? root.Remove(path) : root.RemoveFile(path), path, warnings);
  }
  for (const std::string& unit : OrphanUnitFiles(intent, decl, record, olds)) {
    // A link (the operator's mask, or their own unit linked in) is not
    // what the apply was writing.
    if (!StillAsCreated(units, "/" + unit, core::FileType::kRegular, "unit file " + unit,
                        warnings)) {
      continue;
    }
    SayRemoved(units.RemoveFile("/" + unit), "unit file " + unit, warnings);
  }
  for (const std::string& drop_in : OrphanDropIns(intent, decl, record)) {
    auto [unit, name] = core::SplitDropIn(drop_in);
    auto info = StillAsCreated(units, "/" + drop_in, core::FileType::kRegular, "drop-in " + drop_in,
                               warnings);
    if (!info) continue;
    // Of a unit still declared: systemd may have loaded it (the apply may
    // have restarted the unit before it was cut short), so it goes as a
    // change of the unit's definition, its restart owed before the file
    // does (plan.cc, PlanDropIns).
    if (auto i = DeclaredUnit(decl, unit)) {
      auto seen = observed.seen.unit_files.find(*i);
      if (seen == observed.seen.unit_files.end()) continue;
      DropInSeen& d = seen->second.drop_ins[std::string(name)];
      d.cut_short = true;
      d.fingerprint = core::FileFingerprint(*info);
      continue;
    }
    SayRemoved(units.RemoveFile("/" + drop_in), "drop-in " + drop_in, warnings);
  }
}

}  // namespace

std::vector<std::string> RecoverFromCutShort(const Declaration& decl, const core::Record& record,
                                             const core::Intent& intent, const OldEntries& olds,
                                             ports::FileSystem& root, ports::FileSystem& units,
                                             Observation& observed) {
  std::vector<std::string> warnings;
  if (intent.applying) SweepTemporaries(decl, record, intent, root, units, warnings);
  RemoveOrphans(decl, record, intent, olds, root, units, observed, warnings);
  return warnings;
}

void AdoptCutShortUnits(const Declaration& decl, const core::Record& record,
                        const core::Intent& intent, ports::FileSystem& units, OldEntries& olds) {
  for (const std::string& unit : intent.creating_unit_files) {
    if (DeclaredUnit(decl, unit) || UnitFileKept(unit, decl, record, &olds)) continue;
    std::string id = LeftBehindId("cut-short", unit);
    if (record.resources.contains(id)) continue;  // recorded: dropped already
    auto info = units.Stat("/" + unit);
    if (!info || info->type != core::FileType::kRegular) continue;
    core::RecordEntry e;
    e.kind = core::KindName(core::Kind::kService);
    e.mutable_unit().name = unit;
    e.mutable_unit().file_fingerprint = core::FileFingerprint(*info);
    olds.left_behind.emplace_back(std::move(id), std::move(e));
    olds.dropped.push_back(&olds.left_behind.back());
  }
}

void ClaimWhatWasBeingCreated(const Declaration& decl, const core::Intent& intent,
                              Observation& observed) {
  if (!intent.Creating()) return;
  // A set: an apply of 100,000 files cut short names them all.
  std::unordered_set<std::string_view> creating(intent.creating.begin(), intent.creating.end());
  auto holds = [](const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  for (size_t i = 0; i < decl.resources.size(); ++i) {
    const Resource& r = decl.resources[i];
    if (r.HasFiles() && creating.contains(r.path)) {
      observed.seen.files[i].preexisting = false;
      observed.seen.files[i].foreign.clear();  // what the cut-short apply unpacked, and since
    }
    auto unit_file = observed.seen.unit_files.find(i);
    if (unit_file == observed.seen.unit_files.end()) continue;
    if (r.unit().text.has_value() && holds(intent.creating_unit_files, r.unit().name)) {
      unit_file->second.preexisting = false;
    }
    for (auto& [name, seen] : unit_file->second.drop_ins) {
      if (holds(intent.creating_drop_ins, r.unit().name + ".d/" + name)) seen.preexisting = false;
    }
  }
}

}  // namespace mesh::reconcile
