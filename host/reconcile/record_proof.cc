#include "host/reconcile/record_proof.h"

#include <algorithm>
#include <array>
#include <iterator>

#include "host/core/want.h"
#include "host/reconcile/as_left.h"
#include "host/reconcile/words.h"

namespace mesh::reconcile {

std::string_view RecordProof::Text::Copy(std::string_view s) {
  // Blocks grow from 4 KiB to 64 KiB: a small record's proof allocates
  // little, a large one's few blocks.
  constexpr size_t kFirstBlock = 4 << 10, kLargestBlock = 64 << 10;
  if (s.empty()) return {};
  if (blocks_.empty() || s.size() > capacity_ - used_) {
    size_t size = std::max(std::min(std::max(kFirstBlock, capacity_ * 2), kLargestBlock), s.size());
    blocks_.push_back(std::make_unique_for_overwrite<char[]>(size));
    used_ = 0;
    capacity_ = size;
  }
  char* at = blocks_.back().get() + used_;
  std::copy(s.begin(), s.end(), at);
  used_ += s.size();
  return std::string_view(at, s.size());
}

void RecordProof::Text::Clear() {
  if (blocks_.size() > 1) blocks_.erase(blocks_.begin(), blocks_.end() - 1);
  used_ = 0;
}

bool RecordProof::Header(const core::Record& header) {
  if (header_seen_) return false;
  header_seen_ = true;
  header_ = header;
  return HeaderHolds();
}

bool RecordProof::HeaderHolds() const {
  return header_.declaration_digest == digest_ && header_.settled_declaration_digest == digest_ &&
         header_.version == core::Record::kVersion &&
         header_.want_version == core::Record::kWantVersion &&
         (machine_.empty() || header_.machine == machine_) && header_.owners.has_value();
}

// Each owner and group name still resolves to the ids the paths were
// checked under: a user renumbered moves nothing on disk. Two look-ups a
// pair (a declaration names few), at every proof, kept or not.
bool RecordProof::OwnersHold() const {
  if (!header_.owners.has_value()) return false;
  for (const auto& [names, ids] : *header_.owners) {
    auto now = ports_.root->LookupIds(names.first, names.second);
    if (!now || *now != ids) return false;
  }
  return true;
}

void RecordProof::KeepForReruns() { keep_ = true; }

std::string_view RecordProof::Hold(std::string_view s, Text& text) {
  return keep_ ? s : text.Copy(s);
}

bool RecordProof::Entry(const std::string& id, const core::RecordEntry& e) {
  // The host writes entries sorted by id: anything else (a repeated id, a
  // hand-edited file) is left to the full pass.
  if (!header_seen_ || gathered_ || (!proven_.empty() && id <= proven_.back().id)) return false;
  if (checked_) {
    batch_.clear();
    batch_text_.Clear();
    seen_.clear();
    checked_ = false;
  }
  if (!e.position.has_value()) return false;
  auto kind = core::ParseKind(e.kind);
  if (!kind.has_value()) return false;
  credentials_ = credentials_ || *kind == core::Kind::kCredential;
  // What a resource of this kind has: its shape is checked, not trusted.
  core::Resource shape;
  shape.kind = *kind;
  Proven p;
  p.kind = *kind;
  if (!shape.HasFiles()) {
    if (!e.written.empty()) return false;
  } else if (e.written.size() != 1 || (shape.IsTree() && e.written[0].content_digest.empty())) {
    return false;
  }
  auto state = core::ParseUnitState(e.unit().state);
  if (shape.HasUnit() != !e.unit().name.empty() || (shape.HasUnit() && !state.has_value())) {
    return false;
  }
  if (shape.HasUnit()) {
    if (ports_.services == nullptr) return false;
    p.unit = static_cast<int32_t>(units_.size());
    const core::UnitRecord& u = e.unit();
    units_.push_back(Unit{u.name,
                          u.file_fingerprint,
                          *state,
                          core::BaselineOfRecord(&e),
                          {},
                          u.enabled,
                          u.drop_ins,
                          u.rollback});
  }
  if (shape.HasFiles()) {
    core::FileType type = *kind == core::Kind::kDirectory ? core::FileType::kDirectory
                          : *kind == core::Kind::kSymlink ? core::FileType::kSymlink
                                                          : core::FileType::kRegular;
    const core::WrittenPath& w = e.written[0];
    bool readable = *kind == core::Kind::kFile;  // not a credential: no digest of a secret
    batch_.push_back(PathCheck{Hold(w.path, batch_text_), Hold(w.fingerprint, batch_text_),
                               shape.IsTree(), type,
                               readable ? Hold(w.content_digest, batch_text_) : std::string_view(),
                               proven_.size(), std::nullopt});
    // Read once here, compared at every rerun (a tree's is a digest).
    if (keep_ && type == core::FileType::kRegular && !shape.IsTree()) {
      batch_.back().stamp = core::ParseFingerprint(w.fingerprint);
    }
    p.file_count = e.written[0].file_count;
    p.tree = shape.IsTree();
  }
  p.id = Hold(id, kept_text_);
  p.digest = Hold(e.digest, kept_text_);
  p.position = *e.position;
  p.applied_at = AppliedAt(e.applied_at);
  proven_.push_back(p);
  // Kept: looked at when every entry is in (Finish), and again at reruns.
  return keep_ || batch_.size() < batch_size_ || CheckBatch();
}

uint32_t RecordProof::AppliedAt(const std::string& text) {
  if (!applied_at_.empty() && applied_at_.back() == text) {
    return static_cast<uint32_t>(applied_at_.size() - 1);
  }
  auto [it, added] = applied_at_index_.try_emplace(text, static_cast<uint32_t>(applied_at_.size()));
  if (added) applied_at_.push_back(text);
  return it->second;
}

bool RecordProof::CheckBatch() {
  std::sort(batch_.begin(), batch_.end(),
            [](const PathCheck& a, const PathCheck& b) { return a.path < b.path; });
  if (!CheckRange(0, batch_.size())) return false;
  checked_ = true;
  return true;
}

// The stats are most of a no-op's time, and each is independent of the
// others: with a second core, half of a large batch is looked at there
// meanwhile. The halves are each sorted, so each keeps its directories open.
std::vector<core::Result<core::FileInfo>> RecordProof::StatInHalves(
    std::span<const std::string_view> paths) {
  constexpr size_t kHalvesFrom = 1024;
  if (ports_.background == nullptr || paths.size() < kHalvesFrom) {
    return ports_.root->StatMany(paths);
  }
  size_t half = paths.size() / 2;
  std::vector<core::Result<core::FileInfo>> second;
  auto job = ports_.background->Start([&] { second = ports_.root->StatMany(paths.subspan(half)); });
  std::vector<core::Result<core::FileInfo>> out = ports_.root->StatMany(paths.first(half));
  if (job == nullptr || !job->Wait()) second = ports_.root->StatMany(paths.subspan(half));
  out.reserve(paths.size());
  std::move(second.begin(), second.end(), std::back_inserter(out));
  return out;
}

bool RecordProof::CheckRange(size_t begin, size_t end) {
  std::vector<std::string_view> paths;
  paths.reserve(end - begin);
  for (size_t k = begin; k < end; ++k) paths.push_back(batch_[k].path);
  looked_ = begin;
  seen_ = StatInHalves(paths);
  for (size_t k = begin; k < end; ++k) {
    const PathCheck& look = batch_[k];
    const core::Result<core::FileInfo>& info = seen_[k - begin];
    if (!info) return false;
    if (look.type == core::FileType::kDirectory && !look.tree) {
      // A declared directory: its metadata, not its contents.
      if (info->type != core::FileType::kDirectory ||
          core::DirectoryFingerprint(*info) != look.fingerprint) {
        return false;
      }
      continue;
    }
    if (!look.tree) {
      if (info->type != look.type) return false;
      if (look.stamp.has_value() ? core::StampMatches(*info, *look.stamp)
                                 : core::FingerprintMatches(*info, look.fingerprint)) {
        continue;
      }
      // Its times moved: unchanged if its bytes, mode and owner did not.
      if (look.content_digest.empty() || touched_.size() >= kMaxTouched ||
          !WorthReading(*info, look.fingerprint)) {
        return false;
      }
      touched_.push_back(
          ToRead{std::string(look.path), std::string(look.content_digest), *info,
                 Touched{std::string(proven_[look.proven].id), core::FileFingerprint(*info)}});
      continue;
    }
    if (info->type != core::FileType::kDirectory) return false;
    auto scan = ports_.root->ScanTree(std::string(look.path), /*hash_contents=*/false);
    if (!scan || core::TreeFingerprint(*scan) != look.fingerprint ||
        !core::TreeRootAsMade(*info, *scan, look.path, writer_,
                              [this](const std::string& dir) { return ports_.root->Stat(dir); })) {
      return false;
    }
  }
  return true;
}

bool RecordProof::PositionsHold() const {
  std::vector<bool> taken(proven_.size(), false);
  for (const Proven& p : proven_) {
    if (p.position >= proven_.size() || taken[p.position]) return false;
    taken[p.position] = true;
  }
  return true;
}

bool RecordProof::Finish() {
  if (!header_seen_) return false;
  if (!keep_) {
    if (!checked_ && !CheckBatch()) return false;
    return PositionsHold() && OwnersHold() && Look();
  }
  if (!gathered_) {
    std::sort(batch_.begin(), batch_.end(),
              [](const PathCheck& a, const PathCheck& b) { return a.path < b.path; });
    positions_hold_ = PositionsHold();
    gathered_ = true;
  }
  return LookAgain();
}

bool RecordProof::Rerun(std::string_view digest) {
  if (!gathered_) return false;
  digest_ = digest;
  return LookAgain();
}

bool RecordProof::LookAgain() {
  touched_.clear();
  seen_.clear();
  if (!HeaderHolds() || !positions_hold_ || !OwnersHold()) return false;
  // In batches, as a streamed record is: StatMany's answers for one batch
  // at a time, and a failed proof hands the full pass the batch it failed in.
  for (size_t begin = 0; begin < batch_.size(); begin += batch_size_) {
    if (!CheckRange(begin, std::min(batch_.size(), begin + batch_size_))) return false;
  }
  return Look();
}

void RecordProof::ReleaseLooks() {
  std::vector<core::Result<core::FileInfo>>().swap(seen_);
  std::vector<ToRead>().swap(touched_);
  for (Unit& u : units_) u.status = core::UnitStatus{};
}

bool RecordProof::Look() {
  std::vector<std::string> names;
  for (const Unit& u : units_) {
    // A unit file of the host's still as written; a unit of the machine's
    // with nothing linked at its place (a mask the full pass must report).
    auto info = ports_.units->Stat("/" + u.name);
    if (!info) return false;
    if (!u.unit_file_fingerprint.empty() &&
        (info->type != core::FileType::kRegular ||
         !core::FingerprintMatches(*info, u.unit_file_fingerprint))) {
      return false;
    }
    if (info->type == core::FileType::kSymlink) {
      auto target = ports_.units->ReadLink("/" + u.name);
      if (!target || *target == "/dev/null") return false;  // a mask: the full pass says so
    }
    for (const auto& [name, fingerprint] : u.drop_ins) {
      auto drop_in = ports_.units->Stat("/" + u.name + ".d/" + name);
      if (!drop_in || drop_in->type != core::FileType::kRegular ||
          !core::FingerprintMatches(*drop_in, core::DropInFingerprint(fingerprint))) {
        return false;
      }
    }
    names.push_back(u.name);
  }
  if (names.empty()) return ReadTouched();
  std::vector<core::Result<core::UnitStatus>> statuses = ports_.services->ReadUnits(names);
  if (ports_.progress != nullptr) ports_.progress->Looked(names);
  for (size_t k = 0; k < units_.size(); ++k) {
    if (!statuses[k] || statuses[k]->load_state == "masked") return false;
    const Unit& u = units_[k];
    // A unit file of the host's that systemd has not loaded: owed a reload.
    if (!u.unit_file_fingerprint.empty() && statuses[k]->need_daemon_reload) return false;
    // Or one loaded from another file, or a drop-in of the host's name from
    // another directory: the full pass says whose it is.
    if (!u.unit_file_fingerprint.empty() && !unit_dir_.empty() &&
        !core::LoadedFrom(*statuses[k], unit_dir_, u.name)) {
      return false;
    }
    for (const auto& [name, fp] : u.drop_ins) {
      if (!unit_dir_.empty() &&
          !core::DropInLoadedElsewhere(*statuses[k], unit_dir_, u.name, name).empty()) {
        return false;
      }
    }
    // The full pass's rule (plan_units.cc): up against the record, stopped,
    // or left to its trigger in whatever state — one systemd can load.
    if (!core::AsDeclared(u.state, *statuses[k], u.baseline)) return false;
    if (u.state == core::UnitState::kTriggered && !core::Loadable(*statuses[k])) return false;
    // [Install] links not as declared: the full pass puts them back.
    if (u.enabled.has_value() && core::UnitFileEnabled(*statuses[k]) != *u.enabled) return false;
    // A baseline the full pass would record anew is a change to the record.
    if (u.run() && !(u.baseline == core::BaselineOf(*statuses[k]))) return false;
    // A file touched while what reloaded the unit is forgotten may be one
    // it reloads on, put back after a reload by hand: the full pass, which
    // knows what each unit reads, judges (plan_run_read.cc).
    if (!touched_.empty() && u.run() && core::ReloadsForgotten(*statuses[k])) return false;
    units_[k].status = std::move(*statuses[k]);
  }
  return ReadTouched();
}

// Last, after everything cheaper held.
bool RecordProof::ReadTouched() {
  for (const ToRead& t : touched_) {
    if (!AsLeft(*ports_.root, t.path, t.info, t.content_digest)) return false;
  }
  return true;
}

std::vector<RecordProof::Touched> RecordProof::TakeTouched() {
  std::vector<Touched> out;
  out.reserve(touched_.size());
  for (ToRead& t : touched_) out.push_back(std::move(t.touched));
  touched_.clear();
  return out;
}

void RecordProof::Report(const std::function<void(core::ResourceOutcome&&)>& deliver) const {
  std::vector<uint32_t> order(proven_.size());
  for (size_t k = 0; k < proven_.size(); ++k) order[proven_[k].position] = static_cast<uint32_t>(k);
  for (uint32_t k : order) {
    const Proven& p = proven_[k];
    core::ResourceOutcome out;
    out.id = std::string(p.id);
    out.kind = std::string(core::KindName(p.kind));
    out.digest = std::string(p.digest);
    out.applied_at = applied_at_[p.applied_at];
    if (p.kind != core::Kind::kService) {
      out.detail = p.tree ? FilesAsDeclared(p.file_count) : std::string(kAsDeclared);
    }
    if (p.unit >= 0) {
      const Unit& u = units_[static_cast<size_t>(p.unit)];
      out.unit = UnitSnapshotOf(u.name, u.status, u.run());
      out.mutable_declared().unit = u.name;
      out.mutable_declared().state = std::string(core::UnitStateName(u.state));
      out.mutable_declared().rollback = u.rollback;
      out.detail = u.run() ? Then(out.detail, UnitStatePhrase(u.name, u.status))
                   : u.state == core::UnitState::kTriggered ? LeftToTrigger(u.name, u.status)
                                                            : StoppedAsDeclared(u.name);
    }
    deliver(std::move(out));
  }
}

std::vector<std::pair<std::string, core::Result<core::FileInfo>>> RecordProof::TakeLooks() {
  std::vector<std::pair<std::string, core::Result<core::FileInfo>>> looks;
  for (size_t k = 0; k < seen_.size() && looked_ + k < batch_.size(); ++k) {
    looks.emplace_back(std::string(batch_[looked_ + k].path), std::move(seen_[k]));
  }
  seen_.clear();
  if (!keep_) {  // a kept proof's batch is what its reruns look at
    batch_.clear();
    batch_text_.Clear();
  }
  return looks;
}

std::string_view RecordProof::RecordedWant(std::string_view id) const {
  // Entries are taken only in increasing id order (Entry).
  auto it = std::lower_bound(proven_.begin(), proven_.end(), id,
                             [](const Proven& p, std::string_view i) { return p.id < i; });
  return it != proven_.end() && it->id == id ? it->digest : std::string_view();
}

std::vector<std::string> RecordProof::RollbackIds() const {
  std::vector<std::string> ids;
  for (const Proven& p : proven_) {
    if (p.unit >= 0 && units_[static_cast<size_t>(p.unit)].rollback) ids.emplace_back(p.id);
  }
  return ids;
}

}  // namespace mesh::reconcile
