#include "host/reconcile/plan.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <set>
#include <tuple>
#include <unordered_set>

#include "host/core/printable.h"
#include "host/core/unit_name.h"
#include "host/core/want.h"
#include "host/reconcile/plan_removals.h"
#include "host/reconcile/plan_unit_files.h"
#include "host/reconcile/plan_units.h"
#include "host/reconcile/words.h"

namespace mesh::reconcile {
namespace {

using core::Outcome;
using core::RecordEntry;
using core::Resource;

// A file or a credential found as recorded whose entry would be the
// record's own, field for field (what PlanFiles would build for it): the hot
// path of a full pass, where nothing is built (Step::keeps_old).
//
// Every field of an entry and of its written path is compared here or in
// RecordedAt, or is the old entry's in what PlanFiles builds (applied_at); a
// field added to either stops this from compiling until it is one of these.
[[maybe_unused]] void EveryFieldCompared(const RecordEntry& e) {
  [[maybe_unused]] const auto& [kind, digest, written, applied_at, position, unit_record] = e;
  [[maybe_unused]] const auto& [path, fingerprint, content_digest, file_count, preexisting] =
      e.written[0];
}
bool KeepsRecorded(const Resource& r, const RecordEntry* old, const std::string& want,
                   const FilesSeen& seen, size_t position) {
  if (!r.IsFile() || seen.found != Found::kAsRecorded || !RecordedAt(r, old, want)) return false;
  const core::WrittenPath& w = old->written[0];
  bool content = r.kind == core::Kind::kFile ? !w.content_digest.empty()
                                             : seen.content_digest == w.content_digest;
  return content && old->kind == core::KindName(r.kind) && old->position == position &&
         !old->unit_record.has_value() && w.fingerprint == seen.fingerprint &&
         w.file_count == seen.file_count && w.preexisting == seen.preexisting;
}

// A declared change over a file someone changed since the host wrote it:
// said, not written over in silence (SPEC: drift is reported). Files only:
// a tree's or a directory's fingerprint moves with what is put inside.
std::string ReplacedByHand(const Resource& r, const RecordEntry* old, const FilesSeen& seen) {
  if (!r.IsFile() || old == nullptr || old->written.size() != 1 || old->written[0].path != r.path) {
    return "";
  }
  if (seen.missing) return "drifted: deleted on the machine since the host wrote it; ";
  if (old->written[0].fingerprint != seen.fingerprint) {
    return "drifted: changed on the machine since the host wrote it, replaced; ";
  }
  return "";
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
  if (r.HasUnit()) entry.mutable_unit().name = r.unit().name;
  entry.applied_at = recorded ? old->applied_at : in.now;
  entry.written.push_back(
      {r.path, seen.fingerprint, seen.content_digest, seen.file_count, seen.preexisting});
  if (r.kind == core::Kind::kFile) {
    // What lets a no-op prove this file unchanged when only its times move
    // (record_proof.h). Not for credentials: a secret's digest stays keyed.
    core::WrittenPath& w = entry.written.back();
    w.content_digest =
        seen.found == Found::kAsRecorded && recorded && !old->written[0].content_digest.empty()
            ? old->written[0].content_digest
        : seen.meta.empty() ? std::string()  // its owner could not be resolved
                            : core::FileDigest(seen.meta, r.content);
  }
  std::string as_declared = tree ? FilesAsDeclared(seen.file_count) : std::string(kAsDeclared);
  if (seen.found == Found::kAsRecorded) {
    step.detail = as_declared;
  } else if (seen.found == Found::kAsDeclared && old != nullptr && !recorded &&
             r.kind == core::Kind::kFile && MayAdoptChange(in)) {
    // The declaration changed and the machine holds it already: nothing to
    // write, but a unit that runs on it may have read the old one
    // (plan_units.cc restarts one whose run began before the file last
    // changed). A file only: a credential's digest moves with a new key, a
    // bundle's with a tarball rebuilt of the same tree.
    step.outcome = Outcome::kUpdated;
    step.adopted_change = true;
    step.detail = "already as declared on the machine: adopted";
    entry.applied_at = in.now;
  } else if (seen.found == Found::kAsDeclared) {
    if (!recorded) entry.applied_at = old != nullptr ? old->applied_at : in.now;
    step.detail = old != nullptr ? as_declared
                                 : (tree ? Plural(seen.file_count, "file") + " " : std::string()) +
                                       "adopted: already as declared";
  } else {
    step.outcome = seen.missing && old == nullptr ? Outcome::kCreated : Outcome::kUpdated;
    std::string what = tree ? "the tree was changed" : seen.drift;
    // Killed between its write and its record, the apply before may have
    // made the change itself: not said to be someone's.
    std::string where = in.owed != nullptr && in.owed->applying
                            ? " since the host's record (the apply before was cut short, "
                              "perhaps as it wrote it)"
                            : " on the machine";
    std::string why =
        recorded ? "drifted: " + what + where + ", put back; " : ReplacedByHand(r, old, seen);
    std::string wrote =
        r.kind == core::Kind::kCredential ? "secret" : Plural(r.content.size(), "byte");
    std::string action;
    if (tree) {
      action = DidOrWould(in.dry_run, "unpacked", "unpack", Plural(seen.file_count, "file"));
    } else if (r.kind == core::Kind::kDirectory) {
      std::string meta = "mode " + core::FormatMode(r.mode) + ", owner " + r.owner + ":" + r.group;
      action = seen.missing ? DidOrWould(in.dry_run, "made", "make", "directory, " + meta)
                            : DidOrWould(in.dry_run, "set", "set", meta);
    } else if (r.kind == core::Kind::kSymlink) {
      action = DidOrWould(in.dry_run, "linked", "link", "to " + core::Printable(r.target, 200));
    } else {
      action =
          DidOrWould(in.dry_run, "wrote", "write", wrote + ", mode " + core::FormatMode(r.mode));
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

// An operator's mask wins (SPEC "Reconcile" 8): the unit systemd reports
// masked, or a link to /dev/null where its unit file would go.
std::optional<std::string> Masked(const PlanInputs& in, size_t i) {
  const Resource& r = in.declaration->resources[i];
  const core::Result<core::UnitStatus>* status = in.seen->UnitOf(i);
  bool loaded_masked =
      status != nullptr && status->has_value() && (*status)->load_state == "masked";
  if (!loaded_masked && !in.seen->UnitFileOf(i).masked) return std::nullopt;
  // A name that is an alias of a masked unit: that unit's mask is lifted,
  // not the name's (a link to another unit, not to /dev/null).
  std::string masked = r.unit().name;
  if (loaded_masked && !in.seen->UnitFileOf(i).masked && !(*status)->id.empty()) {
    masked = (*status)->id;
  }
  std::string which = masked == r.unit().name ? r.unit().name + " is masked"
                                              : r.unit().name + " is an alias of " +
                                                    core::Printable(masked) + ", which is masked";
  return "masked: " + which + " on this machine; the host leaves it alone (" +
         "no unit file, no start, restart or reload) until `systemctl unmask " +
         core::Printable(masked) + "`";
}

// A unit file systemd would not load (Observer::Shadows), or a name it
// reads as another unit's alias with the host's file read (AliasOfName):
// nothing is written or asked of the unit, as of a masked one.
std::optional<std::string> Shadowed(const PlanInputs& in, size_t i) {
  const std::string& why = in.seen->UnitFileOf(i).shadowed;
  if (!why.empty()) return why;
  if (AliasOfName(in, i) != AliasView::kJudged) return std::nullopt;
  return AliasWords(in.declaration->resources[i].unit().name, **in.seen->UnitOf(i), false);
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

bool ReadAsDefinitionOf(std::string_view defines, std::string_view path, std::string_view unit,
                        bool own_file) {
  if (!core::PartOfDefinition(defines, unit)) return false;
  bool templates_file = defines != unit && path.size() > defines.size() &&
                        path.ends_with(defines) && path[path.size() - defines.size() - 1] == '/';
  return !(own_file && templates_file);
}

namespace {

Step PlanResource(const PlanInputs& in, size_t i) {
  const Resource& r = in.declaration->resources[i];
  const RecordEntry* old = (*in.olds)[i];
  const std::string& want = (*in.wants)[i];
  if (r.HasUnit()) {
    for (const auto& refused : {Masked(in, i), Shadowed(in, i)}) {
      if (!refused) continue;
      Step step;
      step.old = old;
      return Failed(std::move(step), *refused);
    }
  }
  // A bundle swapped in whole over a directory holding what is not the
  // host's would delete it (as a `directory` never replaces one in
  // the way, it may be someone's).
  if (r.IsTree() && !in.seen->files[i].foreign.empty()) {
    Step step;
    step.old = old;
    const std::string& foreign = in.seen->files[i].foreign;
    return Failed(
        std::move(step),
        (foreign == core::Printable(r.path) ? r.path + " is not a directory, and not"
                                            : r.path + " holds " + foreign + ", which is not") +
            " the host's: not replaced by the bundle, it may be someone's (move it "
            "away, or declare the bundle at another path)");
  }
  Step step;
  if (r.HasFiles() && KeepsRecorded(r, old, want, in.seen->files[i], i)) {
    step.old = old;
    step.detail = kAsDeclared;
    step.keeps_old = true;
  } else {
    step = r.HasFiles() ? PlanFiles(in, r, old, want, in.seen->files[i])
                        : PlanService(in, r, old, want);
  }
  if (r.HasUnit() && !step.failed()) PlanUnitFile(in, r, in.seen->UnitFileOf(i), step);
  if (r.HasUnit() && !step.failed()) PlanDropIns(in, r, in.seen->UnitFileOf(i), step);
  if (!r.IsTree() && r.HasFiles() && in.dirs != nullptr) {
    if (auto unit = UnitDefinitionAt(*in.dirs, r.path)) {
      step.unit_definition = true;
      step.defines = std::move(*unit);
    }
  }
  if (!step.failed() && step.entry.has_value()) {
    step.entry->position = i;
    if (r.HasUnit()) {
      step.entry->mutable_unit().state = core::UnitStateName(r.unit().state);
      step.entry->mutable_unit().rollback = r.unit().rollback;
    }
  }
  // A unit's entry is amended after the plan (what systemd was seen doing):
  // only a resource without one can know here that nothing will change.
  if (!step.failed() && !step.changes() && !r.HasUnit() && old != nullptr &&
      step.entry.has_value() && *step.entry == *old) {
    step.entry = std::nullopt;
    step.keeps_old = true;
  }
  return step;
}

// What each unit is owed once this apply is under way: the action it plans,
// and for a unit it cannot act on now, what earlier applies and this one's
// other changes owe it.
std::map<std::string, core::Owed> OwedOf(const PlanInputs& in, const Plan& plan) {
  std::map<std::string, core::Owed> out;
  for (const UnitPlan& u : plan.units) {
    const std::string& id = in.declaration->resources[u.index].id;
    auto carried = in.owed->owed.find(id);
    if (plan.steps[u.index].failed()) {
      if (auto owed = OwedPastItsFailure(in, u.index, plan.steps, plan.removals)) {
        out.emplace(id, std::move(*owed));
      }
      continue;
    }
    if (!u.action.has_value() && !u.daemon_reload) continue;
    core::Owed owed{u.action, u.daemon_reload, u.reason, u.why, in.declaration->generation};
    if (carried != in.owed->owed.end()) owed.since = carried->second.since;
    out.emplace(id, std::move(owed));
  }
  return out;
}

// What is owed once this apply is under way: every action it plans, and
// what earlier applies owed for resources it cannot act on now.
core::Intent IntentOf(const PlanInputs& in, const Plan& plan) {
  core::Intent intent;
  // Told until this apply's end says otherwise (Settle), a kill included.
  intent.failed = in.owed->failed;
  intent.applying = plan.ChangesMachine();
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step& step = plan.steps[i];
    const Resource& r = in.declaration->resources[i];
    if (step.write_files && in.seen->files[i].missing) {
      intent.creating.push_back(r.path);
      if (r.IsTree()) intent.creating_trees.push_back(r.path);
    }
    if (step.write_unit_file && in.seen->UnitFileOf(i).missing) {
      intent.creating_unit_files.push_back(r.unit().name);
    }
    for (const std::string& name : step.write_drop_ins) {
      if (in.seen->UnitFileOf(i).drop_ins.at(name).missing) {
        intent.creating_drop_ins.push_back(r.unit().name + ".d/" + name);
      }
    }
  }
  // What an earlier apply cut short created and no record holds yet stays
  // named: this apply finds it on disk (not missing), and a second kill
  // must not lose it.
  std::set<std::string_view> recorded;
  std::unordered_set<std::string_view> named;  // views of the declaration's paths and owed's
  if (!in.owed->creating.empty()) {
    for (const auto& [id, e] : in.record->resources) {
      for (const core::WrittenPath& w : e.written) recorded.insert(w.path);
    }
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      if (plan.steps[i].write_files && in.seen->files[i].missing) {
        named.insert(in.declaration->resources[i].path);
      }
    }
  }
  for (const std::string& path : in.owed->creating) {
    if (!recorded.contains(path) && named.insert(path).second) {
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
      held |= e.unit().name == unit && !e.unit().file_fingerprint.empty();
    }
    if (!held && std::find(intent.creating_unit_files.begin(), intent.creating_unit_files.end(),
                           unit) == intent.creating_unit_files.end()) {
      intent.creating_unit_files.push_back(unit);
    }
  }
  for (const std::string& drop_in : in.owed->creating_drop_ins) {
    auto [unit, name] = core::SplitDropIn(drop_in);
    bool held = false;
    for (const auto& [id, e] : in.record->resources) {
      held |= e.unit().name == unit && e.unit().drop_ins.contains(std::string(name));
    }
    auto& named_drop_ins = intent.creating_drop_ins;
    if (!held &&
        std::find(named_drop_ins.begin(), named_drop_ins.end(), drop_in) == named_drop_ins.end()) {
      named_drop_ins.push_back(drop_in);
    }
  }
  intent.owed = OwedOf(in, plan);
  return intent;
}

}  // namespace

const UnitFileSeen& Seen::UnitFileOf(size_t i) const {
  static const UnitFileSeen kNone;
  auto it = unit_files.find(i);
  return it != unit_files.end() ? it->second : kNone;
}

const core::Result<core::UnitStatus>* Seen::UnitOf(size_t i) const {
  auto it = units.find(i);
  return it != units.end() ? &it->second : nullptr;
}

bool Plan::ChangesMachine() const {
  for (const Step& s : steps) {
    if (s.changes()) return true;
  }
  for (const UnitPlan& u : units) {
    if (u.action.has_value() || u.stop || u.daemon_reload || u.set_enabled.has_value()) return true;
  }
  for (const Removal& rm : removals) {
    if (rm.stop || rm.DeletesFiles()) return true;
  }
  return false;
}

std::vector<std::string> Plan::UnitsActedOn(const core::Declaration& declaration) const {
  std::vector<std::string> acted;
  for (const UnitPlan& u : units) {
    if (u.action.has_value() || u.stop) acted.push_back(declaration.resources[u.index].unit().name);
  }
  for (const Removal& rm : removals) {
    if (rm.stop && rm.not_now.empty()) acted.push_back(rm.entry.unit().name);
  }
  return acted;
}

std::vector<std::string> Wants(const core::Declaration& decl, const core::Record& record,
                               const OldEntries& olds, bool had_record,
                               std::string_view credential_key) {
  bool same = had_record && record.settled_declaration_digest == decl.digest &&
              record.want_version == core::Record::kWantVersion;
  std::vector<std::string> wants;
  wants.reserve(decl.resources.size());
  for (size_t i = 0; i < decl.resources.size(); ++i) {
    const RecordEntry* old = olds[i];
    wants.push_back(same && old != nullptr && !old->digest.empty()
                        ? old->digest
                        : core::WantDigest(decl.resources[i], credential_key));
  }
  return wants;
}

OldEntries OldEntriesOf(const core::Declaration& decl, const core::Record& record) {
  OldEntries olds;
  olds.by_index.assign(decl.resources.size(), nullptr);
  olds.recorded.assign(decl.resources.size(), nullptr);
  for (const auto& entry : record.resources) {
    const auto& [id, e] = entry;
    const Resource* r = decl.Find(id);
    if (r == nullptr) {
      olds.dropped.push_back(&entry);
      continue;
    }
    size_t i = static_cast<size_t>(r - decl.resources.data());
    olds.recorded[i] = &e;
    if (e.kind == core::KindName(r->kind)) olds.by_index[i] = &e;
    std::vector<core::WrittenPath> paths_left;
    for (const core::WrittenPath& w : e.written) {
      if (!r->HasFiles() || w.path != r->path) paths_left.push_back(w);
    }
    const std::string& unit = e.unit().name;
    const bool unit_moved = !unit.empty() && (!r->HasUnit() || r->unit().name != unit);
    if (unit_moved && !record.resources.contains(LeftBehindId(id, unit))) {
      core::RecordEntry left = e;
      left.written = std::move(paths_left);
      olds.left_behind.emplace_back(LeftBehindId(id, unit), std::move(left));
    } else if (!paths_left.empty() &&
               !record.resources.contains(LeftBehindId(id, paths_left[0].path))) {
      // Its old unit's removal pending already (recorded as ID~UNIT), the
      // paths go on their own.
      core::RecordEntry left;
      left.kind = e.kind;
      left.digest = e.digest;
      left.applied_at = e.applied_at;
      left.written = std::move(paths_left);
      if (r->IsTree() && !unit.empty() && !unit_moved) left.mutable_unit().name = unit;
      olds.left_behind.emplace_back(LeftBehindId(id, left.written[0].path), std::move(left));
    }
  }
  // After the last emplace: a deque's elements stay where they are.
  for (const auto& moved : olds.left_behind) olds.dropped.push_back(&moved);
  return olds;
}

std::string LeftBehindId(std::string_view id, std::string_view unit) {
  return std::string(id) + "~" + std::string(unit);
}

bool OldEntries::LeftBehind(
    const std::pair<const std::string, core::RecordEntry>* dropped_entry) const {
  return std::any_of(left_behind.begin(), left_behind.end(),
                     [&](const auto& moved) { return &moved == dropped_entry; });
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
  plan.removals = PlanRemovals(in, plan.steps);
  for (size_t i = 0; i < resources.size(); ++i) {
    if (resources[i].HasUnit()) plan.units.push_back(PlanUnit(in, i, plan.steps, plan.removals));
  }
  WaitForTheRestartOnTheNewTree(*in.declaration, plan.units, plan.removals);
  plan.intent = IntentOf(in, plan);
  return plan;
}

}  // namespace mesh::reconcile
