// The declaration: what a machine must look like, as the mesh's link drops it.
//
// ParseDeclaration turns the JSON text into a validated model or refuses it
// whole with a message naming the resource and the field. Every rule that can
// be checked from the text alone lives here; the rules that need the machine
// (this machine's name, the applied generation, the artifacts' digests) are
// checked by the reconciler before anything is touched.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "host/core/boxed.h"
#include "host/core/result.h"
#include "host/core/unit_status.h"  // UnitState

namespace mesh::core {

enum class Kind { kFile, kCredential, kArchive, kService, kProcess, kDirectory, kSymlink };
inline constexpr std::array<Kind, 7> kAllKinds = {
    Kind::kFile,    Kind::kCredential, Kind::kArchive, Kind::kService,
    Kind::kProcess, Kind::kDirectory,  Kind::kSymlink};

std::string_view KindName(Kind kind);
// The inverse of KindName (a record names kinds by these words).
std::optional<Kind> ParseKind(std::string_view name);

// "running", "stopped" or "triggered": the words of the declaration, the
// record and /status.
std::string_view UnitStateName(UnitState state);
std::optional<UnitState> ParseUnitState(std::string_view name);

// What a service or process declares of its unit.
struct UnitSpec {
  std::string name;
  UnitState state = UnitState::kRunning;
  std::optional<std::string> text;  // unit_text
  std::vector<std::string> restart_on;
  std::vector<std::string> reload_on;
  // Whether the unit comes up at boot ([Install] links made through
  // systemd); none: left as it is.
  std::optional<bool> enabled;
  // Drop-in file name ("10-limits.conf") -> its text, written to
  // --unit-dir/UNIT.d/: part of the unit's definition.
  std::map<std::string, std::string> drop_ins;
  // on_failure: rollback. Not part of the want digest: it changes what the
  // host does when the unit fails, not what the machine holds.
  bool rollback = false;

  bool operator==(const UnitSpec&) const = default;
};

struct Resource {
  std::string id;
  Kind kind = Kind::kFile;

  // file, credential, archive, process: the absolute path on the machine.
  std::string path;
  // file, credential: the exact bytes (content_base64 already decoded).
  std::string content;
  uint32_t mode = 0644;
  std::string owner = "root";
  std::string group = "root";

  // symlink: where it points, as written (never resolved or checked).
  std::string target;

  // archive, process: a file name under --artifacts and its SHA-256 (hex).
  std::string source;
  std::string sha256;

  // service, process: boxed, so that a file (most of a large declaration)
  // carries one empty pointer for it. Read through unit(), made through
  // mutable_unit().
  Boxed<UnitSpec> unit_spec;

  // The unit's part, or an empty one for every other kind.
  const UnitSpec& unit() const { return unit_spec.value_or_empty(); }
  UnitSpec& mutable_unit() { return unit_spec.get_or_make(); }

  bool HasFiles() const { return kind != Kind::kService; }
  bool IsTree() const { return kind == Kind::kArchive || kind == Kind::kProcess; }
  // A regular file of declared content (file, credential).
  bool IsFile() const { return kind == Kind::kFile || kind == Kind::kCredential; }
  bool HasUnit() const { return kind == Kind::kService || kind == Kind::kProcess; }

  bool operator==(const Resource&) const = default;
};

struct Declaration {
  std::string machine;
  uint64_t generation = 0;
  std::vector<Resource> resources;
  // SHA-256 of the declaration's bytes, reported on /status.
  std::string digest;

  // By id: the reconciler asks for every record entry.
  const Resource* Find(std::string_view id) const;

  // Hashes a string or a view of one alike, so that Find takes a view.
  struct IdHash {
    using is_transparent = void;
    size_t operator()(std::string_view id) const { return std::hash<std::string_view>{}(id); }
  };
  std::unordered_map<std::string, size_t, IdHash, std::equal_to<>> index;  // id -> position
};

// Limits that keep a hostile declaration from taking the machine's memory or
// stack. They are generous for real use and documented in docs/declaration.md.
inline constexpr size_t kMaxDeclarationBytes = 64u << 20;
inline constexpr size_t kMaxContentBytes = 16u << 20;
inline constexpr int kMaxJsonDepth = 32;
inline constexpr size_t kMaxResources = 100000;
inline constexpr size_t kMaxPathBytes = 4096;
inline constexpr size_t kMaxMachineBytes = 255;
inline constexpr size_t kMaxDropIns = 64;
inline constexpr size_t kMaxIdBytes = 128;

// The checks that need more than the text (this machine, its record, the
// host's own places), given to ParseDeclaration so that a refusal names
// their problems before the resources' own: they see the document's fields
// (with the digest) and every resource the text did not refuse, and run
// whenever the document's own fields were read.
using MoreChecks = std::function<void(const Declaration&, Problems&)>;

Result<Declaration> ParseDeclaration(std::string_view text, const MoreChecks& more = {});

// For a declaration too large to hold whole (reconcile/chunked.h): each
// resource parsed as ParseDeclaration parses it, and handed over in
// declaration order `chunk` at a time, as a Declaration of those resources
// alone (with their index; no machine, generation or digest); `on_chunk`
// returns false to stop. Returns the document's own fields, with the digest
// and no resources. The reference parser reads the text, so no tree of the
// whole document is built. Checks only what one resource shows, and ids
// within a chunk; what needs them all (ids and paths across chunks, and
// restart_on) is the caller's. A refusal's message is not ParseDeclaration's
// (which names every problem): the caller asks it for the words.
Result<Declaration> ParseDeclarationInChunks(
    std::string_view text, size_t chunk, const std::function<bool(Declaration& chunk)>& on_chunk);

// Individual rules, exposed for reuse (unit names on the CLI, paths in tests).
Status CheckId(std::string_view id);
Status CheckPath(std::string_view path);
// A declared path under /dev, /proc or /sys is refused, saying why.
Status CheckNotKernelMade(std::string_view path);
Status CheckUnitName(std::string_view unit);
Status CheckDropInName(std::string_view name);
Result<uint32_t> ParseMode(std::string_view mode);
std::string FormatMode(uint32_t mode);

// True when `inner` equals `outer` or lies below it ("/a" and "/a/b").
bool PathWithin(std::string_view inner, std::string_view outer);

// Calls `visit` with each proper ancestor of the absolute `path`, nearest
// first ("/a/b/c": "/a/b", then "/a"), until it returns true; says whether
// one did.
template <typename Visit>
bool AnyAncestor(std::string_view path, Visit visit) {
  for (size_t slash = path.rfind('/'); slash != std::string_view::npos && slash > 0;
       slash = path.rfind('/', slash - 1)) {
    if (visit(path.substr(0, slash))) return true;
  }
  return false;
}

}  // namespace mesh::core
