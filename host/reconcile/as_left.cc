#include "host/reconcile/as_left.h"

#include "host/core/want.h"

namespace mesh::reconcile {

bool WorthReading(const core::FileInfo& info, std::string_view recorded_fingerprint) {
  // A file's fingerprint starts with its size: "size:mtime_ns:ctime_ns:inode".
  return info.type == core::FileType::kRegular &&
         recorded_fingerprint.starts_with(std::to_string(info.size) + ":");
}

bool AsLeft(ports::FileSystem& fs, const std::string& path, const core::FileInfo& info,
            std::string_view content_digest) {
  if (content_digest.empty()) return false;
  auto bytes = fs.ReadFileAsSeen(path, info);
  if (!bytes || bytes->size() != info.size) return false;
  return core::FileDigest(core::FileMeta(info.mode, info.uid, info.gid), *bytes) == content_digest;
}

}  // namespace mesh::reconcile
