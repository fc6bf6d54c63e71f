#include "host/reconcile/reconciler.h"

#include <deque>
#include <map>
#include <optional>
#include <set>

#include "host/core/declaration.h"
#include "host/core/record.h"
#include "host/core/sha256.h"
#include "host/core/time_format.h"
#include "host/core/two_look.h"
#include "host/core/want.h"
#include "host/reconcile/record_proof.h"
#include "host/reconcile/words.h"

namespace mesh::reconcile {
namespace {

using core::Declaration;
using core::FileInfo;
using core::FileType;
using core::Kind;
using core::Outcome;
using core::RecordEntry;
using core::Resource;
using core::ResourceOutcome;
using core::Result;
using core::TreeEntry;
using core::WrittenPath;

constexpr uint64_t kMaxBundleBytes = 1ull << 30;
constexpr uint64_t kMaxUnitFileBytes = 1ull << 20;

// What the write phase did to one resource's files.
struct FileStep {
  Outcome outcome = Outcome::kUnchanged;  // created, updated, unchanged or failed
  std::string detail;
  bool changed = false;  // content on the machine changed in this apply
  // The resource's want differs from the record (a service whose declared
  // state changed): a start it causes is "declared", not "was_dead".
  bool want_changed = false;
  bool unit_file_changed = false;
  std::optional<RecordEntry> entry;  // what the record now holds
};

// What the unit phase asks of systemd for one resource.
struct UnitStep {
  size_t index = 0;
  core::UnitAction action = core::UnitAction::kStart;
  std::string reason;  // declared, restart_on, was_dead, reload_on
  std::string why;     // words for the detail: "restart_on fail2ban.jail changed"
  std::string job;
  core::Look first;
  core::Look second;
  std::optional<std::string> job_result;
  bool enqueue_failed = false;
};

class Pass {
 public:
  Pass(const ReconcilerPorts& ports, const ReconcilerOptions& options, const OutcomeSink& sink,
       ApplyReport& report)
      : ports_(ports), options_(options), sink_(sink), report_(report) {}

  void Run(ports::DeclarationSource& source);

 private:
  void LoadRecord();
  bool ConfirmFromRecord();
  // Whether an earlier apply was interrupted (once per apply; not in a plan).
  void CheckInterrupted();
  bool Check(std::string_view text);
  // Sets the apply mark before the first write (once per apply).
  void MarkBeforeWrite();
  Result<std::vector<TreeEntry>> LoadBundle(const Resource& r);
  FileStep ApplyFile(const Resource& r, const RecordEntry* old);
  FileStep ApplyTree(const Resource& r, const RecordEntry* old);
  // Writes or checks a unit text; fills entry->unit_file_fingerprint.
  core::Status ApplyUnitFile(const Resource& r, const RecordEntry* old, FileStep& step);
  void PlanUnits(std::vector<UnitStep>& steps);
  void ConfirmUnits(std::vector<UnitStep>& steps);
  void Prune();
  void Sweep();
  // The want digest; when the declaration is byte for byte the one the
  // record was written from, the recorded digest is it (no re-hashing of
  // every content on the no-op path).
  std::string Want(const Resource& r, const RecordEntry* old) const {
    if (same_declaration_ && old != nullptr && !old->digest.empty()) return old->digest;
    return core::WantDigest(r);
  }
  // "wrote 22 byte(s)" in an apply, "would write 22 byte(s)" in a plan.
  std::string Did(std::string_view past, std::string_view verb, std::string_view rest) const {
    return (options_.dry_run ? "would " + std::string(verb) : std::string(past)) + " " +
           std::string(rest);
  }
  // Whether `path` was on the machine before the host first managed it: kept
  // from the record, or found there now while no record entry names it.
  bool Preexisting(const RecordEntry* old, const std::string& path, const FileInfo& info) const {
    if (old != nullptr && !old->written.empty() && old->written[0].path == path) {
      return old->written[0].preexisting;
    }
    return info.type != FileType::kMissing && !old_paths_.contains(path);
  }
  // Owner and group names resolved once per apply: the machine's user
  // database is not read for every file.
  Result<std::pair<uint32_t, uint32_t>> Ids(const Resource& r) {
    auto key = std::make_pair(r.owner, r.group);
    auto it = ids_.find(key);
    if (it == ids_.end()) it = ids_.emplace(key, ports_.root->LookupIds(r.owner, r.group)).first;
    return it->second;
  }

  const ReconcilerPorts& ports_;
  const ReconcilerOptions& options_;
  const OutcomeSink& sink_;
  ApplyReport& report_;

