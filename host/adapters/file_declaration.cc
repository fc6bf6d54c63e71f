#include "host/adapters/file_declaration.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>
#include <utility>

#include "host/adapters/host_paths.h"
#include "host/core/declaration.h"
#include "host/core/sha256.h"

namespace mesh::adapters {

namespace {

// Whether a process has the file open for writing: a read lease cannot be
// had then (fcntl(2), F_SETLEASE). Not known (leases off, a file system
// without them, another owner's file without CAP_LEASE): no. The lease is
// let go at once; a writer's open meanwhile waits that long, and the
// signal a lease holder is sent then (SIGIO) is ignored, not fatal.
bool OpenForWriting(int fd) {
  static const bool ignored = [] { return ::signal(SIGIO, SIG_IGN) != SIG_ERR; }();
  if (!ignored) return false;
  if (::fcntl(fd, F_SETLEASE, F_RDLCK) == 0) {
    (void)::fcntl(fd, F_SETLEASE, F_UNLCK);
    return false;
  }
  return errno == EAGAIN;
}

// The same file with the same bytes, as far as its stat says.
bool SameBytes(const struct stat& a, const struct stat& b) {
  return a.st_ino == b.st_ino && a.st_size == b.st_size && a.st_mtim.tv_sec == b.st_mtim.tv_sec &&
         a.st_mtim.tv_nsec == b.st_mtim.tv_nsec && a.st_ctim.tv_sec == b.st_ctim.tv_sec &&
         a.st_ctim.tv_nsec == b.st_ctim.tv_nsec;
}

// "declaration PATH: why", the words of every refusal of the file.
std::unexpected<core::Error> Refuse(const std::string& path, std::string_view why) {
  return core::Fail("declaration " + path + ": " + std::string(why));
}

// Where the file open as `fd` is, every symlink resolved, as the kernel
// names it: the file opened, not one the name leads to now. One removed,
// or renamed over, since it was opened is named where it was: what a
// declared path there would write over is the file that replaced it.
core::Result<std::string> RealPathOf(int fd) {
  std::string link = "/proc/self/fd/" + std::to_string(fd);
  std::array<char, PATH_MAX> buf;
  ssize_t n = ::readlink(link.c_str(), buf.data(), buf.size());
  if (n < 0) return core::Fail(std::strerror(errno));
  if (static_cast<size_t>(n) == buf.size()) return core::Fail("its path is too long");
  std::string out(buf.data(), static_cast<size_t>(n));
  // A pipe's or a socket's name: not a file's path.
  if (out.empty() || out[0] != '/') return core::Fail("it has no path here (" + out + ")");
  // The kernel's mark of a file in no directory; a name may end so too.
  constexpr std::string_view kDeleted = " (deleted)";
  struct stat st;
  if (out.ends_with(kDeleted) && ::fstat(fd, &st) == 0 && st.st_nlink == 0) {
    out.resize(out.size() - kDeleted.size());
  }
  return out;
}

// Why users other than root or this process's user could change the file
// at `path` (a key, a declaration), at `real` when opened (RealPathOf), or
// nullopt: the file itself (`st`, through any link), and every directory
// from the one that holds the file opened up to /, as ssh's StrictModes
// checks an authorized key's path; and each link the kernel follows on the
// way to it (those met through another link too), and every directory the
// way enters (TheWayTo): whoever can re-point a link, or rename an entry in
// one of those directories, chooses the file.
// Unreadable is not safe.
std::optional<std::string> ChangeableByOthersAt(const std::string& path,
                                                const core::Result<std::string>& real,
                                                const struct stat& st) {
  auto trusted = [](uid_t uid) { return uid == 0 || uid == ::geteuid(); };
  auto loose_dir = [&](const std::string& dir) -> std::optional<std::string> {
    struct stat d;
    if (::stat(dir.c_str(), &d) != 0) return "in " + dir + ", which cannot be looked at";
    if (!trusted(d.st_uid) || ((d.st_mode & 022) != 0 && (d.st_mode & S_ISVTX) == 0)) {
      return "in " + dir + ", which users other than root or this process's user can change (uid " +
             std::to_string(d.st_uid) + ", mode " + core::FormatMode(d.st_mode & 07777) + ")";
    }
    return std::nullopt;
  };
  auto absolute = AbsolutePath(path);
  if (!absolute) return "its path cannot be resolved: " + absolute.error().message;
  TheWay way = TheWayTo(*absolute);
  for (const std::string& at : way.links) {
    struct stat l;
    if (::lstat(at.c_str(), &l) != 0) {
      return "through the link " + at + ", which cannot be looked at";
    }
    if (!trusted(l.st_uid)) {
      return "through the link " + at + ", owned by uid " + std::to_string(l.st_uid) +
             ", neither root nor this process's user";
    }
    size_t slash = at.rfind('/');
    if (auto loose = loose_dir(slash == 0 ? "/" : at.substr(0, slash))) {
      return "through the link " + at + " " + *loose;
    }
  }
  // Whoever can rename an entry in a directory the way enters (one above a
  // link, one a `..` climbs back through) can change where it leads.
  for (const std::string& dir : way.directories) {
    if (auto loose = loose_dir(dir)) return "on the way to it, " + *loose;
  }
  if (!trusted(st.st_uid)) {
    return "owned by uid " + std::to_string(st.st_uid) + ", neither root nor this process's user";
  }
  if ((st.st_mode & 022) != 0) {
    return "writable by users other than its owner (mode " + core::FormatMode(st.st_mode & 07777) +
           "): chmod go-w " + path;
  }
  if (!real) return "its path cannot be resolved: " + real.error().message;
  std::string dir = *real;
  while (dir != "/") {
    size_t slash = dir.rfind('/');
    dir = slash == 0 ? "/" : dir.substr(0, slash);
    if (auto loose = loose_dir(dir)) return loose;
  }
  return std::nullopt;
}

}  // namespace

core::Result<std::unique_ptr<FileDeclaration>> FileDeclaration::Open(const std::string& path) {
  auto fail = [&](std::string_view why) { return Refuse(path, why); };
  // O_NONBLOCK: a FIFO at the path is refused below, not waited on forever
  // (the daemon would hang there until its watchdog killed it).
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) return fail(std::strerror(errno));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return fail(std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return fail("not a regular file");
  if (static_cast<uint64_t>(st.st_size) > core::kMaxDeclarationBytes) {
    return fail("larger than the limit of " + std::to_string(core::kMaxDeclarationBytes) +
                " bytes");
  }
  auto real = RealPathOf(fd.get());
  auto changeable = ChangeableByOthersAt(path, real, st);
  if (changeable) changeable = "declaration " + path + ": " + *changeable;
  std::optional<std::string> opened_at;
  if (real) opened_at = std::move(*real);
  return std::unique_ptr<FileDeclaration>(
      new FileDeclaration(path, std::move(fd), static_cast<size_t>(st.st_size), st.st_mode & 07777,
                          std::move(changeable), std::move(opened_at)));
}

std::vector<std::string> FileDeclaration::LinksOnTheWay() const {
  auto absolute = AbsolutePath(path_);
  return absolute ? adapters::LinksOnTheWay(*absolute) : std::vector<std::string>();
}

std::optional<ports::DeclarationSource::Exposed> FileDeclaration::ReadableByOthers() const {
  if ((mode_ & 044) == 0) return std::nullopt;
  return Exposed{mode_, path_};
}

core::Result<std::string> FileDeclaration::Digest() {
  if (released_) return Refuse(path_, "read after its text was released");
  if (text_.has_value()) return core::Sha256Hex(*text_);
  core::Sha256 hash;
  std::array<char, 64 << 10> buffer;
  uint64_t total = 0;
  for (off_t at = 0;;) {
    ssize_t r = ::pread(fd_.get(), buffer.data(), buffer.size(), at);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Refuse(path_, std::string("read error: ") + std::strerror(errno));
    if (r == 0) break;
    total += static_cast<uint64_t>(r);
    // Grown in place past the limit since it was opened: the parse would
    // refuse it, so its digest must not prove anything.
    if (total > core::kMaxDeclarationBytes) return std::string();
    hash.Update(std::string_view(buffer.data(), static_cast<size_t>(r)));
    at += r;
  }
  return hash.HexDigest();
}

core::Result<std::string_view> FileDeclaration::Text() {
  if (released_) return Refuse(path_, "read after its text was released");
  if (!text_.has_value()) {
    // Written in place (rsync --inplace, dd conv=notrunc), every moment of
    // the file may be valid JSON: the new text's head over the old one's
    // tail. Not read while a writer has it open, nor kept if it changed
    // while it was read; the watch's event at the writer's close reads it.
    if (OpenForWriting(fd_.get())) {
      return Refuse(path_, "being written: another process has it open for writing (lsof " + path_ +
                               " names it); it is read once closed (write it beside and rename it "
                               "into place)");
    }
    struct stat before {};
    struct stat after {};
    bool stat_before = ::fstat(fd_.get(), &before) == 0;
    auto text = TextAgain();
    if (!text) return std::unexpected(text.error());
    if (stat_before && ::fstat(fd_.get(), &after) == 0 && !SameBytes(before, after)) {
      return Refuse(path_, "changed while it was read; the next apply reads it again");
    }
    text_ = std::move(*text);
  }
  return std::string_view(*text_);
}

core::Result<std::string> FileDeclaration::TextAgain() {
  if (::lseek(fd_.get(), 0, SEEK_SET) != 0) {
    return Refuse(path_, std::string("read error: ") + std::strerror(errno));
  }
  auto text = ReadUpTo(fd_.get(), size_);
  if (!text) return Refuse(path_, std::string("read error: ") + std::strerror(text.error()));
  return std::move(*text);
}

void FileDeclaration::ReleaseText() {
  released_ = true;
  text_.reset();
}

core::Result<ports::DetachedSignature> FileDeclaration::Signature() {
  constexpr size_t kMaxSignatureBytes = 64 << 10;
  ports::DetachedSignature sig{path_ + ".minisig", std::nullopt};
  auto fail = [&](std::string_view why) {
    return core::Fail("declaration signature " + sig.path + ": " + std::string(why));
  };
  UniqueFd fd(::open(sig.path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid() && errno == ENOENT) return sig;
  if (!fd.valid()) return fail(std::strerror(errno));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return fail(std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return fail("not a regular file");
  if (static_cast<uint64_t>(st.st_size) > kMaxSignatureBytes) {
    return fail("larger than " + std::to_string(kMaxSignatureBytes) +
                " bytes: not a minisign signature");
  }
  auto text = ReadUpTo(fd.get(), static_cast<size_t>(st.st_size));
  if (!text) return fail(std::string("read error: ") + std::strerror(text.error()));
  sig.text = std::move(*text);
  return sig;
}

core::Result<core::MinisignKey> ReadVerifyKey(const std::string& path) {
  constexpr size_t kMaxKeyBytes = 4096;
  auto fail = [&](std::string_view why) {
    return core::Fail("--verify-key " + path + ": " + std::string(why));
  };
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) return fail(std::strerror(errno));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return fail(std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return fail("not a regular file");
  // The key decides what this host runs as root: one that someone else can
  // write, or replace in its directory, is no key (ssh's StrictModes).
  if (auto loose = ChangeableByOthersAt(path, RealPathOf(fd.get()), st)) return fail(*loose);
  if (static_cast<uint64_t>(st.st_size) > kMaxKeyBytes) {
    return fail("larger than " + std::to_string(kMaxKeyBytes) +
                " bytes: not a minisign public key");
  }
  auto text = ReadUpTo(fd.get(), static_cast<size_t>(st.st_size));
  if (!text) return fail(std::string("read error: ") + std::strerror(text.error()));
  auto key = core::ParseMinisignKey(*text);
  if (!key) return fail(key.error().message);
  return key;
}

}  // namespace mesh::adapters
