// PosixFileSystem's deletions: a file, a whole tree (moved aside before it
// is emptied, so that a kill never leaves part of it at its path), and the
// temporaries a killed run left behind.
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <string>
#include <vector>

#include "host/adapters/posix_file_system.h"
#include "host/adapters/posix_internal.h"
#include "host/core/file_info.h"

namespace mesh::adapters {

using namespace posix_internal;  // NOLINT: the adapter's own helpers

Status PosixFileSystem::Remove(const std::string& path) {
  std::string leaf;
  auto parent = OpenParent(path, false, &leaf);
  if (!parent) return std::unexpected(parent.error());
  if (!parent->valid()) return core::Ok();
  // A tree holding a mount is left whole, not emptied up to the mount.
  UniqueFd tree(
      ::openat(parent->get(), leaf.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!tree.valid()) {
    Status st = RemoveAt(parent->get(), leaf, Shown(path), 0);
    Unsynced(path);
    return st;
  }
  if (auto held = NoMountIn(tree.get(), Shown(path), 0); !held) return held;
  // Emptied where it stands, a tree cut short by a kill would be part
  // there: the next apply would take it for someone's change and keep it.
  // Moved aside first, durably, it is gone from its path before its first
  // file goes; what a kill leaves aside, the sweep after it takes.
  std::string aside = TempName(leaf);
  if (::renameat2(parent->get(), leaf.c_str(), parent->get(), aside.c_str(), RENAME_NOREPLACE) !=
      0) {
    if (errno == ENOENT) return core::Ok();
    if (errno == EBUSY) return Fail("remove " + Shown(path) + ": a file system is mounted there");
    return Fail(Errno("move aside to remove", Shown(path)));
  }
  Status st =
      ::fsync(parent->get()) == 0 ? core::Ok() : Fail(Errno("fsync parent of", Shown(path)));
  if (st && before_swap_) before_swap_();
  if (st) st = RemoveAt(parent->get(), aside, Shown(path), 0);
  // Failed without a kill (a file it cannot unlink), what is left goes
  // back where it was seen, and is said to be there: no sweep would find
  // it under the temporary name. Something put at the path meanwhile keeps
  // it there, and the temporary name is said instead.
  Unsynced(path);
  if (!st && ::renameat2(parent->get(), aside.c_str(), parent->get(), leaf.c_str(),
                         RENAME_NOREPLACE) != 0) {
    std::string dir = Shown(path.substr(0, path.rfind('/')));
    return Fail(st.error().message + " (what is left of it is in " + dir + "/" + aside + ")");
  }
  return st;
}

Status PosixFileSystem::RemoveFile(const std::string& path) {
  std::string leaf;
  auto parent = OpenParent(path, false, &leaf);
  if (!parent) return std::unexpected(parent.error());
  if (!parent->valid()) return core::Ok();
  // Without AT_REMOVEDIR, unlinkat refuses a directory (EISDIR).
  if (::unlinkat(parent->get(), leaf.c_str(), 0) != 0 && errno != ENOENT) {
    return Fail(errno == EISDIR ? "remove " + Shown(path) + ": a directory is there now: left"
                                : Errno("unlink", Shown(path)));
  }
  Unsynced(path);
  return core::Ok();
}

Result<int> PosixFileSystem::RemoveStaleTemporaries(const std::string& dir) {
  auto opened = OpenDirectory(dir);
  if (!opened) return std::unexpected(opened.error());
  if (!opened->valid()) return 0;
  UniqueFd fd = std::move(*opened);
  UniqueFd dup(::fcntl(fd.get(), F_DUPFD_CLOEXEC, 0));
  if (!dup.valid()) return Fail(Errno("dup", Shown(dir)));
  auto d = DirStream::Open(dup, dir);
  if (!d) return std::unexpected(d.error());
  auto names = d->Names();
  if (!names) return std::unexpected(names.error());
  std::vector<std::string> stale;
  for (std::string& entry : *names) {
    std::string_view name = entry;
    size_t at = name.rfind(core::kTemporaryMark);
    if (name.empty() || name[0] != '.' || at == std::string_view::npos) continue;
    std::string_view rest = name.substr(at + core::kTemporaryMark.size());  // "PID.N"
    pid_t pid = 0;
    auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), pid);
    if (ec != std::errc() || end == rest.data() + rest.size() || *end != '.') continue;
    // Another process's, while it lives. This process's own are stale too:
    // the sweep runs before an apply writes, and a daemon given its killed
    // predecessor's PID after a reboot would keep those for ever.
    if (pid != ::getpid() && (::kill(pid, 0) == 0 || errno != ESRCH)) continue;
    stale.push_back(std::move(entry));
  }
  int removed = 0;
  for (const std::string& name : stale) {
    if (auto st = RemoveAt(fd.get(), name, Shown(dir) + "/" + name, 0); !st)
      return std::unexpected(st.error());
    ++removed;
  }
  if (removed > 0 && ::fsync(fd.get()) != 0) return Fail(Errno("fsync", Shown(dir)));
  return removed;
}

}  // namespace mesh::adapters
