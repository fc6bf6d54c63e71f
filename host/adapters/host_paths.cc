#include "host/adapters/host_paths.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <set>

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

TheWay TheWayTo(const std::string& path) {
  TheWay way;
  std::vector<std::string>& links = way.links;
  std::set<std::string> entered;
  auto enter = [&](const std::string& dir) {
    if (entered.insert(dir).second) way.directories.push_back(dir);
  };
  std::deque<std::string> parts;  // what is left to follow, first first
  auto push_front = [&parts](const std::string& p) {
    std::vector<std::string> split;
    for (size_t at = 0; at <= p.size();) {
      size_t slash = p.find('/', at);
      if (slash == std::string::npos) slash = p.size();
      if (slash > at) split.push_back(p.substr(at, slash - at));
      at = slash + 1;
    }
    parts.insert(parts.begin(), split.begin(), split.end());
  };
  push_front(path);
  std::string at = "/";          // where the way has led so far, no link in it
  constexpr int kMaxLinks = 40;  // the kernel's ELOOP
  enter(at);
  while (!parts.empty()) {
    std::string part = std::move(parts.front());
    parts.pop_front();
    if (part == ".") continue;
    if (part == "..") {
      size_t slash = at.rfind('/');
      at = slash == 0 || slash == std::string::npos ? "/" : at.substr(0, slash);
      continue;
    }
    std::string next = at == "/" ? "/" + part : at + "/" + part;
    struct stat st;
    if (::lstat(next.c_str(), &st) != 0) break;  // not there: no link beyond
    if (!S_ISLNK(st.st_mode)) {
      at = std::move(next);
      if (S_ISDIR(st.st_mode)) enter(at);
      continue;
    }
    if (links.size() == kMaxLinks) break;
    char target[PATH_MAX];
    ssize_t n = ::readlink(next.c_str(), target, sizeof target);
    if (n <= 0 || static_cast<size_t>(n) == sizeof target) break;
    links.push_back(next);
    std::string to(target, static_cast<size_t>(n));
    if (to.starts_with('/')) at = "/";
    push_front(to);
  }
  return way;
}

std::vector<std::string> LinksOnTheWay(const std::string& path) {
  return std::move(TheWayTo(path).links);
}

}  // namespace mesh::adapters
