// RecordStore: where the record and the intent live between applies.
//
// Load distinguishes "no record yet" (nullptr) from a record that cannot be
// read (an error), so the reconciler can say which it met; either way it
// adopts files that already match rather than rewriting them. The record is
// shared and immutable: a store may hand out the same one again (the
// daemon's no-op copies nothing).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "host/core/intent.h"
#include "host/core/last_good.h"
#include "host/core/record.h"
#include "host/core/result.h"

namespace mesh::ports {

// A new record made an entry at a time, for an apply too large to hold it
// whole (reconcile/chunked.h). Entries come in any order and are not kept in
// memory where the store can help it; Commit writes the record, entries
// sorted by id as Save writes them, atomically as Save. Nothing reaches the
// record before Commit: a builder dropped uncommitted leaves it as it was.
class RecordBuilder {
 public:
  virtual ~RecordBuilder() = default;
  // An id added twice fails (here or at Commit).
  virtual core::Status Add(const std::string& id, const core::RecordEntry& entry) = 0;
  // `header`'s fields, with the entries added (its own resources are not
  // read). Once only.
  virtual core::Status Commit(const core::Record& header) = 0;
};

class RecordStore {
 public:
  virtual ~RecordStore() = default;
  virtual core::Result<std::shared_ptr<const core::Record>> Load() = 0;
  // Hands the record to `visitor` — its header, then each entry — without
  // holding it whole where the store can (a one-shot apply streams
  // state.json; a store that keeps the record in memory walks it). False
  // when there is no record or the visitor stopped; an error when the
  // record cannot be read (Load then says why).
  virtual core::Result<bool> Scan(core::RecordVisitor& visitor) {
    auto loaded = Load();
    if (!loaded) return std::unexpected(loaded.error());
    if (*loaded == nullptr) return false;
    return core::VisitRecord(**loaded, visitor);
  }
  // A store that keeps the record in memory (the daemon's) numbers the
  // records Load hands out: the same number for as long as Load returns the
  // same record, a new one with any other. What a caller derives from a
  // record may be kept under its number. None: this store keeps no record
  // (a one-shot apply's, which streams state.json).
  virtual std::optional<uint64_t> KeptRecordVersion() const = 0;
  // Atomic: the old record or the new one survives a crash, never a mix.
  // Taken by value: a store that keeps the record keeps this one, rather
  // than a second copy of every entry alongside the caller's.
  virtual core::Status Save(core::Record record) = 0;
  // A builder of the next record, keeping its entries out of memory where
  // the store can (on disk), so that an apply's peak does not hold them.
  virtual core::Result<std::unique_ptr<RecordBuilder>> BuildRecord() = 0;

  // What earlier applies still owe, and whether one was interrupted after
  // it began changing the machine (its temporary files need sweeping). No
  // intent yet is an empty one. A store that may write removes its own
  // leftovers (a half-written record or intent) here.
  virtual core::Result<core::Intent> LoadIntent() = 0;
  // Atomic and durable before it returns: the apply calls it before its
  // first write or unit action, and again when it commits. An empty intent
  // (nothing owed, not applying) leaves no file: the no-op costs no fsync.
  virtual core::Status SaveIntent(const core::Intent& intent) = 0;

  // What units declared `on_failure: rollback` last ran well on, and what
  // they are held at (core/last_good.h). None yet is an empty one; one that
  // cannot be read or trusted is an error (the apply then changes nothing:
  // forgetting a hold would push the refused content onto the daemon again).
  virtual core::Result<core::LastGood> LoadLastGood() = 0;
  // Atomic and durable; an empty one leaves no file. `machine` names the
  // kept declarations (they are read back by the declaration's parser).
  virtual core::Status SaveLastGood(const core::LastGood& last_good, std::string_view machine) = 0;

  // Copies of the bundles the last good is made of, by their sha256: what
  // a rollback unpacks when --artifacts no longer holds those bytes (the
  // artifact removed, or replaced under its name by the next version).
  // KeepArtifact keeps one, durably, asking `read` for the bytes only when
  // none is kept yet; KeptArtifact reads one back (the caller checks its
  // digest); KeepOnlyArtifacts removes every copy not named. A store that
  // keeps none refuses KeepArtifact and has none to read.
  using ArtifactReader = std::function<core::Result<std::string>()>;
  virtual core::Status KeepArtifact(const std::string& sha256, const ArtifactReader& read) = 0;
  virtual core::Result<std::string> KeptArtifact(const std::string& sha256) = 0;
  virtual core::Status KeepOnlyArtifacts(const std::set<std::string>& sha256s) = 0;

  // The secret that keys credentials' digests (core::WantDigest): made once,
  // kept beside the record, never shown. Never fails: a key the store cannot
  // read or keep is made for this process only and `warning` says why —
  // each credential is then compared by its content again (its recorded
  // digest no longer matches), never taken for unchanged on a digest. A
  // store that may not write (plan) and has no key yet uses one for this
  // process only, without a warning.
  struct DigestKey {
    std::string bytes;
    std::string warning;
  };
  virtual DigestKey LoadDigestKey() = 0;
};

}  // namespace mesh::ports
