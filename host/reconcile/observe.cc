#include "host/reconcile/observe.h"

#include <set>

#include "host/core/sha256.h"
#include "host/core/want.h"

namespace mesh::reconcile {
namespace {

using core::FileInfo;
using core::FileType;
using core::RecordEntry;
using core::Resource;
using core::Result;
using core::TreeEntry;

constexpr uint64_t kMaxBundleBytes = 1ull << 30;
// What the bundles of one declaration may expand to in all: the host holds
// them unpacked while it applies (and one artifact named by several
// resources once).
constexpr uint64_t kMaxHeldBundleBytes = 1ull << 30;
constexpr uint64_t kMaxUnitFileBytes = 1ull << 20;

FilesSeen Error(std::string message) {
  FilesSeen seen;
  seen.found = Found::kError;
  seen.error = std::move(message);
  return seen;
}

class Observer {
 public:
  Observer(const core::Declaration& decl, const core::Record& record,
           const std::vector<std::string>& wants, const ObservePorts& ports, StatCache& cache)
      : decl_(decl), record_(record), wants_(wants), ports_(ports), cache_(cache) {}

  Result<Observation> Run();

 private:
  core::Status StatAll();
  core::Status LoadChangedBundles();
  Result<std::shared_ptr<const std::vector<TreeEntry>>> LoadBundle(const Resource& r);
  const Result<FileInfo>& StatOf(const std::string& path);
  FilesSeen File(const Resource& r, const RecordEntry* old, const std::string& want);
  FilesSeen Tree(const Resource& r, const RecordEntry* old, const std::string& want);
  FilesSeen Directory(const Resource& r, const RecordEntry* old, const std::string& want);
  FilesSeen Symlink(const Resource& r, const RecordEntry* old, const std::string& want);
  Result<const std::vector<TreeEntry>*> Bundle(const Resource& r);
  UnitFileSeen UnitFile(const Resource& r, const RecordEntry* old, const std::string& want);
  void DropIns(const Resource& r, const RecordEntry* old, const std::string& want,
               UnitFileSeen& seen);
  void Units();
  void Dropped();
  bool WroteAsFile(const std::string& in_unit_dir) const;
  DroppedSeen DroppedAt(ports::FileSystem& fs, const std::string& path, std::string_view recorded);
  // Whether `path` was on the machine before the host first managed it:
  // kept from the record, or found there now while no record entry names it.
  bool Preexisting(const RecordEntry* old, const std::string& path, const FileInfo& info) const;
  // Owner and group names resolved once per apply: the machine's user
  // database is not read for every file.
  Result<std::pair<uint32_t, uint32_t>> Ids(const Resource& r);

