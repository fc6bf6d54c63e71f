// What the host knows of a path on the machine, in its own words.
//
// Shared by the FileSystem port, the archive reader and the core's
// fingerprint and tree-digest functions, so none of them needs <sys/stat.h>.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mesh::core {

// How deep a tree may nest (components below its root): the scan and the
// removal walk stop there, so a bundle that nests deeper is refused up front
// rather than failing every apply and being orphaned when dropped.
inline constexpr int kMaxTreeDepth = 128;
// What marks the host's temporary names on disk (".NAME.mesh-host-tmp.PID.N"):
// after an interrupted apply, whatever is so named in a directory the host
// writes into is swept, so no declared path or unit may be so named.
inline constexpr std::string_view kTemporaryMark = ".mesh-host-tmp.";
// The longest file name component Linux takes (NAME_MAX).
inline constexpr size_t kMaxNameBytes = 255;
// The longest path within a tree: a tree's modes are set by paths from its
// top (PATH_MAX, its NUL aside), so a longer one would fail every apply.
inline constexpr size_t kMaxEntryPathBytes = 4095;

enum class FileType { kMissing, kRegular, kDirectory, kSymlink, kHardlink, kOther };

// Who the host writes as (its effective uid and gid): what owns a tree it
// unpacked, root and entries (TreeRootAsMade says which group).
struct HostIds {
  uint32_t uid = 0;
  uint32_t gid = 0;
  bool operator==(const HostIds&) const = default;
};

struct FileInfo {
  FileType type = FileType::kMissing;
  uint64_t size = 0;
  uint32_t mode = 0;  // permission bits only (07777)
  uint32_t uid = 0;
  uint32_t gid = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  uint64_t inode = 0;
  // A directory's access ACL (as Stat and StatMany see a directory), or a
  // tree entry's (ScanTree when it hashes): access its mode does not show.
  // The host drops ACLs when it writes, so one found is someone else's
  // doing. A file's is told by ReadFileAsSeen (ErrorKind::kBeyondMode).
  bool access_acl = false;
};

// The mode the host gives a tree's own directory (FileSystem::ReplaceTree).
inline constexpr uint32_t kTreeRootMode = 0755;

// One entry of a tree: a bundle's member, or a file found under a directory.
struct TreeEntry {
  std::string relpath;  // "bin/serve", no leading slash
  FileType type = FileType::kRegular;
  uint32_t mode = 0;
  std::string content;         // bundle members: the bytes of a regular file
  std::string content_sha256;  // scanned trees: hex digest, when asked for
  std::string link_target;     // symlink and hard-link members, for the refusal
  FileInfo info;               // scanned trees: what stat said
};

}  // namespace mesh::core