  std::shared_ptr<const Declaration> decl_;
  std::string digest_;  // SHA-256 of the declaration's bytes (empty: too large)
  bool interrupted_ = false;
  bool interrupt_checked_ = false;
  bool marked_ = false;
  // The loaded record, shared with the store; read-only during the pass.
  std::shared_ptr<const core::Record> old_holder_ = std::make_shared<const core::Record>();
  bool had_record_ = false;
  // What this apply changes in the record, by id (nullopt: erase). The
  // record itself is not copied: on a no-op nothing is, and nothing saved.
  std::map<std::string, std::optional<RecordEntry>> changes_;
  void Keep(const std::string& id, const RecordEntry& entry) {
    auto it = old_holder_->resources.find(id);
    if (it == old_holder_->resources.end() || !(it->second == entry)) changes_[id] = entry;
  }
  void Drop(const std::string& id) {
    if (old_holder_->resources.contains(id)) changes_[id] = std::nullopt;
  }
  std::set<std::string> old_paths_;
  std::map<std::string, std::vector<TreeEntry>> bundles_;  // by resource id, checked
  std::vector<FileStep> steps_;
  std::string now_;
  bool units_changed_ = false;
  bool same_declaration_ = false;
  std::vector<size_t> outcome_of_;  // resource index -> report_.outcomes index
  std::map<std::pair<std::string, std::string>, Result<std::pair<uint32_t, uint32_t>>> ids_;
  // Path (a view into decl_, the record or looked_) -> its stat at check time.
  std::map<std::string_view, Result<FileInfo>> stats_;
  std::deque<std::string> looked_;  // paths a failed record proof looked at
};

void Pass::CheckInterrupted() {
  if (interrupt_checked_ || options_.dry_run) return;
  interrupt_checked_ = true;
  auto interrupted = ports_.records->Interrupted();
  if (!interrupted) {
    report_.warnings.push_back("apply mark not readable: " + interrupted.error().message);
  } else {
    interrupted_ = *interrupted;
  }
}

void Pass::LoadRecord() {
  auto loaded = ports_.records->Load();
  if (!loaded) {
    report_.warnings.push_back(loaded.error().message +
                               "; starting from an empty record: files that already match are "
                               "adopted, not rewritten");
  } else if (*loaded != nullptr) {
    old_holder_ = std::move(*loaded);
    had_record_ = true;
  }
}

// The no-op, proven from the record alone (record_proof.h): the record is
// visited, not loaded, so a one-shot apply never holds it whole.
bool Pass::ConfirmFromRecord() {
  RecordProof proof({ports_.root, ports_.units, ports_.services}, digest_, options_.machine);
  auto scanned = ports_.records->Scan(proof);
  bool proven = scanned.has_value() && *scanned && proof.Finish();
  if (proven) {
    // An interrupted apply leaves temporary files only the full pass sweeps.
    CheckInterrupted();
    proven = !interrupted_;
  }
  if (!proven) {
    // The full pass reuses what the proof just looked at rather than stat
    // those paths a second time.
    for (auto& [path, info] : proof.TakeLooks()) {
      const std::string& kept = looked_.emplace_back(std::move(path));
      stats_.emplace(kept, std::move(info));
    }
    return false;
  }
  report_.machine = proof.header().machine;
  report_.generation = proof.header().generation;
  report_.declaration_digest = digest_;
  report_.from_record = true;
  proof.Report([&](ResourceOutcome&& out) {
    if (sink_) {
      ++report_.resources;
      sink_(out);
    } else {
      report_.outcomes.push_back(std::move(out));
    }
  });
  return true;
}

bool Pass::Check(std::string_view text) {
  auto decl = core::ParseDeclaration(text);
  if (!decl) {
    report_.error = decl.error().message;
    return false;
  }
  decl_ = std::make_shared<const Declaration>(std::move(*decl));
  report_.machine = decl_->machine;
  report_.generation = decl_->generation;
  report_.declaration_digest = decl_->digest;

  for (const auto& [id, e] : old_holder_->resources) {
    for (const WrittenPath& w : e.written) old_paths_.insert(w.path);
  }
  same_declaration_ = had_record_ && old_holder_->settled_declaration_digest == decl_->digest &&
                      old_holder_->want_version == core::Record::kWantVersion;

  if (!options_.machine.empty() && decl_->machine != options_.machine) {
    report_.error = "declaration, field machine: \"" + decl_->machine +
                    "\" is not this machine (\"" + options_.machine + "\")";
    return false;
  }
  if (had_record_ && decl_->generation < old_holder_->generation) {
    report_.error = "declaration, field generation: " + std::to_string(decl_->generation) +
                    " is lower than the applied generation " +
                    std::to_string(old_holder_->generation);
    return false;
  }
  // Every declared path is looked at once here: one on which a symlink (or
  // anything else) would lead out of the root refuses the declaration whole.
  // The answers are kept, so the write phase does not stat twice.
  // Paths a failed record proof already looked at are not looked at again.
  std::vector<std::string_view> paths;
  for (const Resource& r : decl_->resources) {
    if (r.HasFiles() && !stats_.contains(r.path)) paths.push_back(r.path);
  }
  std::vector<Result<FileInfo>> infos = ports_.root->StatMany(paths);
  for (size_t i = 0; i < paths.size(); ++i) stats_.emplace(paths[i], std::move(infos[i]));
  for (const Resource& r : decl_->resources) {
    if (!r.HasFiles()) continue;
    const Result<FileInfo>& info = stats_.find(r.path)->second;
    if (!info && info.error().kind == core::ErrorKind::kOutsideRoot) {
      report_.error = "resource " + r.id + ", field path: " + info.error().message;
      return false;
    }
  }
  // A bundle the record already holds at this digest was checked when it was
  // applied; only new or changed bundles are read here, so a no-op apply does
  // not re-hash every bundle.
  for (const Resource& r : decl_->resources) {
    if (!r.IsTree()) continue;
    auto it = old_holder_->resources.find(r.id);
    if (it != old_holder_->resources.end() && it->second.digest == core::WantDigest(r)) continue;
    auto bundle = LoadBundle(r);
    if (!bundle) {
      report_.error = bundle.error().message;
      return false;
    }
    bundles_.emplace(r.id, std::move(*bundle));
  }
  return true;
}

Result<std::vector<TreeEntry>> Pass::LoadBundle(const Resource& r) {
  std::string where = "resource " + r.id + ", field ";
  auto bytes = ports_.artifacts->ReadFile("/" + r.source, kMaxBundleBytes);
  if (!bytes) return core::Fail(where + "source: " + bytes.error().message);
  std::string actual = core::Sha256Hex(*bytes);
  if (actual != r.sha256) {
    return core::Fail(where + "sha256: source " + r.source + " has sha256 " + actual +
                      ", the declaration says " + r.sha256);
  }
  auto entries = ports_.archives->Read(*bytes);
  if (!entries) return core::Fail(where + "source: " + entries.error().message);
  auto checked = core::CheckBundleEntries(std::move(*entries));
  if (!checked)
    return core::Fail(where + "source: bundle " + r.source +
                      " refused: " + checked.error().message);
  core::HashContents(*checked);
  return std::move(*checked);
}

FileStep Pass::ApplyFile(const Resource& r, const RecordEntry* old) {
  FileStep step;
  std::string want = Want(r, old);
  bool secret = r.kind == Kind::kCredential;
  auto fail = [&](const std::string& message) {
    step.outcome = Outcome::kFailed;
    step.detail = message;
    if (old != nullptr) step.entry = *old;  // the old file is still what is on disk
    return step;
  };
  auto cached = stats_.find(r.path);
  auto info = cached != stats_.end() ? cached->second : ports_.root->Stat(r.path);
  if (!info) return fail(info.error().message);

  bool recorded = old != nullptr && old->digest == want && old->written.size() == 1 &&
                  old->written[0].path == r.path;
  std::string fingerprint = core::FileFingerprint(*info);
  RecordEntry entry;
  entry.kind = std::string(core::KindName(r.kind));
  entry.digest = want;
  entry.applied_at = old != nullptr && recorded ? old->applied_at : now_;
  WrittenPath written{r.path, fingerprint, "", 0, Preexisting(old, r.path, *info)};

  Outcome outcome;
  std::string why;
  if (recorded && info->type == FileType::kRegular && old->written[0].fingerprint == fingerprint) {
    // The hot path: nothing is read, nothing is hashed.
    written.fingerprint = fingerprint;
    entry.written.push_back(written);
    step.entry = std::move(entry);
    step.detail = "as declared";
    return step;
  }
  auto ids = Ids(r);
  if (!ids) return fail(ids.error().message);
  // Does the disk hold exactly what is declared? Reads the content only when
  // size, mode and ownership already agree.
  auto matches = [&](const FileInfo& fi) -> Result<bool> {
    if (fi.type != FileType::kRegular || fi.size != r.content.size() ||
        fi.mode != (r.mode & 07777) || fi.uid != ids->first || fi.gid != ids->second) {
      return false;
    }
    auto content = ports_.root->ReadFile(r.path, r.content.size());
    if (!content) return std::unexpected(content.error());
    return *content == r.content;
  };

  auto same = matches(*info);
  if (!same) return fail(same.error().message);
  if (*same) {
    // Content, mode and owner agree although the fingerprint moved (touched,
    // copied back, or no record): adopt it without rewriting.
    entry.written.push_back(written);
    if (!recorded) entry.applied_at = old != nullptr ? old->applied_at : now_;
    step.entry = std::move(entry);
    step.detail = recorded || old != nullptr ? "as declared" : "adopted: already as declared";
    return step;
  }
  if (info->type == FileType::kMissing) {
    outcome = old != nullptr ? Outcome::kUpdated : Outcome::kCreated;
    why = old != nullptr && recorded ? "drifted: deleted on the machine, put back" : "";
  } else {
    outcome = Outcome::kUpdated;
    if (recorded) {
      std::string what = info->type != FileType::kRegular ? "replaced by something else"
                         : info->mode != (r.mode & 07777) ? "mode changed"
                         : info->uid != ids->first || info->gid != ids->second ? "owner changed"
                                                                               : "content changed";
      why = "drifted: " + what + " on the machine, put back";
    }
  }
  if (recorded && outcome == Outcome::kCreated) outcome = Outcome::kUpdated;
  std::string wrote = secret ? "secret" : Plural(r.content.size(), "byte");
  step.detail = (why.empty() ? "" : why + "; ") +
                Did("wrote", "write", wrote + ", mode " + core::FormatMode(r.mode));
  step.outcome = outcome;
  step.changed = true;
  if (options_.dry_run) {
    step.entry = old != nullptr ? std::optional<RecordEntry>(*old) : std::nullopt;
    return step;
  }
  MarkBeforeWrite();
  auto after = ports_.root->WriteFileAtomic(r.path, r.content,
                                            ports::Ownership{r.mode, ids->first, ids->second});
  if (!after) return fail(after.error().message);
  written.fingerprint = core::FileFingerprint(*after);
  entry.written.push_back(written);
  entry.applied_at = now_;
  step.entry = std::move(entry);
  return step;
}

FileStep Pass::ApplyTree(const Resource& r, const RecordEntry* old) {
  FileStep step;
  std::string want = Want(r, old);
  auto fail = [&](const std::string& message) {
    step.outcome = Outcome::kFailed;
    step.detail = message;
    if (old != nullptr) step.entry = *old;
    return step;
  };
  bool recorded = old != nullptr && old->digest == want && !old->written.empty() &&
                  old->written[0].path == r.path && !old->written[0].content_digest.empty();
  auto cached = stats_.find(r.path);
  auto info = cached != stats_.end() ? cached->second : ports_.root->Stat(r.path);
  if (!info) return fail(info.error().message);

  RecordEntry entry;
  entry.kind = std::string(core::KindName(r.kind));
  entry.digest = want;
  entry.unit = r.HasUnit() ? r.unit : "";
  entry.applied_at = recorded ? old->applied_at : now_;
  WrittenPath written{r.path, "", "", 0, Preexisting(old, r.path, *info)};

  std::vector<TreeEntry> scanned;
  if (info->type == FileType::kDirectory) {
    auto scan = ports_.root->ScanTree(r.path, /*hash_contents=*/false);
    if (!scan) return fail(scan.error().message);
    scanned = std::move(*scan);
  }
  std::string fingerprint = core::TreeFingerprint(scanned);
  if (recorded && info->type == FileType::kDirectory &&
      old->written[0].fingerprint == fingerprint) {
    written.fingerprint = fingerprint;
    written.content_digest = old->written[0].content_digest;
    written.file_count = old->written[0].file_count;
    entry.written.push_back(written);
    step.entry = std::move(entry);
    step.detail = Plural(written.file_count, "file") + " as declared";
    return step;
  }
  // The fingerprint moved or there is no record: compare content.
  std::string on_disk;
  if (info->type == FileType::kDirectory) {
    auto hashed = ports_.root->ScanTree(r.path, /*hash_contents=*/true);
    if (!hashed) return fail(hashed.error().message);
    on_disk = core::TreeDigest(*hashed);
    fingerprint = core::TreeFingerprint(*hashed);
  }
  std::string wanted_tree;
  if (recorded) {
    wanted_tree = old->written[0].content_digest;
  }
  const std::vector<TreeEntry>* bundle = nullptr;
  auto ensure_bundle = [&]() -> core::Status {
    if (bundle != nullptr) return core::Ok();
    auto it = bundles_.find(r.id);
    if (it == bundles_.end()) {
      auto loaded = LoadBundle(r);
      if (!loaded) return std::unexpected(loaded.error());
      it = bundles_.emplace(r.id, std::move(*loaded)).first;
    }
    bundle = &it->second;
    return core::Ok();
  };
  if (wanted_tree.empty()) {
    if (auto st = ensure_bundle(); !st) return fail(st.error().message);
    wanted_tree = core::TreeDigest(*bundle);
  }
  uint64_t files = 0;
  if (!on_disk.empty() && on_disk == wanted_tree) {
    if (auto st = ensure_bundle(); !st) return fail(st.error().message);
    for (const TreeEntry& e : *bundle) files += e.type == FileType::kRegular;
    written.fingerprint = fingerprint;
    written.content_digest = wanted_tree;
    written.file_count = files;
    entry.written.push_back(written);
    if (!recorded) entry.applied_at = old != nullptr ? old->applied_at : now_;
    step.entry = std::move(entry);
    step.detail =
        Plural(files, "file") + (old != nullptr ? " as declared" : " adopted: already as declared");
    return step;
  }
  if (auto st = ensure_bundle(); !st) return fail(st.error().message);
  for (const TreeEntry& e : *bundle) files += e.type == FileType::kRegular;
  step.outcome =
      old != nullptr || info->type != FileType::kMissing ? Outcome::kUpdated : Outcome::kCreated;
  std::string why = recorded ? "drifted: the tree was changed on the machine, put back; " : "";
  step.detail = why + Did("unpacked", "unpack", Plural(files, "file"));
  step.changed = true;
  if (options_.dry_run) {
    step.entry = old != nullptr ? std::optional<RecordEntry>(*old) : std::nullopt;
    return step;
  }
  MarkBeforeWrite();
  if (auto st = ports_.root->ReplaceTree(r.path, *bundle); !st) return fail(st.error().message);
  auto rescan = ports_.root->ScanTree(r.path, false);
  if (!rescan) return fail(rescan.error().message);
  written.fingerprint = core::TreeFingerprint(*rescan);
  written.content_digest = wanted_tree;
  written.file_count = files;
  entry.written.push_back(written);
  entry.applied_at = now_;
  step.entry = std::move(entry);
  return step;
}

core::Status Pass::ApplyUnitFile(const Resource& r, const RecordEntry* old, FileStep& step) {
  RecordEntry& entry = *step.entry;
  entry.unit = r.unit;
  if (!r.unit_text.has_value()) {
    // The unit is the machine's own; the host does not own its file.
    return core::Ok();
  }
  const std::string path = "/" + r.unit;
  const std::string& text = *r.unit_text;
  auto info = ports_.units->Stat(path);
  if (!info) return std::unexpected(info.error());
  std::string fingerprint = core::FileFingerprint(*info);
  bool recorded = old != nullptr && old->digest == entry.digest && old->unit == r.unit &&
                  !old->unit_file_fingerprint.empty();
  if (recorded && info->type == FileType::kRegular && old->unit_file_fingerprint == fingerprint) {
    entry.unit_file_fingerprint = fingerprint;
    return core::Ok();
  }
  if (info->type == FileType::kRegular && info->size == text.size()) {
    auto content = ports_.units->ReadFile(path, kMaxUnitFileBytes);
    if (!content) return std::unexpected(content.error());
    if (*content == text && info->mode == 0644) {
      entry.unit_file_fingerprint = fingerprint;
      return core::Ok();
    }
  }
  step.changed = true;
  step.unit_file_changed = true;
  std::string wrote = Did("wrote", "write", "unit file " + r.unit);
  step.detail = step.detail.empty() || step.outcome == Outcome::kUnchanged
                    ? wrote
                    : step.detail + ", " + wrote;
  if (recorded) {
    step.detail =
        "drifted: unit file " + r.unit + " changed on the machine, put back; " + step.detail;
  }
  if (step.outcome == Outcome::kUnchanged) {
    step.outcome =
        old != nullptr || info->type != FileType::kMissing ? Outcome::kUpdated : Outcome::kCreated;
  }
  if (options_.dry_run) {
    entry.unit_file_fingerprint = "";
    return core::Ok();
  }
  MarkBeforeWrite();
  auto written = ports_.units->WriteFileAtomic(path, text, ports::Ownership{0644, 0, 0});
  if (!written) return std::unexpected(written.error());
  entry.unit_file_fingerprint = core::FileFingerprint(*written);
  entry.applied_at = now_;
  return core::Ok();
}

void Pass::PlanUnits(std::vector<UnitStep>& acts) {
  // Every unit is read at once (pipelined by the adapter).
  std::vector<std::string> names;
  std::vector<size_t> read_at(decl_->resources.size(), 0);
  if (ports_.services != nullptr) {
    for (size_t i = 0; i < decl_->resources.size(); ++i) {
      const Resource& r = decl_->resources[i];
      if (!r.HasUnit() || steps_[i].outcome == Outcome::kFailed) continue;
      read_at[i] = names.size();
      names.push_back(r.unit);
    }
  }
  std::vector<Result<core::UnitStatus>> statuses =
      names.empty() ? std::vector<Result<core::UnitStatus>>{} : ports_.services->ReadUnits(names);
  for (size_t i = 0; i < decl_->resources.size(); ++i) {
    const Resource& r = decl_->resources[i];
    if (!r.HasUnit()) continue;
    FileStep& fs = steps_[i];
    ResourceOutcome& out = report_.outcomes[outcome_of_[i]];
    if (fs.outcome == Outcome::kFailed) continue;
    if (ports_.services == nullptr) {
      out.outcome = Outcome::kFailed;
      out.detail = "no service manager: cannot manage " + r.unit;
      continue;
    }
    const Result<core::UnitStatus>& status = statuses[read_at[i]];
    if (!status) {
      out.outcome = Outcome::kFailed;
      out.detail = status.error().message;
      continue;
    }
    out.unit = Snapshot(r.unit, *status);
    std::string changed_dep, failed_dep, reload_dep;
    for (const std::string& ref : r.restart_on) {
      size_t j = static_cast<size_t>(decl_->Find(ref) - decl_->resources.data());
      if (steps_[j].outcome == Outcome::kFailed ||
          report_.outcomes[outcome_of_[j]].outcome == Outcome::kFailed) {
        if (failed_dep.empty()) failed_dep = ref;
      } else if (steps_[j].changed && changed_dep.empty()) {
        changed_dep = ref;
      }
    }
    for (const std::string& ref : r.reload_on) {
      size_t j = static_cast<size_t>(decl_->Find(ref) - decl_->resources.data());
      if (steps_[j].changed && reload_dep.empty()) reload_dep = ref;
    }
    if (r.state == core::UnitState::kStopped) {
      if (status->Running()) {
        out.outcome = fs.changed ? fs.outcome : Outcome::kStopped;
        out.detail = (fs.changed ? fs.detail + "; " : "") + Did("stopped", "stop", r.unit) +
                     " (not waited on)";
        if (!options_.dry_run) {
          auto job = ports_.services->Enqueue(r.unit, ports::JobKind::kStop);
          if (!job) {
            out.outcome = Outcome::kFailed;
            out.detail = job.error().message;
          }
        }
      } else {
        out.detail = (fs.changed ? fs.detail + "; " : "") + r.unit + " stopped as declared";
      }
      continue;
    }
    if (!failed_dep.empty()) {
      out.outcome = Outcome::kFailed;
      out.detail = "not restarted: restart_on resource " + failed_dep + " failed; " + r.unit +
                   " keeps its previous configuration";
      continue;
    }
    UnitStep act;
    act.index = i;
    if (!status->Running()) {
      act.action = core::UnitAction::kStart;
      bool asked = fs.changed || fs.want_changed;
      act.reason = asked ? "declared" : "was_dead";
      act.why = asked ? "declared running" : "was " + status->active_state + ", started";
    } else if (fs.changed) {
      act.action = core::UnitAction::kRestart;
      act.reason = "declared";
    } else if (!changed_dep.empty()) {
      act.action = core::UnitAction::kRestart;
      act.reason = "restart_on";
      act.why = "restart_on " + changed_dep + " changed";
    } else if (!reload_dep.empty()) {
      act.action = core::UnitAction::kReload;
      act.reason = "reload_on";
      act.why = "reload_on " + reload_dep + " changed";
    } else {
      std::string state = status->active_state + " (" + status->sub_state + ")";
      out.detail =
          fs.detail.empty() ? r.unit + " " + state : fs.detail + ", " + r.unit + " " + state;
      continue;
    }
    if (options_.dry_run) {
      out.outcome = fs.changed                                 ? fs.outcome
                    : act.action == core::UnitAction::kStart   ? Outcome::kStarted
                    : act.action == core::UnitAction::kRestart ? Outcome::kRestarted
                                                               : Outcome::kReloaded;
      out.detail = (fs.changed        ? fs.detail + ", "
                    : act.why.empty() ? ""
                                      : act.why + "; ") +
                   "would " + std::string(core::UnitActionVerb(act.action)) + " " + r.unit;
      continue;
    }
    acts.push_back(std::move(act));
  }
}

void Pass::ConfirmUnits(std::vector<UnitStep>& acts) {
  if (acts.empty()) return;
  auto& sm = *ports_.services;
  auto t0 = ports_.clock->Monotonic();
  std::vector<std::string> jobs;
  std::vector<std::pair<std::string, ports::JobKind>> asks;
  for (const UnitStep& a : acts) {
    ports::JobKind kind = a.action == core::UnitAction::kStart     ? ports::JobKind::kStart
                          : a.action == core::UnitAction::kRestart ? ports::JobKind::kRestart
                                                                   : ports::JobKind::kReload;
    asks.emplace_back(decl_->resources[a.index].unit, kind);
  }
  std::vector<Result<std::string>> queued = sm.EnqueueAll(asks);
  for (size_t k = 0; k < acts.size(); ++k) {
    UnitStep& a = acts[k];
    Result<std::string>& job = queued[k];
    if (!job) {
      a.enqueue_failed = true;
      ResourceOutcome& out = report_.outcomes[outcome_of_[a.index]];
      out.outcome = Outcome::kFailed;
      out.detail = job.error().message;
      continue;
    }
    a.job = *job;
    jobs.push_back(*job);
  }
  if (jobs.empty()) return;  // nothing was queued: nothing to look at, no pause
  // Wait for the jobs (bounded by one settle), look, pause once, look again.
  auto finished = sm.WaitForJobs(jobs, options_.settle);
  // Both looks read every acted-on unit at once.
  auto look = [&] {
    std::vector<std::string> names;
    for (const UnitStep& a : acts) {
      if (!a.enqueue_failed) names.push_back(decl_->resources[a.index].unit);
    }
    return sm.ReadUnits(names);
  };
  std::vector<Result<core::UnitStatus>> first = look();
  size_t seen = 0;
  for (UnitStep& a : acts) {
    if (a.enqueue_failed) continue;
    const Result<core::UnitStatus>& status = first[seen++];
    a.first.unit = status ? *status : core::UnitStatus{};
    a.first.job_pending = !finished.contains(a.job);
    if (!a.first.job_pending) a.job_result = finished[a.job];
  }
  ports_.clock->SleepFor(options_.settle);
  std::vector<std::string> pending;
  for (const UnitStep& a : acts) {
    if (!a.enqueue_failed && a.first.job_pending) pending.push_back(a.job);
  }
  auto late = pending.empty() ? std::map<std::string, std::string>{}
                              : sm.WaitForJobs(pending, std::chrono::nanoseconds(0));
  auto elapsed = ports_.clock->Monotonic() - t0;
  std::vector<Result<core::UnitStatus>> second = look();
  seen = 0;
  for (UnitStep& a : acts) {
    if (a.enqueue_failed) continue;
    const Resource& r = decl_->resources[a.index];
    ResourceOutcome& out = report_.outcomes[outcome_of_[a.index]];
    FileStep& fs = steps_[a.index];
    if (a.first.job_pending && late.contains(a.job)) a.job_result = late[a.job];
    const Result<core::UnitStatus>& status = second[seen++];
    a.second.unit = status ? *status : core::UnitStatus{};
    a.second.job_pending = a.first.job_pending && !late.contains(a.job);
    core::Verdict v =
        core::JudgeTwoLooks(a.action, a.job_result, a.first, a.second,
                            std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed));
    out.unit = Snapshot(r.unit, a.second.unit);
    out.restart_reason = a.action == core::UnitAction::kReload ? "" : a.reason;
    out.host_acted = true;
    if (!v.accepted) {
      out.outcome = Outcome::kFailed;
      out.confirm_failed = true;
      out.detail = (r.unit != r.id ? r.unit + " " : "") + v.detail;
      continue;
    }
    if (fs.changed) {
      out.outcome = fs.outcome;
      out.detail = fs.detail + ", running as " + r.unit + " (" + v.detail + ")";
    } else {
      out.outcome = a.action == core::UnitAction::kStart     ? Outcome::kStarted
                    : a.action == core::UnitAction::kRestart ? Outcome::kRestarted
                                                             : Outcome::kReloaded;
      out.detail = (a.why.empty() ? "" : a.why + "; ") + r.unit + " " + v.detail;
    }
  }
}

void Pass::Prune() {
  std::set<std::string> claimed_units;
  for (const Resource& r : decl_->resources) {
    if (r.HasUnit()) claimed_units.insert(r.unit);
  }
  // A recorded path is still claimed when a declared path equals it, lies
  // under it, or contains it. Sorted, each test is a few lookups, so
  // replacing a declaration of 10,000 files is not 10^8 comparisons.
  std::set<std::string, std::less<>> declared;
  for (const Resource& r : decl_->resources) {
    if (r.HasFiles()) declared.insert(r.path);
  }
  auto claimed_path = [&](const std::string& path) {
    if (declared.contains(path)) return true;
    auto below = declared.lower_bound(path + "/");
    if (below != declared.end() && core::PathWithin(*below, path)) return true;
    for (size_t slash = path.rfind('/'); slash != std::string::npos && slash > 0;
         slash = path.rfind('/', slash - 1)) {
      if (declared.contains(std::string_view(path).substr(0, slash))) return true;
    }
    return false;
  };
  for (const auto& [id, e] : old_holder_->resources) {
    if (decl_->Find(id) != nullptr) continue;
    ResourceOutcome out;
    out.id = id;
    out.kind = e.kind;
    out.outcome = Outcome::kRemoved;
    std::vector<std::string> did;
    std::string error;
    bool owns_unit = !e.unit.empty() && !claimed_units.contains(e.unit);
    if (owns_unit && ports_.services != nullptr) {
      auto status = ports_.services->ReadUnit(e.unit);
      if (status && status->Running()) {
        did.push_back(Did("stopped", "stop", e.unit) + " (not waited on)");
        if (!options_.dry_run) {
          auto job = ports_.services->Enqueue(e.unit, ports::JobKind::kStop);
          if (!job) error = job.error().message;
        }
      }
    }
    size_t deleted = 0, kept = 0;
    for (const WrittenPath& w : e.written) {
      if (w.preexisting || claimed_path(w.path)) {
        ++kept;
        continue;
      }
      if (!options_.dry_run) {
        if (auto st = ports_.root->Remove(w.path); !st && error.empty()) error = st.error().message;
      }
      ++deleted;
    }
    if (deleted > 0) did.push_back(Did("deleted", "delete", Plural(deleted, "path")));
    if (kept > 0) did.push_back("left " + Plural(kept, "path") + " the host did not create");
    if (owns_unit && !e.unit_file_fingerprint.empty()) {
      did.push_back(Did("deleted", "delete", "unit file " + e.unit));
      if (!options_.dry_run) {
        if (auto st = ports_.units->Remove("/" + e.unit); !st && error.empty())
          error = st.error().message;
        units_changed_ = true;
      }
    }
    if (!error.empty()) {
      out.outcome = Outcome::kFailed;
      out.detail = "removing: " + error;
      out.digest = e.digest;
    } else {
      for (size_t k = 0; k < did.size(); ++k) out.detail += (k ? ", " : "") + did[k];
      if (out.detail.empty()) out.detail = "no longer declared";
      if (!options_.dry_run) Drop(id);
    }
    out.applied_at = now_;
    report_.outcomes.push_back(std::move(out));
  }
}

void Pass::MarkBeforeWrite() {
  if (marked_ || options_.dry_run) return;
  marked_ = true;
  // An interrupted apply's mark stands until this apply ends.
  if (interrupted_) return;
  if (auto st = ports_.records->BeginApply(); !st) {
    report_.warnings.push_back("apply mark not set: " + st.error().message);
  }
}

void Pass::Sweep() {
  // Every directory the host writes into: parents of declared and recorded
  // paths, and the unit directory.
  std::set<std::string> dirs;
  auto add_parent = [&](const std::string& path) {
    size_t slash = path.rfind('/');
    dirs.insert(slash == 0 ? "/" : path.substr(0, slash));
  };
  for (const Resource& r : decl_->resources) {
    if (r.HasFiles()) add_parent(r.path);
  }
  for (const std::string& p : old_paths_) add_parent(p);
  int removed = 0;
  for (const std::string& dir : dirs) {
    auto n = ports_.root->RemoveStaleTemporaries(dir);
    if (n) removed += *n;
  }
  if (auto n = ports_.units->RemoveStaleTemporaries("/"); n) removed += *n;
  report_.warnings.push_back("the previous apply was interrupted; removed " +
                             std::to_string(removed) + " temporary file(s) it left");
}

void Pass::Run(ports::DeclarationSource& source) {
  now_ = core::FormatTimestamp(report_.started_at);
  auto refuse = [&](const core::Error& error) {
    report_.error = error.message;
    report_.result = ApplyResult::kRefused;
  };
  // Only the digest at first: a no-op proven from the record never reads
  // the text.
  auto digest = source.Digest();
  if (!digest) return refuse(digest.error());
  digest_ = std::move(*digest);
  if (options_.confirm_from_record && !digest_.empty() && ConfirmFromRecord()) return;
  LoadRecord();
  auto text = source.Text();
  if (!text) return refuse(text.error());
  if (!Check(*text)) {
    report_.result = ApplyResult::kRefused;
    return;
  }
  CheckInterrupted();
  if (interrupted_) Sweep();

  // 1. Files, credentials, bundles and unit texts.
  steps_.resize(decl_->resources.size());
  outcome_of_.resize(decl_->resources.size());
  report_.outcomes.reserve(decl_->resources.size());
  for (size_t i = 0; i < decl_->resources.size(); ++i) {
    const Resource& r = decl_->resources[i];
    auto it = old_holder_->resources.find(r.id);
    const RecordEntry* old =
        it != old_holder_->resources.end() && it->second.kind == core::KindName(r.kind)
            ? &it->second
            : nullptr;
    FileStep& step = steps_[i];
    if (r.kind == Kind::kFile || r.kind == Kind::kCredential) {
      step = ApplyFile(r, old);
    } else if (r.IsTree()) {
      step = ApplyTree(r, old);
    } else {
      step.entry = RecordEntry{};
      step.entry->kind = "service";
      step.entry->digest = Want(r, old);
      bool recorded = old != nullptr && old->digest == step.entry->digest;
      step.entry->applied_at = recorded ? old->applied_at : now_;
      step.want_changed = old != nullptr && !recorded;
      // A changed state or unit alone changes nothing on disk; the unit
      // phase acts on what systemd reports.
    }
    if (r.HasUnit() && step.outcome != Outcome::kFailed && step.entry.has_value()) {
      if (auto st = ApplyUnitFile(r, old, step); !st) {
        step.outcome = Outcome::kFailed;
        step.detail = st.error().message;
        step.changed = false;
        step.entry = old != nullptr ? std::optional<RecordEntry>(*old) : std::nullopt;
      }
    }
    if (step.unit_file_changed) units_changed_ = true;
    if (step.entry.has_value() && step.outcome != Outcome::kFailed) {
      step.entry->position = i;
      step.entry->state = !r.HasUnit()                           ? ""
                          : r.state == core::UnitState::kRunning ? "running"
                                                                 : "stopped";
    }
    if (step.entry.has_value()) {
      Keep(r.id, *step.entry);
    } else if (!options_.dry_run) {
      Drop(r.id);
    }
    ResourceOutcome out;
    out.id = r.id;
    out.kind = std::string(core::KindName(r.kind));
    out.outcome = step.outcome;
    out.detail = step.detail;
    out.digest = step.entry.has_value() ? step.entry->digest : "";
    if (r.HasUnit()) {
      out.declared_unit = r.unit;
      out.unit_should_run = r.state == core::UnitState::kRunning;
    }
    out.applied_at = step.entry.has_value() ? step.entry->applied_at : "";
    outcome_of_[i] = report_.outcomes.size();
    report_.outcomes.push_back(std::move(out));
  }

  // 2. Prune what is no longer declared (stops are queued, never waited on).
  Prune();

  // 3. One daemon-reload for every unit file written or deleted.
  if (units_changed_ && !options_.dry_run) {
    if (ports_.services == nullptr) {
      report_.warnings.push_back("unit files changed but no service manager to reload");
    } else if (auto st = ports_.services->ReloadDaemon(); !st) {
      report_.warnings.push_back("daemon-reload: " + st.error().message);
    } else {
      report_.daemon_reloaded = true;
    }
  }

  // 4. Units: decide, act, and confirm with two looks sharing one pause.
  std::vector<UnitStep> acts;
  PlanUnits(acts);
  ConfirmUnits(acts);

  // 5. The record, with every outcome's digest, unchanged ones included. An
  // apply that changed nothing leaves it as it is: no rewrite, no fsync.
  bool any_failed = false;
  for (const ResourceOutcome& o : report_.outcomes) any_failed |= o.outcome == Outcome::kFailed;
  std::string settled = any_failed ? "" : decl_->digest;
  bool same = had_record_ && changes_.empty() && old_holder_->machine == decl_->machine &&
              old_holder_->generation == decl_->generation &&
              old_holder_->declaration_digest == decl_->digest &&
              old_holder_->want_version == core::Record::kWantVersion &&
              old_holder_->settled_declaration_digest == settled;
  core::Record next;
  if (!options_.dry_run && !same) {
    next = *old_holder_;
    for (auto& [id, change] : changes_) {
      if (change.has_value()) {
        next.resources[id] = std::move(*change);
      } else {
        next.resources.erase(id);
      }
    }
    next.machine = decl_->machine;
    next.generation = decl_->generation;
    next.declaration_digest = decl_->digest;
    next.want_version = core::Record::kWantVersion;
    next.settled_declaration_digest = settled;
  }
  bool saved = true;
  if (!options_.dry_run && !same) {
    MarkBeforeWrite();
    // What was renamed and removed reaches the disk before the record says so.
    core::Status flushed = ports_.root->Flush();
    if (flushed) flushed = ports_.units->Flush();
    if (!flushed) {
      report_.error = "record not saved: " + flushed.error().message;
      report_.result = ApplyResult::kFailed;
      saved = false;
    } else if (auto st = ports_.records->Save(next); !st) {
      report_.error = "record not saved: " + st.error().message;
      report_.result = ApplyResult::kFailed;
      saved = false;  // the mark stays: the next apply sweeps
    }
  }
  if (saved && (marked_ || interrupted_)) {
    if (auto end = ports_.records->EndApply(); !end) {
      report_.warnings.push_back("apply mark not cleared: " + end.error().message);
    }
  }
  for (const ResourceOutcome& o : report_.outcomes) {
    if (o.outcome == Outcome::kFailed) report_.result = ApplyResult::kFailed;
  }
}

}  // namespace