  const core::Declaration& decl_;
  const core::Record& record_;
  const std::vector<std::string>& wants_;
  const ObservePorts& ports_;
  StatCache& cache_;
  Observation out_;
  std::set<std::string_view> recorded_paths_;
  std::map<std::string, bool> recorded_unit_files_;  // unit -> there before the host
  // Bundles unpacked this apply, by (source, sha256), and their bytes.
  std::map<std::pair<std::string, std::string>, std::shared_ptr<const std::vector<TreeEntry>>>
      by_source_;
  uint64_t held_bytes_ = 0;
  std::map<std::pair<std::string, std::string>, Result<std::pair<uint32_t, uint32_t>>> ids_;
};

Result<Observation> Observer::Run() {
  if (auto st = StatAll(); !st) return std::unexpected(st.error());
  if (auto st = LoadChangedBundles(); !st) return std::unexpected(st.error());
  for (const auto& [id, e] : record_.resources) {
    for (const core::WrittenPath& w : e.written) recorded_paths_.insert(w.path);
    if (!e.unit_file_fingerprint.empty()) {
      recorded_unit_files_.emplace(e.unit, e.unit_file_preexisting);
    }
  }
  size_t n = decl_.resources.size();
  out_.seen.files.resize(n);
  out_.seen.unit_files.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const Resource& r = decl_.resources[i];
    const RecordEntry* old = OldEntry(record_, r);
    if (r.kind == core::Kind::kFile || r.kind == core::Kind::kCredential) {
      out_.seen.files[i] = File(r, old, wants_[i]);
    } else if (r.IsTree()) {
      out_.seen.files[i] = Tree(r, old, wants_[i]);
    } else if (r.kind == core::Kind::kDirectory) {
      out_.seen.files[i] = Directory(r, old, wants_[i]);
    } else if (r.kind == core::Kind::kSymlink) {
      out_.seen.files[i] = Symlink(r, old, wants_[i]);
    }
    if (r.HasUnit()) out_.seen.unit_files[i] = UnitFile(r, old, wants_[i]);
    if (ports_.progress != nullptr) ports_.progress->Step();
  }
  Units();
  Dropped();
  return std::move(out_);
}

// Whether a `file` resource of the record wrote this file of --unit-dir (a
// unit file, or UNIT.d/NAME): moved since to a unit_text or drop_ins, it
// is still the host's.
bool Observer::WroteAsFile(const std::string& in_unit_dir) const {
  auto unit_dir = ports_.dirs != nullptr ? UnitDirInRoot(*ports_.dirs) : std::nullopt;
  return unit_dir && recorded_paths_.contains(std::string(*unit_dir) + "/" + in_unit_dir);
}

DroppedSeen Observer::DroppedAt(ports::FileSystem& fs, const std::string& path,
                                std::string_view recorded) {
  DroppedSeen seen;
  auto info = &fs == ports_.root ? StatOf(path) : fs.Stat(path);
  if (!info) {
    seen.error = info.error().message;
    return seen;
  }
  seen.type = info->type;
  seen.missing = info->type == FileType::kMissing;
  if (recorded.starts_with("dir:") && info->type == FileType::kDirectory) {
    seen.fingerprint = core::DirectoryFingerprint(*info);
    auto entries = fs.CountEntries(path);
    if (!entries) {
      seen.error = entries.error().message;
      return seen;
    }
    seen.entries = *entries;
  } else if (recorded.starts_with("tree:") && info->type == FileType::kDirectory) {
    auto scan = fs.ScanTree(path, /*hash_contents=*/false);
    if (!scan) {
      seen.error = scan.error().message;
      return seen;
    }
    seen.fingerprint = core::TreeFingerprint(*scan);
  } else if (info->type == FileType::kRegular || info->type == FileType::kSymlink) {
    seen.fingerprint = core::FileFingerprint(*info);
  }
  return seen;
}

// What prune would delete, looked at: the paths and unit files of recorded
// resources no longer declared (a preexisting path is never deleted, so it
// is not looked at).
void Observer::Dropped() {
  for (const auto& [id, e] : record_.resources) {
    if (decl_.Find(id) != nullptr) continue;
    for (const core::WrittenPath& w : e.written) {
      if (w.preexisting || out_.seen.dropped_paths.contains(w.path)) continue;
      out_.seen.dropped_paths.emplace(w.path, DroppedAt(*ports_.root, w.path, w.fingerprint));
    }
    if (!e.unit_file_fingerprint.empty() && ports_.units != nullptr &&
        !out_.seen.dropped_unit_files.contains(e.unit)) {
      out_.seen.dropped_unit_files.emplace(
          e.unit, DroppedAt(*ports_.units, "/" + e.unit, e.unit_file_fingerprint));
    }
    for (const auto& [name, fp] : e.drop_ins) {
      std::string key = e.unit + ".d/" + name;
      if (ports_.units == nullptr || out_.seen.dropped_unit_files.contains(key)) continue;
      out_.seen.dropped_unit_files.emplace(
          key, DroppedAt(*ports_.units, "/" + key, core::DropInFingerprint(fp)));
    }
  }
}

// Every declared path is looked at once, in one batch: one on which a
// symlink (or anything else) would lead out of the root refuses the
// declaration whole.
core::Status Observer::StatAll() {
  std::vector<std::string_view> paths;
  for (const Resource& r : decl_.resources) {
    if (r.HasFiles() && !cache_.stats.contains(r.path)) paths.push_back(r.path);
  }
  std::vector<Result<FileInfo>> infos = ports_.root->StatMany(paths);
  for (size_t i = 0; i < paths.size(); ++i) cache_.stats.emplace(paths[i], std::move(infos[i]));
  for (const Resource& r : decl_.resources) {
    if (!r.HasFiles()) continue;
    const Result<FileInfo>& info = StatOf(r.path);
    if (!info && info.error().kind == core::ErrorKind::kOutsideRoot) {
      return core::Fail("resource " + r.id + ", field path: " + info.error().message);
    }
  }
  return core::Ok();
}

// A bundle the record already holds at this digest was checked when it was
// applied; only new or changed bundles are read here, so a no-op apply does
// not re-hash every bundle. One that cannot be used refuses the declaration.
core::Status Observer::LoadChangedBundles() {
  for (size_t i = 0; i < decl_.resources.size(); ++i) {
    const Resource& r = decl_.resources[i];
    if (!r.IsTree()) continue;
    const RecordEntry* old = OldEntry(record_, r);
    if (old != nullptr && old->digest == wants_[i]) continue;
    auto bundle = LoadBundle(r);
    if (!bundle) return std::unexpected(bundle.error());
    out_.bundles.emplace(r.id, std::move(*bundle));
  }
  return core::Ok();
}

Result<std::shared_ptr<const std::vector<TreeEntry>>> Observer::LoadBundle(const Resource& r) {
  std::string where = "resource " + r.id + ", field ";
  auto key = std::make_pair(r.source, r.sha256);
  if (auto it = by_source_.find(key); it != by_source_.end()) return it->second;
  auto bytes = ports_.artifacts->ReadFile("/" + r.source, kMaxBundleBytes);
  if (!bytes) {
    return core::Fail(where + "source: cannot read " + r.source +
                      " from the artifacts directory (--artifacts): " + bytes.error().message);
  }
  std::string actual = core::Sha256Hex(*bytes);
  if (actual != r.sha256) {
    return core::Fail(where + "sha256: source " + r.source + " has sha256 " + actual +
                      ", the declaration says " + r.sha256);
  }
  auto entries = ports_.archives->Read(*bytes, kMaxHeldBundleBytes - held_bytes_);
  if (!entries) {
    std::string also = held_bytes_ == 0 ? ""
                                        : " (what the declaration's other bundles leave of the " +
                                              std::to_string(kMaxHeldBundleBytes) +
                                              " bytes all of them may expand to)";
    return core::Fail(where + "source: " + entries.error().message + also);
  }
  auto checked = core::CheckBundleEntries(std::move(*entries));
  if (!checked) {
    return core::Fail(where + "source: bundle " + r.source +
                      " refused: " + checked.error().message);
  }
  for (const TreeEntry& e : *checked) held_bytes_ += e.content.size();
  core::HashContents(*checked);
  auto held = std::make_shared<const std::vector<TreeEntry>>(std::move(*checked));
  by_source_.emplace(std::move(key), held);
  return held;
}

Result<const std::vector<TreeEntry>*> Observer::Bundle(const Resource& r) {
  auto it = out_.bundles.find(r.id);
  if (it == out_.bundles.end()) {
    auto loaded = LoadBundle(r);
    if (!loaded) return std::unexpected(loaded.error());
    it = out_.bundles.emplace(r.id, std::move(*loaded)).first;
  }
  return it->second.get();
}

const Result<FileInfo>& Observer::StatOf(const std::string& path) {
  auto it = cache_.stats.find(path);
  if (it == cache_.stats.end()) {
    cache_.Add(path, ports_.root->Stat(path));
    it = cache_.stats.find(path);
  }
  return it->second;
}

bool Observer::Preexisting(const RecordEntry* old, const std::string& path,
                           const FileInfo& info) const {
  if (old != nullptr && !old->written.empty() && old->written[0].path == path) {
    return old->written[0].preexisting;
  }
  return info.type != FileType::kMissing && !recorded_paths_.contains(path);
}

Result<std::pair<uint32_t, uint32_t>> Observer::Ids(const Resource& r) {
  auto key = std::make_pair(r.owner, r.group);
  auto it = ids_.find(key);
  if (it == ids_.end()) it = ids_.emplace(key, ports_.root->LookupIds(r.owner, r.group)).first;
  return it->second;
}

FilesSeen Observer::File(const Resource& r, const RecordEntry* old, const std::string& want) {
  const Result<FileInfo>& info = StatOf(r.path);
  if (!info) return Error(info.error().message);
  FilesSeen seen;
  seen.preexisting = Preexisting(old, r.path, *info);
  seen.missing = info->type == FileType::kMissing;
  if (RecordedAt(r, old, want) && info->type == FileType::kRegular &&
      core::FingerprintMatches(*info, old->written[0].fingerprint)) {
    seen.fingerprint = old->written[0].fingerprint;  // the hot path: nothing read
    return seen;
  }
  auto ids = Ids(r);
  if (!ids) return Error(ids.error().message);
  std::tie(seen.uid, seen.gid) = *ids;
  seen.fingerprint = core::FileFingerprint(*info);
  // The bytes are read only when size, mode and ownership already agree.
  const FileInfo& fi = *info;
  bool owner = fi.uid == seen.uid && fi.gid == seen.gid;
  bool mode = fi.mode == (r.mode & 07777);
  seen.found = Found::kDiffers;
  seen.drift = seen.missing                    ? "deleted"
               : fi.type != FileType::kRegular ? "replaced by something else"
               : !mode                         ? "mode changed"
               : !owner                        ? "owner changed"
                                               : "content changed";
  if (fi.type == FileType::kRegular && fi.size == r.content.size() && mode && owner) {
    auto content = ports_.root->ReadFile(r.path, r.content.size());
    if (!content) return Error(content.error().message);
    if (*content == r.content) seen.found = Found::kAsDeclared;
  }
  return seen;
}

// A directory is as declared when it is one, with the declared mode and
// owner; its contents are not the host's. One stat, no record needed.
FilesSeen Observer::Directory(const Resource& r, const RecordEntry* old, const std::string& want) {
  const Result<FileInfo>& info = StatOf(r.path);
  if (!info) return Error(info.error().message);
  FilesSeen seen;
  seen.preexisting = Preexisting(old, r.path, *info);
  seen.missing = info->type == FileType::kMissing;
  if (!seen.missing && info->type != FileType::kDirectory) {
    return Error(r.path +
                 " is not a directory (not replaced: it may be someone's; remove it to "
                 "let the host make the directory)");
  }
  auto ids = Ids(r);
  if (!ids) return Error(ids.error().message);
  std::tie(seen.uid, seen.gid) = *ids;
  const FileInfo& fi = *info;
  bool mode = fi.mode == (r.mode & 07777);
  bool owner = fi.uid == seen.uid && fi.gid == seen.gid;
  seen.fingerprint = core::DirectoryFingerprint(fi);
  if (!seen.missing && mode && owner) {
    seen.found = RecordedAt(r, old, want) && old->written[0].fingerprint == seen.fingerprint
                     ? Found::kAsRecorded
                     : Found::kAsDeclared;
    return seen;
  }
  seen.found = Found::kDiffers;
  seen.drift = seen.missing ? "deleted" : !mode ? "mode changed" : "owner changed";
  return seen;
}

// A symlink is as declared when it is one and points at the target; the
// target itself is never looked at.
FilesSeen Observer::Symlink(const Resource& r, const RecordEntry* old, const std::string& want) {
  const Result<FileInfo>& info = StatOf(r.path);
  if (!info) return Error(info.error().message);
  FilesSeen seen;
  seen.preexisting = Preexisting(old, r.path, *info);
  seen.missing = info->type == FileType::kMissing;
  if (info->type == FileType::kDirectory) {
    return Error(r.path + " is a directory (not replaced by a symlink: it may be someone's)");
  }
  seen.fingerprint = core::FileFingerprint(*info);
  if (info->type == FileType::kSymlink) {
    if (RecordedAt(r, old, want) && old->written[0].fingerprint == seen.fingerprint) {
      return seen;  // kAsRecorded: a symlink cannot change in place
    }
    auto target = ports_.root->ReadLink(r.path);
    if (!target) return Error(target.error().message);
    if (*target == r.target) {
      seen.found = Found::kAsDeclared;
      return seen;
    }
  }
  seen.found = Found::kDiffers;
  seen.drift = seen.missing                       ? "deleted"
               : info->type != FileType::kSymlink ? "replaced by something else"
                                                  : "target changed";
  return seen;
}

FilesSeen Observer::Tree(const Resource& r, const RecordEntry* old, const std::string& want) {
  const Result<FileInfo>& info = StatOf(r.path);
  if (!info) return Error(info.error().message);
  FilesSeen seen;
  seen.preexisting = Preexisting(old, r.path, *info);
  seen.missing = info->type == FileType::kMissing;
  bool dir = info->type == FileType::kDirectory;
  bool recorded = RecordedAt(r, old, want);
  if (dir) {
    auto scan = ports_.root->ScanTree(r.path, /*hash_contents=*/false);
    if (!scan) return Error(scan.error().message);
    seen.fingerprint = core::TreeFingerprint(*scan);
    if (recorded && old->written[0].fingerprint == seen.fingerprint) {
      seen.content_digest = old->written[0].content_digest;
      seen.file_count = old->written[0].file_count;
      return seen;
    }
  }
  // The fingerprint moved or there is no record: compare content, and
  // ownership: the host unpacks a tree as itself, so every entry belongs to
  // whoever owns the tree's root (which the host created).
  std::string on_disk;
  if (dir) {
    auto hashed = ports_.root->ScanTree(r.path, /*hash_contents=*/true);
    if (!hashed) return Error(hashed.error().message);
    on_disk = core::TreeDigest(*hashed);
    seen.fingerprint = core::TreeFingerprint(*hashed);
    for (const TreeEntry& e : *hashed) {
      if (e.info.uid != info->uid || e.info.gid != info->gid) on_disk = "owner changed inside";
    }
  }
  if (recorded && on_disk == old->written[0].content_digest) {
    seen.found = Found::kAsDeclared;
    seen.content_digest = on_disk;
    seen.file_count = old->written[0].file_count;
    return seen;
  }
  auto bundle = Bundle(r);
  if (!bundle) return Error(bundle.error().message);
  seen.content_digest = core::TreeDigest(**bundle);
  for (const TreeEntry& e : **bundle) seen.file_count += e.type == FileType::kRegular;
  seen.found = dir && on_disk == seen.content_digest ? Found::kAsDeclared : Found::kDiffers;
  return seen;
}

// The declared drop-ins, and those the record says the host wrote for this
// unit and that are no longer declared: each as recorded (nothing read),
// as declared, or differing. A recorded one's `found` says whether it is
// still as the host wrote it (prune deletes only then).
void Observer::DropIns(const Resource& r, const RecordEntry* old, const std::string& want,
                       UnitFileSeen& seen) {
  static const std::map<std::string, std::string> kNone;
  bool ours = old != nullptr && old->unit == r.unit;
  const std::map<std::string, std::string>& recorded_drop_ins = ours ? old->drop_ins : kNone;
  std::set<std::string> names;
  for (const auto& [name, text] : r.drop_ins) names.insert(name);
  for (const auto& [name, fp] : recorded_drop_ins) names.insert(name);
  for (const std::string& name : names) {
    DropInSeen& d = seen.drop_ins[name];
    const std::string path = "/" + r.unit + ".d/" + name;
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
    // one: never deleted by the host when it is no longer declared.
    d.preexisting = recorded == recorded_drop_ins.end()
                        ? !d.missing && !WroteAsFile(r.unit + ".d/" + name)
                        : core::DropInPreexisting(recorded->second);
    auto declared = r.drop_ins.find(name);
    if (declared == r.drop_ins.end()) {
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
  if (!r.drop_ins.empty() || (old != nullptr && !old->drop_ins.empty())) {
    DropIns(r, old, want, seen);
  }
  const std::string path = "/" + r.unit;
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
  if (!r.unit_text.has_value()) return seen;  // the machine's own unit file
  seen.fingerprint = core::FileFingerprint(*info);
  seen.missing = info->type == FileType::kMissing;
  bool ours = old != nullptr && old->unit == r.unit && !old->unit_file_fingerprint.empty();
  // Another resource's record may hold this unit file (a renamed resource,
  // a service that became a process): then it is the host's as recorded.
  auto held = recorded_unit_files_.find(r.unit);
  seen.preexisting = ours                                 ? old->unit_file_preexisting
                     : held != recorded_unit_files_.end() ? held->second
                                                          : !seen.missing && !WroteAsFile(r.unit);
  bool recorded = ours && old->digest == want;
  if (recorded && info->type == FileType::kRegular &&
      old->unit_file_fingerprint == seen.fingerprint) {
    return seen;
  }
  seen.found = Found::kDiffers;
  if (info->type == FileType::kRegular && info->size == r.unit_text->size()) {
    auto content = ports_.units->ReadFile(path, kMaxUnitFileBytes);
    if (!content) {
      seen.found = Found::kError;
      seen.error = content.error().message;
    } else if (*content == *r.unit_text && info->mode == 0644) {
      seen.found = Found::kAsDeclared;
    }
  }
  return seen;
}

// Every declared unit, and every unit of a recorded resource no longer
// declared, in one pipelined round.
void Observer::Units() {
  size_t n = decl_.resources.size();
  out_.seen.units.resize(n);
  if (ports_.services == nullptr) return;
  std::vector<std::string> names;
  std::set<std::string_view> declared;
  for (const Resource& r : decl_.resources) {
    if (!r.HasUnit()) continue;
    names.push_back(r.unit);
    declared.insert(r.unit);
  }
  size_t first_dropped = names.size();
  for (const auto& [id, e] : record_.resources) {
    if (!e.unit.empty() && decl_.Find(id) == nullptr && !declared.contains(e.unit)) {
      names.push_back(e.unit);
    }
  }
  if (names.empty()) return;
  std::vector<Result<core::UnitStatus>> statuses = ports_.services->ReadUnits(names);
  size_t k = 0;
  for (size_t i = 0; i < n; ++i) {
    if (decl_.resources[i].HasUnit()) out_.seen.units[i] = std::move(statuses[k++]);
  }
  for (k = first_dropped; k < names.size(); ++k) {
    out_.seen.dropped_units.emplace(names[k], std::move(statuses[k]));
  }
}

}  // namespace

void StatCache::Add(std::string path, core::Result<core::FileInfo> info) {
  const std::string& kept = paths.emplace_back(std::move(path));
  stats.emplace(kept, std::move(info));
}

core::Result<Observation> Observe(const core::Declaration& declaration, const core::Record& record,
                                  const std::vector<std::string>& wants, const ObservePorts& ports,
                                  StatCache& cache) {
  return Observer(declaration, record, wants, ports, cache).Run();
}

}  // namespace mesh::reconcile
