#include "host/reconcile/plan_unit_files.h"

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <string_view>

#include "host/core/want.h"
#include "host/reconcile/plan_run_read.h"
#include "host/reconcile/words.h"

namespace mesh::reconcile {

using core::Outcome;
using core::RecordEntry;
using core::Resource;

Step Failed(Step step, std::string detail) {
  step.outcome = Outcome::kFailed;
  step.detail = std::move(detail);
  step.write_files = step.write_unit_file = false;
  step.write_drop_ins.clear();
  step.delete_drop_ins.clear();
  step.entry = std::nullopt;
  return step;
}

// Whether something found already as a changed declaration says (the
// record held another want) counts as that change made, for what runs on it
// to be restarted: not with a record of another want version, nor after an
// apply cut short, whose intent keeps what it left undone pending.
bool MayAdoptChange(const PlanInputs& in) {
  return in.record != nullptr && in.record->want_version == core::Record::kWantVersion &&
         (in.owed == nullptr || !in.owed->applying);
}

namespace {

// Whether a declared resource's path is `in_unit_dir` under --unit-dir
// (which can be declared only when --unit-dir lies under --root).
bool DeclaresPath(const PlanInputs& in, const std::string& in_unit_dir) {
  auto unit_dir = in.dirs != nullptr ? UnitDirInRoot(*in.dirs) : std::nullopt;
  if (!unit_dir) return false;
  const std::string path = std::string(*unit_dir) + "/" + in_unit_dir;
  return std::any_of(in.declaration->resources.begin(), in.declaration->resources.end(),
                     [&](const Resource& d) { return d.HasFiles() && d.path == path; });
}

// Whether the record holds drop-in `name` with what is there now.
bool WrittenAs(const std::map<std::string, std::string>& recorded, const std::string& name,
               const std::string& fingerprint) {
  auto it = recorded.find(name);
  return it != recorded.end() && !ContentMoved(core::DropInFingerprint(it->second), fingerprint);
}

// A part of a unit's definition found already as the changed declaration
// says: said, and the entry applied now.
void Adopted(Step& step, const std::string& what, const std::string& fingerprint,
             const std::string& now) {
  auto stamp = core::ParseFingerprint(fingerprint);
  step.adopted_definitions.push_back(
      {what, stamp.has_value() ? stamp->ctime_ns : std::numeric_limits<int64_t>::max()});
  std::string words = what + " already as declared on the machine: adopted";
  step.detail = step.detail.empty() || step.outcome == Outcome::kUnchanged
                    ? words
                    : step.detail + ", " + words;
  if (step.outcome == Outcome::kUnchanged) step.outcome = Outcome::kUpdated;
  step.entry->applied_at = now;
}

}  // namespace

// The unit file of a service or process, when the declaration gives its text.
void PlanUnitFile(const PlanInputs& in, const Resource& r, const UnitFileSeen& seen, Step& step) {
  RecordEntry& entry = *step.entry;
  entry.mutable_unit().name = r.unit().name;
  entry.mutable_unit().enabled = r.unit().enabled;  // services and processes alike
  if (!r.unit().text.has_value()) return;           // the machine's own unit file
  if (seen.found == Found::kError) {
    step = Failed(std::move(step), seen.error);
    return;
  }
  entry.mutable_unit().file_preexisting = seen.preexisting;
  const RecordEntry* old = step.old;
  if (seen.found != Found::kDiffers) {
    entry.mutable_unit().file_fingerprint = seen.fingerprint;
    // The host's unit file, changed on the machine since it was written
    // and now as a changed declaration says: the unit's run may predate it
    // (plan_units.cc restarts one that does).
    if (seen.found == Found::kAsDeclared && old != nullptr && old->digest != entry.digest &&
        old->unit().name == r.unit().name && !old->unit().file_fingerprint.empty() &&
        ContentMoved(old->unit().file_fingerprint, seen.fingerprint) && MayAdoptChange(in)) {
      Adopted(step, "unit file " + r.unit().name, seen.fingerprint, in.now);
    }
    return;
  }
  bool recorded = old != nullptr && old->digest == entry.digest &&
                  old->unit().name == r.unit().name && !old->unit().file_fingerprint.empty();
  std::string wrote = DidOrWould(in.dry_run, "wrote", "write", "unit file " + r.unit().name);
  step.detail = step.detail.empty() || step.outcome == Outcome::kUnchanged
                    ? wrote
                    : step.detail + ", " + wrote;
  if (recorded) {
    step.detail =
        "drifted: unit file " + r.unit().name + " changed on the machine, put back; " + step.detail;
  }
  if (step.outcome == Outcome::kUnchanged) {
    step.outcome = old != nullptr || !seen.missing ? Outcome::kUpdated : Outcome::kCreated;
  }
  step.write_unit_file = true;
  step.unit_file_put_back = recorded;
  entry.mutable_unit().file_fingerprint.clear();  // the write phase's
  entry.applied_at = in.now;
}

// The unit's drop-ins: each declared one written unless it is as declared;
// each recorded one no longer declared deleted while it is still as the
// host wrote it (else left, and forgotten). Either is a change of the
// unit's definition (a daemon-reload, then a restart).
void PlanDropIns(const PlanInputs& in, const Resource& r, const UnitFileSeen& seen, Step& step) {
  RecordEntry& entry = *step.entry;
  entry.mutable_unit().drop_ins.clear();
  const RecordEntry* old = step.old;
  bool ours = old != nullptr && old->unit().name == r.unit().name;
  std::string words;
  auto say = [&](const std::string& w) { words = words.empty() ? w : words + ", " + w; };
  for (const auto& [name, text] : r.unit().drop_ins) {
    const DropInSeen& d = seen.drop_ins.at(name);
    if (d.found == Found::kError) {
      step = Failed(std::move(step), "drop-in " + r.unit().name + ".d/" + name + ": " + d.error);
      return;
    }
    std::string mark = d.preexisting ? "pre:" : "";
    if (d.found != Found::kDiffers) {
      entry.mutable_unit().drop_ins[name] = mark + d.fingerprint;
      if (d.found == Found::kAsDeclared && ours && old->digest != entry.digest &&
          !WrittenAs(old->unit().drop_ins, name, d.fingerprint) && MayAdoptChange(in)) {
        Adopted(step, "drop-in " + r.unit().name + ".d/" + name, d.fingerprint, in.now);
      }
      continue;
    }
    entry.mutable_unit().drop_ins[name] = mark;  // the write phase's fingerprint follows the mark
    step.write_drop_ins.push_back(name);
    bool drifted = ours && old->digest == entry.digest && old->unit().drop_ins.contains(name);
    say((drifted ? "drifted: drop-in " + name + " changed on the machine, put back; " : "") +
        DidOrWould(in.dry_run, "wrote", "write", "drop-in " + r.unit().name + ".d/" + name));
  }
  if (ours) {
    for (const auto& [name, fp] : old->unit().drop_ins) {
      if (r.unit().drop_ins.contains(name)) continue;
      const DropInSeen& d = seen.drop_ins.at(name);
      if (d.found == Found::kError || d.missing) continue;  // nothing to delete: forgotten
      if (core::DropInPreexisting(fp)) {
        say("left drop-in " + r.unit().name + ".d/" + name + ": there before the host wrote it");
      } else if (d.found == Found::kAsRecorded) {
        step.delete_drop_ins.push_back(name);
        say(DidOrWould(in.dry_run, "deleted", "delete", "drop-in " + r.unit().name + ".d/" + name));
      } else {
        say("left drop-in " + r.unit().name + ".d/" + name + ": changed since the host wrote it");
      }
    }
  }
  for (const auto& [name, d] : seen.drop_ins) {
    if (!d.cut_short || r.unit().drop_ins.contains(name)) continue;
    step.delete_drop_ins.push_back(name);
    say(DidOrWould(in.dry_run, "deleted", "delete", "drop-in " + r.unit().name + ".d/" + name) +
        " (written by an apply cut short, not declared)");
  }
  if (!step.delete_drop_ins.empty() && r.unit().drop_ins.empty()) {
    step.delete_drop_in_dir = !DeclaresPath(in, r.unit().name + ".d");
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

}  // namespace mesh::reconcile
