// LibarchiveReader: the ArchiveReader port over libarchive (tar, tar.gz).
//
// Bounds what a bundle may expand to, so a small compressed bomb cannot take
// the machine's memory.
#pragma once

#include <cstdint>

#include "host/ports/archive_reader.h"

namespace mesh::adapters {

class LibarchiveReader : public ports::ArchiveReader {
 public:
  static constexpr uint64_t kMaxExpandedBytes = 1ull << 30;
  static constexpr size_t kMaxEntries = 200000;

  // At most min(max_expanded, kMaxExpandedBytes) of contents.
  core::Result<std::vector<core::TreeEntry>> Read(std::string_view bytes,
                                                  uint64_t max_expanded) override;

 private:
  static core::Result<std::vector<core::TreeEntry>> ReadInMemory(std::string_view bytes,
                                                                 uint64_t max_expanded);
};

}  // namespace mesh::adapters
