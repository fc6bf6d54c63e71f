// What the files of PosixFileSystem share (posix_file_system.cc,
// posix_file_system_dirs.cc for directories, symlinks and trees, and
// posix_file_system_staged.cc for staged files): error
// text, stat conversion, path components, temporary names, whole writes,
// and removal below a directory descriptor. Internal to the adapter.
#pragma once

#include <dirent.h>
#include <sys/stat.h>

#include <cerrno>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "host/adapters/unique_fd.h"
#include "host/core/file_info.h"
#include "host/core/result.h"

namespace mesh::adapters::posix_internal {

using core::Fail;
using core::FileInfo;
using core::FileType;
using core::Result;
using core::Status;
using core::TreeEntry;

// Missing parents of a declared path are made with this mode (documented in
// docs/declaration.md), whatever the process's umask.
inline constexpr mode_t kCreatedDirMode = 0755;

// "WHAT PATH: strerror(err)".
std::string Errno(std::string_view what, const std::string& path, int err = errno);
// The mode declared is all the access a file or directory the host writes
// gets: the access ACL it inherited from its directory's default ACL goes
// before the chmod that would open that ACL's mask to the users and groups
// it names (a credential of 0440 read by whoever the directory names); with
// `and_default`, a directory's default ACL too, so that nothing made in it
// inherits one. A file system without ACLs has none to drop.
Status DropInheritedAcl(int fd, const std::string& path, bool and_default = false);
FileInfo FromStat(const struct stat& st);
// "/a//b/" -> {"a", "b"}.
std::vector<std::string_view> Components(std::string_view path);
// Temporary names are recognisable (".NAME.mesh-host-tmp.PID.N") and unique
// per process, so a crashed run's leftovers can be told from real files.
std::string TempName(std::string_view leaf);
Status WriteAll(int fd, std::string_view bytes, const std::string& path);
// A directory's entries, owned: closed with the stream. readdir's NULL is
// both the end and an error; Names tells them apart, so a directory that
// cannot be read is never taken for an empty one.
class DirStream {
 public:
  // Takes `fd` (a directory) over when it succeeds; on failure it stays
  // with `fd`, which closes it. `shown` names the directory in errors.
  static Result<DirStream> Open(UniqueFd& fd, const std::string& shown);
  // The stream's own descriptor, open as long as the stream is.
  int fd() const { return ::dirfd(dir_.get()); }
  // Every entry's name but "." and "..", read to the end.
  Result<std::vector<std::string>> Names();

 private:
  struct Close {
    void operator()(DIR* d) const { (void)::closedir(d); }  // read-only: nothing to lose
  };
  DirStream(DIR* dir, std::string shown) : dir_(dir), shown_(std::move(shown)) {}
  std::unique_ptr<DIR, Close> dir_;
  std::string shown_;
};
// Whether the file open as `fd` carries an access ACL: access beyond its
// mode (the kernel keeps none that only restates the mode).
bool HasAccessAcl(int fd);
// `info` of `leaf` in `dirfd`, with a directory's access ACL told
// (FileInfo::access_acl): one open and one read of it, for directories only.
FileInfo WithDirectoryAcl(int dirfd, const std::string& leaf, FileInfo info);

// Whether the directory open as `fd` is where a file system is mounted (a
// bind mount of the same one included): someone else's volume, which the
// host never empties, even inside a tree of its own.
bool IsMountRoot(int fd);

// Fails, naming it, at the first mount below the directory open as `fd`
// (`shown` names that directory): a tree holding one is not the host's to
// swap out or delete whole.
Status NoMountIn(int fd, const std::string& shown, int depth);

// Removes `name` below `dirfd`, a tree whole (at most kMaxTreeDepth deep);
// `shown` names it in errors. A missing name is not an error. A mount in
// the tree fails it there, what the mount holds untouched.
Status RemoveAt(int dirfd, const std::string& name, const std::string& shown, int depth);

}  // namespace mesh::adapters::posix_internal
