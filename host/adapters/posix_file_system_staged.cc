// PosixFileSystem's staged files: many written, made durable at once, then
// each put in place (file_system.h says the contract).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "host/adapters/posix_file_system.h"
#include "host/adapters/posix_internal.h"

namespace mesh::adapters {

using namespace posix_internal;  // NOLINT: the adapter's own helpers

// Still the temporary as the host wrote it: nothing was done to it since
// (a link, a rename or a write moves its ctime), and no other name reaches
// it.
bool PosixFileSystem::IsStaged(const Staged& s, const struct stat& st) {
  return S_ISREG(st.st_mode) && st.st_dev == s.dev && st.st_ino == s.ino && st.st_uid == s.uid &&
         st.st_nlink == 1 && st.st_size == s.size && st.st_ctim.tv_sec == s.ctime.tv_sec &&
         st.st_ctim.tv_nsec == s.ctime.tv_nsec;
}

PosixFileSystem::~PosixFileSystem() {
  // Temporaries of files never placed go with the process that staged them
  // (a kill leaves them to the next apply's sweep).
  while (!staged_.empty()) Unstage(staged_.begin()->first);
}

Result<std::shared_ptr<PosixFileSystem::StagingDir>> PosixFileSystem::StagingDirOf(
    const std::string& path, std::string* leaf) {
  size_t slash = path.rfind('/');
  std::string dir_path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
  if (auto it = staging_dirs_.find(dir_path); it != staging_dirs_.end()) {
    *leaf = path.substr(slash + 1);  // StageFile took only a normal path
    return it->second;
  }
  auto parent = OpenParent(path, /*create=*/true, leaf);
  if (!parent) return std::unexpected(parent.error());
  struct stat st;
  if (::fstat(parent->get(), &st) != 0) return Fail(Errno("stat parent of", Shown(path)));
  auto dir = std::make_shared<StagingDir>();
  dir->fd = std::move(*parent);
  dir->path = std::move(dir_path);
  dir->dev = st.st_dev;
  dir->ino = st.st_ino;
  staging_dirs_.emplace(dir->path, dir);
  return dir;
}

Result<ports::StagedFile> PosixFileSystem::StageFile(const std::string& path,
                                                     std::string_view content) {
  // Directories are held by path: only a path in one spelling ("/a/b", no
  // "." or "..", no empty component) is staged.
  std::string normal;
  for (std::string_view c : Components(path)) normal += "/" + std::string(c);
  if (normal != path || path.find("/./") != std::string::npos || path.ends_with("/.") ||
      path.find("/../") != std::string::npos || path.ends_with("/..")) {
    return Fail("write " + Shown(path) + ": not a normal absolute path");
  }
  std::string leaf;
  auto found = StagingDirOf(path, &leaf);
  if (!found) return std::unexpected(found.error());
  std::shared_ptr<StagingDir> dir = std::move(*found);
  auto forget_unused = [&] {
    if (dir.use_count() == 2) staging_dirs_.erase(dir->path);  // this and the map's
  };
  // A directory in the way is found when the file is placed (rename
  // refuses it): not looked for here, once per file.
  // Opened before the write, so its syncfs reports this write's errors.
  if (!not_durable_.contains(dir->dev)) {
    UniqueFd sync(::openat(dir->fd.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!sync.valid()) {
      forget_unused();
      return Fail(Errno("open", Shown(dir->path)));
    }
    not_durable_.emplace(dir->dev, std::move(sync));
  }
  std::string tmp = TempName(leaf);
  UniqueFd fd(::openat(dir->fd.get(), tmp.c_str(),
                       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) {
    forget_unused();
    return Fail(Errno("create temporary file for", Shown(path)));
  }
  struct stat st;
  Status written = WriteAll(fd.get(), content, Shown(path));
  if (written && ::fstat(fd.get(), &st) != 0) written = Fail(Errno("stat", Shown(path)));
  if (written && ::close(fd.release()) != 0) written = Fail(Errno("close", Shown(path)));
  if (!written) {
    fd.Reset();
    (void)::unlinkat(dir->fd.get(), tmp.c_str(), 0);  // best effort: the sweep's otherwise
    forget_unused();
    return std::unexpected(written.error());
  }
  uint64_t id = next_staged_++;
  staged_.emplace(id, Staged{std::move(dir), std::move(leaf), std::move(tmp), st.st_dev, st.st_ino,
                             st.st_uid, st.st_size, st.st_ctim});
  return ports::StagedFile{path, id};
}

Status PosixFileSystem::MakeStagedDurable() {
  // One syncfs per file system, not an fsync per file. A file system
  // leaves the set only once synced.
  for (auto it = not_durable_.begin(); it != not_durable_.end();) {
    if (::syncfs(it->second.get()) != 0) {
      // The batch fails whole: none of its files is ever placed, and the
      // next batch opens fresh descriptors, whose syncfs reports only its
      // own errors.
      Status failed = Fail(Errno("syncfs", root_ + " (the files this apply wrote)"));
      not_durable_.clear();
      while (!staged_.empty()) Unstage(staged_.begin()->first);
      return failed;
    }
    placed_since_flush_.insert_or_assign(it->first, std::move(it->second));
    it = not_durable_.erase(it);
  }
  return core::Ok();
}

Status PosixFileSystem::ProveStagingDir(StagingDir& dir) {
  if (dir.proven) return core::Ok();
  auto opened = OpenDirectory(dir.path);
  if (!opened) return std::unexpected(opened.error());
  UniqueFd now = std::move(*opened);
  struct stat st;
  if (!now.valid() || ::fstat(now.get(), &st) != 0 || st.st_dev != dir.dev ||
      st.st_ino != dir.ino) {
    return Fail(dir.path + " was moved or replaced while files were being written in it");
  }
  dir.proven = true;
  return core::Ok();
}

Result<core::FileInfo> PosixFileSystem::PlaceStaged(const ports::StagedFile& staged,
                                                    const ports::Ownership& own) {
  auto it = staged_.find(staged.id);
  if (it == staged_.end()) return Fail("write " + staged.path + ": not staged");
  const Staged& s = it->second;
  const std::string& path = staged.path;
  auto fail = [&](std::string message) -> Result<core::FileInfo> {
    Unstage(staged.id);
    return Fail(std::move(message));
  };
  if (not_durable_.contains(s.dir->dev)) return fail("write " + Shown(path) + ": not made durable");
  if (auto proven = ProveStagingDir(*s.dir); !proven) {
    return fail("write " + Shown(path) + ": " + proven.error().message);
  }
  int dir = s.dir->fd.get();
  // The temporary is opened, not named, for its owner and mode: what is
  // changed is the file this host wrote, or nothing.
  UniqueFd fd(::openat(dir, s.temp.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st;
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0 || !IsStaged(s, st)) {
    return fail("write " + Shown(path) +
                ": its temporary file was replaced before it was put in place");
  }
  // chown before chmod: chown clears set-id bits. The temporary is the
  // host's: no chown when that is the owner declared.
  if ((st.st_uid != own.uid || st.st_gid != own.gid) && ::fchown(fd.get(), own.uid, own.gid) != 0) {
    return fail(Errno("chown", Shown(path)));
  }
  if (auto dropped = DropInheritedAcl(fd.get(), Shown(path)); !dropped) {
    return fail(dropped.error().message);
  }
  if (::fchmod(fd.get(), own.mode & 07777) != 0) return fail(Errno("chmod", Shown(path)));
  fd.Reset();
  if (::renameat(dir, s.temp.c_str(), dir, s.leaf.c_str()) != 0) {
    if (errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST) {
      return fail("write " + Shown(path) + ": a directory is in the way");
    }
    return fail(Errno("rename onto", Shown(path)));
  }
  Unsynced(path);
  int stat_rc = ::fstatat(dir, s.leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW);
  int err = errno;
  bool ours = stat_rc == 0 && st.st_dev == s.dev && st.st_ino == s.ino;
  std::shared_ptr<StagingDir> held = s.dir;
  staged_.erase(it);
  if (held.use_count() == 2) staging_dirs_.erase(held->path);
  if (stat_rc != 0) return Fail(Errno("stat", Shown(path), err));
  if (!ours) return Fail("write " + Shown(path) + ": replaced as it was put in place");
  return FromStat(st);
}

void PosixFileSystem::DiscardStaged(const ports::StagedFile& staged) { Unstage(staged.id); }

void PosixFileSystem::Unstage(uint64_t id) {
  auto it = staged_.find(id);
  if (it == staged_.end()) return;
  std::shared_ptr<StagingDir> dir = std::move(it->second.dir);
  // Only the file this host wrote: a neighbour's put in its place is left.
  // Best effort: what stays is a stale temporary, swept by a later apply.
  struct stat st;
  if (::fstatat(dir->fd.get(), it->second.temp.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
      st.st_dev == it->second.dev && st.st_ino == it->second.ino) {
    (void)::unlinkat(dir->fd.get(), it->second.temp.c_str(), 0);
  }
  staged_.erase(it);
  if (dir.use_count() == 2) staging_dirs_.erase(dir->path);
}

}  // namespace mesh::adapters
