// DeclarationSource: where an apply's declaration bytes come from.
//
// An apply asks for the digest first: when it matches the digest the record
// was settled from, the no-op is proven from the record and the text is never
// needed — and at 100,000 resources the text is 24 MB that would otherwise
// sit in memory for nothing. The text is read only to be parsed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/result.h"

namespace mesh::ports {

// A detached signature beside the declaration (minisign's DECLARATION.minisig).
struct DetachedSignature {
  std::string path;                 // where it was looked for, for messages
  std::optional<std::string> text;  // none: there is no such file
};

class DeclarationSource {
 public:
  virtual ~DeclarationSource() = default;
  // Lower-case hex SHA-256 of the bytes; empty when they are over
  // core::kMaxDeclarationBytes (the parse then refuses them by name).
  virtual core::Result<std::string> Digest() = 0;
  // The whole text, valid as long as the source. The full pass parses this
  // and takes the declaration's digest from it, not from Digest().
  virtual core::Result<std::string_view> Text() = 0;
  // The apply has parsed the text and will not ask for it (nor for the
  // digest) again: a source that holds the text may free it. At 100,000
  // resources it is 24 MB held through the apply's peak otherwise.
  virtual void ReleaseText() {}
  // Read only when the host has a --verify-key, on every apply: a signature
  // replaced after the declaration is caught. A source that is not a file
  // has none.
  virtual core::Result<DetachedSignature> Signature() {
    return DetachedSignature{"(the declaration is not a file)", std::nullopt};
  }
  // The bytes once more, after ReleaseText: only a rollback's second pass
  // asks (reconcile/rollback.h), rather than the apply holding a copy of
  // the declaration throughout. The caller checks their digest against the
  // one it parsed: a file changed in place since is not used.
  virtual core::Result<std::string> TextAgain() {
    return core::Fail("the declaration cannot be read again");
  }
  // A file others than its owner may read (group or other read bits): its
  // mode, and what to call it. A declaration holding credentials must not
  // be one (reconcile/private_declaration.h). None: only its owner can.
  struct Exposed {
    uint32_t mode = 0;
    std::string path;
  };
  virtual std::optional<Exposed> ReadableByOthers() const { return std::nullopt; }
  // Why users other than root or this process's user could change the
  // declaration (its file, or a directory on its path), which decides what
  // this host runs as root, in words that name it; none when no one else
  // can. The apply refuses
  // such a declaration unless its signature is checked (--verify-key).
  virtual std::optional<std::string> ChangeableByOthers() const { return std::nullopt; }
  // Where the bytes are read from, every symlink on the way resolved, as
  // the source opened them. No declared path may land there: under
  // `mesh-host run` the mesh re-points a link between applies, so where the
  // host's start resolved --declaration is not where this apply reads it.
  // None: not a file, or its place cannot be said.
  virtual std::optional<std::string> OpenedAt() const { return std::nullopt; }
  // Each symlink the path is reached through, where it lies: a declared
  // path there would re-point the way to the next read.
  virtual std::vector<std::string> LinksOnTheWay() const { return {}; }
};

}  // namespace mesh::ports