std::string_view ApplyResultName(ApplyResult result) {
  switch (result) {
    case ApplyResult::kOk:
      return "ok";
    case ApplyResult::kFailed:
      return "failed";
    case ApplyResult::kRefused:
      return "refused";
  }
  return "?";
}

namespace {

// A declaration already in memory.
class TextSource : public ports::DeclarationSource {
 public:
  explicit TextSource(std::string_view text) : text_(text) {}
  Result<std::string> Digest() override {
    if (text_.size() > core::kMaxDeclarationBytes) return std::string();
    return core::Sha256Hex(text_);
  }
  Result<std::string_view> Text() override { return text_; }

 private:
  std::string_view text_;
};

}  // namespace

ApplyReport Reconciler::Apply(std::string_view declaration_text, const OutcomeSink& sink) {
  TextSource source(declaration_text);
  return Apply(source, sink);
}

ApplyReport Reconciler::Apply(ports::DeclarationSource& declaration, const OutcomeSink& sink) {
  ApplyReport report;
  report.started_at = ports_.clock->Now();
  auto t0 = ports_.clock->Monotonic();
  Pass pass(ports_, options_, sink, report);
  pass.Run(declaration);
  // What the pass still holds (the full pass needs every outcome until its
  // end: the unit phase and the record amend them).
  for (const ResourceOutcome& o : report.outcomes) {
    ++report.resources;
    report.failed += o.outcome == Outcome::kFailed;
    if (sink) sink(o);
  }
  if (sink) report.outcomes = {};
  report.finished_at = ports_.clock->Now();
  report.duration = ports_.clock->Monotonic() - t0;
  return report;
}

}  // namespace mesh::reconcile
