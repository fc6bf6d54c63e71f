// ArchiveReader: a bundle's bytes in, its members out.
//
// The reader reports every member as it is, links and devices included; the
// core (CheckBundleEntries) decides what is refused, so the rule is tested
// apart from the format library.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "host/core/file_info.h"
#include "host/core/result.h"

namespace mesh::ports {

class ArchiveReader {
 public:
  virtual ~ArchiveReader() = default;
  // Fails, allocating no more, as soon as the members' contents would pass
  // `max_expanded` bytes: what one apply holds of all its bundles is bounded.
  virtual core::Result<std::vector<core::TreeEntry>> Read(std::string_view bytes,
                                                          uint64_t max_expanded) = 0;
};

}  // namespace mesh::ports
