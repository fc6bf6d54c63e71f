#include "host/adapters/posix_file_system.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "host/core/sha256.h"

namespace mesh::adapters {
namespace {

using core::Fail;
using core::FileInfo;
using core::FileType;
using core::Result;
using core::Status;
using core::TreeEntry;

using core::kMaxTreeDepth;
// Missing parents of a declared path are made with this mode (documented in
// docs/declaration.md), whatever the process's umask.
constexpr mode_t kCreatedDirMode = 0755;

std::string Errno(std::string_view what, const std::string& path, int err = errno) {
  return std::string(what) + " " + path + ": " + std::strerror(err);
}

FileInfo FromStat(const struct stat& st) {
  FileInfo info;
  if (S_ISREG(st.st_mode)) {
    info.type = FileType::kRegular;
  } else if (S_ISDIR(st.st_mode)) {
    info.type = FileType::kDirectory;
  } else if (S_ISLNK(st.st_mode)) {
    info.type = FileType::kSymlink;
  } else {
    info.type = FileType::kOther;
  }
  info.size = static_cast<uint64_t>(st.st_size);
  info.mode = st.st_mode & 07777;
  info.uid = st.st_uid;
  info.gid = st.st_gid;
  info.mtime_ns = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  info.ctime_ns = int64_t{st.st_ctim.tv_sec} * 1000000000 + st.st_ctim.tv_nsec;
  info.inode = st.st_ino;
  return info;
}

std::vector<std::string_view> Components(std::string_view path) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start < path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (end > start) out.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// Temporary names are recognisable (".NAME.mesh-host-tmp.PID.N") and unique
// per process, so a crashed run's leftovers can be told from real files.
std::string TempName(std::string_view leaf) {
  static std::atomic<uint64_t> counter{0};
  std::string base(leaf.substr(0, 180));
  return "." + base + ".mesh-host-tmp." + std::to_string(::getpid()) + "." +
         std::to_string(counter.fetch_add(1));
}

Status WriteAll(int fd, std::string_view bytes, const std::string& path) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Fail(Errno("write", path));
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return core::Ok();
}

// fdopendir takes the descriptor over only when it succeeds: on failure it
// stays with `fd`, which closes it.
DIR* OpenDirStream(UniqueFd& fd) {
  DIR* dir = ::fdopendir(fd.get());
  if (dir != nullptr) (void)fd.release();
  return dir;
}

Status RemoveAt(int dirfd, const std::string& name, const std::string& shown, int depth) {
  struct stat st;
  if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return core::Ok();
    return Fail(Errno("stat", shown));
  }
  if (S_ISDIR(st.st_mode)) {
    if (depth > kMaxTreeDepth) return Fail("remove " + shown + ": nested too deep");
    UniqueFd fd(::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid()) return Fail(Errno("open", shown));
    DIR* dir = OpenDirStream(fd);
    if (dir == nullptr) return Fail(Errno("opendir", shown));
    std::vector<std::string> names;
    while (dirent* d = ::readdir(dir)) {
      if (std::strcmp(d->d_name, ".") != 0 && std::strcmp(d->d_name, "..") != 0) {
        names.emplace_back(d->d_name);
      }
    }
    int child_dir = ::dirfd(dir);
    Status st_children = core::Ok();
    for (const std::string& child : names) {
      st_children = RemoveAt(child_dir, child, shown + "/" + child, depth + 1);
      if (!st_children) break;
    }
    ::closedir(dir);
    if (!st_children) return st_children;
    if (::unlinkat(dirfd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
      return Fail(Errno("rmdir", shown));
    }
    return core::Ok();
  }
  if (::unlinkat(dirfd, name.c_str(), 0) != 0 && errno != ENOENT) {
    return Fail(Errno("unlink", shown));
  }
  return core::Ok();
}

// The stat that called this file regular is not the open: a user who can
// write in the tree may swap in a FIFO between the two (RENAME_EXCHANGE),
// and a blocking open of a FIFO waits for a writer forever. So the open
// never blocks, and the type is checked again on the descriptor: no longer
// a regular file is an empty digest, the tree as it now is (drifted).
Result<std::string> HashFileAt(int dirfd, const std::string& name, const std::string& shown) {
  UniqueFd fd(::openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) return Fail(Errno("open", shown));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return Fail(Errno("stat", shown));
  if (!S_ISREG(st.st_mode)) return std::string();
  core::Sha256 h;
  char buf[64 * 1024];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Fail(Errno("read", shown));
    }
    if (n == 0) break;
    h.Update(std::string_view(buf, static_cast<size_t>(n)));
  }
  return h.HexDigest();
}

