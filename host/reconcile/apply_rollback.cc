// The on_failure: rollback part of an apply (rollback.h decides; this
// runs it): the last good loaded, the holds swapped in before the plan, and
// after the commit the last good kept or the second pass that puts a dead
// unit back.
#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "host/core/time_format.h"
#include "host/core/unit_name.h"
#include "host/core/want.h"
#include "host/reconcile/apply_run.h"

namespace mesh::reconcile::apply_internal {

bool ApplyRun::LoadLastGood() {
  auto loaded = ports_.records->LoadLastGood();
  if (loaded) {
    last_good_ = std::move(*loaded);
    loaded_bundles_ = BundlesOf(last_good_);
    return true;
  }
  report_.error = "last good not readable: " + loaded.error().message +
                  "; nothing was changed (remove last-good.json in the state directory to "
                  "forget every unit's last good and hold)";
  report_.result = ApplyResult::kFailed;
  return false;
}

// Kept, and kept of what the record says runs: a last good not saved after
// its unit's confirmation (killed between the record and last-good.json, a
// full disk) is a generation behind, and would put back what the record
// moved on from. The full pass then catches it up (rollback.h, Decide).
bool ApplyRun::LastGoodKeeps(const std::vector<std::string>& ids,
                             const NoopInputs::RecordedWant& recorded) {
  auto loaded = ports_.records->LoadLastGood();
  if (!loaded) return false;
  return std::all_of(ids.begin(), ids.end(), [&](const std::string& id) {
    auto kept = loaded->units.find(id);
    if (kept == loaded->units.end()) return false;
    const auto& wants = kept->second.wants;
    return std::all_of(wants.begin(), wants.end(),
                       [&](const auto& want) { return recorded(want.first) == want.second; });
  });
}

void ApplyRun::TakeHolds(Declaration& decl, std::vector<std::string>& wants,
                         const std::string& key) {
  std::vector<RollbackUnit> units = RollbackUnits(decl);
  if (units.empty() && last_good_.empty()) return;
  // The files of --unit-dir declared as `file`s, and what each defines: a
  // unit runs on its unit file, its template's and its drop-ins as much as
  // on its restart_on, so a rollback puts them back too (SPEC: a template
  // is part of its instances' definition). Whether an instance is loaded
  // from a file of its own is not known before the units are read: its
  // template's file counts.
  std::vector<std::pair<size_t, std::string>> definitions;
  for (size_t j = 0; !units.empty() && j < decl.resources.size(); ++j) {
    const Resource& f = decl.resources[j];
    if (f.IsTree() || !f.HasFiles()) continue;
    auto defines = UnitDefinitionAt(options_.dirs, f.path);
    if (defines.has_value() && !defines->empty()) definitions.emplace_back(j, std::move(*defines));
  }
  auto defining = [&](const Resource& r) {
    std::vector<size_t> out;
    for (const auto& [j, defines] : definitions) {
      if (ReadAsDefinitionOf(defines, decl.resources[j].path, r.unit().name, false)) {
        out.push_back(j);
      }
    }
    return out;
  };
  for (RollbackUnit& ru : units) {
    for (size_t j : defining(decl.resources[ru.index])) {
      if (std::find(ru.deps.begin(), ru.deps.end(), j) == ru.deps.end()) ru.deps.push_back(j);
    }
  }
  std::vector<std::string> declared = wants;
  held_ = reconcile::TakeHolds(
      decl, wants, last_good_, [&](const Resource& r) { return core::WantDigest(r, key); },
      &last_good_changed_);
  scope_.generation = decl.generation;
  // What every unit's definition is made of, to know who else runs on a
  // rollback unit's resources.
  std::map<std::string_view, std::vector<std::string_view>> users;
  if (!units.empty()) {
    for (const Resource& r : decl.resources) {
      if (!r.HasUnit()) continue;
      users[r.id].push_back(r.id);
      for (const auto* list : {&r.unit().restart_on, &r.unit().reload_on}) {
        for (const std::string& dep : *list) users[dep].push_back(r.id);
      }
      for (size_t j : defining(r)) {
        auto& of = users[decl.resources[j].id];
        if (of.empty() || of.back() != r.id) of.push_back(r.id);  // also its restart_on
      }
    }
  }
  for (const RollbackUnit& ru : units) {
    const Resource& r = decl.resources[ru.index];
    RollbackScope::Unit u{ru.index, r.id, r.unit().name, false, ru.deps, {}, {}, {}, {}};
    u.held = std::any_of(held_.begin(), held_.end(),
                         [&](const HeldUnit& h) { return h.index == ru.index; });
    for (size_t j : defining(r)) u.definitions.insert(decl.resources[j].id);
    for (size_t d : ru.deps) {
      const Resource& dep = decl.resources[d];
      u.resources.emplace(dep.id, core::KeptCopy(dep));
      u.wants.emplace(dep.id, wants[d]);
      u.declared.emplace(dep.id, declared[d]);
      for (std::string_view other : users[dep.id]) {
        if (other != r.id) u.shared[dep.id].emplace_back(other);
      }
    }
    scope_.units.push_back(std::move(u));
  }
}

void ApplyRun::NoteWhatStartsRead(const Declaration& decl, const Seen& seen) {
  for (RollbackScope::Unit& u : scope_.units) {
    const std::vector<std::string>& restart_on = decl.resources[u.index].unit().restart_on;
    int64_t newest = 0;
    for (size_t d : u.deps) {
      const std::string& id = decl.resources[d].id;
      bool read_at_start =
          std::find(restart_on.begin(), restart_on.end(), id) != restart_on.end() ||
          u.definitions.contains(id);
      if (d == u.index || !read_at_start || d >= seen.files.size()) continue;
      const FilesSeen& f = seen.files[d];
      if (f.found == Found::kDiffers || f.found == Found::kError) {
        newest = std::numeric_limits<int64_t>::max();
        break;
      }
      if (auto stamp = core::ParseFingerprint(f.fingerprint)) {
        newest = std::max(newest, stamp->ctime_ns);
      }
    }
    u.read_changed_ns = newest;
  }
}

std::set<std::string> ApplyRun::BundlesOf(const core::LastGood& last_good) {
  std::set<std::string> out;
  for (const auto& [unit, kept] : last_good.units) {
    for (const auto& [id, r] : kept.resources) {
      if (r.IsTree()) out.insert(r.sha256);
    }
  }
  return out;
}

void ApplyRun::KeepBundles(const core::LastGood& last_good, bool say) {
  std::set<std::string> done;
  for (const auto& [unit, kept] : last_good.units) {
    for (const auto& [id, r] : kept.resources) {
      if (!r.IsTree() || !done.insert(r.sha256).second) continue;
      auto st = ports_.records->KeepArtifact(r.sha256,
                                             [&]() { return ReadArtifact(*ports_.artifacts, r); });
      if (!st && say) {
        report_.warnings.push_back(
            "no copy kept of the bundle " + r.source + " of " + unit +
            "'s last good (a rollback needs it under --artifacts): " + st.error().message);
      }
    }
  }
}

// A copy of each bundle the last good is made of is kept before the last
// good names it, so that a rollback has one even once --artifacts has moved
// on; the copies the saved last good no longer names go after it (those of
// the last good on disk stay when it could not be saved). A copy that
// cannot be made leaves the rollback to --artifacts, said.
// A unit too large to read back, or past what the file may hold with the
// others, is left out, not the whole file: every other unit's last good
// and hold still stand.
void ApplyRun::LeaveOutWhatCannotBeRead() {
  // Room for the file's own keys and each unit's wants and hold.
  constexpr uint64_t kRoom = 4u << 20;
  for (std::string& why :
       LeaveOutWhatDoesNotFit(last_good_, report_.machine, core::kMaxLastGoodBytes - kRoom)) {
    report_.warnings.push_back(std::move(why));
  }
}

void ApplyRun::SaveLastGood() {
  LeaveOutWhatCannotBeRead();
  KeepBundles(last_good_, /*say=*/true);
  auto saved = ports_.records->SaveLastGood(last_good_, report_.machine);
  if (!saved) report_.warnings.push_back("last good not saved: " + saved.error().message);
  if (auto st = ports_.records->KeepOnlyArtifacts(saved ? BundlesOf(last_good_) : loaded_bundles_);
      !st) {
    report_.warnings.push_back("copies of bundles no longer needed not removed: " +
                               st.error().message);
  }
  if (saved) last_good_changed_ = false;
}

void ApplyRun::KeepConfirmed() {
  // The loaded last good's bundles, kept while --artifacts still holds
  // them (a last good from before copies were kept, or a copy that could
  // not be made then): a stat each when they are.
  KeepBundles(last_good_, /*say=*/false);
  if (!scope_.units.empty()) {
    // A bundle is put back from --artifacts, or from the copy kept of it:
    // one must hold those bytes (the second pass would refuse the
    // declaration otherwise).
    auto missing = [this](const Resource& kept) -> std::string {
      if (!kept.IsTree() || ReadBundle(ports_, kept, /*use_kept=*/true)) return "";
      return "its bundle " + kept.source + " (sha256 " + kept.sha256 +
             ") is neither under --artifacts nor kept with the last good";
    };
    after_ = Decide(scope_, report_.outcomes, last_good_, missing);
    std::string now = core::FormatTimestamp(report_.started_at);
    if (reconcile::KeepConfirmed(scope_, after_, now, last_good_)) last_good_changed_ = true;
  }
  if (last_good_changed_) SaveLastGood();
}

void ApplyRun::AfterCommit() {
  std::vector<Rollback> todo;
  for (Rollback& r : after_.rollbacks) {
    if (r.impossible.empty()) {
      todo.push_back(std::move(r));
    } else {
      SayNoRollback(scope_, r, report_.outcomes);
    }
  }
  after_ = AfterApply();
  // Without a rollback nothing has changed since KeepConfirmed saved (or
  // said why it could not).
  if (!todo.empty()) RollBack(std::move(todo));
}

// The hold is saved before anything is put back: a kill from here on leaves
// the next apply swapping the kept content in, so it converges to the last
// good and says it is held; a kill before it leaves the next apply finding
// the same death and rolling back then.
void ApplyRun::RollBack(std::vector<Rollback> rollbacks) {
  std::string now = core::FormatTimestamp(report_.started_at);
  core::LastGood before = last_good_;
  RecordHolds(scope_, rollbacks, report_.outcomes, now, last_good_);
  LeaveOutWhatCannotBeRead();
  // A unit whose last good no longer fits (another's grew in this apply)
  // has nothing to stand on: not rolled back, the warning says why.
  std::erase_if(rollbacks, [&](Rollback& r) {
    if (last_good_.units.contains(scope_.units[r.unit].id)) return false;
    r.impossible = "its last good could not be kept (see the warnings)";
    SayNoRollback(scope_, r, report_.outcomes);
    return true;
  });
  if (rollbacks.empty()) return SaveLastGood();
  // As SaveLastGood: a bundle another unit was just confirmed on is copied
  // before the file names it (a kill before the last save would leave it
  // named and not kept).
  KeepBundles(last_good_, /*say=*/false);  // SaveLastGood below says what it could not keep
  if (auto st = ports_.records->SaveLastGood(last_good_, report_.machine); !st) {
    report_.error = "not rolled back: the hold could not be saved: " + st.error().message;
    return;
  }
  last_good_changed_ = false;
  ApplyReport again;
  again.started_at = report_.started_at;
  again.machine = report_.machine;
  // The declaration once more, as parsed: the apply holds no copy of it.
  auto text = source_->TextAgain();
  auto decl =
      text ? core::ParseDeclaration(*text) : Result<Declaration>(std::unexpected(text.error()));
  std::string why_not;
  if (!decl) {
    why_not = "the declaration could not be read again: " + decl.error().message;
  } else if (decl->digest != report_.declaration_digest) {
    why_not = "the declaration file changed during the apply";
  } else {
    text = std::string();  // parsed: not held through the second pass
    OutcomeSink none;      // the second pass's outcomes are merged into the first's
    ApplyRun second(ports_, options_, none, again, kept_proof_);
    second.rollback_pass_ = true;
    for (const Rollback& r : rollbacks) second.only_units_.push_back(scope_.units[r.unit].index);
    second.LoadRecord();
    ports_.progress->set_looks_reported(false);
    second.Apply(std::move(*decl));
    ports_.progress->set_looks_reported(true);
    if (again.result == ApplyResult::kRefused) why_not = again.error;
  }
  report_.daemon_reloaded = report_.daemon_reloaded || again.daemon_reloaded;
  if (!again.error.empty()) {
    report_.error = report_.error.empty() ? again.error : report_.error + "; " + again.error;
  }
  for (std::string& w : again.warnings) report_.warnings.push_back(std::move(w));
  MergeRollback(scope_, rollbacks, report_.outcomes, std::move(again.outcomes), why_not, before,
                last_good_);
  report_.result = ApplyResult::kFailed;
  SaveLastGood();  // a restart onto the last good that failed too is said so
}

}  // namespace mesh::reconcile::apply_internal
