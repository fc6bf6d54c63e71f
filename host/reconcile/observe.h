// Observe: the first phase of an apply — what the machine holds of every
// declared resource, looked at only as deep as needed to know whether it
// matches, before anything is written.
//
// A file whose recorded fingerprint still holds is not read; one whose
// fingerprint moved is compared (size, mode and owner first, then bytes); a
// tree is scanned and hashed only when its fingerprint moved; bundles are
// read only when new or changed. Every declared unit (and every unit of a
// resource no longer declared) is read in one pipelined round. A path that
// would lead out of the root, or a bundle that cannot be used, refuses the
// declaration whole: the error is the refusal.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "host/core/declaration.h"
#include "host/core/file_info.h"
#include "host/core/record.h"
#include "host/core/result.h"
#include "host/ports/file_system.h"
#include "host/reconcile/apply_ports.h"
#include "host/reconcile/plan.h"

namespace mesh::reconcile {

// The largest bundle file read from --artifacts.
constexpr uint64_t kMaxBundleBytes = 1ull << 30;

// The bytes of the bundle `r` names (its `source` under --artifacts),
// checked against its `sha256`; else why not, naming the resource and the
// field as a refusal does. The one check the observation, a rollback and
// `mesh-host validate` make of an artifact.
core::Result<std::string> ReadArtifact(ports::FileSystem& artifacts, const core::Resource& r);

// The entries of bundle `r` from its bytes, unpacked within `budget` bytes
// expanded and checked as every apply checks them (core::CheckBundleEntries),
// else why not, naming the resource; `others` is what the declaration's other
// bundles already hold of kMaxHeldBundleBytes. What the observation and
// `mesh-host validate` unpack.
core::Result<std::vector<core::TreeEntry>> UnpackBundle(ports::ArchiveReader& archives,
                                                        const core::Resource& r,
                                                        std::string_view bytes,
                                                        uint64_t others = 0);

// The same, and for a bundle the last good is made of (`use_kept`: its
// content was swapped in by a hold or a rollback) when --artifacts no
// longer holds those bytes, the copy the record store keeps of it
// (RecordStore::KeptArtifact), its digest checked again. The error says
// both.
core::Result<std::string> ReadBundle(const ReconcilerPorts& ports, const core::Resource& r,
                                     bool use_kept);

// `r`'s declared path, as `info` (its look under --root) found it: where a
// symlink, or anything else, would lead it out of the root, the refusal in
// the words every apply refuses the declaration with.
void RefuseIfOutsideRoot(const core::Resource& r, const core::Result<core::FileInfo>& info,
                         core::Problems& problems);

// Every declared path looked at under `root`, in one batch, and refused as
// above: what `mesh-host validate` checks of the machine, as the
// observation does before an apply touches it.
void RefusePathsOutsideRoot(const core::Declaration& decl, ports::FileSystem& root,
                            core::Problems& problems);

// Stats already taken this apply (a failed record proof's, the look
// ahead's), by path: not taken again. Keys are views into `paths`, or into
// the strings `owner` holds.
struct StatCache {
  StatCache() = default;
  // Moved, never copied: a copy's keys would view the original's strings.
  StatCache(StatCache&&) = default;
  StatCache& operator=(StatCache&&) = default;
  StatCache(const StatCache&) = delete;
  StatCache& operator=(const StatCache&) = delete;

  std::shared_ptr<const void> owner;
  std::deque<std::string> paths;
  std::unordered_map<std::string_view, core::Result<core::FileInfo>> stats;

  void Add(std::string path, core::Result<core::FileInfo> info);
  // `path` a string `owner` holds: kept as it is, not copied.
  void AddOwned(std::string_view path, core::Result<core::FileInfo> info) {
    stats.emplace(path, std::move(info));
  }
};

struct Observation {
  Seen seen;
  // The checked members of every bundle this apply may unpack, by id.
  BundlesById bundles;
  // The owner and group names paths were checked under, as they resolved
  // (core::Record::owners).
  core::OwnerIds owners;
};

core::Result<Observation> Observe(const core::Declaration& declaration, const core::Record& record,
                                  const OldEntries& olds, const std::vector<std::string>& wants,
                                  const ReconcilerPorts& ports, const HostDirs* dirs,
                                  StatCache& cache,
                                  const std::set<std::string>* kept_bundles = nullptr);

}  // namespace mesh::reconcile
