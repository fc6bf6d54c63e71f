#include "host/reconcile/plan_removals.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "host/core/printable.h"
#include "host/core/unit_name.h"
#include "host/core/want.h"
#include "host/reconcile/plan_in_use.h"
#include "host/reconcile/plan_units.h"
#include "host/reconcile/words.h"

namespace mesh::reconcile {
namespace {

using core::RecordEntry;
using core::Resource;

// A recorded path is still claimed when a declared path equals it, lies
// under it, or contains it. Sorted, each test is a few lookups, so
// replacing a declaration of 10,000 files is not 10^8 comparisons.
class Claims {
 public:
  // A unit_text's unit file is claimed too, as the declared path it would
  // be when --unit-dir lies under --root: a unit file moving between a
  // `file` resource and a `unit_text` is never deleted under the new owner.
  Claims(const core::Declaration& decl, const HostDirs* dirs) {
    auto unit_dir = dirs != nullptr ? UnitDirInRoot(*dirs) : std::nullopt;
    for (size_t i = 0; i < decl.resources.size(); ++i) {
      const Resource& r = decl.resources[i];
      if (r.HasFiles()) paths_.insert(r.path);
      if (r.IsTree()) trees_.emplace(r.path, i);
      if (r.HasUnit()) units_.insert(r.unit().name);
      if (r.unit().text.has_value() && unit_dir) {
        paths_.insert(std::string(*unit_dir) + "/" + r.unit().name);
      }
      if (unit_dir) {
        for (const auto& [name, text] : r.unit().drop_ins) {
          paths_.insert(std::string(*unit_dir) + "/" + r.unit().name + ".d/" + name);
        }
      }
    }
  }
  bool Path(const std::string& path) const {
    if (paths_.contains(path)) return true;
    auto below = paths_.lower_bound(path + "/");
    if (below != paths_.end() && core::PathWithin(*below, path)) return true;
    return core::AnyAncestor(path, [&](std::string_view up) { return paths_.contains(up); });
  }
  // Declared itself, not only above or below a declared path.
  bool Exactly(const std::string& path) const { return paths_.contains(path); }
  bool Unit(const std::string& unit) const { return units_.contains(unit); }
  // The declared bundle whose path holds `path` (its tree is swapped in
  // whole over it), by index.
  std::optional<size_t> TreeOver(const std::string& path) const {
    std::optional<size_t> found;
    auto at = [&](std::string_view p) {
      auto it = trees_.find(p);
      if (it != trees_.end()) found = it->second;
      return found.has_value();
    };
    if (!at(path)) core::AnyAncestor(path, at);
    return found;
  }

