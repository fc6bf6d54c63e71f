#include "host/adapters/unit_verifier.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "host/core/printable.h"

extern char** environ;  // NOLINT(readability-redundant-declaration)

namespace mesh::adapters {
namespace {

constexpr size_t kMaxOutputBytes = 64 << 10;
constexpr size_t kMaxFindings = 40;
constexpr auto kDeadline = std::chrono::seconds(10);

std::string Analyzer() {
  for (const char* path : {"/usr/bin/systemd-analyze", "/bin/systemd-analyze"}) {
    if (::access(path, X_OK) == 0) return path;
  }
  return "";
}

bool WriteText(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  return static_cast<bool>(f);
}

// Runs `argv`, its stdout and stderr into one bounded string; kills it at
// the deadline. False when it could not be run or was killed.
bool Run(const std::vector<std::string>& args, std::string& output) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return false;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // No pager, no colour, no terminal questions: a child of a CI job.
  std::vector<std::string> env = {"SYSTEMD_PAGER=cat", "SYSTEMD_COLORS=0", "SYSTEMD_LOG_COLOR=0",
                                  "LANG=C", "PATH=/usr/sbin:/usr/bin:/sbin:/bin"};
  std::vector<char*> envp;
  envp.reserve(env.size() + 1);
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  // The host ignores SIGIO (file_declaration.cc); the child starts with
  // every signal as a fresh process has it.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t all;
  sigfillset(&all);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
  int rc = ::posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    return false;
  }
  auto end = std::chrono::steady_clock::now() + kDeadline;
  bool killed = false;
  char buf[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        end - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ::kill(pid, SIGKILL);
      killed = true;
      break;
    }
    struct pollfd p = {fds[0], POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (output.size() < kMaxOutputBytes) {
      output.append(buf, std::min(static_cast<size_t>(n), kMaxOutputBytes - output.size()));
    }
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return !killed;
}

}  // namespace

std::vector<std::string> VerifyUnitTexts(const core::Declaration& declaration) {
  std::vector<const core::Resource*> units;
  for (const core::Resource& r : declaration.resources) {
    if (r.HasUnit() && r.unit().text.has_value()) units.push_back(&r);
  }
  if (units.empty()) return {};
  std::string analyzer = Analyzer();
  if (analyzer.empty()) {
    return {"unit texts not checked: systemd-analyze is not installed (Debian: systemd)"};
  }
  char dir_template[] = "/tmp/mesh-host-validate.XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) {
    return {std::string("unit texts not checked: a temporary directory: ") + std::strerror(errno)};
  }
  std::string dir = dir_template;
  std::vector<std::string> findings;
  std::vector<std::string> args = {analyzer, "verify", "--man=no"};
  for (const core::Resource* r : units) {
    std::string path = dir + "/" + r->unit().name;
    bool ok = WriteText(path, *r->unit().text);
    if (ok && !r->unit().drop_ins.empty()) {
      std::string d = path + ".d";
      ok = ::mkdir(d.c_str(), 0700) == 0;
      for (const auto& [name, text] : r->unit().drop_ins)
        ok = ok && WriteText(d + "/" + name, text);
    }
    if (!ok) {
      findings.push_back("unit " + r->unit().name + ": not checked: it could not be written to " +
                         dir);
      continue;
    }
    args.push_back(path);
  }
  std::string output;
  if (args.size() > 3 && !Run(args, output)) {
    findings.push_back("unit texts not checked: systemd-analyze did not finish within 10 s");
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  size_t at = 0;
  while (at < output.size() && findings.size() < kMaxFindings) {
    size_t nl = output.find('\n', at);
    std::string line = output.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    at = nl == std::string::npos ? output.size() : nl + 1;
    if (line.empty()) continue;
    // "/tmp/mesh-host-validate.X/web.service:3: Unknown key …" names the
    // unit, not the temporary file.
    for (size_t p; (p = line.find(dir + "/")) != std::string::npos;) line.erase(p, dir.size() + 1);
    findings.push_back("systemd-analyze: " + core::Printable(line, 400));
  }
  if (at < output.size()) findings.push_back("systemd-analyze: … (more findings not shown)");
  return findings;
}

}  // namespace mesh::adapters
