// Builds tar / tar.gz bundles in memory for tests, with libarchive's writer,
// including the hostile members (links, devices, "../") that must be refused.
#pragma once

#include <string>
#include <vector>

namespace mesh::testing {

struct TarMember {
  enum Type { kFile, kDir, kSymlink, kHardlink, kFifo } type = kFile;
  std::string name;
  std::string content;  // file content, or link target
  unsigned mode = 0644;
};

std::string BuildTar(const std::vector<TarMember>& members, bool gzip = true);

}  // namespace mesh::testing
