// The host's own places as the kernel reaches them. A declared path is
// written with no symlink followed on the way (posix_file_system.h), so it
// lands at the resolved --root plus the path; the host's record, bundles,
// unit files and declaration may be reached through symlinks. Both are
// compared resolved, so no declaration writes over the host through one.
#pragma once

#include <string>
#include <vector>

#include "host/core/result.h"

namespace mesh::adapters {

// `path` against the working directory; empty stays empty.
core::Result<std::string> AbsolutePath(const std::string& path);

// `path` (absolute) with every symlink on the way resolved, as far as it
// exists; what does not exist yet is kept as written. Empty stays empty.
std::string ResolvedPath(const std::string& path);

// Every symlink met on the way to `path` (absolute) as the kernel follows
// them, each named where it lies (its directory resolved): a declared path
// written there would re-point the way, so the host's next read of `path`
// would be of a file the declaration chose. At most 40, as the kernel's
// own limit; none where nothing of `path` is a link.
std::vector<std::string> LinksOnTheWay(const std::string& path);

// The way to `path` (absolute) as the kernel follows it: every symlink met,
// as LinksOnTheWay names them, and every directory entered on the way
// (resolved, "/" first, each once), those a `..` climbs back through and
// those a link leads through included. Whoever can change one of these
// can change where the way leads.
struct TheWay {
  std::vector<std::string> links;
  std::vector<std::string> directories;
};
TheWay TheWayTo(const std::string& path);

}  // namespace mesh::adapters
