#include "host/adapters/linux_event_source.h"

#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string_view>

namespace mesh::adapters {
namespace {

// IN_ATTRIB: a chmod is the whole mend of a declaration refused for its
// mode (it holds credentials and others can read it).
constexpr uint32_t kWatchMask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_ATTRIB;
constexpr std::chrono::milliseconds kRewatchEvery{250};
// Of the directory above the declaration's: its own name coming or going.
constexpr uint32_t kParentMask = IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE;

sigset_t DaemonSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

// `path` with "//", "/./" and a trailing "/" taken out ("/etc//x/" is
// "/etc/x"), so that its directory and name are those the kernel reads:
// "/etc/mesh-host/" split as given names a directory "" inside itself.
// ".." stays: past a link it leads elsewhere than the spelling says.
std::string CleanPath(const std::string& path) {
  std::string out;
  size_t at = 0;
  while (at <= path.size()) {
    size_t slash = path.find('/', at);
    if (slash == std::string::npos) slash = path.size();
    std::string_view part(path.data() + at, slash - at);
    if (!part.empty() && part != ".") {
      if (!out.empty() || (!path.empty() && path[0] == '/')) out += '/';
      out += part;
    }
    at = slash + 1;
  }
  if (out.empty()) return !path.empty() && path[0] == '/' ? "/" : ".";
  return out;
}

std::pair<std::string, std::string> SplitPath(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

}  // namespace

void BlockDaemonSignals() {
  sigset_t set = DaemonSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

LinuxEventSource::LinuxEventSource(UniqueFd signals, UniqueFd watch, std::string dir,
                                   std::string name)
    : signals_(std::move(signals)),
      watch_(std::move(watch)),
      dir_(std::move(dir)),
      name_(std::move(name)) {}

core::Result<std::unique_ptr<LinuxEventSource>> LinuxEventSource::Open(
    const std::string& declaration, std::string* warning) {
  sigset_t set = DaemonSignals();
  UniqueFd signals(signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!signals.valid()) return core::Fail(std::string("signalfd: ") + std::strerror(errno));
  auto [dir, name] = SplitPath(CleanPath(declaration));
  UniqueFd watch(inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
  int dir_wd = watch.valid() ? inotify_add_watch(watch.get(), dir.c_str(), kWatchMask) : -1;
  bool watched = dir_wd >= 0;
  if (!watched) {
    // A directory that is not there yet (made by whoever pushes the first
    // declaration) is watched once it is: Rewatch tries at every wait.
    *warning = "cannot watch " + dir + " (" + std::strerror(errno) +
               "); changes are seen at the next interval or SIGHUP" +
               (watch.valid() ? " until it can be" : "");
  }
  auto source = std::unique_ptr<LinuxEventSource>(
      new LinuxEventSource(std::move(signals), std::move(watch), std::move(dir), std::move(name)));
  source->watched_ = watched;
  source->dir_wd_ = dir_wd;
  if (const std::string& d = source->dir_; source->watch_.valid() && d.size() > 1 && d[0] == '/') {
    // Added to, never in place of, a watch the same directory has already.
    int wd = inotify_add_watch(source->watch_.get(), SplitPath(d).first.c_str(),
                               kParentMask | IN_MASK_ADD);
    source->parent_wd_ = wd != dir_wd ? wd : -1;
  }
  source->seen_ = source->Look();
  source->WatchTarget();
  return source;
}

LinuxEventSource::Identity LinuxEventSource::Look() const {
  struct stat st;
  if (::stat((dir_ + "/" + name_).c_str(), &st) != 0) return {};
  return {st.st_dev,          st.st_ino,         st.st_size,        st.st_mtim.tv_sec,
          st.st_mtim.tv_nsec, st.st_ctim.tv_sec, st.st_ctim.tv_nsec};
}

bool LinuxEventSource::StopPending() const {
  sigset_t pending;
  if (sigpending(&pending) != 0) return false;
  return sigismember(&pending, SIGTERM) == 1 || sigismember(&pending, SIGINT) == 1;
}

void LinuxEventSource::ReadSignals() {
  signalfd_siginfo si;
  while (read(signals_.get(), &si, sizeof si) == sizeof si) {
    if (si.ssi_signo == SIGHUP) {
      ready_.push_back({ports::Event::Kind::kReload, "SIGHUP"});
    } else {
      ready_.push_back({ports::Event::Kind::kStop, strsignal(static_cast<int>(si.ssi_signo))});
    }
  }
}

void LinuxEventSource::ReadWatch() {
  alignas(inotify_event) char buf[4096];
  ssize_t len;
  bool changed = false;
  bool other = false;     // something else in the directory
  bool replaced = false;  // the directory's name leads elsewhere now
  while ((len = read(watch_.get(), buf, sizeof buf)) > 0) {
    for (char* p = buf; p < buf + len;) {
      auto* ev = reinterpret_cast<inotify_event*>(p);
      // Lost events may have been the directory's own name.
      replaced |= (ev->mask & IN_Q_OVERFLOW) != 0;
      if (parent_wd_ >= 0 && ev->wd == parent_wd_) {
        replaced |= ev->len > 0 && SplitPath(dir_).second == ev->name;
        // The declaration may lead into that directory too (WatchTarget).
        if (ev->wd != target_wd_) {
          p += sizeof(inotify_event) + ev->len;
          continue;
        }
      }
      // The signature is read with the declaration (--verify-key). Events
      // lost to an overflow may have been the declaration's.
      bool in_target = target_wd_ >= 0 && ev->wd == target_wd_;
      // A target's directory watched before the link moved: its last
      // events (IN_IGNORED) say nothing of the declaration.
      if (!in_target && ev->wd != dir_wd_ && (ev->mask & IN_Q_OVERFLOW) == 0) {
        p += sizeof(inotify_event) + ev->len;
        continue;
      }
      bool ours =
          (ev->mask & IN_Q_OVERFLOW) != 0 ||
          (!in_target && ev->len > 0 && (name_ == ev->name || name_ + ".minisig" == ev->name));
      changed |= ours;
      // In the target's directory, whatever moved is looked at: Look()
      // says whether it was what the link leads to.
      other |= !ours && (ev->len > 0 || in_target);
      if (in_target && (ev->mask & IN_IGNORED) != 0) {
        target_wd_ = -1;
        target_dir_.clear();
      }
      // The directory itself went (removed, replaced, unmounted): the
      // watch is gone with it and is made again (Rewatch).
      if (ev->wd == dir_wd_) watched_ &= (ev->mask & IN_IGNORED) == 0;
      p += sizeof(inotify_event) + ev->len;
    }
  }
  // The watch stays with the directory it was made on: made again on what
  // the name leads to now (Rewatch, again at every wait until there is
  // one), which may hold another declaration.
  if (replaced) {
    if (dir_wd_ >= 0) (void)inotify_rm_watch(watch_.get(), dir_wd_);  // may be gone already
    dir_wd_ = -1;
    watched_ = false;
    Rewatch();
    other = true;  // where it leads is looked at again, below
  }
  // The declaration may be a link through another name in the directory
  // (a Kubernetes volume swaps "..data" to a new directory, and nothing
  // named declaration.json moves): what it leads to is looked at again.
  if (changed || other) {
    Identity now = Look();
    changed |= now != seen_;
    seen_ = now;
    WatchTarget();
  }
  // A burst read at once is one change; the schedule debounces the rest.
  if (changed) ready_.push_back({ports::Event::Kind::kDeclarationChanged, ""});
}

void LinuxEventSource::WatchTarget() {
  if (!watch_.valid()) return;
  char* real = ::realpath((dir_ + "/" + name_).c_str(), nullptr);
  // Missing for a moment (replaced by unlink and create): the watch stays,
  // or the file made again would go unseen.
  if (real == nullptr) return;
  char* real_dir = ::realpath(dir_.c_str(), nullptr);
  std::string target = SplitPath(real).first;
  std::string own = real_dir != nullptr ? real_dir : "";
  ::free(real);
  ::free(real_dir);
  if (target == own) target.clear();  // no link out of its own directory
  if (target == target_dir_) return;
  // May be gone already; the parent's watch, when it is the same, stays.
  if (target_wd_ >= 0 && target_wd_ != parent_wd_) {
    (void)inotify_rm_watch(watch_.get(), target_wd_);
  }
  target_wd_ = -1;
  target_dir_.clear();
  if (target.empty()) return;
  int wd = inotify_add_watch(watch_.get(), target.c_str(), kWatchMask | IN_MASK_ADD);
  if (wd < 0) return;  // seen at the next interval or SIGHUP, as before
  target_wd_ = wd;
  target_dir_ = std::move(target);
}

void LinuxEventSource::Rewatch() {
  if (watched_ || !watch_.valid()) return;
  if (int wd = inotify_add_watch(watch_.get(), dir_.c_str(), kWatchMask); wd >= 0) {
    dir_wd_ = wd;
    watched_ = true;
    seen_ = Look();
    // What happened while nothing watched may have been a change.
    ready_.push_back({ports::Event::Kind::kDeclarationChanged, ""});
  }
}

void LinuxEventSource::Collapse() {
  // A stop is not held up behind anything (a reload's apply may take
  // minutes); a reload applies the declaration as it is, so a change read
  // with it asks for nothing more.
  auto has = [&](ports::Event::Kind k) {
    return std::any_of(ready_.begin(), ready_.end(),
                       [k](const ports::Event& e) { return e.kind == k; });
  };
  if (has(ports::Event::Kind::kStop)) {
    std::erase_if(ready_,
                  [](const ports::Event& e) { return e.kind != ports::Event::Kind::kStop; });
    ready_.resize(1);
  } else if (has(ports::Event::Kind::kReload)) {
    std::erase_if(ready_, [](const ports::Event& e) {
      return e.kind == ports::Event::Kind::kDeclarationChanged;
    });
  }
}

ports::Event LinuxEventSource::Wait(std::chrono::nanoseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  Rewatch();
  while (ready_.empty()) {
    // A directory not watched yet is tried again every kRewatchEvery: the
    // daemon waits up to its interval, and the first declaration pushed
    // into a directory made meanwhile would wait as long.
    const bool retry = !watched_ && watch_.valid();
    auto left = std::max(until - std::chrono::steady_clock::now(), std::chrono::nanoseconds(0));
    auto ms = std::chrono::ceil<std::chrono::milliseconds>(
                  retry ? std::min<std::chrono::nanoseconds>(left, kRewatchEvery) : left)
                  .count();
    pollfd fds[2] = {{signals_.get(), POLLIN, 0}, {watch_.get(), POLLIN, 0}};
    int n = poll(fds, watch_.valid() ? 2 : 1,
                 static_cast<int>(std::clamp<long long>(ms, 0, 24LL * 3600 * 1000)));
    if (n < 0 && errno != EINTR) {
      return {ports::Event::Kind::kError, std::string("poll: ") + std::strerror(errno)};
    }
    // Signals first: a stop is not held up behind a change.
    if (n > 0 && (fds[0].revents & POLLIN)) ReadSignals();
    if (n > 0 && watch_.valid() && (fds[1].revents & POLLIN)) ReadWatch();
    Collapse();
    if (!retry || std::chrono::steady_clock::now() >= until) break;
    Rewatch();
  }
  if (ready_.empty()) return {};
  ports::Event next = std::move(ready_.front());
  ready_.pop_front();
  return next;
}

}  // namespace mesh::adapters
