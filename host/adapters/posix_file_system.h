// PosixFileSystem: the FileSystem port on Linux, confined under a root.
//
// Paths are walked one component at a time from an open descriptor of the
// root with openat(O_NOFOLLOW): a symlink in a directory position is refused,
// never followed, so nothing a declaration names can land outside the root,
// and ".." is refused outright. The last component is never followed either:
// a symlink there is replaced, not written through.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "host/adapters/unique_fd.h"
#include "host/ports/file_system.h"

namespace mesh::adapters {

class PosixFileSystem : public ports::FileSystem {
 public:
  // `root` must be an existing directory; with `create`, it is made (0755).
  static core::Result<std::unique_ptr<PosixFileSystem>> Open(const std::string& root,
                                                             bool create = false);
  // For directories that may legitimately be absent (a plan on a fresh
  // machine, no --artifacts yet): every call then fails naming the root.
  static std::unique_ptr<PosixFileSystem> OpenOrDeferError(const std::string& root);

  core::Result<core::FileInfo> Stat(const std::string& path) override;
  // Keeps the parent directory of the previous path open while the next one
  // shares it: one fstatat per file in a directory, not a walk per file.
  std::vector<core::Result<core::FileInfo>> StatMany(
      std::span<const std::string_view> paths) override;
  core::Result<std::string> ReadFile(const std::string& path, uint64_t limit) override;
  // A regular file under the root, opened for reading, and its size; fails
  // naming the path for anything else (a FIFO is refused, not waited on) or
  // anything over `limit` bytes. For a reader that streams a large file
  // rather than holding it whole (the record).
  core::Result<std::pair<UniqueFd, size_t>> OpenRegular(const std::string& path, uint64_t limit);
  core::Result<core::FileInfo> WriteFileAtomic(const std::string& path, std::string_view content,
                                               const ports::Ownership& ownership) override;
  core::Status ReplaceTree(const std::string& path,
                           const std::vector<core::TreeEntry>& entries) override;
  core::Result<std::vector<core::TreeEntry>> ScanTree(const std::string& path,
                                                      bool hash_contents) override;
  core::Result<std::string> ReadLink(const std::string& path) override;
  core::Status Remove(const std::string& path) override;
  core::Result<core::FileInfo> MakeDirectory(const std::string& path,
                                             const ports::Ownership& ownership) override;
  core::Result<core::FileInfo> MakeSymlink(const std::string& path,
                                           const std::string& target) override;
  core::Status RemoveEmptyDirectory(const std::string& path) override;
  core::Result<size_t> CountEntries(const std::string& path) override;
  core::Status Flush() override;
  core::Result<int> RemoveStaleTemporaries(const std::string& dir) override;
  core::Result<std::pair<uint32_t, uint32_t>> LookupIds(const std::string& owner,
                                                        const std::string& group) override;

  const std::string& root() const { return root_; }
  // What the root directory itself is, read from its open descriptor (so it
  // is the directory every path is walked from, not whatever the name now
  // points at); and its mode changed the same way.
  core::Result<core::FileInfo> StatRoot();
  core::Status ChmodRoot(uint32_t mode);

 private:
  PosixFileSystem(std::string root, UniqueFd fd, std::string open_error = "")
      : root_(std::move(root)), root_fd_(std::move(fd)), open_error_(std::move(open_error)) {}

  // Opens the directory holding the last component of `path`, creating
  // missing directories when `create`. *leaf receives the last component.
  // A missing directory without `create` yields an invalid fd, not an error.
  core::Result<UniqueFd> OpenParent(const std::string& path, bool create, std::string* leaf);
  // OpenParent (creating it) for something swapped in by rename, which
  // replaces anything but a directory: one in the way fails, saying `verb`.
  core::Result<UniqueFd> OpenParentToReplace(const std::string& path, std::string_view verb,
                                             std::string* leaf);

  // Marks the directory holding `path` as needing an fsync at Flush.
  void Unsynced(const std::string& path);

  std::string root_;
  UniqueFd root_fd_;
  std::set<std::string> unsynced_;  // directories with renames not yet fsynced
  std::string open_error_;
};

}  // namespace mesh::adapters
