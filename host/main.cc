// mesh-host's entry point. It runs the verbs that serve nothing (--help,
// --version, apply, plan: host/wiring.h) itself, in a process that loads
// neither the HTTP side, TLS nor the metrics, and becomes mesh-host-serve
// for `run` and `status`.
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>

#include "host/cli/apply_command.h"
#include "host/version/version.h"
#include "host/wiring.h"

extern char** environ;  // NOLINT(readability-redundant-declaration): unistd.h hides it

namespace {

// Root's or this user's, and writable by no one else.
bool Trusted(const struct stat& st) {
  return (st.st_uid == 0 || st.st_uid == ::geteuid()) && (st.st_mode & 022) == 0;
}

// mesh-host-serve at `path`, opened (O_PATH) if it can be trusted as this
// binary's own: a regular executable file and its directory both Trusted.
// Root running a copy of mesh-host from /tmp must not run a mesh-host-serve
// someone planted beside it. -1 with `why` said otherwise.
int OpenServe(const std::string& path, std::string* why) {
  std::string dir = path.substr(0, path.rfind('/'));
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    *why = dir + ": " + std::strerror(errno);
    return -1;
  }
  if (!S_ISDIR(st.st_mode) || !Trusted(st)) {
    *why = dir + " is writable by others than root or this user";
    return -1;
  }
  int fd = ::open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    *why = path + ": " + std::strerror(errno);
    return -1;
  }
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || !Trusted(st) || (st.st_mode & 0111) == 0) {
    *why = path + " is not an executable file of root's or this user's that only they can write";
    ::close(fd);
    return -1;
  }
  return fd;
}

// Beside this binary (a build's output, an unpacked tree), else in
// ../lib/mesh-host/ (/usr/bin and /usr/lib of the package, /usr/local of
// packaging/install.sh).
int FindServe(std::string* why) {
  char exe[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe);
  if (n <= 0 || n == static_cast<ssize_t>(sizeof exe)) {
    *why = std::string("/proc/self/exe: ") + (n <= 0 ? std::strerror(errno) : "too long");
    return -1;
  }
  std::string dir(exe, static_cast<size_t>(n));
  dir.resize(dir.rfind('/'));
  std::string beside = dir + "/mesh-host-serve";
  std::string in_lib = dir + "/../lib/mesh-host/mesh-host-serve";
  for (const std::string& path : {beside, in_lib}) {
    if (::access(path.c_str(), F_OK) == 0) return OpenServe(path, why);
  }
  *why = "found neither at " + beside + " nor at " + in_lib;
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  // What flags a verb ignores is said once, by the binary that runs it.
  auto flags = mesh::wiring::ParseArgs(argc, argv);
  if (flags == nullptr) return mesh::cli::kExitRefused;
  if (mesh::wiring::IsOneShot(flags->verb)) {
    mesh::wiring::SayIgnored(*flags);
    return mesh::wiring::RunOneShot(*flags);
  }
  // The same process (its pid, which systemd follows, and its environment:
  // NOTIFY_SOCKET) with the same arguments, and this binary's version for
  // mesh-host-serve to check its own against (mesh::wiring::kFrontVersion).
  std::string why;
  int serve = FindServe(&why);
  if (serve >= 0) {
    ::setenv(mesh::wiring::kFrontVersion, mesh::VersionLine().c_str(), 1);
    ::fexecve(serve, argv, environ);
    why = std::string("it did not start: ") + std::strerror(errno);
  }
  std::cerr << "mesh-host: " << argv[1] << " runs mesh-host-serve; " << why << "\n";
  return mesh::cli::kExitFailed;
}
