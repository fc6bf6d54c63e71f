// PosixFileSystem: the FileSystem port on Linux, confined under a root.
//
// Paths are walked one component at a time from an open descriptor of the
// root with openat(O_NOFOLLOW): a symlink in a directory position is refused,
// never followed, so nothing a declaration names can land outside the root,
// and ".." is refused outright. The last component is never followed either:
// a symlink there is replaced, not written through.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <functional>
#include <map>
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
  // `root` must be an existing directory; with `create`, it is made (0755),
  // and each directory this call made (its own mkdir succeeded: not one
  // another process made meanwhile) is appended to `made`, if given.
  static core::Result<std::unique_ptr<PosixFileSystem>> Open(
      const std::string& root, bool create = false, std::vector<std::string>* made = nullptr);
  // `root` as Open's `made` names it ("/a//b/." is "/a/b").
  static std::string PathAsMade(const std::string& root);
  // For directories that may legitimately be absent (a plan on a fresh
  // machine, no --artifacts yet): every call then fails naming the root,
  // until the directory exists.
  static std::unique_ptr<PosixFileSystem> OpenOrDeferError(const std::string& root);

  core::Result<core::FileInfo> Stat(const std::string& path) override;
  // Keeps the parent directory of the previous path open while the next one
  // shares it: one fstatat per file in a directory, not a walk per file.
  std::vector<core::Result<core::FileInfo>> StatMany(
      std::span<const std::string_view> paths) override;
  core::Result<std::string> ReadFile(const std::string& path, uint64_t limit) override;
  core::Result<std::string> ReadFileAsSeen(const std::string& path,
                                           const core::FileInfo& seen) override;
  // A regular file under the root, opened for reading, and its size; fails
  // naming the path for anything else (a FIFO is refused, not waited on) or
  // anything over `limit` bytes. For a reader that streams a large file
  // rather than holding it whole (the record).
  core::Result<std::pair<UniqueFd, size_t>> OpenRegular(const std::string& path, uint64_t limit);
  // A stat of a file opened here (OpenRegular), as Stat gives one of a path.
  static core::Result<core::FileInfo> StatOpened(int fd);
  core::Result<core::FileInfo> WriteFileAtomicFrom(const std::string& path,
                                                   const ContentProducer& produce,
                                                   const ports::Ownership& own) override;
  // Staged files: each directory is walked once per batch to stage and
  // once more, before its first file is placed, to prove it is still where
  // its path says; each temporary is proven by inode before it is given its
  // owner and mode. syncfs is called on a descriptor opened before the
  // first file of the batch was written on that file system, so it reports
  // the batch's write-back errors, not older ones.
  core::Result<ports::StagedFile> StageFile(const std::string& path,
                                            std::string_view content) override;
  core::Status MakeStagedDurable() override;
  core::Result<core::FileInfo> PlaceStaged(const ports::StagedFile& staged,
                                           const ports::Ownership& ownership) override;
  void DiscardStaged(const ports::StagedFile& staged) override;
  core::Result<std::vector<core::TreeEntry>> ReplaceTree(
      const std::string& path, const std::vector<core::TreeEntry>& entries) override;
  core::Result<std::vector<core::TreeEntry>> ScanTree(const std::string& path,
                                                      bool hash_contents) override;
  core::Result<std::string> ReadLink(const std::string& path) override;
  core::Status Remove(const std::string& path) override;
  core::Status RemoveFile(const std::string& path) override;
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

  ~PosixFileSystem() override;

  const std::string& root() const { return root_; }
  // Errors name a path as the caller gave it ("/etc/app.conf": what a
  // declaration says), or with this set, under the root too: a store's own
  // files ("/intent.json") mean nothing to an operator without their
  // directory.
  void set_errors_name_root(bool on) { errors_name_root_ = on; }
  // `path` as errors name it (set_errors_name_root): under the root, which
  // is named once ("--state-dir /x/" is "/x").
  std::string Shown(const std::string& path) const {
    if (!errors_name_root_) return path;
    std::string_view root = root_;
    while (!root.empty() && root.back() == '/') root.remove_suffix(1);
    std::string shown = std::string(root) + path;
    return shown.empty() ? "/" : shown;
  }
  // What the root directory itself is, read from its open descriptor (so it
  // is the directory every path is walked from, not whatever the name now
  // points at); and its mode changed the same way.
  core::Result<core::FileInfo> StatRoot();
  core::Status ChmodRoot(uint32_t mode);

  // Tests only: called by ReplaceTree once the new tree is made durable,
  // and by MakeSymlink once its link is made, just before either is
  // renamed into place (where another process may still change a file
  // linked from the old tree, or put something else under the temporary
  // name); and by Remove once a tree is moved aside, before it is emptied
  // (where a kill leaves it).
  void set_before_swap_for_testing(std::function<void()> hook) { before_swap_ = std::move(hook); }

 private:
  PosixFileSystem(std::string root, UniqueFd fd, std::string open_error = "")
      : root_(std::move(root)), root_fd_(std::move(fd)), open_error_(std::move(open_error)) {}

  // Whether the root is open: one that could not be (OpenOrDeferError) is
  // tried again at each use, so a directory made after the daemon started
  // (--artifacts filled by the first sync) is found without a restart.
  bool Reopened();

  // Opens the directory holding the last component of `path`, creating
  // missing directories when `create`. *leaf receives the last component.
  // A missing directory without `create` yields an invalid fd, not an error.
  core::Result<UniqueFd> OpenParent(const std::string& path, bool create, std::string* leaf);
  // OpenParent (creating it) for something swapped in by rename, which
  // replaces anything but a directory: one in the way fails, saying `verb`.
  core::Result<UniqueFd> OpenParentToReplace(const std::string& path, std::string_view verb,
                                             std::string* leaf);

  // The directory at `path` (the root for "/"), opened without following
  // a symlink; an invalid fd when it is missing or not a directory.
  core::Result<UniqueFd> OpenDirectory(const std::string& path);
  // Marks the directory holding `path` as needing an fsync at Flush.
  void Unsynced(const std::string& path);

  // A directory files are staged in, held open for the batch.
  struct StagingDir {
    UniqueFd fd;
    std::string path;
    dev_t dev = 0;
    ino_t ino = 0;
    bool proven = false;  // walked again since staging, and still it
  };
  struct Staged {
    std::shared_ptr<StagingDir> dir;
    std::string leaf, temp;
    dev_t dev = 0;
    ino_t ino = 0;
    uid_t uid = 0;
    off_t size = 0;
    timespec ctime{};
  };
  static bool IsStaged(const Staged& s, const struct stat& st);
  // The open directory that holds `path` (walked, and parents made, on the
  // batch's first file there); *leaf receives the last component.
  core::Result<std::shared_ptr<StagingDir>> StagingDirOf(const std::string& path,
                                                         std::string* leaf);
  // Whether `dir` is still the directory its path names, walked again.
  core::Status ProveStagingDir(StagingDir& dir);
  // Removes a staged file's temporary (best effort) and forgets it.
  void Unstage(uint64_t id);

  std::string root_;
  bool errors_name_root_ = false;
  UniqueFd root_fd_;
  std::set<std::string> unsynced_;  // directories with renames not yet fsynced
  std::map<uint64_t, Staged> staged_;
  uint64_t next_staged_ = 1;
  // The directories of staged files, by path, while any file staged there
  // is not yet placed or discarded.
  std::map<std::string, std::shared_ptr<StagingDir>> staging_dirs_;
  // Per file system written to: a descriptor for syncfs, opened before the
  // first write (not yet durable, then durable but its placed files' owners
  // and modes not yet: Flush syncs those again).
  std::map<dev_t, UniqueFd> not_durable_;
  std::map<dev_t, UniqueFd> placed_since_flush_;
  std::string open_error_;
  std::function<void()> before_swap_;
};

}  // namespace mesh::adapters
