#include "host/adapters/host_paths.h"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

namespace mesh::adapters {

core::Result<std::string> AbsolutePath(const std::string& path) {
  if (path.empty() || path.starts_with('/')) return path;
  char* cwd = ::getcwd(nullptr, 0);
  if (cwd == nullptr) {
    return core::Fail(std::string("the working directory cannot be read: ") + std::strerror(errno));
  }
  std::string out = std::string(cwd) + "/" + path;
  std::free(cwd);
  return out;
}

std::string ResolvedPath(const std::string& path) {
  if (path.empty()) return path;
  // The longest part that exists, resolved; the rest appended as written.
  std::string head = path;
  std::string tail;
  for (;;) {
    char buf[PATH_MAX];
    if (::realpath(head.c_str(), buf) != nullptr) {
      std::string out = buf;
      if (!tail.empty()) out += (out == "/" ? "" : "/") + tail;
      return out;
    }
    size_t slash = head.find_last_not_of('/');
    slash = slash == std::string::npos ? std::string::npos : head.rfind('/', slash);
    if (slash == std::string::npos || head == "/") return path;  // nothing of it resolves
    std::string leaf = head.substr(slash + 1);
    while (!leaf.empty() && leaf.back() == '/') leaf.pop_back();
    tail = tail.empty() ? leaf : leaf + "/" + tail;
    head = slash == 0 ? "/" : head.substr(0, slash);
  }
}

}  // namespace mesh::adapters
