// mesh-host's entry point. It runs the verbs that serve nothing (--help,
// --version, apply, plan: host/wiring.h) itself, in a process that loads
// neither the HTTP side, TLS nor the metrics, and becomes mesh-host-serve
// for `run` and `status`.
#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>

#include "host/cli/apply_command.h"
#include "host/wiring.h"

namespace {

// Where mesh-host-serve is: beside this binary (a build's output, an
// unpacked tree), or in ../lib/mesh-host/ (/usr/bin and /usr/lib of the
// package, /usr/local of packaging/install.sh).
std::string ServePath(std::string* looked) {
  char exe[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) {
    *looked = std::string("/proc/self/exe: ") + std::strerror(errno);
    return "";
  }
  std::string dir(exe, static_cast<size_t>(n));
  dir.resize(dir.rfind('/'));
  for (const std::string& path :
       {dir + "/mesh-host-serve", dir + "/../lib/mesh-host/mesh-host-serve"}) {
    if (::access(path.c_str(), X_OK) == 0) return path;
    *looked += (looked->empty() ? "" : " nor ") + path;
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  auto flags = mesh::wiring::ParseArgs(argc, argv);
  if (flags == nullptr) return mesh::cli::kExitRefused;
  if (mesh::wiring::IsOneShot(flags->verb)) return mesh::wiring::RunOneShot(*flags);
  // The same process (its pid, which systemd follows, and its environment:
  // NOTIFY_SOCKET) with the same arguments.
  std::string looked;
  std::string serve = ServePath(&looked);
  if (!serve.empty()) ::execv(serve.c_str(), argv);
  std::cerr << "mesh-host: " << argv[1] << " runs mesh-host-serve, "
            << (serve.empty() ? "found neither at " + looked
                              : "which did not start (" + serve + ": " + std::strerror(errno) + ")")
            << "\n";
  return mesh::cli::kExitFailed;
}
