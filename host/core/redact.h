// Keeps credentials out of what the host shows. A daemon may well log the
// secret it refused; its journal lines reach /status, the log and apply's
// output, where a credential's content never appears (SPEC).
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mesh::core {

// Each credential's id and content.
using Secrets = std::vector<std::pair<std::string, std::string>>;

// Replaces in a line each run of text that is a piece of a credential by
// "[credential ID]". A credential's pieces: its whole content (blanks and
// newlines around it trimmed) of 4 bytes or more; each of its lines of 8
// bytes or more; each value of 8 bytes or more of a KEY=VALUE or KEY: VALUE,
// on a line of its own (whatever it holds) or among others split by , ; & ?
// or brackets outside quotes (compact JSON, a flow-style map, a query
// string), its quotes aside, and also without a trailing " # comment"; and,
// of a content that is JSON, each string
// of 8 bytes or more as decoded. Matches that overlap are replaced as one
// run, named by the credential whose match starts it: no tail of one
// secret is left beside another's name.
//
// Built once for any number of lines; it holds views into `secrets`, which
// must outlive it.
class Redactor {
 public:
  explicit Redactor(const Secrets& secrets);
  // Its pieces view its own decoded strings.
  Redactor(const Redactor&) = delete;
  Redactor& operator=(const Redactor&) = delete;
  std::string operator()(std::string_view line) const;

 private:
  struct Piece {
    uint32_t prefix;  // its first 4 bytes: the lookup key
    std::string_view text;
    size_t secret;  // index into names_
  };
  // A line of a credential: itself, and its values (the class comment).
  void AddLine(std::string_view line, size_t secret, bool nested);
  void Add(std::string_view text, size_t secret, size_t min_size);
  void AddJsonStrings(std::string_view content, size_t secret);

  std::vector<Piece> pieces_;  // by prefix, the longest first
  std::vector<std::string> names_;
  std::deque<std::string> decoded_;  // JSON strings as decoded, viewed by pieces_
};

}  // namespace mesh::core
