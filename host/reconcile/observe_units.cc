#include <set>

#include "host/core/printable.h"
#include "host/core/want.h"
#include "host/reconcile/loaded_files.h"
#include "host/reconcile/observer.h"

namespace mesh::reconcile::observe_internal {

// Whether a `file` resource of the record wrote this file of --unit-dir (a
// unit file, or UNIT.d/NAME): moved since to a unit_text or drop_ins, it
// is still the host's.
bool Observer::WroteAsFile(const std::string& in_unit_dir) const {
  auto unit_dir = dirs_ != nullptr ? UnitDirInRoot(*dirs_) : std::nullopt;
  return unit_dir && Recorded(std::string(*unit_dir) + "/" + in_unit_dir);
}

// The declared drop-ins, and those the record says the host wrote for this
// unit and that are no longer declared: each as recorded (nothing read),
// as declared, or differing. A recorded one's `found` says whether it is
// still as the host wrote it (prune deletes only then).
void Observer::DropIns(const Resource& r, const RecordEntry* old, const std::string& want,
                       UnitFileSeen& seen) {
  static const std::map<std::string, std::string> kNone;
  bool ours = old != nullptr && old->unit().name == r.unit().name;
  const std::map<std::string, std::string>& recorded_drop_ins = ours ? old->unit().drop_ins : kNone;
  std::set<std::string> names;
  for (const auto& [name, text] : r.unit().drop_ins) names.insert(name);
  for (const auto& [name, fp] : recorded_drop_ins) names.insert(name);
  for (const std::string& name : names) {
    DropInSeen& d = seen.drop_ins[name];
    const std::string path = "/" + r.unit().name + ".d/" + name;
    auto info = ports_.units->Stat(path);
    if (!info) {
      d.found = Found::kError;
      d.error = info.error().message;
      continue;
    }
    d.missing = info->type == FileType::kMissing;
    d.fingerprint = core::FileFingerprint(*info);
    auto recorded = recorded_drop_ins.find(name);
    bool as_written = recorded != recorded_drop_ins.end() && info->type == FileType::kRegular &&
                      core::DropInFingerprint(recorded->second) == d.fingerprint;
    // An operator's own drop-in of that name, there before the host wrote
    // one: never deleted by the host when it is no longer declared. One
    // another resource's record holds (a renamed resource) is as recorded.
    auto held = recorded_drop_ins_.find(r.unit().name + ".d/" + name);
    d.preexisting = recorded != recorded_drop_ins.end() ? core::DropInPreexisting(recorded->second)
                    : held != recorded_drop_ins_.end()
                        ? held->second
                        : !d.missing && !WroteAsFile(r.unit().name + ".d/" + name);
    auto declared = r.unit().drop_ins.find(name);
    if (declared == r.unit().drop_ins.end()) {
      d.found = as_written ? Found::kAsRecorded : Found::kDiffers;
      continue;
    }
    if (as_written && ours && old->digest == want) continue;  // kAsRecorded: nothing read
    d.found = Found::kDiffers;
    if (info->type == FileType::kRegular && info->size == declared->second.size() &&
        info->mode == 0644) {
      auto content = ports_.units->ReadFile(path, kMaxUnitFileBytes);
      if (!content) {
        d.found = Found::kError;
        d.error = content.error().message;
      } else if (*content == declared->second) {
        d.found = Found::kAsDeclared;
      }
    }
  }
}

UnitFileSeen Observer::UnitFile(const Resource& r, const RecordEntry* old,
                                const std::string& want) {
  UnitFileSeen seen;
  if (!r.unit().drop_ins.empty() || (old != nullptr && !old->unit().drop_ins.empty())) {
    DropIns(r, old, want, seen);
  }
  const std::string path = "/" + r.unit().name;
  auto info = ports_.units->Stat(path);
  if (!info) {
    seen.found = Found::kError;
    seen.error = info.error().message;
    return seen;
  }
  if (info->type == FileType::kSymlink) {
    auto target = ports_.units->ReadLink(path);
    seen.masked = target.has_value() && *target == "/dev/null";
  }
  if (!r.unit().text.has_value()) return seen;  // the machine's own unit file
  seen.fingerprint = core::FileFingerprint(*info);
  seen.missing = info->type == FileType::kMissing;
  bool ours =
      old != nullptr && old->unit().name == r.unit().name && !old->unit().file_fingerprint.empty();
  // Another resource's record may hold this unit file (a renamed resource,
  // a service that became a process): then it is the host's as recorded.
  auto held = recorded_unit_files_.find(r.unit().name);
  seen.preexisting = ours ? old->unit().file_preexisting
                     : held != recorded_unit_files_.end()
                         ? held->second
                         : !seen.missing && !WroteAsFile(r.unit().name);
  bool recorded = ours && old->digest == want;
  if (recorded && info->type == FileType::kRegular &&
      old->unit().file_fingerprint == seen.fingerprint) {
    return seen;
  }
  seen.found = Found::kDiffers;
  if (info->type == FileType::kRegular && info->size == r.unit().text->size()) {
    auto content = ports_.units->ReadFile(path, kMaxUnitFileBytes);
    if (!content) {
      seen.found = Found::kError;
      seen.error = content.error().message;
    } else if (*content == *r.unit().text && info->mode == 0644) {
      seen.found = Found::kAsDeclared;
    }
  }
  return seen;
}

// Every declared unit, and every unit of a recorded resource no longer
// declared, in one pipelined round.
void Observer::Units() {
  size_t n = decl_.resources.size();
  if (ports_.services == nullptr) return;
  std::vector<std::string> names;
  std::set<std::string_view> declared;
  for (const Resource& r : decl_.resources) {
    if (!r.HasUnit()) continue;
    names.push_back(r.unit().name);
    declared.insert(r.unit().name);
  }
  size_t first_dropped = names.size();
  for (const auto* dropped : olds_.dropped) {
    const std::string& unit = dropped->second.unit().name;
    if (!unit.empty() && !declared.contains(unit)) names.push_back(unit);
  }
  if (names.empty()) return;
  std::vector<Result<core::UnitStatus>> statuses = ports_.services->ReadUnits(names);
  if (ports_.progress != nullptr) ports_.progress->Looked(names);
  size_t k = 0;
  for (size_t i = 0; i < n; ++i) {
    if (decl_.resources[i].HasUnit()) out_.seen.units.emplace(i, std::move(statuses[k++]));
  }
  for (k = first_dropped; k < names.size(); ++k) {
    out_.seen.dropped_units.emplace(names[k], std::move(statuses[k]));
  }
}

// The file under --root at `path`, where the host sees it (by no link):
// null when it cannot, or nothing is there.
std::optional<FileInfo> Observer::SeenUnderRoot(const std::string& path) {
  std::string root = core::SimpleDir(dirs_->root);
  std::optional<Result<FileInfo>> there;
  if (root == "/") {
    there = ports_.root->Stat(path);
  } else if (path.starts_with(root + "/")) {
    there = ports_.root->Stat(path.substr(root.size()));
  }
  if (!there.has_value() || !there->has_value() || (*there)->type == FileType::kMissing) {
    return std::nullopt;
  }
  return **there;
}

// What the host writes that systemd would not load (LoadedFiles), before
// anything is written. A view systemd says is stale is trusted only for a
// file the host still sees there. Of the units of dropped resources too:
// one the host wrote that runs from such a file is not the host's to stop.
void Observer::Shadows() {
  if (dirs_ == nullptr) return;
  LoadedFiles loaded(dirs_, ports_.services);
  auto still_there = [this](const std::string& path) { return SeenUnderRoot(path).has_value(); };
  for (const auto& [i, status] : out_.seen.units) {
    const Resource& r = decl_.resources[i];
    if (!status) continue;
    std::optional<NotLoaded> why =
        loaded.NotTheHosts(r.unit().name, *status, r.unit().text.has_value(), r.unit().drop_ins,
                           /*after_reload=*/false, still_there);
    if (why.has_value()) out_.seen.unit_files[i].shadowed = std::move(why->words);
  }
  // A dropped unit's (a service's, a process's): left running when systemd
  // reads its name as an alias of another unit, stale view or not (a stop
  // of the name stops that unit), or when the host sees that other file
  // itself, and it is not the host's own by another name. Else (not known,
  // not seen) it is stopped as before: the host's own daemon left running
  // with its file deleted is what removals never do.
  for (const auto* dropped : olds_.dropped) {
    const core::RecordEntry& e = dropped->second;
    auto status = out_.seen.dropped_units.find(e.unit().name);
    if ((e.kind != core::KindName(core::Kind::kService) &&
         e.kind != core::KindName(core::Kind::kProcess)) ||
        e.unit().file_fingerprint.empty() || status == out_.seen.dropped_units.end() ||
        !status->second) {
      continue;
    }
    const core::UnitStatus& now = *status->second;
    if (!now.id.empty() && now.id != e.unit().name) {
      out_.seen.dropped_shadowed_by[e.unit().name] =
          "systemd reads it as an alias of " + core::Printable(now.id) + ", not as the host's file";
      continue;
    }
    std::optional<NotLoaded> why = loaded.NotTheHosts(e.unit().name, now, true, {},
                                                      /*after_reload=*/false, still_there);
    if (!why.has_value() || !why->known) continue;
    const std::string& other = now.fragment_path;
    std::optional<FileInfo> there = SeenUnderRoot(other);
    auto mine = ports_.units->Stat("/" + e.unit().name);
    if (!there.has_value() ||
        (mine && mine->type != FileType::kMissing && mine->inode == there->inode)) {
      continue;
    }
    out_.seen.dropped_shadowed_by[e.unit().name] =
        "systemd loads it from " + core::Printable(other) + ", not from the host's file";
  }
}

}  // namespace mesh::reconcile::observe_internal