 private:
  std::map<std::string, size_t, std::less<>> trees_;
  std::set<std::string, std::less<>> paths_;
  std::set<std::string, std::less<>> units_;
};

// Why what prune found at a path the host wrote is no longer the host's to
// delete; empty when it is (or nothing is there).
std::string NotAsWritten(const DroppedSeen* seen, std::string_view recorded,
                         std::string_view kind = "") {
  if (seen == nullptr) return "not looked at";
  if (!seen->error.empty()) return seen->error;
  if (seen->missing) return "";
  bool tree = recorded.starts_with("tree:");
  bool dir = recorded.starts_with("dir:");
  if ((tree || dir) && seen->type != core::FileType::kDirectory) return "no longer a directory";
  if (kind == "symlink") {
    if (seen->type != core::FileType::kSymlink) return "no longer a symlink";
  } else if (!tree && !dir && seen->type != core::FileType::kRegular) {
    return seen->type == core::FileType::kDirectory ? "now a directory" : "no longer a file";
  }
  if (seen->fingerprint != recorded) return "changed since the host wrote it";
  return "";
}

template <typename Map>
const DroppedSeen* Find(const Map& map, const std::string& key) {
  auto it = map.find(key);
  return it == map.end() ? nullptr : &it->second;
}

// A directory of the host's that holds something goes only when this apply
// removes every entry in it (a declaration that drops a directory and its
// files at once): counted deepest first, so a subdirectory emptied and
// removed counts for its parent. Otherwise it is left, said.
void ReleaseDirectoriesEmptiedTogether(std::vector<Removal>& removals) {
  std::set<std::string, std::less<>> gone;
  // What a removal that waits (for its unit to stop, or to be read) keeps:
  // a directory holding it waits with it, rather than being let go as
  // "not empty" and never removed once it is.
  std::vector<std::string> waiting;
  std::vector<std::tuple<std::string, size_t, size_t>> held;  // path, entries, removal
  for (size_t k = 0; k < removals.size(); ++k) {
    gone.insert(removals[k].delete_paths.begin(), removals[k].delete_paths.end());
    gone.insert(removals[k].delete_empty_dirs.begin(), removals[k].delete_empty_dirs.end());
    for (auto& [path, entries] : removals[k].held_dirs) held.emplace_back(path, entries, k);
    removals[k].held_dirs.clear();
    if (!removals[k].until_stopped.empty() || !removals[k].not_now.empty()) {
      for (const core::WrittenPath& w : removals[k].entry.written) waiting.push_back(w.path);
    }
  }
  std::sort(held.begin(), held.end(), std::greater<>());
  for (auto& [dir, entries, k] : held) {
    std::string prefix = dir + "/";
    auto kept = std::find_if(waiting.begin(), waiting.end(),
                             [&](const std::string& w) { return w.starts_with(prefix); });
    if (kept != waiting.end()) {
      if (removals[k].until_stopped.empty()) {
        removals[k].until_stopped = dir + " holds " + *kept + ", which goes first";
      }
      waiting.push_back(dir);
      continue;
    }
    size_t removed = 0;
    for (auto it = gone.lower_bound(prefix); it != gone.end() && it->starts_with(prefix); ++it) {
      removed += it->find('/', prefix.size()) == std::string::npos;
    }
    if (removed >= entries) {
      gone.insert(dir);
      removals[k].delete_empty_dirs.push_back(std::move(dir));
    } else {
      removals[k].left.push_back(dir + ": not empty");
    }
  }
  for (Removal& rm : removals) {
    if (!rm.until_stopped.empty()) rm.delete_empty_dirs.clear();
  }
}

// A dropped unit as read before anything was written, or null with `why`
// set: systemd could not be asked, so whether it runs is not known.
const core::UnitStatus* DroppedUnit(const PlanInputs& in, const std::string& unit,
                                    std::string* why) {
  auto status = in.seen->dropped_units.find(unit);
  if (status != in.seen->dropped_units.end() && status->second.has_value()) {
    return &*status->second;
  }
  *why = "its unit " + unit + " could not be read from systemd" +
         (status != in.seen->dropped_units.end() ? " (" + status->second.error().message + ")"
                                                 : std::string());
  return nullptr;
}

// SPEC 8: a dropped process's tree goes once its unit no longer runs (an
// ExecStop= in the bundle, a drain on SIGTERM, run from the tree), whoever
// the unit's. Until then only the stop is done (of the host's unit), and
// what it would delete waits. So does the unit file of a dropped service
// whose stop reads it (core::StopReadsItsFile): deleted and reloaded
// mid-stop, a database given TimeoutStopSec=300 would be killed at 90 s.
void WaitForTheStop(const PlanInputs& in, const Claims& claims, Removal& rm) {
  // Its unit another resource's now: that one keeps it running, from its
  // own tree once it acted on it (WaitForTheRestartOnTheNewTree).
  const std::string& unit = rm.entry.unit().name;
  if (claims.Unit(unit)) return;
  // What runs under its name is not the host's file (an operator's file
  // read first, an alias): the host's own unit file goes now, its tree
  // once that no longer runs (it may run from it).
  bool not_the_hosts = in.seen->dropped_shadowed_by.contains(unit);
  // A process's tree (an ID~UNIT removal holds one only when the tree
  // moved with its unit: the old unit may run from it while it stops).
  const bool tree =
      rm.entry.kind == core::KindName(core::Kind::kProcess) && !rm.entry.written.empty();
  std::string why;
  const core::UnitStatus* status = DroppedUnit(in, unit, &why);
  if (!tree && (status == nullptr || !core::StopReadsItsFile(*status) || !rm.delete_unit_file ||
                not_the_hosts)) {
    return;
  }
  bool deletes = !rm.delete_paths.empty() || !rm.delete_empty_dirs.empty() ||
                 !rm.held_dirs.empty() || rm.delete_unit_file || !rm.delete_drop_ins.empty();
  if (!deletes) return;
  if (status != nullptr && !status->Running() && status->active_state != "deactivating") return;
  if (status == nullptr) {
    rm.not_now = why + ": its tree is kept while it may run; the next apply removes it";
    rm.stop = rm.disable = false;
  } else if (rm.delete_unit_file && !not_the_hosts) {
    rm.until_stopped = (rm.stop ? "" : unit + " still stopping; ") +
                       (tree ? "its tree and unit file go once " + unit + " no longer runs"
                             : "its unit file goes once " + unit +
                                   " no longer runs (systemd reads it to stop the unit)");
  } else {
    rm.until_stopped = unit + " runs, not the host's to stop: its tree goes once it no longer runs";
  }
  rm.forget_failure = false;  // once it is down, by the apply that deletes its files
  rm.delete_paths.clear();
  rm.delete_empty_dirs.clear();
  rm.held_dirs.clear();
  rm.delete_drop_ins.clear();
  rm.delete_unit_file = not_the_hosts && rm.delete_unit_file;
  rm.delete_drop_in_dir = rm.deletes_unit_definition = false;
}

// The unit of a dropped resource: disabled, stopped and its unit file
// deleted only when that file is the host's (a unit_text), untouched, and
// no other resource's now.
void PlanUnitRemoval(const PlanInputs& in, const Claims& claims, const RecordEntry& e,
                     Removal& rm) {
  auto unit_dir = in.dirs != nullptr ? UnitDirInRoot(*in.dirs) : std::nullopt;
  if (e.unit().name.empty() || claims.Unit(e.unit().name)) return;
  // Only a unit whose unit file the host wrote is the host's to stop: an
  // operator's own unit (no unit_text) is forgotten, running as it is.
  bool owns_unit = !e.unit().file_preexisting && !e.unit().file_fingerprint.empty();
  if (e.unit().file_preexisting) {
    rm.left.push_back("unit " + e.unit().name +
                      " and its unit file, there before the host wrote it");
  } else if (e.unit().file_fingerprint.empty()) {
    rm.unit_without_text = true;  // decided once every removal is planned
  }
  if (owns_unit && unit_dir && claims.Path(std::string(*unit_dir) + "/" + e.unit().name)) {
    rm.left.push_back("unit " + e.unit().name +
                      " and its unit file, declared by another resource now");
    owns_unit = false;
  }
  if (owns_unit) {
    const DroppedSeen* file = Find(in.seen->dropped_unit_files, e.unit().name);
    rm.unit_file_gone = file != nullptr && file->missing;
    std::string why = NotAsWritten(file, e.unit().file_fingerprint);
    if (!why.empty()) {
      rm.left.push_back("unit " + e.unit().name + " and its unit file: " + why);
      owns_unit = false;
    }
  }
  if (owns_unit) {
    std::string why;
    const core::UnitStatus* status = DroppedUnit(in, e.unit().name, &why);
    if (status == nullptr) {
      // Its file deleted, it would run on with no definition and no record.
      rm.not_now = why + ": not stopped, nothing deleted; the next apply removes it";
      return;
    }
    if (auto other = in.seen->dropped_shadowed_by.find(e.unit().name);
        other != in.seen->dropped_shadowed_by.end()) {
      // It runs from that file, not the host's: the host's file goes, the
      // daemon is not the host's to stop.
      rm.left.push_back("unit " + e.unit().name + " as it is: " + other->second);
      rm.delete_unit_file = true;
      return;
    }
    // Stopped and its file deleted, its trigger would start it again at
    // once: it would run on with no definition and no record.
    if (std::string trigger = DeclaredTriggerOf(in, e.unit().name); !trigger.empty()) {
      rm.not_now = e.unit().name + " is started by " + trigger +
                   ", still declared running: not stopped, nothing deleted; drop " + trigger +
                   " too, or declare it stopped, and the next apply removes it";
      return;
    }
    if (std::string trigger = RunningTriggerNotKept(in, e.unit().name); !trigger.empty()) {
      rm.not_now = e.unit().name + " is started by " + trigger +
                   ", which runs until this apply's units are acted on: not stopped, nothing "
                   "deleted; the next apply removes it, " +
                   trigger + " stopped";
      return;
    }
    rm.stop = status->Running();
    rm.stops_a_trigger = rm.stop && !status->triggers.empty();
    rm.forget_failure = true;
    rm.delete_unit_file = true;
    const DroppedSeen* file = Find(in.seen->dropped_unit_files, e.unit().name);
    rm.disable = file != nullptr && !file->missing &&
                 (e.unit().enabled == true || core::UnitFileEnabled(*status));
  }
}

// Its drop-ins, unless another resource declares the unit now.
void PlanDropInRemovals(const PlanInputs& in, const Claims& claims, const RecordEntry& e,
                        Removal& rm) {
  if (e.unit().drop_ins.empty()) return;
  if (claims.Unit(e.unit().name)) {
    rm.left.push_back(Plural(e.unit().drop_ins.size(), "drop-in") + " of " + e.unit().name +
                      ": the unit is another resource's now");
    return;
  }
  for (const auto& [name, fp] : e.unit().drop_ins) {
    std::string key = e.unit().name + ".d/" + name;
    if (core::DropInPreexisting(fp)) {
      rm.left.push_back("drop-in " + key + ", there before the host wrote it");
      continue;
    }
    const DroppedSeen* seen = Find(in.seen->dropped_unit_files, key);
    std::string why = NotAsWritten(seen, fp);
    if (!why.empty()) {
      rm.left.push_back("drop-in " + key + ": " + why);
    } else if (!seen->missing) {
      rm.delete_drop_ins.push_back(key);
    }
  }
  // The folder the host's drop-ins were in goes with them, if that leaves
  // it empty (an operator's own file there keeps it) and no resource
  // declares it.
  auto unit_dir = in.dirs != nullptr ? UnitDirInRoot(*in.dirs) : std::nullopt;
  rm.delete_drop_in_dir =
      !unit_dir || !claims.Path(std::string(*unit_dir) + "/" + e.unit().name + ".d");
}

// Nothing of a removal is done in this apply (Removal::not_now): its
// unit is neither stopped nor disabled, none of its files deleted.
void NothingNow(Removal& rm) {
  rm.stop = rm.stops_a_trigger = rm.disable = rm.forget_failure = false;
  rm.delete_unit_file = rm.delete_drop_in_dir = rm.deletes_unit_definition = false;
  rm.delete_paths.clear();
  rm.delete_drop_ins.clear();
  rm.delete_empty_dirs.clear();
  rm.held_dirs.clear();
}

void PlanPathRemovals(const PlanInputs& in, const Claims& claims, const std::vector<Step>& steps,
                      const RecordEntry& e, Removal& rm) {
  for (const core::WrittenPath& w : e.written) {
    // Inside a bundle's path: its swap takes it over, or, the bundle
    // failed, it stays the host's (recorded) until one does.
    std::optional<size_t> tree = w.preexisting ? std::nullopt : claims.TreeOver(w.path);
    if (tree.has_value() && *tree < steps.size() && steps[*tree].failed()) {
      rm.not_now = "kept as the host's: " + w.path + " lies in the path of " +
                   in.declaration->resources[*tree].id +
                   ", which failed; removed once that bundle takes its path";
      NothingNow(rm);
      return;
    }
    if (tree.has_value() && in.declaration->resources[*tree].path != w.path) {
      rm.taken_over.push_back(w.path + ", replaced by " + in.declaration->resources[*tree].id +
                              "'s bundle");
      rm.taken_by = *tree;
      continue;
    }
    if (w.preexisting || claims.Path(w.path)) {
      const bool again =
          rm.left_by.has_value() && in.declaration->resources[*rm.left_by].path == w.path;
      rm.left.push_back(
          w.path + (w.preexisting ? ", there before the host managed it"
                    : again
                        ? ", declared by " + in.declaration->resources[*rm.left_by].id + " again"
                    : claims.Exactly(w.path) ? ", declared by another resource now"
                                             : ", above or below a declared path now"));
      continue;
    }
    const DroppedSeen* seen = Find(in.seen->dropped_paths, w.path);
    std::string why = NotAsWritten(seen, w.fingerprint, e.kind);
    if (!why.empty()) {
      rm.left.push_back(w.path + ": " + why);
    } else if (!seen->missing && e.kind == "directory") {
      if (seen->entries == 0) {
        rm.delete_empty_dirs.push_back(w.path);
      } else {
        rm.held_dirs.emplace_back(w.path, seen->entries);
      }
    } else if (!seen->missing) {
      rm.delete_paths.push_back(w.path);
      rm.deletes_unit_definition |=
          in.dirs != nullptr && UnitDefinitionAt(*in.dirs, w.path).has_value();
    }
  }
}

// The unit `path` (declared, under --root) is the unit file of, itself in
// --unit-dir at `unit_dir`, not a file of a drop-in directory.
std::optional<std::string> UnitFileAt(const PlanInputs& in, std::string_view unit_dir,
                                      const std::string& path) {
  auto name = UnitDefinitionAt(*in.dirs, path);
  if (!name || name->empty() || path != std::string(unit_dir) + "/" + *name) return std::nullopt;
  return name;
}

// The unit file (a `file` of the host's) that defines a dropped unit whose
// stop reads it waits for that stop, as a unit_text's does
// (WaitForTheStop): its removal keeps the file until the unit no longer
// runs. `kept`: the files kept so far (name, path), which another unit
// they define waits for too. Returns the path kept, or "".
template <typename Defines>
std::string KeepDefinitionWhileItStops(const PlanInputs& in, std::string_view unit_dir,
                                       const std::string& unit, const Defines& defines,
                                       std::vector<Removal>& removals,
                                       std::vector<std::pair<std::string, std::string>>& kept) {
  for (const auto& [name, path] : kept) {
    if (defines(name)) return path;
  }
  for (Removal& other : removals) {
    auto& paths = other.delete_paths;
    std::optional<std::string> name;
    auto it = std::find_if(paths.begin(), paths.end(), [&](const std::string& path) {
      name = UnitFileAt(in, unit_dir, path);
      return name && defines(*name);
    });
    if (it == paths.end()) continue;
    other.until_stopped = "unit file " + *it + " goes once " + unit +
                          " no longer runs (systemd reads it to stop the unit)";
    kept.emplace_back(std::move(*name), *it);
    paths.erase(it);
    other.deletes_unit_definition = std::any_of(
        paths.begin(), paths.end(),
        [&](const std::string& p) { return UnitDefinitionAt(*in.dirs, p).has_value(); });
    return kept.back().second;
  }
  return "";
}

// A dropped unit without unit_text is the operator's, and forgotten —
// unless the unit file it is loaded from (its own or its template's) is a
// `file` resource inside --unit-dir that the host made: then it was the
// host's after all, and is disabled and stopped. When this apply deletes
// that file too, the disable comes while systemd can still read it (Write
// disables before it deletes), or the unit would run on, and stay linked,
// with no definition and no record.
void SettleUnitsWithoutText(const PlanInputs& in, std::vector<Removal>& removals) {
  // The full pass of every apply comes here: most drop no such unit.
  if (std::none_of(removals.begin(), removals.end(),
                   [](const Removal& rm) { return rm.unit_without_text; })) {
    return;
  }
  auto unit_dir = in.dirs != nullptr ? UnitDirInRoot(*in.dirs) : std::nullopt;
  std::vector<std::string> deleted_unit_files;
  for (const Removal& rm : removals) {
    for (const std::string& path : rm.delete_paths) {
      auto name = unit_dir ? UnitFileAt(in, *unit_dir, path) : std::nullopt;
      if (name) deleted_unit_files.push_back(std::move(*name));
    }
  }
  // Unit files the host made, still declared as files inside --unit-dir
  // (a template whose other instances stay, say): a unit loaded from one
  // is the host's too.
  std::vector<std::string> kept_unit_files;
  for (size_t i = 0; unit_dir && i < in.declaration->resources.size(); ++i) {
    const core::Resource& r = in.declaration->resources[i];
    const core::RecordEntry* old = in.olds != nullptr ? in.olds->by_index[i] : nullptr;
    if (r.kind != core::Kind::kFile || old == nullptr || old->written.size() != 1 ||
        old->written[0].preexisting || old->written[0].path != r.path) {
      continue;
    }
    if (auto name = UnitFileAt(in, *unit_dir, r.path)) kept_unit_files.push_back(std::move(*name));
  }
  std::vector<std::pair<std::string, std::string>> waiting;  // files kept for a stop
  for (Removal& rm : removals) {
    if (!rm.unit_without_text) continue;
    const std::string& unit = rm.entry.unit().name;
    std::string why;
    const core::UnitStatus* status = DroppedUnit(in, unit, &why);
    // By name, and by the file systemd says it loaded the unit from when
    // it says: an operator's own app@b.service comes before the host's
    // app@.service.
    auto defines = [&](const std::string& f) {
      return core::UnitFileOf(f, unit) &&
             (status == nullptr || core::LoadedFrom(*status, in.dirs->units, f));
    };
    bool undefined = std::any_of(deleted_unit_files.begin(), deleted_unit_files.end(), defines);
    bool hosts = std::any_of(kept_unit_files.begin(), kept_unit_files.end(), defines);

    if (!undefined && !hosts) {
      rm.left.push_back("unit " + unit + " as it is (not the host's: no unit_text)");
      continue;
    }
    if (status == nullptr) {
      // Not known to be stopped: not forgotten either, and nothing of it
      // deleted (a tree it may run from).
      rm.not_now = why + ": not stopped, nothing deleted; the next apply removes it";
      rm.delete_paths.clear();
      rm.delete_drop_ins.clear();
      rm.delete_unit_file = rm.delete_drop_in_dir = rm.deletes_unit_definition = false;
      continue;
    }
    rm.stop = status->Running();
    rm.stops_a_trigger = rm.stop && !status->triggers.empty();
    rm.forget_failure = true;
    rm.disable = rm.entry.unit().enabled == true || core::UnitFileEnabled(*status);
    if (undefined && (rm.stop || status->active_state == "deactivating") &&
        core::StopReadsItsFile(*status)) {
      // Both wait: the file's removal alone would not know the unit again.
      std::string kept =
          KeepDefinitionWhileItStops(in, *unit_dir, unit, defines, removals, waiting);
      if (!kept.empty()) {
        rm.until_stopped = (rm.stop ? "" : unit + " still stopping; ") + "its unit file " + kept +
                           " goes once " + unit + " no longer runs";
        rm.forget_failure = false;
      }
    }
  }
}

}  // namespace

void WaitForTheRestartOnTheNewTree(const core::Declaration& decl,
                                   const std::vector<UnitPlan>& units,
                                   std::vector<Removal>& removals) {
  for (Removal& rm : removals) {
    if (rm.entry.kind != core::KindName(core::Kind::kProcess) || rm.delete_paths.empty() ||
        !rm.until_stopped.empty() || !rm.not_now.empty()) {
      continue;
    }
    for (const UnitPlan& u : units) {
      const core::Resource& r = decl.resources[u.index];
      if (r.unit().name != rm.entry.unit().name || (!u.action.has_value() && !u.stop)) continue;
      rm.until_stopped = "its tree goes once " + r.unit().name + " no longer runs from it (" +
                         r.id + " " + (u.stop ? "stops" : "restarts") + " it now)";
      rm.delete_paths.clear();
      rm.delete_empty_dirs.clear();
      break;
    }
  }
}

// Only what the host itself created, and still as it wrote it, is deleted;
// a unit is stopped only when its unit file is the host's and untouched.
std::string KeptForItsSuccessor(std::string_view id) {
  return "kept: " + std::string(id) + " failed, and what it left stays until it is in place";
}

std::vector<Removal> PlanRemovals(const PlanInputs& in, const std::vector<Step>& steps) {
  std::vector<Removal> removals;
  // Built only when something recorded is no longer declared: most
  // applies remove nothing.
  std::optional<Claims> claims;
  std::optional<UnitUses> uses;
  for (const auto* dropped : in.olds->dropped) {
    const auto& [id, e] = *dropped;
    if (!claims) claims.emplace(*in.declaration, in.dirs);
    Removal rm;
    rm.id = id;
    rm.entry = e;
    rm.left_behind = in.olds->LeftBehind(dropped);
    // The units an apply cut short created (cut-short~UNIT) were left by
    // no resource, whatever one is called.
    if (size_t tilde = id.find('~');
        tilde != std::string::npos && std::string_view(id).substr(0, tilde) != "cut-short") {
      if (const core::Resource* by = in.declaration->Find(id.substr(0, tilde))) {
        rm.left_by = static_cast<size_t>(by - in.declaration->resources.data());
      }
    }
    if (rm.left_by.has_value() && steps[*rm.left_by].failed()) {
      rm.not_now = KeptForItsSuccessor(in.declaration->resources[*rm.left_by].id);
      removals.push_back(std::move(rm));
      continue;
    }
    PlanUnitRemoval(in, *claims, e, rm);
    if (rm.not_now.empty()) {
      PlanDropInRemovals(in, *claims, e, rm);
      PlanPathRemovals(in, *claims, steps, e, rm);
      // What it would delete, a declared unit may still run from (gathered
      // once, and only when something is to be deleted).
      std::vector<std::string> deletes = rm.delete_paths;
      deletes.insert(deletes.end(), rm.delete_empty_dirs.begin(), rm.delete_empty_dirs.end());
      if (!deletes.empty() && !uses) uses.emplace(in, steps);
      auto named = rm.not_now.empty() && !deletes.empty() ? uses->Keeps(deletes) : std::nullopt;
      if (named.has_value()) {
        rm.not_now = std::move(*named);
        NothingNow(rm);
      } else if (!e.unit().name.empty()) {
        WaitForTheStop(in, *claims, rm);
      }
    }
    removals.push_back(std::move(rm));
  }
  SettleUnitsWithoutText(in, removals);
  ReleaseDirectoriesEmptiedTogether(removals);
  return removals;
}

}  // namespace mesh::reconcile
