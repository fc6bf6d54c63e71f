// FileSystem: the machine's files as the reconciler needs them.
//
// Every path is absolute in the declaration's terms and is confined by the
// implementation under a root directory: no path may leave it through ".."
// or through a symlink on the machine. Writes are atomic (temporary file in
// the same directory, fsync, rename, fsync of the directory), so a reader or
// a crash sees the old content or the new, never a mix.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/file_info.h"
#include "host/core/result.h"

namespace mesh::ports {

struct Ownership {
  uint32_t mode = 0644;
  uint32_t uid = 0;
  uint32_t gid = 0;
};

// A file written under a temporary name beside `path` and not yet in its
// place (FileSystem::StageFile); `id` is how the implementation knows it.
struct StagedFile {
  std::string path;
  uint64_t id = 0;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // lstat: a missing path is FileType::kMissing, not an error.
  virtual core::Result<core::FileInfo> Stat(const std::string& path) = 0;

  // Stat of many paths at once, in order; an implementation may share the
  // work of walking common parent directories within the call. Stat and
  // StatMany may run on two threads at once (ports::Background): they must
  // change nothing the implementation holds.
  virtual std::vector<core::Result<core::FileInfo>> StatMany(
      std::span<const std::string_view> paths) = 0;

  // Regular files only; refuses files larger than `limit` bytes.
  virtual core::Result<std::string> ReadFile(const std::string& path, uint64_t limit) = 0;

  // The bytes of the file that `seen` (a Stat of `path`) describes: refused
  // when the file opened is another one, or it changes while it is read —
  // its inode, size, times, mode or owner are not those seen (ErrorKind::
  // kChanged). What is read is then what was looked at, whatever moved along
  // the path meanwhile.
  virtual core::Result<std::string> ReadFileAsSeen(const std::string& path,
                                                   const core::FileInfo& seen) = 0;

  // What WriteFileAtomicFrom writes: pieces handed to a sink in turn.
  using ContentSink = std::function<core::Status(std::string_view piece)>;
  using ContentProducer = std::function<core::Status(const ContentSink& write)>;

  // Creates missing parent directories (0755). Replaces whatever is at
  // `path` except a directory. Returns the new file's stat.
  core::Result<core::FileInfo> WriteFileAtomic(const std::string& path, std::string_view content,
                                               const Ownership& ownership) {
    return WriteFileAtomicFrom(
        path, [content](const ContentSink& write) { return write(content); }, ownership);
  }
  // The same for content made a piece at a time: `produce` hands each piece
  // to the sink it is given, and the file is as atomic as above. A large
  // text (the record) is then never held whole. A failed write fails the
  // call, as does the producer's failure; `path` is then left as it was.
  virtual core::Result<core::FileInfo> WriteFileAtomicFrom(const std::string& path,
                                                           const ContentProducer& produce,
                                                           const Ownership& ownership) = 0;

  // Many files written, made durable in one step, then put in place: write
  // -> durable -> rename for each, as WriteFileAtomic does for one, without
  // a flush per file.
  //
  // StageFile writes `content` to a new temporary beside `path` (parents
  // made as WriteFileAtomic makes them; a directory in the way is refused
  // when the file is placed),
  // readable by no one but the host; it holds the directory open until the
  // file is placed or discarded, so a caller stages a bounded batch.
  // MakeStagedDurable makes every file staged since its last call durable.
  // PlaceStaged gives the file `ownership` and renames it into place,
  // returning its stat; it fails, leaving no temporary, when the temporary
  // or its directory is no longer the one staged. DiscardStaged removes a
  // staged file never placed (best effort: a later apply's sweep of stale
  // temporaries removes what it leaves, as it does after a kill).
  virtual core::Result<StagedFile> StageFile(const std::string& path, std::string_view content) = 0;
  virtual core::Status MakeStagedDurable() = 0;
  virtual core::Result<core::FileInfo> PlaceStaged(const StagedFile& staged,
                                                   const Ownership& ownership) = 0;
  virtual void DiscardStaged(const StagedFile& staged) = 0;

