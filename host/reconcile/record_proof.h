// RecordProof: a no-op proven from the record alone, entry by entry.
//
// When the declaration's bytes are the ones the record was settled from, the
// record holds everything the full pass would compare for every resource:
// kind, want digest, paths and their fingerprints, unit, unit file, declared
// state and position. When every fingerprint still holds and every unit is
// in its declared state, the full pass would find each resource unchanged
// and do nothing — so the declaration is not even parsed. At the first
// difference the proof stops, and the full pass decides everything from
// scratch (tests/host/reconcile/noop_test.cc holds the two to the same
// report, word for word).
//
// It visits the record (RecordStore::Scan) rather than holding it: files are
// checked in batches as their entries arrive, and only what the report needs
// is kept per resource, so its working set grows with a batch, not with
// the record (docs/performance.md has the figures).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "host/core/declaration.h"
#include "host/core/file_info.h"
#include "host/core/outcome.h"
#include "host/core/record.h"
#include "host/core/result.h"
#include "host/core/unit_status.h"
#include "host/core/want.h"
#include "host/ports/background.h"
#include "host/ports/file_system.h"
#include "host/ports/service_manager.h"
#include "host/reconcile/apply_ports.h"

namespace mesh::reconcile {

class RecordProof : public core::RecordVisitor {
 public:
  // Paths are looked at in batches: the batch bounds the memory, and sorted
  // by path it lets StatMany keep each directory open for all its files.
  static constexpr size_t kBatch = 8192;

  // `digest`: the declaration's; `machine`: --machine (empty: any). Of
  // the ports, root, units, services (null: no unit is proven) and
  // background (null: a large batch's stats are all taken on the caller's
  // thread, not half of them beside it).
  // `writer`: who owns a tree the host unpacked (HostDirs::writer).
  // `unit_dir`: --unit-dir; a unit of the host's that systemd loads from
  // another file is not proven (the full pass looks at which file it is).
  RecordProof(const ReconcilerPorts& ports, std::string_view digest, std::string_view machine,
              size_t batch = kBatch, std::optional<core::HostIds> writer = std::nullopt,
              std::string unit_dir = {})
      : ports_(ports),
        digest_(digest),
        machine_(machine),
        batch_size_(batch),
        writer_(writer),
        unit_dir_(std::move(unit_dir)) {}

  bool Header(const core::Record& header) override;
  bool Entry(const std::string& id, const core::RecordEntry& entry) override;
  // After the whole record was visited: checks what is left (the last
  // batch of files, unit files, units). True: every resource is unchanged.
  bool Finish();

  // For a record that stays in memory, unchanged, across applies (the
  // daemon's: RecordStore::KeptRecordVersion). Called before the visit: what
  // Entry gathers from each entry then points into the record rather than
  // into copies, every entry is gathered before any path is looked at, and
  // each recorded fingerprint is read into its numbers once. What was
  // gathered depends on the record alone; only the looks depend on the
  // machine, and Rerun takes them again without visiting the record.
  void KeepForReruns();
  // True once a visit went through every entry and Finish gathered them:
  // Rerun may then be called, as long as the same record is alive.
  bool gathered() const { return gathered_; }
  // Finish, again, for a declaration of `digest`: the same record, the
  // machine looked at anew. The caller holds the record alive.
  bool Rerun(std::string_view digest);
  // Frees what the last look saw, once it has been reported: a kept proof
  // holds, between applies, only what it gathered.
  void ReleaseLooks();
  // The outcomes, in declaration order (after Finish returned true).
  void Report(const std::function<void(core::ResourceOutcome&&)>& deliver) const;
  const core::Record& header() const { return header_; }

  // When the proof failed: the paths it had just looked at and what it
  // saw, for the full pass to reuse rather than stat them again.
  std::vector<std::pair<std::string, core::Result<core::FileInfo>>> TakeLooks();

  // A file whose times moved while its bytes, mode and owner stayed as
  // recorded (touched, or rewritten with the same bytes): proven unchanged
  // by reading it, and its new fingerprint is for the record, so that the
  // next no-op does not read it again.
  struct Touched {
    std::string id;
    std::string fingerprint;  // as found now
  };
  // After Finish returned true.
  std::vector<Touched> TakeTouched();
  // Resources proven so far.
  size_t resources() const { return proven_.size(); }
  // The record holds a credential: so does a declaration of its digest.
  bool holds_credentials() const { return credentials_; }
  // The ids of the unit resources declared on_failure: rollback.
  std::vector<std::string> RollbackIds() const;
  // The want digest the record holds for resource `id` ("" when none).
  std::string_view RecordedWant(std::string_view id) const;
  // More touched files than this and the proof gives way to the full pass,
  // which reads them as well and holds far less per file than a list.
  static constexpr size_t kMaxTouched = 4096;

