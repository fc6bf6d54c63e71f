#include "host/reconcile/as_left.h"

#include <charconv>

#include "host/core/want.h"

namespace mesh::reconcile {

bool WorthReading(const core::FileInfo& info, std::string_view recorded_fingerprint) {
  // A file's fingerprint starts with its size: "size:mtime_ns:ctime_ns:inode".
  size_t colon = recorded_fingerprint.find(':');
  if (info.type != core::FileType::kRegular || colon == std::string_view::npos) return false;
  uint64_t size = 0;
  const char* end = recorded_fingerprint.data() + colon;
  auto [at, ec] = std::from_chars(recorded_fingerprint.data(), end, size);
  return ec == std::errc() && at == end && size == info.size;
}

bool AsLeft(ports::FileSystem& fs, const std::string& path, const core::FileInfo& info,
            std::string_view content_digest) {
  if (content_digest.empty()) return false;
  auto bytes = fs.ReadFileAsSeen(path, info);
  if (!bytes || bytes->size() != info.size) return false;
  return core::FileDigest(core::FileMeta(info.mode, info.uid, info.gid), *bytes) == content_digest;
}

}  // namespace mesh::reconcile
