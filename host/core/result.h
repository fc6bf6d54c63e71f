// Errors as values for every mesh-host module.
//
// No exception crosses a module boundary: a function that can fail returns
// Result<T> (a std::expected) whose error is a human-readable message naming
// what is wrong. Adapters catch third-party exceptions and convert them here.
#pragma once

#include <expected>
#include <string>
#include <utility>
#include <vector>

namespace mesh::core {

// What kind of failure, where callers must tell them apart.
enum class ErrorKind {
  kOther,
  // A path would leave its root (a symlink on the way, ".."): the
  // declaration is refused whole rather than applied in part.
  kOutsideRoot,
  // A directory to remove still holds something: it is left, not a failure.
  kNotEmpty,
  // The file at a path is not the one looked at, or changed while it was
  // read: it is someone else's doing, not a fault of the disk.
  kChanged,
  // A JSON document nests deeper than its reader allows.
  kTooDeep,
  // A JSON object names one key twice: which one a reader keeps is its own
  // choice, so the document is refused.
  kDuplicateKey,
  // A document is larger than its reader can hold (a record of version 1
  // laid out as no host writes it): refused as such, never read as corrupt.
  kTooLarge,
  // A record's text that is no record (core::ParseRecord): the one failure
  // to read it after which the host starts from an empty record.
  kCorrupt,
  // A file carries an access ACL: access its mode does not show, which the
  // host dropped when it wrote it. Drift, put right by writing it again.
  kBeyondMode,
  // Another process holds what this one would lock: it may be using all
  // that is there, so nothing of it is this process's to remove.
  kHeld,
  // A place of the host's own (its state directory, its record) that
  // another user could have written: not read until it is the host's
  // alone again. Mended by its owner and mode, never by deleting it.
  kUntrusted,
};

struct Error {
  std::string message;
  ErrorKind kind = ErrorKind::kOther;
  // Several refusals found at once, each whole (`message` then says how
  // many and joins them on one line): shown one per line where lines are.
  std::vector<std::string> details;
  // Refusals found past those named (core::Problems keeps 50): the last of
  // `details` then says "... and N more".
  size_t unnamed = 0;
};

// std::expected that must be looked at: a failure dropped on the floor is a
// compile warning. A call whose failure is rightly ignored says so with
// `(void)` and a comment on why.
template <typename T>
class [[nodiscard]] Result : public std::expected<T, Error> {
 public:
  using std::expected<T, Error>::expected;
  Result(std::expected<T, Error> e) : std::expected<T, Error>(std::move(e)) {}  // NOLINT
};

using Status = Result<void>;

inline std::unexpected<Error> Fail(std::string message) {
  return std::unexpected<Error>(Error{std::move(message), ErrorKind::kOther, {}});
}

inline std::unexpected<Error> Fail(ErrorKind kind, std::string message) {
  return std::unexpected<Error>(Error{std::move(message), kind, {}});
}

inline Status Ok() { return {}; }

// Several refusals found at once (a declaration's, say), at most
// kMaxProblems of them named: fixing an input should not take one run per
// mistake.
class Problems {
 public:
  static constexpr size_t kMaxProblems = 50;

  void Add(std::string message) {
    if (named_.size() < kMaxProblems) named_.push_back(std::move(message));
    ++total_;
  }
  void Add(const Status& st) {
    if (!st) Add(st.error().message);
  }
  void Clear() {
    named_.clear();
    total_ = 0;
  }
  // `later`'s after these, counted whole.
  void Append(const Problems& later) {
    for (const std::string& m : later.named_) Add(m);
    total_ += later.total_ - later.named_.size();
  }
  bool empty() const { return total_ == 0; }
  size_t total() const { return total_; }
  // Each problem named, the first kMaxProblems of total().
  const std::vector<std::string>& named() const { return named_; }
  // One refusal: its message, as it always read. Several: a count and
  // all of them on one line, and each in `details` for sinks with lines.
  Error ToError() const {
    if (total_ == 1) return Error{named_[0], ErrorKind::kOther, {}};
    Error e;
    e.message = std::to_string(total_) + " problems: ";
    e.details = named_;
    if (total_ > named_.size()) {
      e.unnamed = total_ - named_.size();
      e.details.push_back("... and " + std::to_string(e.unnamed) + " more");
    }
    for (size_t k = 0; k < e.details.size(); ++k) e.message += (k ? "; " : "") + e.details[k];
    return e;
  }
  Status ToStatus() const {
    if (empty()) return Ok();
    return std::unexpected(ToError());
  }

 private:
  std::vector<std::string> named_;
  size_t total_ = 0;
};

}  // namespace mesh::core