 private:
  // Text copied out of entries that last only as long as their visit (a
  // streamed record), in blocks growing from 4 to 64 KiB: one allocation per
  // block, not one per string — the proof's no-op is the host's hot path.
  class Text {
   public:
    std::string_view Copy(std::string_view s);
    void Clear();

   private:
    std::vector<std::unique_ptr<char[]>> blocks_;
    size_t used_ = 0;
    size_t capacity_ = 0;
  };
  // A path to check, held until its batch is looked at (views into batch_text_).
  struct PathCheck {
    std::string_view path;
    std::string_view fingerprint;
    bool tree = false;
    core::FileType type = core::FileType::kRegular;  // file, or a declared directory or symlink
    // A file's recorded FileDigest (empty: it is not proven by reading it
    // when its fingerprint moved), and its place in proven_.
    std::string_view content_digest;
    size_t proven = 0;
    // The fingerprint's numbers, for a kept record (KeepForReruns).
    std::optional<core::FileStamp> stamp;
  };
  // A touched file, read in Finish.
  struct ToRead {
    std::string path;
    std::string content_digest;
    core::FileInfo info;  // as found
    Touched touched;
  };
  // What the report says of one resource, kept until the end (views into
  // kept_text_).
  struct Proven {
    std::string_view id;
    std::string_view digest;
    uint64_t position = 0;
    uint64_t file_count = 0;
    uint32_t applied_at = 0;  // index into applied_at_: most entries share one
    int32_t unit = -1;        // index into units_
    core::Kind kind = core::Kind::kFile;
    bool tree = false;
  };
  struct Unit {
    std::string name;
    std::string unit_file_fingerprint;
    core::UnitState state = core::UnitState::kStopped;  // as declared
    bool run() const { return state == core::UnitState::kRunning; }
    core::UnitBaseline baseline;
    core::UnitStatus status;
    std::optional<bool> enabled;                  // declared: systemd's UnitFileState must agree
    std::map<std::string, std::string> drop_ins;  // name -> fingerprint, as written
    bool rollback = false;                        // declared on_failure: rollback
  };

  bool HeaderHolds() const;
  bool OwnersHold() const;
  // Text an entry gives, kept past its visit: copied into `text`, or, for a
  // kept record, a view of the record's own.
  std::string_view Hold(std::string_view s, Text& text);
  bool CheckBatch();
  // StatMany of `paths`, the second half of a large batch on another thread.
  std::vector<core::Result<core::FileInfo>> StatInHalves(std::span<const std::string_view> paths);
  // Looks at batch_[begin, end), which is sorted by path.
  bool CheckRange(size_t begin, size_t end);
  // Positions are the declaration's order: each exactly once.
  bool PositionsHold() const;
  // A gathered proof's looks, for the digest held: every path, then Look.
  bool LookAgain();
  // What Finish and Rerun look at once the entries are in.
  bool Look();
  // Reads each touched file: its bytes must be those recorded.
  bool ReadTouched();
  uint32_t AppliedAt(const std::string& text);

  ReconcilerPorts ports_;
  std::string digest_;
  std::string machine_;
  size_t batch_size_;
  std::optional<core::HostIds> writer_;
  std::string unit_dir_;
  core::Record header_;
  bool header_seen_ = false;
  Text batch_text_;
  Text kept_text_;
  std::vector<PathCheck> batch_;
  // What StatMany answered for batch_[looked_, looked_ + seen_.size()),
  // kept after a batch held (until the next entry) for TakeLooks.
  std::vector<core::Result<core::FileInfo>> seen_;
  size_t looked_ = 0;
  bool checked_ = false;
  bool keep_ = false;      // KeepForReruns
  bool gathered_ = false;  // kept: every entry in, batch_ sorted
  bool credentials_ = false;
  bool positions_hold_ = false;
  std::vector<Proven> proven_;
  std::vector<ToRead> touched_;
  std::vector<Unit> units_;
  std::vector<std::string> applied_at_;
  std::map<std::string, uint32_t, std::less<>> applied_at_index_;
};

}  // namespace mesh::reconcile
