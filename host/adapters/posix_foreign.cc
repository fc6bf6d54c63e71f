// What on disk is not the host's to change, told on open descriptors: the
// ACLs others give (access beyond a declared mode) and the file systems
// others mount inside a tree (never emptied or moved with it). The
// adapter's rules about them are posix_internal.h's.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>

#include "host/adapters/posix_internal.h"

namespace mesh::adapters::posix_internal {

using core::kMaxTreeDepth;

Status DropInheritedAcl(int fd, const std::string& path, bool and_default) {
  for (const char* acl : {"system.posix_acl_access", "system.posix_acl_default"}) {
    if (::fremovexattr(fd, acl) != 0 && errno != ENODATA && errno != ENOTSUP) {
      return Fail(Errno("remove the inherited ACL of", path));
    }
    if (!and_default) break;
  }
  return core::Ok();
}

bool HasAccessAcl(int fd) { return ::fgetxattr(fd, "system.posix_acl_access", nullptr, 0) > 0; }

FileInfo WithDirectoryAcl(int dirfd, const std::string& leaf, FileInfo info) {
  if (info.type != FileType::kDirectory) return info;
  UniqueFd fd(::openat(dirfd, leaf.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  info.access_acl = fd.valid() && HasAccessAcl(fd.get());
  return info;
}

bool IsMountRoot(int fd) {
  struct statx stx {};
  if (::statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, 0, &stx) != 0) return false;
  return (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) != 0 &&
         (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
}

Status NoMountIn(int fd, const std::string& shown, int depth) {
  if (depth > kMaxTreeDepth) return Fail("look into " + shown + ": nested too deep");
  // Opened anew: read through `fd` itself, the caller's offset would move.
  UniqueFd own(::openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!own.valid()) return Fail(Errno("open", shown));
  auto dir = DirStream::Open(own, shown);
  if (!dir) return std::unexpected(dir.error());
  auto names = dir->Names();
  if (!names) return std::unexpected(names.error());
  for (const std::string& name : *names) {
    struct stat st;
    if (::fstatat(dir->fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) {
      continue;
    }
    UniqueFd sub(
        ::openat(dir->fd(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub.valid()) return Fail(Errno("open", shown + "/" + name));
    if (IsMountRoot(sub.get())) {
      return Fail(shown + "/" + name + ": a file system is mounted there; the host does not " +
                  "swap out or remove a tree that holds a mount");
    }
    if (auto st2 = NoMountIn(sub.get(), shown + "/" + name, depth + 1); !st2) return st2;
  }
  return core::Ok();
}

}  // namespace mesh::adapters::posix_internal
