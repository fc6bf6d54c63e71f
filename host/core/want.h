// Want digests, stat fingerprints and tree digests: the pure arithmetic
// behind `unchanged`.
//
// A resource is unchanged when the record's digest equals WantDigest() and
// the disk still matches; the disk check compares a stat fingerprint first
// and only re-reads content when the fingerprint moved (SPEC "Reconcile" 2).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/declaration.h"
#include "host/core/file_info.h"
#include "host/core/result.h"

namespace mesh::core {

// "sha256:<hex>" over everything that defines the resource on the machine.
// A credential's is keyed: "hmac-sha256:<hex>", HMAC-SHA-256 under
// `credential_key` (a secret of this machine's) of that digest, so that
// /status, plan and the record say when a secret changed but nothing an
// offline dictionary could test guesses against.
std::string WantDigest(const Resource& resource, std::string_view credential_key);

// "size:mtime_ns:ctime_ns:inode": moves on any write, chmod, chown or
// replacement of the file.
std::string FileFingerprint(const FileInfo& info);

// "mode:uid:gid" of a file ("0644:0:0").
std::string FileMeta(uint32_t mode, uint32_t uid, uint32_t gid);

// The first 128 bits of SHA-256 over a file's FileMeta and its bytes, in
// hex: what the host left at a path, recorded beside its fingerprint. Half
// a digest is still out of reach of any file made to match it, and the
// record, which every fresh apply reads, holds one per file.
std::string FileDigest(std::string_view meta, std::string_view bytes);

// "dir:mode:uid:gid:inode": a declared directory as the host left it. Not
// its times or size: they move with every entry added inside it, which is
// not the host's to watch (its contents are not managed).
std::string DirectoryFingerprint(const FileInfo& info);

// FileFingerprint(info) == recorded, without building the string: the
// no-op compares one per declared file.
bool FingerprintMatches(const FileInfo& info, std::string_view recorded);

// A FileFingerprint read back into its numbers, for a proof that compares
// the same recorded fingerprint at every no-op (the daemon's kept record):
// numbers compare in a few instructions, where FingerprintMatches formats
// four of them each time.
struct FileStamp {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  uint64_t inode = 0;
};
// Only text FileFingerprint itself writes: anything else (a leading zero or
// sign, a space, a missing or extra field, a number out of range) is no
// stamp, and its matches are then FingerprintMatches's to decide.
std::optional<FileStamp> ParseFingerprint(std::string_view recorded);
// FingerprintMatches(info, recorded) for the stamp parsed from `recorded`.
inline bool StampMatches(const FileInfo& info, const FileStamp& stamp) {
  return info.size == stamp.size && info.mtime_ns == stamp.mtime_ns &&
         info.ctime_ns == stamp.ctime_ns && info.inode == stamp.inode;
}

// "tree:<hex>" over every entry's relpath, type and fingerprint.
std::string TreeFingerprint(const std::vector<TreeEntry>& scanned);

// Whether the own directory (`root`) of the tree at `path` is as the host
// made it: mode kTreeRootMode, owned as every entry of it (`scanned`) is,
// and as mkdir gives it to `writer` (unknown: any owner): the writer's
// user, and the writer's group or, in a setgid parent, that parent's.
// `stat` reads the parent, asked only for a root whose group is not the
// writer's. Neither its fingerprint nor its digest holds the owner, so a
// chmod 0777 of the root (anyone may then put files in), or a chown or
// chgrp of it alone or of the whole tree (its new owner may then change
// the bundle's programs), would move nothing else.
using StatDir = std::function<Result<FileInfo>(const std::string& dir)>;
bool TreeRootAsMade(const FileInfo& root, const std::vector<TreeEntry>& scanned,
                    std::string_view path, const std::optional<HostIds>& writer,
                    const StatDir& stat);

// "sha256:<hex>" over every entry's relpath, type, mode and content digest;
// equal for a bundle's members and for the tree they were unpacked into.
// Entries need content_sha256 set (see HashContents).
std::string TreeDigest(const std::vector<TreeEntry>& entries);

// Fills content_sha256 from content for bundle members.
void HashContents(std::vector<TreeEntry>& entries);

// A bundle's members, normalised ("./a//b" -> "a/b") and checked: any entry
// that is absolute, climbs with "..", is a symlink, a hard link or a device,
// refuses the whole bundle with a message naming the entry. Directories the
// entries imply but the bundle does not list are added (mode 0755).
Result<std::vector<TreeEntry>> CheckBundleEntries(std::vector<TreeEntry> entries);

}  // namespace mesh::core
