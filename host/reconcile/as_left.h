// Whether a file the host wrote, whose fingerprint moved, still holds what
// the host left there: the record proof asks it of a touched file, and
// prune of a touched file it would delete. Neither needs the declaration:
// the record's content_digest (core::FileDigest) covers the file's mode,
// owner and bytes.
#pragma once

#include <string>
#include <string_view>

#include "host/core/file_info.h"
#include "host/ports/file_system.h"

namespace mesh::reconcile {

// Only a regular file of the size the recorded fingerprint gives is worth
// reading: any other is not as the host left it, and a file grown without
// bound is never read.
bool WorthReading(const core::FileInfo& info, std::string_view recorded_fingerprint);

// Reads the file at `path` that was found as `info` (WorthReading): true
// when it is still that file, unchanged while read, and its mode, owner and
// bytes give `content_digest`.
bool AsLeft(ports::FileSystem& fs, const std::string& path, const core::FileInfo& info,
            std::string_view content_digest);

}  // namespace mesh::reconcile
