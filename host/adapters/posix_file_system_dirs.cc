#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <optional>

#include "host/adapters/posix_file_system.h"
#include "host/adapters/posix_internal.h"
#include "host/core/sha256.h"

namespace mesh::adapters {

using namespace posix_internal;  // NOLINT: the adapter's own helpers
using core::kMaxTreeDepth;

namespace {

// The stat that called this file regular is not the open: a user who can
// write in the tree may swap in a FIFO between the two (RENAME_EXCHANGE),
// and a blocking open of a FIFO waits for a writer forever. So the open
// never blocks, and the type is checked again on the descriptor: no longer
// a regular file is an empty digest, the tree as it now is (drifted).
// `acl`: whether the file carries an ACL (access beyond its mode).
Result<std::string> HashFileAt(int dirfd, const std::string& name, const std::string& shown,
                               bool* acl) {
  UniqueFd fd(::openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) return Fail(Errno("open", shown));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return Fail(Errno("stat", shown));
  if (!S_ISREG(st.st_mode)) return std::string();
  *acl = HasAccessAcl(fd.get());
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
  // What a mount holds is not the tree's: judged as drift, the tree would
  // be replaced and the mount's content deleted with the old one.
  if (depth > 0 && IsMountRoot(fd.get())) {
    return Fail("scan " + shown +
                ": a file system is mounted there; the host does not judge, replace or remove a "
                "tree that holds a mount");
  }
  auto dir = DirStream::Open(fd, shown);
  if (!dir) return std::unexpected(dir.error());
  auto names = dir->Names();
  if (!names) return std::unexpected(names.error());
  std::vector<std::string> subdirs;
  Status status = core::Ok();
  int own = dir->fd();
  for (const std::string& name : *names) {
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
    // Hashing, each entry is looked at closely: its ACL too.
    if (hash && e.type == FileType::kDirectory) e.info = WithDirectoryAcl(own, name, e.info);
    if (hash && e.type == FileType::kRegular) {
      auto digest = HashFileAt(own, name, shown + "/" + name, &e.info.access_acl);
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
  return status;
}

// The directories of a tree being written (or read), opened one relpath at
// a time and the last one kept open: consecutive entries of a sorted tree
// share it, so a file costs its own open and not its parents' every time.
class TreeDirs {
 public:
  // `create`: a missing directory is made (0755, as an implicit parent of
  // an archive member); otherwise it is a failure. A `top` of -1 opens
  // nothing.
  TreeDirs(int top, bool create) : top_(top), create_(create) {}

  // The directory at `rel` below the top ("" is the top itself), or -1 with
  // error() and failed_step() saying what failed. A directory that could
  // not be opened is not tried again for the entries after it.
  int Open(std::string_view rel) {
    if (top_ < 0) return -1;
    if (opened_ && rel == rel_) return Current();  // -1 again after a failure
    opened_ = true;
    rel_ = rel;
    fresh_gid_.reset();
    fd_ = UniqueFd();
    if (rel.empty()) return top_;
    UniqueFd cur;
    int at = top_;
    for (std::string_view comp : Components(rel)) {
      std::string c(comp);
      if (create_ && ::mkdirat(at, c.c_str(), 0755) != 0 && errno != EEXIST) {
        return Failed("mkdir");
      }
      cur = UniqueFd(::openat(at, c.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!cur.valid()) return Failed("open");
      at = cur.get();
    }
    fd_ = std::move(cur);
    return fd_.get();
  }
  int error() const { return error_; }
  const char* failed_step() const { return step_; }

  // The group a file created now in the directory last opened gets (its
  // own when it is setgid, else the host's), or none when such a file
  // would get more than its owner, group and mode (a default ACL), or
  // that cannot be told.
  std::optional<gid_t> FreshGid() {
    if (!fresh_gid_.has_value()) {
      fresh_gid_.emplace();  // asked: none unless told below
      struct stat st;
      int fd = Current();
      if (fd >= 0 && ::fstat(fd, &st) == 0) {
        bool acl = ::fgetxattr(fd, "system.posix_acl_default", nullptr, 0) >= 0 ||
                   (errno != ENODATA && errno != ENOTSUP);
        if (!acl) *fresh_gid_ = (st.st_mode & S_ISGID) != 0 ? st.st_gid : ::getegid();
      }
    }
    return *fresh_gid_;
  }

 private:
  int Current() const { return rel_.empty() ? top_ : fd_.get(); }
  int Failed(const char* step) {
    error_ = errno;
    step_ = step;
    fd_ = UniqueFd();
    return -1;
  }

  int top_;
  bool create_;
  bool opened_ = false;
  std::string rel_;
  UniqueFd fd_;
  std::optional<std::optional<gid_t>> fresh_gid_;  // outer: asked since Open
  int error_ = 0;
  const char* step_ = "open";
};

// Links the file `name` of the old tree's directory `old_dir` into `new_dir`
// when it is exactly what `e` would write there: a regular file of the same
// mode and bytes that only the host can have made so, with the owner and
// group a file it writes there would get (`gid`), one name and no extended
// attributes. Nothing of it is written again (the syncfs after every entry
// makes its new name durable, and its data if it was not already), and
// after the swap the old tree's name is deleted, not its blocks: a bundle in which one file of 239
// changed no longer rewrites and frees the other 238. Returns what fstat said when the bytes were
// compared; none on any doubt or failure, and the caller then writes the file as it would have.
std::optional<struct stat> LinkIfUnchanged(int old_dir, const std::string& name, const TreeEntry& e,
                                           int new_dir, std::optional<gid_t> gid) {
  if (old_dir < 0 || !gid.has_value()) return std::nullopt;
  UniqueFd fd(::openat(old_dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) return std::nullopt;
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
      st.st_uid != ::geteuid() || st.st_gid != *gid || (st.st_mode & 07777) != (e.mode & 07777) ||
      static_cast<uint64_t>(st.st_size) != e.content.size()) {
    return std::nullopt;
  }
  if (::flistxattr(fd.get(), nullptr, 0) != 0) return std::nullopt;  // some, or cannot tell
  // Open for writing by no one (a descriptor, a shared writable mapping):
  // a read lease is granted only then. It is given back at once; a writer
  // that comes later is caught by the check after the swap.
  if (::fcntl(fd.get(), F_SETLEASE, F_RDLCK) != 0) return std::nullopt;
  (void)::fcntl(fd.get(), F_SETLEASE, F_UNLCK);
  char buf[64 * 1024];
  for (size_t at = 0; at < e.content.size();) {
    ssize_t n =
        ::pread(fd.get(), buf, std::min(sizeof buf, e.content.size() - at), static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || std::memcmp(buf, e.content.data() + at, static_cast<size_t>(n)) != 0) {
      return std::nullopt;
    }
    at += static_cast<size_t>(n);
  }
  // By the descriptor, so the name cannot be swapped between the checks and
  // the link. AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; /proc/self/fd does not.
  if (::linkat(fd.get(), "", new_dir, name.c_str(), AT_EMPTY_PATH) != 0) {
    std::string proc = "/proc/self/fd/" + std::to_string(fd.get());
    if (::linkat(AT_FDCWD, proc.c_str(), new_dir, name.c_str(), AT_SYMLINK_FOLLOW) != 0) {
      return std::nullopt;
    }
  }
  return st;
}

// Still the file that was compared: a process that had it open, or came to
// it since, may have written to it or changed its mode or owner, and the
// tree's fingerprint, taken next, would record that as declared.
bool Unmoved(const struct stat& then, const struct stat& now) {
  return now.st_ino == then.st_ino && now.st_size == then.st_size &&
         now.st_mtim.tv_sec == then.st_mtim.tv_sec && now.st_mtim.tv_nsec == then.st_mtim.tv_nsec &&
         now.st_mode == then.st_mode && now.st_uid == then.st_uid && now.st_gid == then.st_gid &&
         now.st_nlink == 1;
}

// After the swap: every linked file still as it was compared, else the
// tree fails (the next apply finds the file differing and writes it
// afresh).
Status StillAsLinked(int top, const std::string& path,
                     const std::vector<std::pair<const std::string*, struct stat>>& linked) {
  for (const auto& [rel, then] : linked) {
    struct stat now;
    if (::fstatat(top, rel->c_str(), &now, AT_SYMLINK_NOFOLLOW) != 0 || !Unmoved(then, now)) {
      return Fail("replace " + path + ": " + *rel +
                  " was changed while the tree was being replaced; the next apply writes it "
                  "again");
    }
  }
  return core::Ok();
}

// Makes every entry under `made` (the temporary tree), parents first;
// files that are exactly an entry of the old tree are linked from `old`.
// Directories' modes are left for the caller to apply last.
Status FillTree(const std::string& path, const std::vector<const TreeEntry*>& order,
                bool link_from_old, TreeDirs& made, TreeDirs& old,
                std::vector<std::pair<std::string, uint32_t>>& dir_modes,
                std::vector<std::pair<const std::string*, struct stat>>& linked) {
  for (const TreeEntry* e : order) {
    std::string shown = path + "/" + e->relpath;
    size_t slash = e->relpath.rfind('/');
    std::string_view parent_rel = slash == std::string::npos
                                      ? std::string_view()
                                      : std::string_view(e->relpath).substr(0, slash);
    std::string name = e->relpath.substr(slash == std::string::npos ? 0 : slash + 1);
    int cur = made.Open(parent_rel);
    if (cur < 0) {
      errno = made.error();
      return Fail(Errno(made.failed_step(), shown));
    }
    if (e->type == FileType::kDirectory) {
      if (::mkdirat(cur, name.c_str(), 0700) != 0 && errno != EEXIST) {
        return Fail(Errno("mkdir", shown));
      }
      // Modes applied last, so a read-only directory can still be filled.
      dir_modes.emplace_back(e->relpath, e->mode & 07777);
      continue;
    }
    if (e->type != FileType::kRegular) return Fail("unpack " + shown + ": not a file or directory");
    if (link_from_old) {
      if (auto at = LinkIfUnchanged(old.Open(parent_rel), name, *e, cur, made.FreshGid())) {
        linked.emplace_back(&e->relpath, *at);
        continue;
      }
    }
    UniqueFd fd(
        ::openat(cur, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd.valid()) return Fail(Errno("create", shown));
    if (auto w = WriteAll(fd.get(), e->content, shown); !w) return Fail(w.error().message);
    if (::fchmod(fd.get(), e->mode & 07777) != 0) return Fail(Errno("chmod", shown));
  }
  return core::Ok();
}

// The tree the host made (open as `top`) once it is at `leaf` in `dir`,
// scanned through `top`: someone who can write the parent may have put
// another directory under the temporary name before the swap, or at the
// path since, and a scan by name would take theirs for the host's.
// `removed`: whether the old tree went.
Result<std::vector<TreeEntry>> SwappedIn(
    int dir, const std::string& leaf, int top, const std::string& path, const Status& removed,
    const std::vector<std::pair<const std::string*, struct stat>>& linked) {
  struct stat at, made;
  if (::fstatat(dir, leaf.c_str(), &at, AT_SYMLINK_NOFOLLOW) != 0 || ::fstat(top, &made) != 0) {
    return Fail(Errno("stat", path));
  }
  if (at.st_dev != made.st_dev || at.st_ino != made.st_ino) {
    return Fail("swap in " + path +
                ": what is there now is not the tree the host made (someone else who can write "
                "its directory put another in its place)");
  }
  if (!removed) return std::unexpected(removed.error());
  if (auto st = StillAsLinked(top, path, linked); !st) return std::unexpected(st.error());
  std::vector<TreeEntry> scanned;
  if (auto st = ScanAt(top, "", path, /*hash=*/false, 0, scanned); !st) {
    return std::unexpected(st.error());
  }
  return scanned;
}

}  // namespace

Result<std::vector<TreeEntry>> PosixFileSystem::ReplaceTree(const std::string& path,
                                                            const std::vector<TreeEntry>& entries) {
  std::string leaf;
  auto parent = OpenParent(path, true, &leaf);
  if (!parent) return std::unexpected(parent.error());
  int dir = parent->get();
  std::string tmp = TempName(leaf);
  if (::mkdirat(dir, tmp.c_str(), 0700) != 0)
    return Fail(Errno("mkdir temporary tree for", Shown(path)));
  auto fail = [&](std::string message) {
    // Best effort: the apply fails anyway; what cannot be removed now stays
    // as a hidden .NAME.mesh-host-tmp.* directory (see RemoveStaleTemporaries).
    (void)RemoveAt(dir, tmp, Shown(path) + " (temporary)", 0);
    return Fail(std::move(message));
  };
  UniqueFd top(::openat(dir, tmp.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!top.valid()) return fail(Errno("open temporary tree for", Shown(path)));
  // Nothing unpacked inherits an ACL: the modes the bundle gives are all
  // the access its entries get (DropInheritedAcl).
  if (auto dropped = DropInheritedAcl(top.get(), Shown(path), /*and_default=*/true); !dropped) {
    return fail(dropped.error().message);
  }
  // The tree being replaced, if any: its files that are exactly the new
  // entries are linked into the new tree rather than written again.
  UniqueFd old_top(::openat(dir, leaf.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  // Swapped out, a mount in the old tree would move with it under the
  // temporary name, and the new tree take its place empty.
  if (old_top.valid()) {
    if (auto held = NoMountIn(old_top.get(), Shown(path), 0); !held)
      return fail(held.error().message);
  }

  // Parents before children: sorted relpaths put "a" before "a/b", and a
  // directory's own entries come together, so each side keeps the last
  // directory it opened.
  std::vector<const TreeEntry*> order;
  order.reserve(entries.size());
  for (const TreeEntry& e : entries) order.push_back(&e);
  std::sort(order.begin(), order.end(),
            [](const TreeEntry* a, const TreeEntry* b) { return a->relpath < b->relpath; });
  TreeDirs made(top.get(), /*create=*/true);
  TreeDirs old(old_top.get(), /*create=*/false);
  std::vector<std::pair<std::string, uint32_t>> dir_modes;
  // Linked files, and what fstat said of each when its bytes were compared.
  std::vector<std::pair<const std::string*, struct stat>> linked;
  if (auto st = FillTree(Shown(path), order, old_top.valid(), made, old, dir_modes, linked); !st) {
    return fail(st.error().message);
  }
  for (auto it = dir_modes.rbegin(); it != dir_modes.rend(); ++it) {
    if (::fchmodat(top.get(), it->first.c_str(), it->second, 0) != 0) {
      return fail(Errno("chmod", Shown(path) + "/" + it->first));
    }
  }
  if (::fchmod(top.get(), core::kTreeRootMode) != 0) return fail(Errno("chmod", Shown(path)));
  // Every entry is made durable at once, before the tree is swapped in: one
  // syncfs of the file system, not one fsync per file (a bundle of hundreds
  // of files paid a journal commit each). It reports a write-back error of
  // any entry (Linux 5.8 and later: errors since `top` was opened), which
  // fails the tree before anything sees it.
  if (::syncfs(top.get()) != 0) return fail(Errno("syncfs", Shown(path)));
  if (before_swap_) before_swap_();

  struct stat st;
  bool exists = ::fstatat(dir, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
  if (exists) {
    // One atomic step swaps the whole tree; readers never see a mix.
    if (::renameat2(dir, tmp.c_str(), dir, leaf.c_str(), RENAME_EXCHANGE) != 0) {
      return fail(Errno("swap in", Shown(path)));
    }
    Status removed = RemoveAt(dir, tmp, Shown(path) + " (old tree)", 0);
    Unsynced(path);
    return SwappedIn(dir, leaf, top.get(), Shown(path), removed, linked);
  }
  // No tree there (or the one linked from was removed since it was opened).
  if (::renameat2(dir, tmp.c_str(), dir, leaf.c_str(), RENAME_NOREPLACE) != 0) {
    return fail(Errno("rename into", Shown(path)));
  }
  Unsynced(path);
  return SwappedIn(dir, leaf, top.get(), Shown(path), core::Ok(), linked);
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
    return Fail(Errno("stat", Shown(path)));
  }
  if (!S_ISDIR(st.st_mode)) return Fail("scan " + Shown(path) + ": not a directory");
  UniqueFd top(
      ::openat(parent->get(), leaf.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!top.valid()) return Fail(Errno("open", Shown(path)));
  if (auto s = ScanAt(top.get(), "", Shown(path), hash, 0, out); !s)
    return std::unexpected(s.error());
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
    if (errno != ENOENT) return Fail(Errno("stat", Shown(path)));
    // 0700 until its owner and mode are set: never briefly open to others.
    if (::mkdirat(dir, leaf.c_str(), 0700) != 0 && errno != EEXIST) {
      return Fail(Errno("mkdir", Shown(path)));
    }
    Unsynced(path);
  } else if (!S_ISDIR(st.st_mode)) {
    return Fail("mkdir " + Shown(path) +
                ": something other than a directory is in the way (not "
                "replaced: it may be someone's)");
  }
  UniqueFd fd(::openat(dir, leaf.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return Fail(Errno("open", Shown(path)));
  // chown before chmod: chown clears set-id bits.
  if (::fchown(fd.get(), own.uid, own.gid) != 0) return Fail(Errno("chown", Shown(path)));
  if (auto dropped = DropInheritedAcl(fd.get(), Shown(path)); !dropped) {
    return std::unexpected(dropped.error());
  }
  if (::fchmod(fd.get(), own.mode & 07777) != 0) return Fail(Errno("chmod", Shown(path)));
  if (::fstat(fd.get(), &st) != 0) return Fail(Errno("stat", Shown(path)));
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
    return Fail(Errno("create temporary symlink for", Shown(path)));
  }
  // Held open (O_PATH), the link's inode cannot be freed and its number
  // given to another link put in its place; read through the handle, it
  // is known to be the host's.
  UniqueFd held(::openat(dir, tmp.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  struct stat made;
  if (!held.valid() || ::fstat(held.get(), &made) != 0) {
    std::string why = Errno("open temporary symlink for", Shown(path));
    ::unlinkat(dir, tmp.c_str(), 0);
    return Fail(why);
  }
  char was[PATH_MAX];
  ssize_t n = ::readlinkat(held.get(), "", was, sizeof was);
  if (!S_ISLNK(made.st_mode) || n < 0 || std::string_view(was, static_cast<size_t>(n)) != target) {
    return Fail("symlink " + Shown(path) +
                ": its temporary link was replaced as it was made (someone "
                "else can write its directory)");
  }
  if (before_swap_) before_swap_();
  if (::renameat(dir, tmp.c_str(), dir, leaf.c_str()) != 0) {
    std::string why = Errno("rename onto", Shown(path));
    ::unlinkat(dir, tmp.c_str(), 0);
    return Fail(why);
  }
  Unsynced(path);
  if (::fstatat(dir, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return Fail(Errno("stat", Shown(path)));
  // A link is never changed in place: the same inode is the link made.
  if (st.st_dev != made.st_dev || st.st_ino != made.st_ino) {
    return Fail("symlink " + Shown(path) +
                ": what is there now is not the link the host made (someone else who can write "
                "its directory put another in its place)");
  }
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
    return Fail(Errno("rmdir", Shown(path)));
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
  if (!fd.valid()) return Fail(Errno("open", Shown(path)));
  auto dir = DirStream::Open(fd, path);
  if (!dir) return std::unexpected(dir.error());
  auto names = dir->Names();
  if (!names) return std::unexpected(names.error());
  return names->size();
}

Result<UniqueFd> PosixFileSystem::OpenDirectory(const std::string& path) {
  if (path == "/" || path.empty()) {
    if (!Reopened()) return Fail(open_error_);
    UniqueFd fd(::fcntl(root_fd_.get(), F_DUPFD_CLOEXEC, 0));
    if (!fd.valid()) return Fail(Errno("dup root", root_));
    return fd;
  }
  std::string leaf;
  auto parent = OpenParent(path, false, &leaf);
  if (!parent) return std::unexpected(parent.error());
  if (!parent->valid()) return UniqueFd();
  UniqueFd fd(
      ::openat(parent->get(), leaf.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid() && errno != ENOENT && errno != ENOTDIR) return Fail(Errno("open", Shown(path)));
  return fd;
}

}  // namespace mesh::adapters
