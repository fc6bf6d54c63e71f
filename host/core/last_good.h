// The last good: what the host keeps of a unit declared `on_failure:
// rollback` so that it can put that unit back when the two looks catch it
// dying on a new definition (docs/two-looks.md, "Back to the last good").
//
// For each such unit, by its resource's id: the generation at which it was
// last confirmed running, and the resources its definition was made of then
// — the unit's own (unit_text, drop-ins, bundle), those in its restart_on
// and reload_on — as they were declared, with their want digests. And, once
// a rollback happened, the hold: which declared want digests the daemon
// refused, so that later applies of the same declaration keep the last good
// rather than break the daemon again every interval.
//
// Kept in <state-dir>/last-good.json beside the record, with the record's
// mode and owner checks. It holds the content of files and credentials
// (base64, as a declaration does): it never appears in any output, and the
// kept resources are read back by the declaration's own parser, so a
// tampered file is refused as a declaration would be.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/declaration.h"
#include "host/core/result.h"

namespace mesh::core {

// The daemon refused a generation: what it ran on is held.
struct Hold {
  uint64_t generation = 0;  // the refused one
  std::string since;        // when the rollback happened (RFC 3339)
  // How the daemon refused it, in the verdict's words ("failed (Result=
  // exit-code) 0.2 s after restart"): never content.
  std::string refused;
  // The refused want digests, by resource id: the hold stands while the
  // declaration still asks for every one of them.
  std::map<std::string, std::string> wants;
  // The restart onto the last good failed too: the host left it there.
  bool rollback_failed = false;

  bool operator==(const Hold&) const = default;
};

struct KeptUnit {
  uint64_t generation = 0;  // last confirmed running at
  std::string confirmed_at;
  // The resources its definition was made of then, by id, and their want
  // digests. Each resource keeps its content fields only (no restart_on,
  // no state): a rollback swaps content, never what the host is asked to
  // do with it.
  std::map<std::string, Resource> resources;
  std::map<std::string, std::string> wants;
  std::optional<Hold> hold;

  bool operator==(const KeptUnit&) const = default;
};

struct LastGood {
  static constexpr int kVersion = 1;
  std::map<std::string, KeptUnit> units;  // by the unit resource's id

  bool empty() const { return units.empty(); }
  bool operator==(const LastGood&) const = default;
};

// The content fields of `r`, as kept: what Substitute puts back.
Resource KeptCopy(const Resource& r);

// Puts `kept`'s content into `declared` (same id and kind): the file's
// bytes, mode and owner; the unit's text and drop-ins; the bundle's source
// and digest. False, and `declared` untouched, when the kinds differ.
bool Substitute(Resource& declared, const Resource& kept);

// last-good.json is read whole up to this (a few units' resources, base64).
inline constexpr uint64_t kMaxLastGoodBytes = 2 * kMaxDeclarationBytes;

// The size of `k`'s kept resources as saved, or why they would not read
// back: the declaration's parser refuses a text over kMaxDeclarationBytes
// (base64 makes content a third larger).
Result<size_t> KeptUnitBytes(std::string_view id, const KeptUnit& k, std::string_view machine);

// last-good.json's text. Fails when a kept text is not valid UTF-8 JSON can
// carry (a declaration's text always is), or a unit does not fit.
Result<std::string> SerializeLastGood(const LastGood& last_good, std::string_view machine);
// Refuses, naming the unit and the field, what does not read back exactly:
// a wrong shape or version, a kept resource its declaration would refuse, a
// want for a resource not kept, words with control characters.
Result<LastGood> ParseLastGood(std::string_view text);

}  // namespace mesh::core