  // Unpacks `entries` into a sibling temporary directory and swaps it in
  // whole for `path` (a directory, 0755). The old tree is deleted after.
  // Returns the tree swapped in as ScanTree would (no contents hashed),
  // scanned through the host's own handle on it: what lies at `path` by
  // name may be someone else's by then (who can write its directory), and
  // is then a failure, never taken for the host's.
  virtual core::Result<std::vector<core::TreeEntry>> ReplaceTree(
      const std::string& path, const std::vector<core::TreeEntry>& entries) = 0;

  // Every entry below `path` (not `path` itself), with stat info, and with
  // content_sha256 when `hash_contents`. A missing `path` is an empty list.
  virtual core::Result<std::vector<core::TreeEntry>> ScanTree(const std::string& path,
                                                              bool hash_contents) = 0;

  // A directory at `path` with this mode and ownership (parents made 0755):
  // made when missing, its metadata set when there. Anything else in the
  // way is an error, never replaced (it may be someone's file).
  virtual core::Result<core::FileInfo> MakeDirectory(const std::string& path,
                                                     const Ownership& ownership) = 0;
  // A symlink at `path` pointing at `target`, swapped in atomically over a
  // file or a symlink; a directory in the way is an error.
  virtual core::Result<core::FileInfo> MakeSymlink(const std::string& path,
                                                   const std::string& target) = 0;
  // Removes the directory at `path` only if it is empty ("not empty" is
  // an error); nothing there is done.
  virtual core::Status RemoveEmptyDirectory(const std::string& path) = 0;
  // How many entries the directory at `path` holds ("." and ".." aside;
  // 0 when it is missing): prune removes a directory of the host's only
  // when the apply removes every one of them.
  virtual core::Result<size_t> CountEntries(const std::string& path) {
    auto scan = ScanTree(path, /*hash_contents=*/false);
    if (!scan) return std::unexpected(scan.error());
    size_t n = 0;
    for (const auto& entry : *scan) n += entry.relpath.find('/') == std::string::npos;
    return n;
  }

  // Where the symlink at `path` points (not followed); fails for anything
  // that is not a symlink. How an operator's mask (a link to /dev/null at a
  // unit file's place) is told apart from a unit file.
  virtual core::Result<std::string> ReadLink(const std::string& path) = 0;

  // Deletes a file or a whole tree; a missing path is not an error. A tree
  // leaves its path at once, as a whole (moved aside under a temporary
  // name, then emptied): one cut short by a kill is gone from its path,
  // never half there, and what is left under that name goes with
  // RemoveStaleTemporaries. One that fails (a file it cannot unlink) is put
  // back at its path, what is left of it there.
  virtual core::Status Remove(const std::string& path) = 0;

  // Deletes the file or symlink at `path`, never a directory: one put there
  // since the host looked is refused, not emptied. A missing path is not an
  // error.
  virtual core::Status RemoveFile(const std::string& path) = 0;

  // Makes durable every rename and removal since the last Flush. Writes are
  // atomic without it (a reader sees the old file or the new one), but the
  // directory entries reach the disk only here: one fsync per directory
  // touched, not one per file written. The reconciler flushes before it
  // saves the record, the apply's commit point, so after a power loss the
  // record never claims a file the disk lost.
  virtual core::Status Flush() = 0;

  // After an interrupted apply, before this one writes: deletes the
  // temporary files and trees a killed mesh-host left in `dir`
  // (".NAME.mesh-host-tmp.PID.N" whose PID is no longer running, or is this
  // process's own). Returns how many. A missing `dir` holds none.
  virtual core::Result<int> RemoveStaleTemporaries(const std::string& dir) = 0;

  // Numeric ids for a user and group name, as the machine knows them.
  virtual core::Result<std::pair<uint32_t, uint32_t>> LookupIds(const std::string& owner,
                                                                const std::string& group) = 0;
};

}  // namespace mesh::ports
