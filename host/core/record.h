// The record: what the host last wrote, kept in <state-dir>/state.json as
// JSON Lines: a head (every field but the entries, and how many entries
// follow), then one entry per line, sorted by id.
//
// It is how the host knows a resource is `unchanged` without re-reading it:
// each entry holds the want digest it was applied at and a stat fingerprint
// of every path written. Issue 210 is the reason every outcome, `unchanged`
// included, writes its digest back here. Credential contents never appear:
// only digests.
#pragma once

#include <cstdint>
#include <functional>
#include <istream>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "host/core/boxed.h"
#include "host/core/result.h"
#include "host/core/unit_status.h"

namespace mesh::core {

struct WrittenPath {
  std::string path;
  // Cheap proof that the path is as the host left it: for a file
  // "size:mtime_ns:ctime_ns:inode", for a tree "tree:" + a digest of every
  // entry's fingerprint.
  std::string fingerprint;
  // For trees: the digest of the tree's content (names, modes, bytes),
  // compared when the fingerprint moved. For files (not credentials):
  // FileDigest of the file as the host left it (its mode, owner and bytes),
  // so that a no-op proves a file whose times alone moved unchanged without
  // the declaration (record_proof.h). Empty in records of older hosts: the
  // full pass compares such files with the declaration.
  std::string content_digest;
  uint64_t file_count = 0;
  // The path was there before the host first managed it: pruning leaves it.
  bool preexisting = false;

  bool operator==(const WrittenPath&) const = default;
};

// A service's or process's part of its record entry. Boxed in the entry: a
// file's entry (most of a large record, and of what the daemon keeps
// between applies) carries one empty pointer for it, not 160 bytes.
struct UnitRecord {
  // The unit, and the fingerprint of the unit file the host wrote under
  // --unit-dir (empty: the host does not own the unit file).
  std::string name;
  std::string file_fingerprint;
  // The unit file was there before the host first wrote it (an operator's
  // own, overwritten by a unit_text): prune neither deletes it nor stops
  // the unit.
  bool file_preexisting = false;
  // Its declared state ("running" or "stopped"), for the no-op proof.
  std::string state;
  // A unit declared running, as the host last found it as declared: the
  // NRestarts it saw then (a count grown since means systemd restarted the
  // daemon on its own: not as declared), and whether it was a oneshot whose
  // run had ended well (systemd unloads it after; this is the only memory
  // that it ran).
  std::optional<uint32_t> n_restarts;
  bool finished = false;
  // At that look it was still on its way up (activating) and never yet
  // seen up since: found failed later, its start failed.
  bool starting = false;
  // When the run then seen began (InactiveExitTimestamp, microseconds since
  // the epoch); 0 unknown (an older record).
  int64_t run_began_us = 0;
  // When the last reload then seen began (its first ExecReload= command's
  // start, microseconds since the epoch); 0 none seen (none since the run
  // began, or systemd cleared it at a daemon-reload since).
  int64_t reload_began_us = 0;
  // The unit's declared `enabled`, as the host last made it hold (the no-op
  // proof checks systemd's UnitFileState against it).
  std::optional<bool> enabled;
  // The drop-ins the host wrote in --unit-dir/UNIT.d/: name -> fingerprint,
  // "pre:" first when an operator's drop-in of that name was there before
  // (see DropInFingerprint).
  std::map<std::string, std::string> drop_ins;
  // Declared on_failure: rollback: the no-op proven from the record says
  // so in its outcomes, as the full pass does (the metrics' series of it).
  bool rollback = false;

  bool operator==(const UnitRecord&) const = default;
};

struct RecordEntry {
  std::string kind;
  std::string digest;
  std::vector<WrittenPath> written;
  std::string applied_at;
  // What the no-op proof needs without the declaration (reconciler.cc,
  // ConfirmFromRecord): the resource's place in the declaration (outcomes
  // are reported in that order).
  std::optional<uint64_t> position;
  // Services and processes only (empty for every other kind).
  Boxed<UnitRecord> unit_record;

  // The unit's part, or an empty one: reads need no has-a-unit check.
  const UnitRecord& unit() const { return unit_record.value_or_empty(); }
  // The unit's part, made on first use: call it only for a unit's entry.
  UnitRecord& mutable_unit() { return unit_record.get_or_make(); }

