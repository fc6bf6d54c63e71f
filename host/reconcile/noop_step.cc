#include "host/reconcile/noop_step.h"

#include <vector>

#include "host/core/record.h"
#include "host/reconcile/record_proof.h"

namespace mesh::reconcile {
namespace {

// A few touched files are read again by the next no-op rather than the
// whole record rewritten for them: up to one resource in this many.
constexpr size_t kRecordTouchedShare = 64;

// Best effort: the machine is as declared either way; a record not
// updated only means the next apply reads these files again.
void RecordTouched(ports::RecordStore& records, const std::vector<RecordProof::Touched>& touched,
                   ApplyReport& report) {
  if (touched.empty()) return;
  auto loaded = records.Load();
  std::string why;
  if (!loaded) {
    why = loaded.error().message;
  } else if (*loaded == nullptr) {
    why = "no record";
  } else {
    core::Record next = **loaded;
    for (const RecordProof::Touched& t : touched) {
      auto it = next.resources.find(t.id);
      if (it == next.resources.end() || it->second.written.size() != 1) {
        why = "the record changed under the apply";
        break;
      }
      it->second.written[0].fingerprint = t.fingerprint;
    }
    if (why.empty()) {
      if (auto st = records.Save(std::move(next)); !st) why = st.error().message;
    }
  }
  if (!why.empty()) {
    report.warnings.push_back("new fingerprints of " + std::to_string(touched.size()) +
                              " touched file(s) not recorded (" + why +
                              "): the next apply reads them again");
  }
}

// The proof of a record the store keeps: the one gathered before when the
// store still hands out that record, else one gathered now and kept.
// `held` keeps the record alive while the proof points into it: recording
// touched files replaces the store's.
RecordProof* ProveKept(const NoopInputs& in, KeptProof& kept,
                       std::shared_ptr<const core::Record>& held, bool& proven) {
  auto loaded = in.ports.records->Load();
  std::optional<uint64_t> version = in.ports.records->KeptRecordVersion();
  proven = false;
  // The full pass says why there is none.
  if (!loaded || *loaded == nullptr || !version.has_value()) return nullptr;
  held = *loaded;
  if (kept.proof != nullptr && kept.proof->gathered() && kept.version == *version) {
    proven = kept.proof->Rerun(in.digest);
    return kept.proof.get();
  }
  // Replaced whole: an allocation that fails here leaves no proof paired
  // with a record it was not gathered from.
  kept = KeptProof();
  auto fresh =
      std::make_unique<RecordProof>(in.ports, in.digest, in.options.machine, RecordProof::kBatch,
                                    in.options.dirs.writer, in.options.dirs.units);
  fresh->KeepForReruns();
  kept.proof = std::move(fresh);
  kept.version = *version;
  proven = core::VisitRecord(*held, *kept.proof) && kept.proof->Finish();
  return kept.proof.get();
}

}  // namespace

KeptProof::KeptProof() = default;
KeptProof::~KeptProof() = default;
KeptProof::KeptProof(KeptProof&&) noexcept = default;
KeptProof& KeptProof::operator=(KeptProof&&) noexcept = default;

// The record is visited, not loaded, so a one-shot apply never holds it
// whole. A store that keeps the record hands out the same one until it
// changes: the proof gathered from it is kept too, and the next no-op only
// looks at the machine again (RecordProof::Rerun).
bool ProveNoop(const NoopInputs& in, KeptProof& kept, ApplyReport& report, StatCache& looked) {
  std::optional<RecordProof> streamed;
  RecordProof* proof = nullptr;
  bool proven = false;
  std::shared_ptr<const core::Record> held;
  if (in.ports.records->KeptRecordVersion().has_value()) {
    proof = ProveKept(in, kept, held, proven);
    if (proof == nullptr) return false;
  } else {
    proof = &streamed.emplace(in.ports, in.digest, in.options.machine, RecordProof::kBatch,
                              in.options.dirs.writer, in.options.dirs.units);
    auto scanned = in.ports.records->Scan(*proof);
    proven = scanned.has_value() && *scanned && proof->Finish();
  }
  if (proven && in.exposed && proof->holds_credentials()) proven = false;
  if (proven) proven = in.nothing_owed();
  if (proven && in.last_good_kept) {
    std::vector<std::string> ids = proof->RollbackIds();
    proven = ids.empty() ||
             in.last_good_kept(ids, [&](std::string_view id) { return proof->RecordedWant(id); });
  }
  if (!proven) {
    // The full pass reuses what the proof just looked at rather than stat
    // those paths a second time.
    for (auto& [path, info] : proof->TakeLooks()) looked.Add(std::move(path), std::move(info));
    // Not kept through the full pass, which most often writes a new record
    // anyway: the next no-op gathers from that one.
    kept = KeptProof();
    return false;
  }
  std::vector<RecordProof::Touched> touched = proof->TakeTouched();
  bool rewritten = !in.options.dry_run && touched.size() * kRecordTouchedShare > proof->resources();
  if (rewritten) RecordTouched(*in.ports.records, touched, report);
  report.machine = proof->header().machine;
  report.generation = proof->header().generation;
  report.declaration_digest = in.digest;
  report.from_record = true;
  if (!in.sink) report.outcomes.reserve(proof->resources());
  proof->Report([&](core::ResourceOutcome&& out) {
    if (in.sink) {
      ++report.resources;
      in.sink(out);
    } else {
      report.outcomes.push_back(std::move(out));
    }
  });
  if (proof == kept.proof.get()) {
    // A record rewritten for the touched files is gathered anew next time.
    if (rewritten) {
      kept = KeptProof();
    } else {
      proof->ReleaseLooks();
    }
  }
  return true;
}

}  // namespace mesh::reconcile
