#include "host/version/version.h"

namespace mesh {

std::string VersionLine() {
  std::string line(Release());
  if (Commit().empty()) return line + " (development build, not stamped)";
  return line + " (commit " + std::string(Commit()) + ")";
}

}  // namespace mesh
