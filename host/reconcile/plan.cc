#include "host/reconcile/plan.h"

#include <algorithm>
#include <functional>
#include <set>
#include <tuple>

#include "host/core/printable.h"
#include "host/core/want.h"
#include "host/reconcile/words.h"

namespace mesh::reconcile {
namespace {

using core::Outcome;
using core::RecordEntry;
using core::Resource;
using core::UnitAction;

Step Failed(Step step, std::string detail) {
  step.outcome = Outcome::kFailed;
  step.detail = std::move(detail);
  step.write_files = step.write_unit_file = false;
  step.write_drop_ins.clear();
  step.delete_drop_ins.clear();
  step.entry.reset();
  return step;
}

// A file, a credential or a tree: as recorded, adopted (the fingerprint
// moved, or there is no record, but the content matches), or to be written.
Step PlanFiles(const PlanInputs& in, const Resource& r, const RecordEntry* old,
               const std::string& want, const FilesSeen& seen) {
  Step step;
  step.old = old;
  if (seen.found == Found::kError) return Failed(std::move(step), seen.error);
  bool recorded = RecordedAt(r, old, want);
  bool tree = r.IsTree();
  RecordEntry entry;
  entry.kind = std::string(core::KindName(r.kind));
  entry.digest = want;
  entry.unit = r.HasUnit() ? r.unit : "";
  entry.applied_at = recorded ? old->applied_at : in.now;
  entry.written.push_back(
      {r.path, seen.fingerprint, seen.content_digest, seen.file_count, seen.preexisting});
  std::string as_declared = tree ? FilesAsDeclared(seen.file_count) : std::string(kAsDeclared);
  if (seen.found == Found::kAsRecorded) {
    step.detail = as_declared;
  } else if (seen.found == Found::kAsDeclared) {
    if (!recorded) entry.applied_at = old != nullptr ? old->applied_at : in.now;
    step.detail = old != nullptr ? as_declared
                                 : (tree ? Plural(seen.file_count, "file") + " " : std::string()) +
                                       "adopted: already as declared";
  } else {
    step.outcome = seen.missing && old == nullptr ? Outcome::kCreated : Outcome::kUpdated;
    std::string what = tree ? "the tree was changed" : seen.drift;
    std::string why = recorded ? "drifted: " + what + " on the machine, put back; " : "";
    std::string wrote =
        r.kind == core::Kind::kCredential ? "secret" : Plural(r.content.size(), "byte");
    std::string action;
    if (tree) {
      action = Did(in.dry_run, "unpacked", "unpack", Plural(seen.file_count, "file"));
    } else if (r.kind == core::Kind::kDirectory) {
      std::string meta = "mode " + core::FormatMode(r.mode) + ", owner " + r.owner + ":" + r.group;
      action = seen.missing ? Did(in.dry_run, "made", "make", "directory, " + meta)
                            : Did(in.dry_run, "set", "set", meta);
    } else if (r.kind == core::Kind::kSymlink) {
      action = Did(in.dry_run, "linked", "link", "to " + core::Printable(r.target, 200));
    } else {
      action = Did(in.dry_run, "wrote", "write", wrote + ", mode " + core::FormatMode(r.mode));
    }
    step.detail = why + action;
    step.write_files = true;
    entry.applied_at = in.now;
  }
  step.entry = std::move(entry);
  return step;
}

Step PlanService(const PlanInputs& in, const Resource& r, const RecordEntry* old,
                 const std::string& want) {
  Step step;
  step.old = old;
  RecordEntry entry;
  entry.kind = std::string(core::KindName(r.kind));
  entry.digest = want;
  bool recorded = old != nullptr && old->digest == want;
  entry.applied_at = recorded ? old->applied_at : in.now;
  // A changed state or unit alone changes nothing on disk; the unit phase
  // acts on what systemd reports.
  step.want_changed = old != nullptr && !recorded;
  step.entry = std::move(entry);
  return step;
}

// The unit file of a service or process, when the declaration gives its text.
void PlanUnitFile(const PlanInputs& in, const Resource& r, const UnitFileSeen& seen, Step& step) {
  RecordEntry& entry = *step.entry;
  entry.unit = r.unit;
  entry.enabled = r.enabled;             // services and processes alike
  if (!r.unit_text.has_value()) return;  // the machine's own unit file
  if (seen.found == Found::kError) {
    step = Failed(std::move(step), seen.error);
    return;
  }
  entry.unit_file_preexisting = seen.preexisting;
  if (seen.found != Found::kDiffers) {
    entry.unit_file_fingerprint = seen.fingerprint;
    return;
  }
  const RecordEntry* old = step.old;
  bool recorded = old != nullptr && old->digest == entry.digest && old->unit == r.unit &&
                  !old->unit_file_fingerprint.empty();
  std::string wrote = Did(in.dry_run, "wrote", "write", "unit file " + r.unit);
  step.detail = step.detail.empty() || step.outcome == Outcome::kUnchanged
                    ? wrote
                    : step.detail + ", " + wrote;
  if (recorded) {
    step.detail =
        "drifted: unit file " + r.unit + " changed on the machine, put back; " + step.detail;
  }
  if (step.outcome == Outcome::kUnchanged) {
    step.outcome = old != nullptr || !seen.missing ? Outcome::kUpdated : Outcome::kCreated;
  }
  step.write_unit_file = true;
  entry.unit_file_fingerprint.clear();  // the write phase's
  entry.applied_at = in.now;
}

// The unit's drop-ins: each declared one written unless it is as declared;
// each recorded one no longer declared deleted while it is still as the
// host wrote it (else left, and forgotten). Either is a change of the
// unit's definition (a daemon-reload, then a restart).
void PlanDropIns(const PlanInputs& in, const Resource& r, const UnitFileSeen& seen, Step& step) {
  RecordEntry& entry = *step.entry;
  entry.drop_ins.clear();
  const RecordEntry* old = step.old;
  bool ours = old != nullptr && old->unit == r.unit;
  std::string words;
  auto say = [&](const std::string& w) { words = words.empty() ? w : words + ", " + w; };
  for (const auto& [name, text] : r.drop_ins) {
    const DropInSeen& d = seen.drop_ins.at(name);
    if (d.found == Found::kError) {
      step = Failed(std::move(step), "drop-in " + r.unit + ".d/" + name + ": " + d.error);
      return;
    }
    std::string mark = d.preexisting ? "pre:" : "";
    if (d.found != Found::kDiffers) {
      entry.drop_ins[name] = mark + d.fingerprint;
      continue;
    }
    entry.drop_ins[name] = mark;  // the write phase's fingerprint follows the mark
    step.write_drop_ins.push_back(name);
    bool drifted = ours && old->digest == entry.digest && old->drop_ins.contains(name);
    say((drifted ? "drifted: drop-in " + name + " changed on the machine, put back; " : "") +
        Did(in.dry_run, "wrote", "write", "drop-in " + r.unit + ".d/" + name));
  }
  if (old != nullptr && !ours && !old->drop_ins.empty()) {
    // The resource now manages another unit: the old one's drop-ins stay
    // with it, said once, and forgotten.
    say("left " + Plural(old->drop_ins.size(), "drop-in") + " of " + old->unit +
        ": the resource manages " + r.unit + " now");
  }
  if (ours) {
    for (const auto& [name, fp] : old->drop_ins) {
      if (r.drop_ins.contains(name)) continue;
      const DropInSeen& d = seen.drop_ins.at(name);
      if (d.found == Found::kError || d.missing) continue;  // nothing to delete: forgotten
      if (core::DropInPreexisting(fp)) {
        say("left drop-in " + r.unit + ".d/" + name + ": there before the host wrote it");
      } else if (d.found == Found::kAsRecorded) {
        step.delete_drop_ins.push_back(name);
        say(Did(in.dry_run, "deleted", "delete", "drop-in " + r.unit + ".d/" + name));
      } else {
        say("left drop-in " + r.unit + ".d/" + name + ": changed since the host wrote it");
      }
    }
  }
  if (words.empty()) return;
  if (!step.changes()) {
    // Only left drop-ins: said, and the record forgets them.
    step.detail = step.detail.empty() ? words : step.detail + "; " + words;
    return;
  }
  step.detail = step.detail.empty() || step.outcome == Outcome::kUnchanged
                    ? words
                    : step.detail + ", " + words;
  if (step.outcome == Outcome::kUnchanged) {
    step.outcome = old != nullptr ? Outcome::kUpdated : Outcome::kCreated;
  }
  entry.applied_at = in.now;
}

// An operator's mask wins (SPEC "Reconcile" 8): the unit systemd reports
// masked, or a link to /dev/null where its unit file would go.
std::optional<std::string> Masked(const PlanInputs& in, size_t i) {
  const Resource& r = in.declaration->resources[i];
  const auto& status = in.seen->units[i];
  bool loaded_masked =
      status.has_value() && status->has_value() && (*status)->load_state == "masked";
  if (!loaded_masked && !in.seen->unit_files[i].masked) return std::nullopt;
  return "masked: " + r.unit + " is masked on this machine; the host leaves it alone (" +
         "no unit file, no start, restart or reload) until `systemctl unmask " + r.unit + "`";
}

}  // namespace

std::optional<std::string_view> UnitDirInRoot(const HostDirs& dirs) {
  // Views: this runs for every declared file of a full pass.
  auto trim = [](std::string_view p) {
    while (p.size() > 1 && p.back() == '/') p.remove_suffix(1);
    return p;
  };
  std::string_view root = trim(dirs.root);
  std::string_view units = trim(dirs.units);
  if (root == "/") root = {};
  if (units.empty() || !units.starts_with(root) ||
      (units.size() > root.size() && units[root.size()] != '/')) {
    return std::nullopt;  // --unit-dir is not under --root: no declared file lands there
  }
  return units.substr(root.size());  // "/etc/systemd/system"
}

std::optional<std::string> UnitDefinitionAt(const HostDirs& dirs, std::string_view path) {
  auto in_root = UnitDirInRoot(dirs);
  if (!in_root) return std::nullopt;
  std::string_view inside = *in_root;
  if (path.size() <= inside.size() + 1 || !path.starts_with(inside) || path[inside.size()] != '/') {
    return std::nullopt;
  }
  std::string_view rel = path.substr(inside.size() + 1);
  size_t slash = rel.find('/');
  if (slash == std::string_view::npos) return std::string(rel);
  std::string_view first = rel.substr(0, slash);
  if (first.size() > 2 && first.ends_with(".d"))
    return std::string(first.substr(0, first.size() - 2));
  return std::string();
}

namespace {

Step PlanResource(const PlanInputs& in, size_t i) {
  const Resource& r = in.declaration->resources[i];
  const RecordEntry* old = OldEntry(*in.record, r);
  const std::string& want = (*in.wants)[i];
  if (r.HasUnit()) {
    if (auto masked = Masked(in, i)) {
      Step step;
      step.old = old;
      return Failed(std::move(step), *masked);
    }
  }
  Step step =
      r.HasFiles() ? PlanFiles(in, r, old, want, in.seen->files[i]) : PlanService(in, r, old, want);
  if (r.HasUnit() && !step.failed()) PlanUnitFile(in, r, in.seen->unit_files[i], step);
  if (r.HasUnit() && !step.failed()) PlanDropIns(in, r, in.seen->unit_files[i], step);
  if (!r.IsTree() && r.HasFiles() && in.dirs != nullptr) {
    if (auto unit = UnitDefinitionAt(*in.dirs, r.path)) {
      step.unit_definition = true;
      step.defines = std::move(*unit);
    }
  }
  if (!step.failed() && step.entry.has_value()) {
    step.entry->position = i;
    step.entry->state = r.HasUnit() ? std::string(core::UnitStateName(r.state)) : "";
  }
  return step;
}

// Why a unit declared running is not as declared, in the outcome's words.
std::string WasDown(const core::UnitStatus& s, const RecordEntry* old) {
  if (core::UnitUp(s) && old != nullptr && old->n_restarts.has_value()) {
    return "was restarted by systemd since the host last looked (NRestarts " +
           std::to_string(*old->n_restarts) + " -> " + std::to_string(s.n_restarts) + ")";
  }
  if (s.sub_state == "auto-restart") return "was " + s.active_state + " (auto-restart)";
  return "was " + s.active_state;
}

// Whether a unit runs a process: a start of it is a job systemd finishes at
// once without touching the daemon.
bool Runs(const core::UnitStatus& s) { return s.Running() && s.sub_state != "auto-restart"; }

// The declared files that define `r`'s unit (its unit file or a drop-in,
// declared as files) and change in this apply.
std::vector<size_t> DefinedBy(const PlanInputs& in, const Resource& r,
                              const std::vector<Step>& steps) {
  std::vector<size_t> out;
  for (size_t j = 0; j < steps.size(); ++j) {
    if (steps[j].unit_definition && steps[j].changes() && steps[j].defines == r.unit) {
      out.push_back(j);
    }
  }
  return out;
}

// A unit definition of `r`'s unit that this apply deletes (a drop-in no
// longer declared).
std::optional<std::string> RemovedDefinition(const PlanInputs& in, const Resource& r,
                                             const std::vector<Removal>& removals) {
  if (in.dirs == nullptr) return std::nullopt;
  for (const Removal& rm : removals) {
    if (!rm.deletes_unit_definition) continue;
    for (const std::string& path : rm.delete_paths) {
      if (UnitDefinitionAt(*in.dirs, path) == r.unit) return path;
    }
  }
  return std::nullopt;
}

// Whether a change this apply makes to a unit definition (declared as a
// file) concerns `r`: one of its own, or one its restart_on or reload_on
// names. Then systemd must load it before `r` is acted on.
bool DefinitionChangesFor(const PlanInputs& in, const Resource& r, const std::vector<Step>& steps,
                          const std::vector<Removal>& removals) {
  if (!DefinedBy(in, r, steps).empty() || RemovedDefinition(in, r, removals)) return true;
  for (const auto* list : {&r.restart_on, &r.reload_on}) {
    for (const std::string& ref : *list) {
      const Step& dep = steps[in.declaration->index.find(ref)->second];
      if (dep.unit_definition && dep.changes()) return true;
    }
  }
  return false;
}

// What this apply's own changes ask of a unit declared running: a restart
// for its own files, a restart_on resource or a definition not loaded; a
// reload for a reload_on resource.
void AskForChanges(const PlanInputs& in, size_t i, const std::vector<Step>& steps,
                   const std::vector<Removal>& removals, UnitPlan& u) {
  const Resource& r = in.declaration->resources[i];
  const Step& step = steps[i];
  std::vector<size_t> restart_deps, reload_deps;
  for (const auto* list : {&r.restart_on, &r.reload_on}) {
    for (const std::string& ref : *list) {
      size_t j = in.declaration->index.find(ref)->second;
      if (steps[j].changes()) (list == &r.restart_on ? restart_deps : reload_deps).push_back(j);
    }
  }
  std::vector<size_t> defined_by = DefinedBy(in, r, steps);
  auto ask = [&](UnitAction action, std::string reason, std::string why,
                 std::vector<size_t> causes) {
    u.action = action;
    u.reason = std::move(reason);
    u.why = std::move(why);
    u.causes = std::move(causes);
  };
  if (step.changes()) {
    // The outcome's words are the step's; these are for an owed restart.
    ask(UnitAction::kRestart, "declared",
        step.write_unit_file && step.write_files ? "its files and unit file changed"
        : step.write_unit_file                   ? "unit file " + r.unit + " changed"
        : step.write_files                       ? "its files changed"
                                                 : "its drop-ins changed",
        {i});
  } else if (!defined_by.empty()) {
    ask(UnitAction::kRestart, "declared",
        "unit definition " + in.declaration->resources[defined_by[0]].path + " changed",
        defined_by);
  } else if (auto removed = RemovedDefinition(in, r, removals)) {
    ask(UnitAction::kRestart, "declared", "unit definition " + *removed + " removed", {});
  } else if (!restart_deps.empty()) {
    ask(UnitAction::kRestart, "restart_on",
        "restart_on " + in.declaration->resources[restart_deps[0]].id + " changed", restart_deps);
  } else if (!reload_deps.empty()) {
    ask(UnitAction::kReload, "reload_on",
        "reload_on " + in.declaration->resources[reload_deps[0]].id + " changed", reload_deps);
  } else if (u.daemon_reload) {
    // Its unit file changed before this apply and systemd has not loaded it.
    ask(UnitAction::kRestart, "declared", "unit file " + r.unit + " changed but was not loaded",
        {});
  }
}

// What a unit declared running is asked for: what the changes ask; and when
// it is not up, a start if it runs no process (the start loads every
// change too), else — a start would do nothing to a running daemon — what
// the changes ask, or a start that only has it looked at twice.
void PlanAction(const PlanInputs& in, size_t i, const std::vector<Step>& steps,
                const std::vector<Removal>& removals, bool up, UnitPlan& u) {
  AskForChanges(in, i, steps, removals, u);
  if (up || (Runs(u.status) && u.action.has_value())) return;
  const Step& step = steps[i];
  bool asked = step.changes() || step.want_changed;
  u.action = UnitAction::kStart;
  u.reason = asked ? "declared" : "was_dead";
  u.why = asked ? "declared running" : WasDown(u.status, step.old) + ", started";
}

// An action owed from before and one this apply asks for, as one: a restart
// is all of them; a unit that runs no process is started (which loads
// everything); a running one is reloaded if either asks for it (a start
// would not touch it), else started.
UnitAction Merge(UnitAction owed, std::optional<UnitAction> now, bool runs) {
  if (!now.has_value() || owed == *now) return owed;
  if (owed == UnitAction::kRestart || *now == UnitAction::kRestart) return UnitAction::kRestart;
  if (!runs) return UnitAction::kStart;
  return owed == UnitAction::kReload || *now == UnitAction::kReload ? UnitAction::kReload
                                                                    : UnitAction::kStart;
}

// `enabled`, judged by systemd's own UnitFileState as read before this
// apply wrote anything. A unit file written now is not loaded yet: its
// state is unknown, so `enabled: true` enables it (idempotent) and
// `enabled: false` needs nothing (a new unit file has no links).
void PlanEnablement(const Resource& r, const RecordEntry* old, const Step& step, UnitPlan& u) {
  if (!r.enabled.has_value()) return;
  // Unknown: the unit file is new (a rewritten one keeps its links, and
  // its state as read before the write is the truth).
  bool unknown = u.status.unit_file_state.empty() || u.status.load_state == "not-found";
  if (unknown) {
    if (*r.enabled) u.set_enabled = true;
    return;
  }
  if (*r.enabled && step.write_unit_file && !core::UnitFileEnabled(u.status)) {
    u.set_enabled = true;  // a new [Install] section may make it possible
    u.enabled_drifted = old != nullptr && old->enabled == r.enabled;
    return;
  }
  if (core::UnitFileEnabled(u.status) == *r.enabled) return;
  if (*r.enabled && core::UnitFileCannotBeEnabled(u.status)) {
    u.enable_impossible = r.unit + " is " + u.status.unit_file_state +
                          " (no [Install] section): it cannot be enabled";
    return;
  }
  u.set_enabled = *r.enabled;
  u.enabled_drifted = old != nullptr && old->enabled == r.enabled;
}

UnitPlan PlanUnit(const PlanInputs& in, size_t i, const std::vector<Step>& steps,
                  const std::vector<Removal>& removals) {
  const Resource& r = in.declaration->resources[i];
  UnitPlan u;
  u.index = i;
  if (steps[i].failed()) return u;  // the step's failure is the outcome
  auto carried = in.owed->owed.find(r.id);
  const core::Owed* owed = carried != in.owed->owed.end() ? &carried->second : nullptr;
  u.daemon_reload = (owed != nullptr && owed->daemon_reload) || steps[i].write_unit_file ||
                    steps[i].changes_drop_ins() || DefinitionChangesFor(in, r, steps, removals);
  const auto& status = in.seen->units[i];
  if (!in.services || !status.has_value()) {
    u.failed = "no service manager: cannot manage " + r.unit;
  } else if (!*status) {
    u.failed = status->error().message;
  } else {
    u.status = **status;
    // systemd's own NeedDaemonReload is a cross-check on what the intent says.
    u.daemon_reload |= u.status.need_daemon_reload && r.unit_text.has_value();
    const RecordEntry* old = steps[i].old;
    u.up = r.state == core::UnitState::kRunning &&
           core::UpAsRecorded(u.status, {old != nullptr ? old->n_restarts : std::nullopt,
                                         old != nullptr && old->finished});
    PlanEnablement(r, old, steps[i], u);
  }
  if (r.state == core::UnitState::kStopped) {
    // Declared stopped: whatever start or restart was owed is moot.
    u.stop = u.failed.empty() && u.status.Running();
    return u;
  }
  // A unit that cannot be read is owed what this apply's writes ask of it.
  PlanAction(in, i, steps, removals, /*up=*/!u.failed.empty() || u.up, u);
  if (owed != nullptr && owed->action.has_value()) {
    // A reload owed to a unit that no longer reloads on anything (its
    // dependency moved to restart_on, say, after systemd refused the
    // reload): the change it was for is now paid with a restart.
    UnitAction carried = *owed->action == UnitAction::kReload && r.reload_on.empty()
                             ? UnitAction::kRestart
                             : *owed->action;
    UnitAction merged = Merge(carried, u.action, u.failed.empty() && Runs(u.status));
    // The words are this apply's when its own writes ask for the action.
    if (!u.action.has_value() || *u.action != merged || u.causes.empty()) {
      u.reason = owed->reason;
      u.why = owed->why;
      u.causes.clear();
    }
    u.action = merged;
    u.owed_since = owed->since;
  }
  return u;
}

const std::map<std::string, std::string> kNoDropIns;

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
    for (const Resource& r : decl.resources) {
      if (r.HasFiles()) paths_.insert(r.path);
      if (r.HasUnit()) units_.insert(r.unit);
      if (r.unit_text.has_value() && unit_dir) {
        paths_.insert(std::string(*unit_dir) + "/" + r.unit);
      }
      if (unit_dir) {
        for (const auto& [name, text] : r.drop_ins) {
          paths_.insert(std::string(*unit_dir) + "/" + r.unit + ".d/" + name);
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
  bool Unit(const std::string& unit) const { return units_.contains(unit); }

 private:
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
  std::vector<std::tuple<std::string, size_t, size_t>> held;  // path, entries, removal
  for (size_t k = 0; k < removals.size(); ++k) {
    gone.insert(removals[k].delete_paths.begin(), removals[k].delete_paths.end());
    gone.insert(removals[k].delete_empty_dirs.begin(), removals[k].delete_empty_dirs.end());
    for (auto& [path, entries] : removals[k].held_dirs) held.emplace_back(path, entries, k);
    removals[k].held_dirs.clear();
  }
  std::sort(held.begin(), held.end(), std::greater<>());
  for (auto& [dir, entries, k] : held) {
    std::string prefix = dir + "/";
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
}

// Only what the host itself created, and still as it wrote it, is deleted;
// a unit is stopped only when its unit file is the host's and untouched.
std::vector<Removal> PlanRemovals(const PlanInputs& in) {
  std::vector<Removal> removals;
  Claims claims(*in.declaration, in.dirs);
  auto unit_dir = in.dirs != nullptr ? UnitDirInRoot(*in.dirs) : std::nullopt;
  for (const auto& [id, e] : in.record->resources) {
    if (in.declaration->Find(id) != nullptr) continue;
    Removal rm;
    rm.id = id;
    rm.entry = e;
    bool owns_unit = !e.unit.empty() && !claims.Unit(e.unit) && !e.unit_file_preexisting;
    if (!e.unit.empty() && e.unit_file_preexisting && !claims.Unit(e.unit)) {
      rm.left.push_back("unit " + e.unit + " and its unit file, there before the host wrote it");
    }
    if (owns_unit && !e.unit_file_fingerprint.empty() && unit_dir &&
        claims.Path(std::string(*unit_dir) + "/" + e.unit)) {
      rm.left.push_back("unit " + e.unit + " and its unit file, declared by another resource now");
      owns_unit = false;
    }
    if (owns_unit && !e.unit_file_fingerprint.empty()) {
      std::string why =
          NotAsWritten(Find(in.seen->dropped_unit_files, e.unit), e.unit_file_fingerprint);
      if (!why.empty()) {
        rm.left.push_back("unit " + e.unit + " and its unit file: " + why);
        owns_unit = false;
      }
    }
    if (owns_unit) {
      auto status = in.seen->dropped_units.find(e.unit);
      rm.stop =
          status != in.seen->dropped_units.end() && status->second && status->second->Running();
      rm.delete_unit_file = !e.unit_file_fingerprint.empty();
    }
    // Its drop-ins, unless another resource declares the unit now.
    if (claims.Unit(e.unit) && !e.drop_ins.empty()) {
      rm.left.push_back(Plural(e.drop_ins.size(), "drop-in") + " of " + e.unit +
                        ": the unit is another resource's now");
    }
    for (const auto& [name, fp] : claims.Unit(e.unit) ? kNoDropIns : e.drop_ins) {
      std::string key = e.unit + ".d/" + name;
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
    for (const core::WrittenPath& w : e.written) {
      if (w.preexisting || claims.Path(w.path)) {
        rm.left.push_back(w.path + (w.preexisting ? ", there before the host managed it"
                                                  : ", declared by another resource now"));
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
    removals.push_back(std::move(rm));
  }
  ReleaseDirectoriesEmptiedTogether(removals);
  return removals;
}

// What is owed once this apply is under way: every action it plans, and
// what earlier applies owed for resources it cannot act on now.
core::Intent IntentOf(const PlanInputs& in, const Plan& plan) {
  core::Intent intent;
  intent.applying = plan.ChangesMachine();
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step& step = plan.steps[i];
    const Resource& r = in.declaration->resources[i];
    if (step.write_files && in.seen->files[i].missing) {
      intent.creating.push_back(r.path);
      if (r.IsTree()) intent.creating_trees.push_back(r.path);
    }
    if (step.write_unit_file && in.seen->unit_files[i].missing) {
      intent.creating_unit_files.push_back(r.unit);
    }
  }
  // What an earlier apply cut short created and no record holds yet stays
  // named: this apply finds it on disk (not missing), and a second kill
  // must not lose it.
  std::set<std::string_view> recorded;
  for (const auto& [id, e] : in.record->resources) {
    for (const core::WrittenPath& w : e.written) recorded.insert(w.path);
  }
  for (const std::string& path : in.owed->creating) {
    if (!recorded.contains(path) &&
        std::find(intent.creating.begin(), intent.creating.end(), path) == intent.creating.end()) {
      intent.creating.push_back(path);
      const auto& trees = in.owed->creating_trees;
      if (std::find(trees.begin(), trees.end(), path) != trees.end()) {
        intent.creating_trees.push_back(path);
      }
    }
  }
  for (const std::string& unit : in.owed->creating_unit_files) {
    bool held = false;
    for (const auto& [id, e] : in.record->resources) {
      held |= e.unit == unit && !e.unit_file_fingerprint.empty();
    }
    if (!held && std::find(intent.creating_unit_files.begin(), intent.creating_unit_files.end(),
                           unit) == intent.creating_unit_files.end()) {
      intent.creating_unit_files.push_back(unit);
    }
  }
  for (const UnitPlan& u : plan.units) {
    const std::string& id = in.declaration->resources[u.index].id;
    auto carried = in.owed->owed.find(id);
    if (plan.steps[u.index].failed()) {
      if (carried != in.owed->owed.end()) intent.owed.emplace(id, carried->second);
      continue;
    }
    if (!u.action.has_value() && !u.daemon_reload) continue;
    core::Owed owed{u.action, u.daemon_reload, u.reason, u.why, in.declaration->generation};
    if (carried != in.owed->owed.end()) owed.since = carried->second.since;
    intent.owed.emplace(id, std::move(owed));
  }
  return intent;
}

}  // namespace

bool Plan::ChangesMachine() const {
  for (const Step& s : steps) {
    if (s.changes()) return true;
  }
  for (const UnitPlan& u : units) {
    if (u.action.has_value() || u.stop || u.daemon_reload || u.set_enabled.has_value()) return true;
  }
  for (const Removal& rm : removals) {
    if (rm.stop || rm.delete_unit_file || !rm.delete_paths.empty() || !rm.delete_drop_ins.empty() ||
        !rm.delete_empty_dirs.empty()) {
      return true;
    }
  }
  return false;
}

namespace {

std::string WithoutTrailingSlash(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

// One is the other, or inside it.
bool Overlap(std::string_view a, std::string_view b) {
  auto inside = [](std::string_view in, std::string_view dir) {
    return in.size() > dir.size() && in.starts_with(dir) && (dir == "/" || in[dir.size()] == '/');
  };
  return a == b || inside(a, b) || inside(b, a);
}

core::Status CheckPlaces(const core::Declaration& decl, const HostDirs& dirs) {
  std::string root = WithoutTrailingSlash(dirs.root);
  if (root == "/") root.clear();
  std::string units = WithoutTrailingSlash(dirs.units);
  // What unit_text and drop_ins write, by real path: what writes it.
  std::map<std::string, std::string> unit_files;
  if (!units.empty()) {
    for (const Resource& r : decl.resources) {
      if (r.unit_text.has_value()) {
        unit_files.emplace(units + "/" + r.unit,
                           "the unit file that resource " + r.id + "'s unit_text writes");
      }
      for (const auto& [name, text] : r.drop_ins) {
        unit_files.emplace(units + "/" + r.unit + ".d/" + name,
                           "a drop-in of resource " + r.id + "'s drop_ins");
      }
    }
  }
  const std::pair<std::string, std::string_view> own[] = {
      {WithoutTrailingSlash(dirs.state), "the host's state directory (--state-dir "},
      {WithoutTrailingSlash(dirs.artifacts), "the artifacts directory (--artifacts "},
  };
  for (const Resource& r : decl.resources) {
    if (!r.HasFiles()) continue;
    std::string real = root + r.path;
    auto refuse = [&](std::string_view what) {
      return core::Fail("resource " + r.id + ", field path: \"" + r.path + "\" (" + real +
                        ") overlaps " + std::string(what));
    };
    for (const auto& [dir, name] : own) {
      if (!dir.empty() && Overlap(real, dir)) return refuse(std::string(name) + dir + ")");
    }
    if (units.empty()) continue;
    if (r.IsTree() && Overlap(real, units)) {
      return refuse("the unit directory (--unit-dir " + units + ")");
    }
    if (auto it = unit_files.find(real); it != unit_files.end()) {
      return refuse(it->second);
    }
  }
  return core::Ok();
}

}  // namespace

std::vector<std::string> Orphans(const core::Intent& intent, const core::Declaration& decl,
                                 const core::Record& record) {
  std::vector<std::string> out;
  if (intent.creating.empty()) return out;
  std::set<std::string_view> recorded;
  for (const auto& [id, e] : record.resources) {
    for (const core::WrittenPath& w : e.written) recorded.insert(w.path);
  }
  for (const std::string& path : intent.creating) {
    if (recorded.contains(path)) continue;
    bool declared = false;
    for (const Resource& r : decl.resources) {
      declared |= r.HasFiles() && Overlap(r.path, path);
    }
    if (!declared) out.push_back(path);
  }
  return out;
}

std::vector<std::string> OrphanUnitFiles(const core::Intent& intent, const core::Declaration& decl,
                                         const core::Record& record) {
  std::vector<std::string> out;
  for (const std::string& unit : intent.creating_unit_files) {
    bool kept = false;
    for (const Resource& r : decl.resources) kept |= r.unit_text.has_value() && r.unit == unit;
    for (const auto& [id, e] : record.resources) {
      kept |= e.unit == unit && !e.unit_file_fingerprint.empty();
    }
    if (!kept) out.push_back(unit);
  }
  return out;
}

core::Status CheckDeclaration(const core::Declaration& decl, const core::Record& record,
                              bool had_record, std::string_view machine, const HostDirs& dirs) {
  if (!machine.empty() && decl.machine != machine) {
    return core::Fail("declaration, field machine: \"" + decl.machine +
                      "\" is not this machine (\"" + std::string(machine) + "\")");
  }
  if (had_record && decl.generation < record.generation) {
    return core::Fail("declaration, field generation: " + std::to_string(decl.generation) +
                      " is lower than the applied generation " + std::to_string(record.generation));
  }
  return CheckPlaces(decl, dirs);
}

std::vector<std::string> Wants(const core::Declaration& decl, const core::Record& record,
                               bool had_record, std::string_view credential_key) {
  bool same = had_record && record.settled_declaration_digest == decl.digest &&
              record.want_version == core::Record::kWantVersion;
  std::vector<std::string> wants;
  wants.reserve(decl.resources.size());
  for (const Resource& r : decl.resources) {
    const RecordEntry* old = OldEntry(record, r);
    wants.push_back(same && old != nullptr && !old->digest.empty()
                        ? old->digest
                        : core::WantDigest(r, credential_key));
  }
  return wants;
}

const RecordEntry* OldEntry(const core::Record& record, const Resource& r) {
  auto it = record.resources.find(r.id);
  return it != record.resources.end() && it->second.kind == core::KindName(r.kind) ? &it->second
                                                                                   : nullptr;
}

bool RecordedAt(const Resource& r, const RecordEntry* old, const std::string& want) {
  return old != nullptr && old->digest == want && old->written.size() == 1 &&
         old->written[0].path == r.path && (!r.IsTree() || !old->written[0].content_digest.empty());
}

Plan MakePlan(const PlanInputs& in) {
  Plan plan;
  const auto& resources = in.declaration->resources;
  plan.steps.reserve(resources.size());
  for (size_t i = 0; i < resources.size(); ++i) plan.steps.push_back(PlanResource(in, i));
  plan.removals = PlanRemovals(in);
  for (size_t i = 0; i < resources.size(); ++i) {
    if (resources[i].HasUnit()) plan.units.push_back(PlanUnit(in, i, plan.steps, plan.removals));
  }
  plan.intent = IntentOf(in, plan);
  return plan;
}

}  // namespace mesh::reconcile
