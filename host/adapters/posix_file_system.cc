#include "host/adapters/posix_file_system.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "host/adapters/posix_internal.h"
#include "host/core/sha256.h"

namespace mesh::adapters {
namespace posix_internal {

using core::kMaxTreeDepth;

std::string Errno(std::string_view what, const std::string& path, int err) {
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
  // The process id, read once: a first apply names thousands of temporaries.
  static const std::string pid = std::to_string(::getpid());
  return "." + base + std::string(core::kTemporaryMark) + pid + "." +
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

Result<DirStream> DirStream::Open(UniqueFd& fd, const std::string& shown) {
  DIR* dir = ::fdopendir(fd.get());
  if (dir == nullptr) return Fail(Errno("opendir", shown));
  (void)fd.release();
  return DirStream(dir, shown);
}

Result<std::vector<std::string>> DirStream::Names() {
  std::vector<std::string> names;
  for (;;) {
    errno = 0;
    dirent* d = ::readdir(dir_.get());
    if (d == nullptr) break;
    if (std::strcmp(d->d_name, ".") != 0 && std::strcmp(d->d_name, "..") != 0) {
      names.emplace_back(d->d_name);
    }
  }
  if (errno != 0) return Fail(Errno("readdir", shown_));
  return names;
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
    if (IsMountRoot(fd.get())) {
      return Fail("remove " + shown +
                  ": a file system is mounted there; it is left, with all it "
                  "holds");
    }
    auto dir = DirStream::Open(fd, shown);
    if (!dir) return std::unexpected(dir.error());
    auto names = dir->Names();
    if (!names) return std::unexpected(names.error());
    for (const std::string& child : *names) {
      Status st_children = RemoveAt(dir->fd(), child, shown + "/" + child, depth + 1);
      if (!st_children) return st_children;
    }
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

}  // namespace posix_internal

using namespace posix_internal;  // NOLINT: this file's own helpers

Result<std::unique_ptr<PosixFileSystem>> PosixFileSystem::Open(const std::string& root, bool create,
                                                               std::vector<std::string>* made) {
  if (root.empty() || root[0] != '/') return Fail("root " + root + " is not an absolute path");
  if (create) {
    // Make each missing component; the root itself is the operator's flag,
    // so following symlinks here is intended.
    std::string prefix;
    for (std::string_view comp : Components(root)) {
      if (comp == ".") continue;  // spelled as PathAsMade spells it
      prefix += "/";
      prefix += comp;
      if (::mkdir(prefix.c_str(), 0755) == 0) {
        if (made != nullptr) made->push_back(prefix);
      } else if (errno != EEXIST) {
        return Fail(Errno("mkdir", prefix));
      }
    }
  }
  UniqueFd fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return Fail(Errno("open root", root));
  return std::unique_ptr<PosixFileSystem>(new PosixFileSystem(root, std::move(fd)));
}

std::string PosixFileSystem::PathAsMade(const std::string& root) {
  std::string path;
  for (std::string_view comp : Components(root)) {
    if (comp != ".") path.append("/").append(comp);
  }
  return path;
}

Result<core::FileInfo> PosixFileSystem::StatRoot() {
  if (!Reopened()) return Fail(open_error_);
  struct stat st;
  if (::fstat(root_fd_.get(), &st) != 0) return Fail(Errno("stat", root_));
  return FromStat(st);
}

core::Status PosixFileSystem::ChmodRoot(uint32_t mode) {
  if (!Reopened()) return Fail(open_error_);
  if (::fchmod(root_fd_.get(), mode) != 0) return Fail(Errno("chmod", root_));
  return core::Ok();
}

bool PosixFileSystem::Reopened() {
  if (root_fd_.valid()) return true;
  UniqueFd fd(::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return false;
  root_fd_ = std::move(fd);
  open_error_.clear();
  return true;
}

std::unique_ptr<PosixFileSystem> PosixFileSystem::OpenOrDeferError(const std::string& root) {
  auto fs = Open(root);
  if (fs) return std::move(*fs);
  return std::unique_ptr<PosixFileSystem>(
      new PosixFileSystem(root, UniqueFd(), fs.error().message));
}

Result<UniqueFd> PosixFileSystem::OpenParent(const std::string& path, bool create,
                                             std::string* leaf) {
  if (!Reopened()) return Fail(open_error_);
  std::vector<std::string_view> comps = Components(path);
  if (comps.empty()) return Fail("path " + Shown(path) + " names the root itself");
  for (std::string_view c : comps) {
    if (c == "..")
      return Fail(core::ErrorKind::kOutsideRoot, "path " + Shown(path) + " contains ..");
  }
  *leaf = std::string(comps.back());
  UniqueFd cur(::fcntl(root_fd_.get(), F_DUPFD_CLOEXEC, 0));
  if (!cur.valid()) return Fail(Errno("dup root", root_));
  std::string walked;
  for (size_t i = 0; i + 1 < comps.size(); ++i) {
    std::string comp(comps[i]);
    walked += "/" + comp;
    bool made = false, opened = false;
    for (int attempt = 0; attempt < 2 && !opened; ++attempt) {
      int fd = ::openat(cur.get(), comp.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd >= 0) {
        cur = UniqueFd(fd);
        opened = true;
        // mkdirat's mode passes through the umask (the shipped unit's 0077
        // would make it 0700, unreadable to a service user): set it whole.
        if (made && ::fchmod(cur.get(), kCreatedDirMode) != 0)
          return Fail(Errno("chmod", Shown(walked)));
        continue;
      }
      int err = errno;
      if (err == ENOENT) {
        if (!create) return UniqueFd();
        if (::mkdirat(cur.get(), comp.c_str(), kCreatedDirMode) != 0) {
          if (errno != EEXIST) return Fail(Errno("mkdir", Shown(walked)));
        } else {
          made = true;
          Unsynced(walked);  // its entry in its parent, fsynced at Flush
        }
        continue;
      }
      struct stat st;
      if (::fstatat(cur.get(), comp.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
          S_ISLNK(st.st_mode)) {
        return Fail(core::ErrorKind::kOutsideRoot,
                    "path " + Shown(path) + ": " + walked +
                        " is a symlink; mesh-host does not follow symlinks under its root (" +
                        root_ + ")");
      }
      if (err == ENOTDIR)
        return Fail("path " + Shown(path) + ": " + walked + " is not a directory");
      return Fail(Errno("open", Shown(walked), err));
    }
    // Made twice and gone twice before it could be opened: someone else
    // removes it, and the walk must not go on from the directory above.
    if (!opened)
      return Fail("path " + Shown(path) + ": " + walked + " is removed as soon as it is made");
  }
  return cur;
}

Result<FileInfo> PosixFileSystem::Stat(const std::string& path) {
  // A root that does not exist yet holds nothing: everything under it is
  // missing (a plan before the first apply).
  if (!Reopened() && ::access(root_.c_str(), F_OK) != 0 && errno == ENOENT) return FileInfo{};
  std::string leaf;
  auto parent = OpenParent(path, false, &leaf);
  if (!parent) return std::unexpected(parent.error());
  if (!parent->valid()) return FileInfo{};
  struct stat st;
  if (::fstatat(parent->get(), leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return FileInfo{};
    return Fail(Errno("stat", Shown(path)));
  }
  return WithDirectoryAcl(parent->get(), leaf, FromStat(st));
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
                                    : Result<FileInfo>(Fail(Errno("stat", Shown(path)))));
    } else {
      out.push_back(WithDirectoryAcl(cached_fd.get(), leaf, FromStat(st)));
    }
  }
  return out;
}

Result<std::pair<UniqueFd, size_t>> PosixFileSystem::OpenRegular(const std::string& path,
                                                                 uint64_t limit) {
  std::string leaf;
  auto parent = OpenParent(path, false, &leaf);
  if (!parent) return std::unexpected(parent.error());
  if (!parent->valid()) return Fail("read " + Shown(path) + ": no such file");
  // O_NONBLOCK: a FIFO planted at the path must not hang the open.
  UniqueFd fd(
      ::openat(parent->get(), leaf.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) return Fail(Errno("open", Shown(path)));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return Fail(Errno("stat", Shown(path)));
  if (!S_ISREG(st.st_mode)) return Fail("read " + Shown(path) + ": not a regular file");
  if (static_cast<uint64_t>(st.st_size) > limit) {
    return Fail("read " + Shown(path) + ": " + std::to_string(st.st_size) +
                " bytes exceeds the limit of " + std::to_string(limit));
  }
  return std::pair<UniqueFd, size_t>(std::move(fd), static_cast<size_t>(st.st_size));
}

Result<FileInfo> PosixFileSystem::StatOpened(int fd) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return Fail(Errno("stat", "an open file"));
  return FromStat(st);
}

Result<std::string> PosixFileSystem::ReadLink(const std::string& path) {
  std::string leaf;
  auto parent = OpenParent(path, false, &leaf);
  if (!parent) return std::unexpected(parent.error());
  if (!parent->valid()) return Fail("readlink " + Shown(path) + ": no such file");
  char buf[PATH_MAX];
  ssize_t n = ::readlinkat(parent->get(), leaf.c_str(), buf, sizeof buf);
  if (n < 0) return Fail(Errno("readlink", Shown(path)));
  return std::string(buf, static_cast<size_t>(n));
}

Result<std::string> PosixFileSystem::ReadFile(const std::string& path, uint64_t limit) {
  auto opened = OpenRegular(path, limit);
  if (!opened) return std::unexpected(opened.error());
  auto& [fd, file_size] = *opened;
  auto bytes = ReadUpTo(fd.get(), file_size);
  if (!bytes) return Fail(Errno("read", Shown(path), bytes.error()));
  return std::move(*bytes);
}

Result<std::string> PosixFileSystem::ReadFileAsSeen(const std::string& path, const FileInfo& seen) {
  auto opened = OpenRegular(path, seen.size);
  if (!opened) return std::unexpected(opened.error());
  auto& [fd, file_size] = *opened;
  auto as_seen = [&] {
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) return false;
    FileInfo now = FromStat(st);
    return now.type == seen.type && now.size == seen.size && now.inode == seen.inode &&
           now.mtime_ns == seen.mtime_ns && now.ctime_ns == seen.ctime_ns &&
           now.mode == seen.mode && now.uid == seen.uid && now.gid == seen.gid;
  };
  if (!as_seen())
    return Fail(core::ErrorKind::kChanged, "read " + Shown(path) + ": not the file looked at");
  if (HasAccessAcl(fd.get())) {
    return Fail(core::ErrorKind::kBeyondMode, "read " + Shown(path) + ": it carries an ACL");
  }
  auto bytes = ReadUpTo(fd.get(), file_size);
  if (!bytes) return Fail(Errno("read", Shown(path), bytes.error()));
  if (!as_seen())
    return Fail(core::ErrorKind::kChanged, "read " + Shown(path) + ": changed while it was read");
  return std::move(*bytes);
}

Result<UniqueFd> PosixFileSystem::OpenParentToReplace(const std::string& path,
                                                      std::string_view verb, std::string* leaf) {
  auto parent = OpenParent(path, true, leaf);
  if (!parent) return std::unexpected(parent.error());
  struct stat st;
  if (::fstatat(parent->get(), leaf->c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
      S_ISDIR(st.st_mode)) {
    return Fail(std::string(verb) + " " + Shown(path) + ": a directory is in the way");
  }
  return parent;
}

Result<FileInfo> PosixFileSystem::WriteFileAtomicFrom(const std::string& path,
                                                      const ContentProducer& produce,
                                                      const ports::Ownership& own) {
  std::string leaf;
  auto parent = OpenParentToReplace(path, "write", &leaf);
  if (!parent) return std::unexpected(parent.error());
  int dir = parent->get();
  struct stat st;
  std::string tmp = TempName(leaf);
  UniqueFd fd(
      ::openat(dir, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) return Fail(Errno("create temporary file for", Shown(path)));
  auto cleanup = [&](std::string message) -> Result<FileInfo> {
    fd.Reset();
    ::unlinkat(dir, tmp.c_str(), 0);
    return Fail(std::move(message));
  };
  // A write that failed fails the file, whatever the producer does after.
  Status failed_write = core::Ok();
  Status produced = core::Ok();
  try {
    produced = produce([&](std::string_view piece) {
      if (failed_write) failed_write = WriteAll(fd.get(), piece, Shown(path));
      return failed_write;
    });
  } catch (...) {  // bad_alloc: the apply says so; no temporary is left
    fd.Reset();
    ::unlinkat(dir, tmp.c_str(), 0);
    throw;
  }
  if (!failed_write) return cleanup(failed_write.error().message);
  if (!produced) return cleanup(produced.error().message);
  // chown before chmod: chown clears set-id bits.
  if (::fchown(fd.get(), own.uid, own.gid) != 0) return cleanup(Errno("chown", Shown(path)));
  if (auto st = DropInheritedAcl(fd.get(), Shown(path)); !st) return cleanup(st.error().message);
  if (::fchmod(fd.get(), own.mode & 07777) != 0) return cleanup(Errno("chmod", Shown(path)));
  if (::fsync(fd.get()) != 0) return cleanup(Errno("fsync", Shown(path)));
  if (::close(fd.release()) != 0) return cleanup(Errno("close", Shown(path)));
  if (::renameat(dir, tmp.c_str(), dir, leaf.c_str()) != 0)
    return cleanup(Errno("rename onto", Shown(path)));
  Unsynced(path);
  if (::fstatat(dir, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return Fail(Errno("stat", Shown(path)));
  return FromStat(st);
}

void PosixFileSystem::Unsynced(const std::string& path) {
  size_t slash = path.rfind('/');
  unsynced_.insert(slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash));
}

Status PosixFileSystem::Flush() {
  // Placed files' owners and modes, set after their contents were made
  // durable, are made durable with them here. A failed syncfs reported its
  // error, which its descriptor will not report again: the descriptor goes
  // with it, and the record that waited for it is not saved.
  for (auto it = placed_since_flush_.begin(); it != placed_since_flush_.end();) {
    int failed = ::syncfs(it->second.get()) != 0 ? errno : 0;
    it = placed_since_flush_.erase(it);
    if (failed != 0) {
      return Fail(Errno("syncfs", root_ + " (the files this apply wrote)", failed));
    }
  }
  // A directory leaves the set only once fsynced: after a failure the next
  // Flush tries it again, so a later record still waits for it.
  for (auto it = unsynced_.begin(); it != unsynced_.end(); it = unsynced_.erase(it)) {
    auto fd = OpenDirectory(*it);
    if (!fd) return std::unexpected(fd.error());
    if (!fd->valid()) continue;  // removed since: nothing of it to keep
    if (::fsync(fd->get()) != 0) return Fail(Errno("fsync", Shown(*it)));
  }
  return core::Ok();
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