Status ScanAt(int dirfd, const std::string& rel, const std::string& shown, bool hash, int depth,
              std::vector<TreeEntry>& out) {
  if (depth > kMaxTreeDepth) return Fail("scan " + shown + ": nested too deep");
  UniqueFd fd(::openat(dirfd, rel.empty() ? "." : rel.c_str(),
                       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return Fail(Errno("open", shown));
  DIR* dir = OpenDirStream(fd);
  if (dir == nullptr) return Fail(Errno("opendir", shown));
  std::vector<std::string> subdirs;
  Status status = core::Ok();
  int own = ::dirfd(dir);
  while (dirent* d = ::readdir(dir)) {
    std::string name = d->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    if (::fstatat(own, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      status = Fail(Errno("stat", shown + "/" + name));
      break;
    }
    TreeEntry e;
    e.info = FromStat(st);
    e.type = e.info.type;
    e.mode = e.info.mode;
    e.relpath = rel.empty() ? name : rel + "/" + name;
    if (hash && e.type == FileType::kRegular) {
      auto digest = HashFileAt(own, name, shown + "/" + name);
      if (!digest) {
        status = std::unexpected(digest.error());
        break;
      }
      e.content_sha256 = *digest;
      if (digest->empty()) e.type = e.info.type = FileType::kOther;
    }
    if (e.type == FileType::kDirectory) subdirs.push_back(name);
    out.push_back(std::move(e));
  }
  if (status) {
    for (const std::string& sub : subdirs) {
      // Recurse relative to this directory so every open stays O_NOFOLLOW.
      std::vector<TreeEntry> children;
      status = ScanAt(own, sub, shown + "/" + sub, hash, depth + 1, children);
      if (!status) break;
      for (TreeEntry& c : children) {
        c.relpath = (rel.empty() ? "" : rel + "/") + c.relpath;
        out.push_back(std::move(c));
      }
    }
  }
  ::closedir(dir);
  return status;
}

}  // namespace

Result<std::unique_ptr<PosixFileSystem>> PosixFileSystem::Open(const std::string& root,
                                                               bool create) {
  if (root.empty() || root[0] != '/') return Fail("root " + root + " is not an absolute path");
  if (create) {
    // Make each missing component; the root itself is the operator's flag,
    // so following symlinks here is intended.
    std::string prefix;
    for (std::string_view comp : Components(root)) {
      prefix += "/";
      prefix += comp;
      if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
        return Fail(Errno("mkdir", prefix));
      }
    }
  }
  UniqueFd fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return Fail(Errno("open root", root));
  return std::unique_ptr<PosixFileSystem>(new PosixFileSystem(root, std::move(fd)));
}

Result<core::FileInfo> PosixFileSystem::StatRoot() {
  if (!root_fd_.valid()) return Fail(open_error_);
  struct stat st;
  if (::fstat(root_fd_.get(), &st) != 0) return Fail(Errno("stat", root_));
  return FromStat(st);
}

core::Status PosixFileSystem::ChmodRoot(uint32_t mode) {
  if (!root_fd_.valid()) return Fail(open_error_);
  if (::fchmod(root_fd_.get(), mode) != 0) return Fail(Errno("chmod", root_));
  return core::Ok();
}

std::unique_ptr<PosixFileSystem> PosixFileSystem::OpenOrDeferError(const std::string& root) {
  auto fs = Open(root);
  if (fs) return std::move(*fs);
  return std::unique_ptr<PosixFileSystem>(
      new PosixFileSystem(root, UniqueFd(), fs.error().message));
}

Result<UniqueFd> PosixFileSystem::OpenParent(const std::string& path, bool create,
                                             std::string* leaf) {
  if (!root_fd_.valid()) return Fail(open_error_);
  std::vector<std::string_view> comps = Components(path);
  if (comps.empty()) return Fail("path " + path + " names the root itself");
  for (std::string_view c : comps) {
    if (c == "..") return Fail(core::ErrorKind::kOutsideRoot, "path " + path + " contains ..");
  }
  *leaf = std::string(comps.back());
  UniqueFd cur(::fcntl(root_fd_.get(), F_DUPFD_CLOEXEC, 0));
  if (!cur.valid()) return Fail(Errno("dup root", root_));
  std::string walked;
  for (size_t i = 0; i + 1 < comps.size(); ++i) {
    std::string comp(comps[i]);
    walked += "/" + comp;
    bool made = false;
    for (int attempt = 0; attempt < 2; ++attempt) {
      int fd = ::openat(cur.get(), comp.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd >= 0) {
        cur = UniqueFd(fd);
        // mkdirat's mode passes through the umask (the shipped unit's 0077
        // would make it 0700, unreadable to a service user): set it whole.
        if (made && ::fchmod(cur.get(), kCreatedDirMode) != 0) return Fail(Errno("chmod", walked));
        break;
      }
      int err = errno;
      if (err == ENOENT) {
        if (!create) return UniqueFd();
        if (::mkdirat(cur.get(), comp.c_str(), kCreatedDirMode) != 0) {
          if (errno != EEXIST) return Fail(Errno("mkdir", walked));
        } else {
          made = true;
        }
        continue;
      }
      struct stat st;
      if (::fstatat(cur.get(), comp.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
          S_ISLNK(st.st_mode)) {
        return Fail(core::ErrorKind::kOutsideRoot,
                    "path " + path + ": " + walked +
                        " is a symlink; mesh-host does not follow symlinks under its root");
      }
      if (err == ENOTDIR) return Fail("path " + path + ": " + walked + " is not a directory");
      return Fail(Errno("open", walked, err));
    }
  }
  return cur;
}

Result<FileInfo> PosixFileSystem::Stat(const std::string& path) {
  // A root that does not exist yet holds nothing: everything under it is
  // missing (a plan before the first apply).
  if (!root_fd_.valid() && ::access(root_.c_str(), F_OK) != 0 && errno == ENOENT) return FileInfo{};
  std::string leaf;
  auto parent = OpenParent(path, false, &leaf);
  if (!parent) return std::unexpected(parent.error());
  if (!parent->valid()) return FileInfo{};
  struct stat st;
  if (::fstatat(parent->get(), leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return FileInfo{};
    return Fail(Errno("stat", path));
  }
  return FromStat(st);
}

std::vector<Result<FileInfo>> PosixFileSystem::StatMany(std::span<const std::string_view> paths) {
  std::vector<Result<FileInfo>> out;
  out.reserve(paths.size());
  std::string cached_dir;
  UniqueFd cached_fd;
  bool cached_missing = false;
  std::string path;
  for (std::string_view view : paths) {
    path.assign(view);
    size_t slash = path.rfind('/');
    std::string_view dir = slash == std::string::npos ? "" : view.substr(0, slash);
    std::string leaf = path.substr(slash + 1);
    if (slash == std::string::npos || leaf.empty() || leaf == ".." || leaf == "." ||
        dir != cached_dir || (!cached_fd.valid() && !cached_missing)) {
      std::string walked_leaf;
      auto parent = OpenParent(path, false, &walked_leaf);
      if (!parent) {
        out.push_back(std::unexpected(parent.error()));
        cached_dir.clear();
        cached_fd.Reset();
        cached_missing = false;
        continue;
      }
      cached_dir = dir;
      cached_missing = !parent->valid();
      cached_fd = std::move(*parent);
      leaf = walked_leaf;
    }
    if (cached_missing) {
      out.push_back(FileInfo{});
      continue;
    }
    struct stat st;
    if (::fstatat(cached_fd.get(), leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      out.push_back(errno == ENOENT ? Result<FileInfo>(FileInfo{})
                                    : Result<FileInfo>(Fail(Errno("stat", path))));
    } else {
      out.push_back(FromStat(st));
    }
  }
  return out;
}

Result<std::pair<UniqueFd, size_t>> PosixFileSystem::OpenRegular(const std::string& path,
                                                                 uint64_t limit) {
  std::string leaf;
  auto parent = OpenParent(path, false, &leaf);
  if (!parent) return std::unexpected(parent.error());
  if (!parent->valid()) return Fail("read " + path + ": no such file");
  // O_NONBLOCK: a FIFO planted at the path must not hang the open.
  UniqueFd fd(
      ::openat(parent->get(), leaf.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) return Fail(Errno("open", path));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return Fail(Errno("stat", path));
  if (!S_ISREG(st.st_mode)) return Fail("read " + path + ": not a regular file");
  if (static_cast<uint64_t>(st.st_size) > limit) {
    return Fail("read " + path + ": " + std::to_string(st.st_size) +
                " bytes exceeds the limit of " + std::to_string(limit));
  }
  return std::pair<UniqueFd, size_t>(std::move(fd), static_cast<size_t>(st.st_size));
}

Result<std::string> PosixFileSystem::ReadLink(const std::string& path) {
  std::string leaf;
  auto parent = OpenParent(path, false, &leaf);
  if (!parent) return std::unexpected(parent.error());
  if (!parent->valid()) return Fail("readlink " + path + ": no such file");
  char buf[PATH_MAX];
  ssize_t n = ::readlinkat(parent->get(), leaf.c_str(), buf, sizeof buf);
  if (n < 0) return Fail(Errno("readlink", path));
  return std::string(buf, static_cast<size_t>(n));
}

Result<std::string> PosixFileSystem::ReadFile(const std::string& path, uint64_t limit) {
  auto opened = OpenRegular(path, limit);
  if (!opened) return std::unexpected(opened.error());
  auto& [fd, file_size] = *opened;
  auto bytes = ReadUpTo(fd.get(), file_size);
  if (!bytes) return Fail(Errno("read", path, bytes.error()));
  return std::move(*bytes);
}

Result<UniqueFd> PosixFileSystem::OpenParentToReplace(const std::string& path,
                                                      std::string_view verb, std::string* leaf) {
  auto parent = OpenParent(path, true, leaf);
  if (!parent) return std::unexpected(parent.error());
  struct stat st;
  if (::fstatat(parent->get(), leaf->c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
      S_ISDIR(st.st_mode)) {
    return Fail(std::string(verb) + " " + path + ": a directory is in the way");
  }
  return parent;
}

Result<FileInfo> PosixFileSystem::WriteFileAtomic(const std::string& path, std::string_view content,
                                                  const ports::Ownership& own) {
  std::string leaf;
  auto parent = OpenParentToReplace(path, "write", &leaf);
  if (!parent) return std::unexpected(parent.error());
  int dir = parent->get();
  struct stat st;
  std::string tmp = TempName(leaf);
  UniqueFd fd(
      ::openat(dir, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) return Fail(Errno("create temporary file for", path));
  auto cleanup = [&](std::string message) -> Result<FileInfo> {
    fd.Reset();
    ::unlinkat(dir, tmp.c_str(), 0);
    return Fail(std::move(message));
  };
  if (auto st_write = WriteAll(fd.get(), content, path); !st_write) {
    return cleanup(st_write.error().message);
  }
  // chown before chmod: chown clears set-id bits.
  if (::fchown(fd.get(), own.uid, own.gid) != 0) return cleanup(Errno("chown", path));
  if (::fchmod(fd.get(), own.mode & 07777) != 0) return cleanup(Errno("chmod", path));
  if (::fsync(fd.get()) != 0) return cleanup(Errno("fsync", path));
  if (::close(fd.release()) != 0) return cleanup(Errno("close", path));
  if (::renameat(dir, tmp.c_str(), dir, leaf.c_str()) != 0)
    return cleanup(Errno("rename onto", path));
  Unsynced(path);
  if (::fstatat(dir, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return Fail(Errno("stat", path));
  return FromStat(st);
}

Status PosixFileSystem::ReplaceTree(const std::string& path,
                                    const std::vector<TreeEntry>& entries) {
  std::string leaf;
  auto parent = OpenParent(path, true, &leaf);
  if (!parent) return std::unexpected(parent.error());
  int dir = parent->get();
  std::string tmp = TempName(leaf);
  if (::mkdirat(dir, tmp.c_str(), 0700) != 0) return Fail(Errno("mkdir temporary tree for", path));
  auto fail = [&](std::string message) -> Status {
    // Best effort: the apply fails anyway; what cannot be removed now stays
    // as a hidden .NAME.mesh-host-tmp.* directory (see RemoveStaleTemporaries).
    (void)RemoveAt(dir, tmp, path + " (temporary)", 0);
    return Fail(std::move(message));
  };
  UniqueFd top(::openat(dir, tmp.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!top.valid()) return fail(Errno("open temporary tree for", path));

  // Parents before children: sorted relpaths put "a" before "a/b".
  std::vector<const TreeEntry*> order;
  for (const TreeEntry& e : entries) order.push_back(&e);
  std::sort(order.begin(), order.end(),
            [](const TreeEntry* a, const TreeEntry* b) { return a->relpath < b->relpath; });
  std::vector<std::pair<std::string, uint32_t>> dir_modes;
  for (const TreeEntry* e : order) {
    std::string shown = path + "/" + e->relpath;
    std::vector<std::string_view> comps = Components(e->relpath);
    UniqueFd cur(::fcntl(top.get(), F_DUPFD_CLOEXEC, 0));
    for (size_t i = 0; i + 1 < comps.size(); ++i) {
      std::string c(comps[i]);
      if (::mkdirat(cur.get(), c.c_str(), 0755) != 0 && errno != EEXIST) {
        return fail(Errno("mkdir", shown));
      }
      cur =
          UniqueFd(::openat(cur.get(), c.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!cur.valid()) return fail(Errno("open", shown));
    }
    std::string name(comps.back());
    if (e->type == FileType::kDirectory) {
      if (::mkdirat(cur.get(), name.c_str(), 0700) != 0 && errno != EEXIST) {
        return fail(Errno("mkdir", shown));
      }
      // Modes applied last, so a read-only directory can still be filled.
      dir_modes.emplace_back(e->relpath, e->mode & 07777);
      continue;
    }
    if (e->type != FileType::kRegular) return fail("unpack " + shown + ": not a file or directory");
    UniqueFd fd(::openat(cur.get(), name.c_str(),
                         O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd.valid()) return fail(Errno("create", shown));
    if (auto w = WriteAll(fd.get(), e->content, shown); !w) return fail(w.error().message);
    if (::fchmod(fd.get(), e->mode & 07777) != 0) return fail(Errno("chmod", shown));
  }
  for (auto it = dir_modes.rbegin(); it != dir_modes.rend(); ++it) {
    if (::fchmodat(top.get(), it->first.c_str(), it->second, 0) != 0) {
      return fail(Errno("chmod", path + "/" + it->first));
    }
  }
  if (::fchmod(top.get(), 0755) != 0) return fail(Errno("chmod", path));
  // Every entry is made durable at once, before the tree is swapped in: one
  // syncfs of the file system, not one fsync per file (a bundle of hundreds
  // of files paid a journal commit each). It reports a write-back error of
  // any entry (Linux 5.8 and later: errors since `top` was opened), which
  // fails the tree before anything sees it.
  if (::syncfs(top.get()) != 0) return fail(Errno("syncfs", path));

  struct stat st;
  bool exists = ::fstatat(dir, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
  if (exists) {
    // One atomic step swaps the whole tree; readers never see a mix.
    if (::renameat2(dir, tmp.c_str(), dir, leaf.c_str(), RENAME_EXCHANGE) != 0) {
      return fail(Errno("swap in", path));
    }
    Status removed = RemoveAt(dir, tmp, path + " (old tree)", 0);
    Unsynced(path);
    return removed;
  }
  if (::renameat2(dir, tmp.c_str(), dir, leaf.c_str(), RENAME_NOREPLACE) != 0) {
    return fail(Errno("rename into", path));
  }
  Unsynced(path);
  return core::Ok();
}

Result<std::vector<TreeEntry>> PosixFileSystem::ScanTree(const std::string& path, bool hash) {
  std::string leaf;
  auto parent = OpenParent(path, false, &leaf);
  if (!parent) return std::unexpected(parent.error());
  std::vector<TreeEntry> out;
  if (!parent->valid()) return out;
  struct stat st;
  if (::fstatat(parent->get(), leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return out;
    return Fail(Errno("stat", path));
  }
  if (!S_ISDIR(st.st_mode)) return Fail("scan " + path + ": not a directory");
  UniqueFd top(
      ::openat(parent->get(), leaf.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!top.valid()) return Fail(Errno("open", path));
  if (auto s = ScanAt(top.get(), "", path, hash, 0, out); !s) return std::unexpected(s.error());
  return out;
}

Result<FileInfo> PosixFileSystem::MakeDirectory(const std::string& path,
                                                const ports::Ownership& own) {
  std::string leaf;
  auto parent = OpenParent(path, true, &leaf);
  if (!parent) return std::unexpected(parent.error());
  int dir = parent->get();
  struct stat st;
  if (::fstatat(dir, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno != ENOENT) return Fail(Errno("stat", path));
    // 0700 until its owner and mode are set: never briefly open to others.
    if (::mkdirat(dir, leaf.c_str(), 0700) != 0 && errno != EEXIST) {
      return Fail(Errno("mkdir", path));
    }
    Unsynced(path);
  } else if (!S_ISDIR(st.st_mode)) {
    return Fail("mkdir " + path +
                ": something other than a directory is in the way (not "
                "replaced: it may be someone's)");
  }
  UniqueFd fd(::openat(dir, leaf.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return Fail(Errno("open", path));
  // chown before chmod: chown clears set-id bits.
  if (::fchown(fd.get(), own.uid, own.gid) != 0) return Fail(Errno("chown", path));
  if (::fchmod(fd.get(), own.mode & 07777) != 0) return Fail(Errno("chmod", path));
  if (::fstat(fd.get(), &st) != 0) return Fail(Errno("stat", path));
  return FromStat(st);
}

Result<FileInfo> PosixFileSystem::MakeSymlink(const std::string& path, const std::string& target) {
  std::string leaf;
  auto parent = OpenParentToReplace(path, "symlink", &leaf);
  if (!parent) return std::unexpected(parent.error());
  int dir = parent->get();
  struct stat st;
  std::string tmp = TempName(leaf);
  if (::symlinkat(target.c_str(), dir, tmp.c_str()) != 0) {
    return Fail(Errno("create temporary symlink for", path));
  }
  if (::renameat(dir, tmp.c_str(), dir, leaf.c_str()) != 0) {
    std::string why = Errno("rename onto", path);
    ::unlinkat(dir, tmp.c_str(), 0);
    return Fail(why);
  }
  Unsynced(path);
  if (::fstatat(dir, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return Fail(Errno("stat", path));
  return FromStat(st);
}

Status PosixFileSystem::RemoveEmptyDirectory(const std::string& path) {
  std::string leaf;
  auto parent = OpenParent(path, false, &leaf);
  if (!parent) return std::unexpected(parent.error());
  if (!parent->valid()) return core::Ok();
  if (::unlinkat(parent->get(), leaf.c_str(), AT_REMOVEDIR) != 0) {
    if (errno == ENOENT) return core::Ok();
    if (errno == ENOTEMPTY || errno == EEXIST) {
      return std::unexpected(core::Error{path + ": not empty", core::ErrorKind::kNotEmpty, {}});
    }
    return Fail(Errno("rmdir", path));
  }
  Unsynced(path);
  return core::Ok();
}

Result<size_t> PosixFileSystem::CountEntries(const std::string& path) {
  std::string leaf;
  auto parent = OpenParent(path, false, &leaf);
  if (!parent) return std::unexpected(parent.error());
  if (!parent->valid()) return 0;
  UniqueFd fd(
      ::openat(parent->get(), leaf.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return Fail(Errno("open", path));
  DIR* dir = OpenDirStream(fd);
  if (dir == nullptr) return Fail(Errno("opendir", path));
  size_t n = 0;
  while (dirent* d = ::readdir(dir)) {
    n += std::strcmp(d->d_name, ".") != 0 && std::strcmp(d->d_name, "..") != 0;
  }
  ::closedir(dir);
  return n;
}

Status PosixFileSystem::Remove(const std::string& path) {
  std::string leaf;
  auto parent = OpenParent(path, false, &leaf);
  if (!parent) return std::unexpected(parent.error());
  if (!parent->valid()) return core::Ok();
  Status st = RemoveAt(parent->get(), leaf, path, 0);
  Unsynced(path);
  return st;
}

void PosixFileSystem::Unsynced(const std::string& path) {
  size_t slash = path.rfind('/');
  unsynced_.insert(slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash));
}

Status PosixFileSystem::Flush() {
  // A directory leaves the set only once fsynced: after a failure the next
  // Flush tries it again, so a later record still waits for it.
  for (auto it = unsynced_.begin(); it != unsynced_.end(); it = unsynced_.erase(it)) {
    const std::string& dir = *it;
    UniqueFd fd;
    if (dir == "/") {
      fd = UniqueFd(::fcntl(root_fd_.get(), F_DUPFD_CLOEXEC, 0));
    } else {
      std::string leaf;
      auto parent = OpenParent(dir, false, &leaf);
      if (!parent) return std::unexpected(parent.error());
      if (!parent->valid()) continue;  // removed since: nothing of it to keep
      fd = UniqueFd(
          ::openat(parent->get(), leaf.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!fd.valid() && errno == ENOENT) continue;
    }
    if (!fd.valid()) return Fail(Errno("open", dir));
    if (::fsync(fd.get()) != 0) return Fail(Errno("fsync", dir));
  }
  return core::Ok();
}

Result<int> PosixFileSystem::RemoveStaleTemporaries(const std::string& dir) {
  UniqueFd fd;
  if (dir == "/" || dir.empty()) {
    if (!root_fd_.valid()) return Fail(open_error_);
    fd = UniqueFd(::fcntl(root_fd_.get(), F_DUPFD_CLOEXEC, 0));
  } else {
    std::string leaf;
    auto parent = OpenParent(dir, false, &leaf);
    if (!parent) return std::unexpected(parent.error());
    if (!parent->valid()) return 0;
    fd = UniqueFd(
        ::openat(parent->get(), leaf.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid())
      return errno == ENOENT || errno == ENOTDIR ? 0 : Result<int>(Fail(Errno("open", dir)));
  }
  UniqueFd dup(::fcntl(fd.get(), F_DUPFD_CLOEXEC, 0));
  if (!dup.valid()) return Fail(Errno("dup", dir));
  DIR* d = OpenDirStream(dup);
  if (d == nullptr) return Fail(Errno("opendir", dir));
  std::vector<std::string> stale;
  static constexpr std::string_view kMark = ".mesh-host-tmp.";
  while (dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    size_t at = name.rfind(kMark);
    if (name.empty() || name[0] != '.' || at == std::string_view::npos) continue;
    std::string_view rest = name.substr(at + kMark.size());  // "PID.N"
    pid_t pid = 0;
    auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), pid);
    if (ec != std::errc() || end == rest.data() + rest.size() || *end != '.') continue;
    if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;  // still someone's
    stale.emplace_back(name);
  }
  ::closedir(d);
  int removed = 0;
  for (const std::string& name : stale) {
    if (auto st = RemoveAt(fd.get(), name, dir + "/" + name, 0); !st)
      return std::unexpected(st.error());
    ++removed;
  }
  if (removed > 0 && ::fsync(fd.get()) != 0) return Fail(Errno("fsync", dir));
  return removed;
}

namespace {

// getpwnam_r and getgrnam_r answer ERANGE when the entry does not fit the
// buffer (a group with thousands of members does not fit 16 KiB): grow it,
// up to a bound. The buffer must outlive the entry the call fills.
thread_local std::vector<char> lookup_buffer(16384);

template <typename Lookup>
int RetryOnRange(Lookup lookup) {
  for (;;) {
    int err = lookup(lookup_buffer);
    if (err != ERANGE || lookup_buffer.size() >= (16u << 20)) return err;
    lookup_buffer.resize(lookup_buffer.size() * 4);
  }
}

}  // namespace

Result<std::pair<uint32_t, uint32_t>> PosixFileSystem::LookupIds(const std::string& owner,
                                                                 const std::string& group) {
  // A name the machine does not know may still be a numeric id; not
  // 4294967295, which chown reads as "leave unchanged".
  auto numeric = [](const std::string& s, uint32_t* out) {
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
    return ec == std::errc() && end == s.data() + s.size() && *out != UINT32_MAX;
  };
  uint32_t uid = 0, gid = 0;
  struct passwd pw, *pwp = nullptr;
  int err = RetryOnRange([&](std::vector<char>& buf) {
    return ::getpwnam_r(owner.c_str(), &pw, buf.data(), buf.size(), &pwp);
  });
  if (err == 0 && pwp != nullptr) {
    uid = pw.pw_uid;
  } else if (err != 0 && err != ENOENT && err != ESRCH) {
    return Fail("look up user \"" + owner + "\": " + std::strerror(err));
  } else if (!numeric(owner, &uid)) {
    return Fail("unknown user \"" + owner + "\"");
  }
  struct group gr, *grp = nullptr;
  err = RetryOnRange([&](std::vector<char>& buf) {
    return ::getgrnam_r(group.c_str(), &gr, buf.data(), buf.size(), &grp);
  });
  if (err == 0 && grp != nullptr) {
    gid = gr.gr_gid;
  } else if (err != 0 && err != ENOENT && err != ESRCH) {
    return Fail("look up group \"" + group + "\": " + std::strerror(err));
  } else if (!numeric(group, &gid)) {
    return Fail("unknown group \"" + group + "\"");
  }
  return std::make_pair(uid, gid);
}

}  // namespace mesh::adapters
