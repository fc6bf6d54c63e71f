#include "host/reconcile/observe.h"

#include <map>
#include <set>

#include "host/core/printable.h"
#include "host/core/sha256.h"
#include "host/core/want.h"
#include "host/reconcile/as_left.h"
#include "host/reconcile/observer.h"

namespace mesh::reconcile {
namespace observe_internal {
namespace {

// The drift of a file or directory someone gave an ACL: the declared mode
// is all the access the host gives (docs/declaration.md).
constexpr const char* kGrantedByAnAcl = "access granted beyond its mode (an ACL)";

FilesSeen Error(std::string message) {
  FilesSeen seen;
  seen.found = Found::kError;
  seen.error = std::move(message);
  return seen;
}

}  // namespace

Result<Observation> Observer::Run() {
  if (auto st = StatAll(); !st) return std::unexpected(st.error());
  if (auto st = LoadChangedBundles(); !st) return std::unexpected(st.error());
  for (const auto& [id, e] : record_.resources) {
    if (!e.unit().file_fingerprint.empty()) {
      recorded_unit_files_.emplace(e.unit().name, e.unit().file_preexisting);
    }
    for (const auto& [name, fp] : e.unit().drop_ins) {
      recorded_drop_ins_.emplace(e.unit().name + ".d/" + name, core::DropInPreexisting(fp));
    }
  }
  size_t n = decl_.resources.size();
  out_.seen.files.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const Resource& r = decl_.resources[i];
    const RecordEntry* old = olds_[i];
    if (r.kind == core::Kind::kFile || r.kind == core::Kind::kCredential) {
      out_.seen.files[i] = File(r, old, wants_[i]);
    } else if (r.IsTree()) {
      out_.seen.files[i] = Tree(r, old, wants_[i]);
    } else if (r.kind == core::Kind::kDirectory) {
      out_.seen.files[i] = Directory(r, old, wants_[i]);
    } else if (r.kind == core::Kind::kSymlink) {
      out_.seen.files[i] = Symlink(r, old, wants_[i]);
    }
    if (r.HasUnit()) out_.seen.unit_files.emplace(i, UnitFile(r, old, wants_[i]));
    if (ports_.progress != nullptr) ports_.progress->Step();
  }
  Units();
  Shadows();
  Dropped();
  // What every path's owner was checked under (Record::owners).
  for (const auto& [names, ids] : ids_) {
    if (ids) out_.owners.emplace(names, *ids);
  }
  return std::move(out_);
}

DroppedSeen Observer::DroppedAt(ports::FileSystem& fs, const std::string& path,
                                std::string_view recorded, std::string_view content_digest) {
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
    // Touched since the host wrote it, and still what it wrote: still the
    // host's to delete.
    if (seen.fingerprint != recorded && WorthReading(*info, recorded) &&
        AsLeft(fs, path, *info, content_digest)) {
      seen.fingerprint = std::string(recorded);
    }
  }
  return seen;
}