  bool operator==(const RecordEntry&) const = default;
};

// A recorded drop-in's fingerprint without its "pre:" mark, and whether it
// has it (the host wrote over an operator's drop-in: prune leaves it).
inline std::string_view DropInFingerprint(std::string_view recorded) {
  return recorded.starts_with("pre:") ? recorded.substr(4) : recorded;
}
inline bool DropInPreexisting(std::string_view recorded) { return recorded.starts_with("pre:"); }

// What the record remembers of the look at which the host last found the
// unit of `entry` as declared (none: nothing, a new resource).
inline UnitBaseline BaselineOfRecord(const RecordEntry* entry) {
  if (entry == nullptr) return {};
  return {entry->unit().n_restarts, entry->unit().finished, entry->unit().starting,
          entry->unit().run_began_us, entry->unit().reload_began_us};
}

// Owner and group names, with the uid and gid they resolved to.
using OwnerIds = std::map<std::pair<std::string, std::string>, std::pair<uint32_t, uint32_t>>;
// The most pairs a record's head holds (it is one line, read up to 1 MiB).
// A declaration of more is recorded without them: no no-op is proven from
// its record, and every apply is a full pass, which checks every file.
inline constexpr size_t kMaxOwnerPairs = 4096;
// `owners` as a record holds them: none past kMaxOwnerPairs.
inline std::optional<OwnerIds> RecordableOwners(OwnerIds owners) {
  if (owners.size() > kMaxOwnerPairs) return std::nullopt;
  return owners;
}

struct Record {
  // 2: JSON Lines. A record of version 1 (one JSON document, the entries
  // under "resources") is still read, whole, and written back as 2.
  static constexpr int kVersion = 2;
  // The version of the text this record was read from (kVersion for one
  // made here): an older one proves no no-op, so the full pass writes it
  // anew, and a one-shot apply reads it whole only once.
  int version = kVersion;
  // Which WantDigest() wrote the digests; a new one never trusts old digests.
  // 2: credentials' digests are keyed (WantDigest).
  static constexpr int kWantVersion = 2;
  int want_version = 0;
  // The declaration every entry's digest was computed from, set only by an
  // apply in which nothing failed (a failed resource keeps its older entry).
  // When the next declaration has this digest, the recorded digests are the
  // want digests and need no re-hashing.
  std::string settled_declaration_digest;
  std::string machine;
  uint64_t generation = 0;
  std::string declaration_digest;
  // The owner and group names the recorded files, credentials and
  // directories were checked under, and the ids each pair resolved to
  // then. A pair that resolves otherwise now (a user renumbered, or gone)
  // proves no no-op: nothing on disk moved, yet the path is no longer
  // owned as declared. None: a record of an older host (no no-op is
  // proven from it either).
  std::optional<OwnerIds> owners;
  std::map<std::string, RecordEntry> resources;

  bool operator==(const Record&) const = default;
};

// Receives a record a piece at a time (ports::RecordStore::Scan): its header
// — every field but the resources — then each entry, in the order written
// (by id). Returning false stops the reading. A no-op at 100,000 resources
// is proven this way without the record ever being held whole.
class RecordVisitor {
 public:
  virtual ~RecordVisitor() = default;
  // `header` has no resources. Called once, before the first entry.
  virtual bool Header(const Record& header) = 0;
  virtual bool Entry(const std::string& id, const RecordEntry& entry) = 0;
};

// The record's text (state.json), whole.
std::string SerializeRecord(const Record& record);
// The same text handed to `write` in pieces of about `piece_bytes`, so that
// it is never held whole (the record store streams it to disk: 33 MB at
// 100,000 files). Returns the first failure of `write`, after which it
// writes nothing more.
Status SerializeRecord(const Record& record, const std::function<Status(std::string_view)>& write,
                       size_t piece_bytes = 64 << 10);
// The same text made by hand, for a record too large to hold whole (the
// record store's RecordBuilder): the head line, which says how many entries
// follow, then each entry's line, in id order. SerializeRecord is these put
// together.
std::string SerializeRecordHead(const Record& header, size_t entries);
void AppendRecordEntry(std::string& out, const std::string& id, const RecordEntry& entry);

// Reading is one reader, a line at a time, each line by simdjson, from a
// whole text or a stream alike (the store streams a large record, never
// holding it whole). A line over 1 MiB, a line that is not a JSON object,
// or a line past the head's count of entries is refused with its number,
// fewer lines than the count as cut short. Unknown fields are skipped, so
// a newer host's record still reads; a repeated key or id keeps its last
// value. A record of version 1 is read a line at a time as its hosts laid
// it out, else whole up to 64 MiB; past that it is refused with
// ErrorKind::kTooLarge, which is not a corrupt record (the apply changes
// nothing rather than start from an empty one).
// What a read holds at once, at most. Tests lower the bounds to reach them
// with small texts.
struct RecordLimits {
  // Far beyond any line the host writes (an entry is some hundreds of
  // bytes); a longer one would be held whole to be parsed.
  size_t max_line_bytes = size_t{1} << 20;
  // A record of version 1 laid out as no host wrote it is one document,
  // read whole once (by the first apply after an upgrade).
  size_t max_version1_bytes = size_t{64} << 20;
};
Result<Record> ParseRecord(std::string_view text, const RecordLimits& limits = {});
Result<Record> ParseRecord(std::istream& text, const RecordLimits& limits = {});
// Reads the record, handing each entry to `visitor` instead of keeping it:
// true when the whole record was read and is well formed, false when the
// visitor stopped it, an error (as ParseRecord's) when it is not.
Result<bool> ScanRecord(std::istream& text, RecordVisitor& visitor,
                        const RecordLimits& limits = {});
Result<bool> ScanRecord(std::string_view text, RecordVisitor& visitor,
                        const RecordLimits& limits = {});
// The same for a record already in memory.
bool VisitRecord(const Record& record, RecordVisitor& visitor);

}  // namespace mesh::core
