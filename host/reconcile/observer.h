// The observe phase's worker, shared by its translation units (files and
// trees, bundles, units and drop-ins): private to //host/reconcile:observe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "host/reconcile/observe.h"

namespace mesh::reconcile::observe_internal {

using core::FileInfo;
using core::FileType;
using core::RecordEntry;
using core::Resource;
using core::Result;
using core::TreeEntry;

// What the bundles of one declaration may expand to in all: the host holds
// them unpacked while it applies (and one artifact named by several
// resources once).
constexpr uint64_t kMaxHeldBundleBytes = 1ull << 30;
constexpr uint64_t kMaxUnitFileBytes = 1ull << 20;

class Observer {
 public:
  Observer(const core::Declaration& decl, const core::Record& record, const OldEntries& olds,
           const std::vector<std::string>& wants, const ReconcilerPorts& ports,
           const HostDirs* dirs, StatCache& cache, const std::set<std::string>* kept_bundles)
      : decl_(decl),
        record_(record),
        olds_(olds),
        wants_(wants),
        ports_(ports),
        dirs_(dirs),
        cache_(cache),
        kept_bundles_(kept_bundles) {}

  Result<Observation> Run();

 private:
  core::Status StatAll();
  core::Status LoadChangedBundles();
  Result<std::shared_ptr<const std::vector<TreeEntry>>> LoadBundle(const Resource& r);
  // What StatAll saw at a declared resource's path.
  const Result<FileInfo>& StatOf(const Resource& r);
  // Any other path under the root: looked at once per apply.
  const Result<FileInfo>& StatOf(const std::string& path);
  FilesSeen File(const Resource& r, const RecordEntry* old, const std::string& want);
  FilesSeen Tree(const Resource& r, const RecordEntry* old, const std::string& want);
  FilesSeen Directory(const Resource& r, const RecordEntry* old, const std::string& want);
  FilesSeen Symlink(const Resource& r, const RecordEntry* old, const std::string& want);
  // core::TreeRootAsMade with this apply's writer and stat cache.
  bool TreeRootAsMade(const FileInfo& root, const std::vector<TreeEntry>& scanned,
                      const std::string& path);
  Result<const std::vector<TreeEntry>*> Bundle(const Resource& r);
  UnitFileSeen UnitFile(const Resource& r, const RecordEntry* old, const std::string& want);
  void DropIns(const Resource& r, const RecordEntry* old, const std::string& want,
               UnitFileSeen& seen);
  void Units();
  void Shadows();
  std::optional<FileInfo> SeenUnderRoot(const std::string& path);
  std::optional<std::string> NotTheHosts(const std::string& dir,
                                         const std::vector<TreeEntry>& entries,
                                         const std::vector<TreeEntry>& bundle) const;
  void Dropped();
  bool WroteAsFile(const std::string& in_unit_dir) const;
  // Whether some record entry names `path` as written. The set is built at
  // the first question: an apply that finds every file as recorded asks none.
  bool Recorded(std::string_view path) const;
  // Whether the record says the host wrote `path` (not there before it, and
  // not a declared directory): its content is the host's to replace.
  bool Owned(std::string_view path) const;
  // What the record holds of an Owned path: its entry and the path written.
  struct OwnedPath {
    const core::RecordEntry* entry = nullptr;
    const core::WrittenPath* written = nullptr;
    bool tree() const;  // a bundle's root: what lies below it is the host's
  };
  // What the record holds of it when Owned, else null.
  const OwnedPath* OwnedAs(std::string_view path) const;
  // Owned, and still what the host left there as `info` finds it: a
  // bundle's root still a directory; a file still a regular file with its
  // bytes (a touch or a chmod back: they are read); a link still the link.
  bool OwnedAsLeft(const std::string& path, const core::FileInfo& info) const;
  // `content_digest`: a file's, when the host may read it to know it is
  // still what it wrote though its fingerprint moved (as_left.h).
  DroppedSeen DroppedAt(ports::FileSystem& fs, const std::string& path, std::string_view recorded,
                        std::string_view content_digest = {});
  // Whether `path` was on the machine before the host first managed it:
  // kept from the record, or found there now while no record entry names it.
  bool Preexisting(const RecordEntry* old, const std::string& path, const FileInfo& info) const;
  // Owner and group names resolved once per apply: the machine's user
  // database is not read for every file.
  const Result<std::pair<uint32_t, uint32_t>>& Ids(const Resource& r);

  const core::Declaration& decl_;
  const core::Record& record_;
  const OldEntries& olds_;
  const std::vector<std::string>& wants_;
  const ReconcilerPorts& ports_;
  const HostDirs* dirs_;  // may be null
  StatCache& cache_;
  // Bundles (by sha256) the last good is made of and a hold or rollback
  // swapped in: read from the kept copy when --artifacts lacks them.
  const std::set<std::string>* kept_bundles_;
  Observation out_;
  std::vector<const Result<FileInfo>*> declared_stats_;  // by resource index (files only)
  std::vector<Result<FileInfo>> fresh_stats_;            // what StatAll looked at itself
  mutable std::optional<std::unordered_set<std::string_view>> recorded_paths_;
  // NotTheHosts: each path the host wrote, as recorded.
  mutable std::optional<std::unordered_map<std::string_view, OwnedPath>> owned_paths_;
  std::map<std::string, bool> recorded_unit_files_;  // unit -> there before the host
  std::map<std::string, bool> recorded_drop_ins_;    // "UNIT.d/NAME" -> there before the host
  // Bundles unpacked this apply, by (source, sha256), and their bytes.
  std::map<std::pair<std::string, std::string>, std::shared_ptr<const std::vector<TreeEntry>>>
      by_source_;
  uint64_t held_bytes_ = 0;
  std::map<std::pair<std::string, std::string>, Result<std::pair<uint32_t, uint32_t>>> ids_;
  const decltype(ids_)::value_type* last_ids_ = nullptr;
};

}  // namespace mesh::reconcile::observe_internal