// What prune would delete, looked at: the paths and unit files of recorded
// resources no longer declared (a preexisting path is never deleted, so it
// is not looked at).
void Observer::Dropped() {
  for (const auto* dropped : olds_.dropped) {
    const RecordEntry& e = dropped->second;
    for (const core::WrittenPath& w : e.written) {
      if (w.preexisting || out_.seen.dropped_paths.contains(w.path)) continue;
      std::string_view digest = e.kind == "file" ? w.content_digest : std::string_view();
      out_.seen.dropped_paths.emplace(w.path,
                                      DroppedAt(*ports_.root, w.path, w.fingerprint, digest));
    }
    if (!e.unit().file_fingerprint.empty() && ports_.units != nullptr &&
        !out_.seen.dropped_unit_files.contains(e.unit().name)) {
      out_.seen.dropped_unit_files.emplace(
          e.unit().name, DroppedAt(*ports_.units, "/" + e.unit().name, e.unit().file_fingerprint));
    }
    for (const auto& [name, fp] : e.unit().drop_ins) {
      std::string key = e.unit().name + ".d/" + name;
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
  size_t n = decl_.resources.size();
  declared_stats_.assign(n, nullptr);
  std::vector<std::string_view> paths;
  std::vector<size_t> looked_for;  // the resource of each path
  for (size_t i = 0; i < n; ++i) {
    const Resource& r = decl_.resources[i];
    if (!r.HasFiles()) continue;
    if (auto it = cache_.stats.find(r.path); it != cache_.stats.end()) {
      declared_stats_[i] = &it->second;
    } else {
      paths.push_back(r.path);
      looked_for.push_back(i);
    }
  }
  fresh_stats_ = ports_.root->StatMany(paths);
  for (size_t k = 0; k < paths.size(); ++k) declared_stats_[looked_for[k]] = &fresh_stats_[k];
  core::Problems outside;
  for (size_t i = 0; i < n; ++i) {
    if (declared_stats_[i] != nullptr) {
      RefuseIfOutsideRoot(decl_.resources[i], *declared_stats_[i], outside);
    }
  }
  return outside.ToStatus();
}

const Result<FileInfo>& Observer::StatOf(const Resource& r) {
  return *declared_stats_[static_cast<size_t>(&r - decl_.resources.data())];
}

const Result<FileInfo>& Observer::StatOf(const std::string& path) {
  auto it = cache_.stats.find(path);
  if (it == cache_.stats.end()) {
    cache_.Add(path, ports_.root->Stat(path));
    it = cache_.stats.find(path);
  }
  return it->second;
}

bool Observer::TreeRootAsMade(const FileInfo& root, const std::vector<TreeEntry>& scanned,
                              const std::string& path) {
  return core::TreeRootAsMade(root, scanned, path, dirs_ != nullptr ? dirs_->writer : std::nullopt,
                              [this](const std::string& dir) { return StatOf(dir); });
}

bool Observer::Recorded(std::string_view path) const {
  if (!recorded_paths_.has_value()) {
    recorded_paths_.emplace();
    for (const auto& [id, e] : record_.resources) {
      for (const core::WrittenPath& w : e.written) recorded_paths_->insert(w.path);
    }
  }
  return recorded_paths_->contains(path);
}

bool Observer::Preexisting(const RecordEntry* old, const std::string& path,
                           const FileInfo& info) const {
  if (old != nullptr && !old->written.empty() && old->written[0].path == path) {
    return old->written[0].preexisting;
  }
  return info.type != FileType::kMissing && !Recorded(path);
}

const Result<std::pair<uint32_t, uint32_t>>& Observer::Ids(const Resource& r) {
  // Most paths share one owner and group: the last pair asked is answered
  // without a look into the map.
  if (last_ids_ != nullptr && last_ids_->first.first == r.owner &&
      last_ids_->first.second == r.group) {
    return last_ids_->second;
  }
  auto key = std::make_pair(r.owner, r.group);
  auto it = ids_.find(key);
  if (it == ids_.end()) it = ids_.emplace(key, ports_.root->LookupIds(r.owner, r.group)).first;
  last_ids_ = &*it;
  return it->second;
}

FilesSeen Observer::File(const Resource& r, const RecordEntry* old, const std::string& want) {
  const Result<FileInfo>& info = StatOf(r);
  if (!info) return Error(info.error().message);
  // The write would refuse it (a directory is never replaced by a file):
  // a plan says so too, rather than "would write".
  if (info->type == FileType::kDirectory) {
    return Error("write " + core::Printable(r.path) + ": a directory is in the way");
  }
  FilesSeen seen;
  seen.preexisting = Preexisting(old, r.path, *info);
  seen.missing = info->type == FileType::kMissing;
  // The hot path: nothing read. Owned as the names resolve now: a user
  // renumbered since moved nothing on disk, yet the file is not as declared.
  const Result<std::pair<uint32_t, uint32_t>>& owner_ids = Ids(r);
  if (RecordedAt(r, old, want) && info->type == FileType::kRegular &&
      core::FingerprintMatches(*info, old->written[0].fingerprint) && owner_ids &&
      info->uid == owner_ids->first && info->gid == owner_ids->second) {
    seen.fingerprint = old->written[0].fingerprint;
    // A record of an older host has no digest of the file yet: one is made
    // for it as declared (a file whose owner now resolves to another uid
    // will not match it, and the full pass puts it right when it moves).
    if (r.kind == core::Kind::kFile && old->written[0].content_digest.empty()) {
      seen.meta = core::FileMeta(r.mode, owner_ids->first, owner_ids->second);
    }
    return seen;
  }
  if (!owner_ids) return Error(core::Printable(r.path) + ": " + owner_ids.error().message);
  std::tie(seen.uid, seen.gid) = *owner_ids;
  if (r.kind == core::Kind::kFile) seen.meta = core::FileMeta(r.mode, seen.uid, seen.gid);
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
    // The file looked at, not one put in its way since: its fingerprint is
    // what the record will hold for these bytes.
    auto content = ports_.root->ReadFileAsSeen(r.path, fi);
    if (!content && content.error().kind == core::ErrorKind::kChanged) {
      seen.drift = "changed while the host looked at it";  // written again
      return seen;
    }
    if (!content && content.error().kind == core::ErrorKind::kBeyondMode) {
      seen.drift = kGrantedByAnAcl;  // written again, with none
      seen.acl = true;
      return seen;
    }
    if (!content) return Error(content.error().message);
    if (*content == r.content) seen.found = Found::kAsDeclared;
  }
  return seen;
}

// A directory is as declared when it is one, with the declared mode and
// owner; its contents are not the host's. One stat, no record needed.
FilesSeen Observer::Directory(const Resource& r, const RecordEntry* old, const std::string& want) {
  const Result<FileInfo>& info = StatOf(r);
  if (!info) return Error(info.error().message);
  FilesSeen seen;
  seen.preexisting = Preexisting(old, r.path, *info);
  seen.missing = info->type == FileType::kMissing;
  if (!seen.missing && info->type != FileType::kDirectory) {
    return Error(r.path +
                 " is not a directory (not replaced: it may be someone's; remove it to "
                 "let the host make the directory)");
  }
  const auto& ids = Ids(r);
  if (!ids) return Error(core::Printable(r.path) + ": " + ids.error().message);
  std::tie(seen.uid, seen.gid) = *ids;
  const FileInfo& fi = *info;
  bool mode = fi.mode == (r.mode & 07777);
  bool owner = fi.uid == seen.uid && fi.gid == seen.gid;
  seen.fingerprint = core::DirectoryFingerprint(fi);
  if (!seen.missing && mode && owner && !fi.access_acl) {
    seen.found = RecordedAt(r, old, want) && old->written[0].fingerprint == seen.fingerprint
                     ? Found::kAsRecorded
                     : Found::kAsDeclared;
    return seen;
  }
  seen.found = Found::kDiffers;
  seen.acl = fi.access_acl;
  seen.drift = seen.missing ? "deleted"
               : !mode      ? "mode changed"
               : !owner     ? "owner changed"
                            : kGrantedByAnAcl;
  return seen;
}

// A symlink is as declared when it is one and points at the target; the
// target itself is never looked at.
FilesSeen Observer::Symlink(const Resource& r, const RecordEntry* old, const std::string& want) {
  const Result<FileInfo>& info = StatOf(r);
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

bool Observer::OwnedPath::tree() const {
  return entry->kind == core::KindName(core::Kind::kArchive) ||
         entry->kind == core::KindName(core::Kind::kProcess);
}

const Observer::OwnedPath* Observer::OwnedAs(std::string_view path) const {
  if (!owned_paths_.has_value()) {
    owned_paths_.emplace();
    for (const auto& [id, e] : record_.resources) {
      if (e.kind == core::KindName(core::Kind::kDirectory)) continue;
      for (const core::WrittenPath& w : e.written) {
        if (!w.preexisting) owned_paths_->emplace(w.path, OwnedPath{&e, &w});
      }
    }
  }
  auto it = owned_paths_->find(path);
  return it != owned_paths_->end() ? &it->second : nullptr;
}

bool Observer::Owned(std::string_view path) const { return OwnedAs(path) != nullptr; }

bool Observer::OwnedAsLeft(const std::string& path, const core::FileInfo& info) const {
  const OwnedPath* o = OwnedAs(path);
  if (o == nullptr) return false;
  if (o->tree()) return info.type == FileType::kDirectory;
  const core::WrittenPath& w = *o->written;
  if (o->entry->kind == core::KindName(core::Kind::kSymlink)) {
    return info.type == FileType::kSymlink && core::FingerprintMatches(info, w.fingerprint);
  }
  if (info.type != FileType::kRegular) return false;
  if (core::FingerprintMatches(info, w.fingerprint)) return true;
  return !w.content_digest.empty() && WorthReading(info, w.fingerprint) &&
         AsLeft(*ports_.root, path, info, w.content_digest);
}

namespace {

// An entry found under a bundle's path that the bundle holds as it is
// there: the same bytes and mode.
bool AsInBundle(const TreeEntry& e, const std::map<std::string_view, const TreeEntry*>& bundle) {
  auto it = bundle.find(e.relpath);
  if (it == bundle.end() || it->second->type != e.type) return false;
  const TreeEntry& b = *it->second;
  return (b.mode & 07777) == (e.info.mode & 07777) &&
         (e.type != FileType::kRegular || core::Sha256Hex(b.content) == e.content_sha256);
}

}  // namespace

// An entry under `dir` that is not the host's content, as a path: not a
// directory, and neither the record nor a bundle's root above it within
// `dir` says it is the host's; or a path the host wrote that is no longer
// what it left there (a file edited, or replaced by a directory, a FIFO or
// a link: what is in it is someone's). A declared `directory`'s contents
// are not the host's, nor a path that was there before the host managed it
// (which removal leaves too). Named first: one that `bundle` does not hold
// as it is (what the swap would lose), the operator's to move away.
std::optional<std::string> Observer::NotTheHosts(const std::string& dir,
                                                 const std::vector<TreeEntry>& entries,
                                                 const std::vector<TreeEntry>& bundle) const {
  std::map<std::string_view, const TreeEntry*> by_path;
  for (const TreeEntry& b : bundle) by_path.emplace(b.relpath, &b);
  std::optional<std::string> first;
  for (const TreeEntry& e : entries) {
    const std::string path = dir + "/" + e.relpath;
    std::string foreign;
    if (OwnedAs(path) != nullptr) {
      if (OwnedAsLeft(path, e.info)) continue;
      foreign = core::Printable(path) + " (changed since the host wrote it)";
    } else {
      if (e.type == FileType::kDirectory) continue;
      bool hosts = false;
      for (size_t slash = e.relpath.rfind('/'); !hosts && slash != std::string::npos && slash > 0;
           slash = e.relpath.rfind('/', slash - 1)) {
        const OwnedPath* above = OwnedAs(dir + "/" + e.relpath.substr(0, slash));
        hosts = above != nullptr && above->tree();
      }
      if (hosts) continue;
      foreign = core::Printable(path);
    }
    if (!AsInBundle(e, by_path)) return foreign;
    if (!first.has_value()) first = std::move(foreign);
  }
  return first;
}

FilesSeen Observer::Tree(const Resource& r, const RecordEntry* old, const std::string& want) {
  const Result<FileInfo>& info = StatOf(r);
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
    if (recorded && old->written[0].fingerprint == seen.fingerprint &&
        TreeRootAsMade(*info, *scan, r.path)) {
      seen.content_digest = old->written[0].content_digest;
      seen.file_count = old->written[0].file_count;
      return seen;
    }
  }
  // The fingerprint moved or there is no record: compare content, and
  // ownership: the host unpacks a tree as itself, so every entry belongs to
  // whoever owns the tree's root (which the host created).
  std::string on_disk;
  Result<std::vector<TreeEntry>> hashed = std::vector<TreeEntry>{};
  if (dir) {
    hashed = ports_.root->ScanTree(r.path, /*hash_contents=*/true);
    if (!hashed) return Error(hashed.error().message);
    on_disk = core::TreeDigest(*hashed);
    seen.fingerprint = core::TreeFingerprint(*hashed);
    if (!TreeRootAsMade(*info, *hashed, r.path)) {
      on_disk = "its root's mode or owner changed";
    }
    for (const TreeEntry& e : *hashed) {
      if (e.info.access_acl) on_disk = "an ACL inside";  // the bundle's modes are all the access
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
  // A bundle is swapped in whole: over a directory that was there before
  // the host took the path, whatever it holds that is not the host's.
  // Not this resource's tree before (another kind at the path, a declared
  // `directory` among them, is not the host's content).
  // This resource's own tree there before; a file it was under another
  // kind is judged as any file at the path.
  bool taken = old != nullptr && !old->written.empty() && old->written[0].path == r.path &&
               (old->kind == core::KindName(core::Kind::kArchive) ||
                old->kind == core::KindName(core::Kind::kProcess));
  if (dir && !taken && seen.found == Found::kDiffers) {
    seen.foreign = NotTheHosts(r.path, *hashed, **bundle).value_or("");
  }
  // A file, a link or a FIFO at the path that the host did not write: as a
  // `directory` never replaces one, nor does a bundle.
  if (!dir && !seen.missing && !taken && !OwnedAsLeft(r.path, *info)) {
    seen.foreign = core::Printable(r.path);
  }
  return seen;
}

}  // namespace observe_internal

void StatCache::Add(std::string path, core::Result<core::FileInfo> info) {
  const std::string& kept = paths.emplace_back(std::move(path));
  stats.emplace(kept, std::move(info));
}

core::Result<Observation> Observe(const core::Declaration& declaration, const core::Record& record,
                                  const OldEntries& olds, const std::vector<std::string>& wants,
                                  const ReconcilerPorts& ports, const HostDirs* dirs,
                                  StatCache& cache, const std::set<std::string>* kept_bundles) {
  return observe_internal::Observer(declaration, record, olds, wants, ports, dirs, cache,
                                    kept_bundles)
      .Run();
}

void RefuseIfOutsideRoot(const core::Resource& r, const core::Result<core::FileInfo>& info,
                         core::Problems& problems) {
  if (!info && info.error().kind == core::ErrorKind::kOutsideRoot) {
    problems.Add("resource " + r.id + ", field path: " + info.error().message);
  }
}

void RefusePathsOutsideRoot(const core::Declaration& decl, ports::FileSystem& root,
                            core::Problems& problems) {
  std::vector<std::string_view> paths;
  std::vector<const core::Resource*> of;
  for (const core::Resource& r : decl.resources) {
    if (!r.HasFiles()) continue;
    paths.push_back(r.path);
    of.push_back(&r);
  }
  std::vector<core::Result<core::FileInfo>> infos = root.StatMany(paths);
  for (size_t k = 0; k < infos.size() && k < of.size(); ++k) {
    RefuseIfOutsideRoot(*of[k], infos[k], problems);
  }
}

}  // namespace mesh::reconcile
