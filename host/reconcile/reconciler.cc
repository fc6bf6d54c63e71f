#include "host/reconcile/reconciler.h"

#include <algorithm>
#include <new>
#include <set>

#include "host/core/declaration.h"
#include "host/core/record.h"
#include "host/core/sha256.h"
#include "host/core/time_format.h"
#include "host/reconcile/act.h"
#include "host/reconcile/apply_run.h"
#include "host/reconcile/chunked.h"
#include "host/reconcile/commit.h"
#include "host/reconcile/confirm.h"
#include "host/reconcile/diff.h"
#include "host/reconcile/noop_step.h"
#include "host/reconcile/observe.h"
#include "host/reconcile/pipeline.h"
#include "host/reconcile/plan.h"
#include "host/reconcile/private_declaration.h"
#include "host/reconcile/recorded.h"
#include "host/reconcile/recovery.h"
#include "host/reconcile/signature.h"
#include "host/reconcile/write.h"

namespace mesh::reconcile {
namespace apply_internal {

void ApplyRun::RecordTruth() {
  if (!record_loaded_) LoadRecord();
  if (!had_record_) return;
  (void)LoadIntent();  // unreadable: nothing is known to be owed, and said so by the next apply
  auto last_good =
      ports_.records->LoadLastGood();  // unreadable: no hold shown, the next apply says why
  report_.recorded = RecordedTruth(*record_, *intent_, last_good ? &*last_good : nullptr,
                                   ports_.services, RecordedFor::kRefusal);
}

void ApplyRun::LoadRecord() {
  record_loaded_ = true;
  auto loaded = ports_.records->Load();
  if (!loaded && loaded.error().kind != core::ErrorKind::kCorrupt) {
    // Not corrupt (too large, untrusted, changed while read, a read error):
    // starting from an empty record would forget what the host wrote, and
    // save over the record that knows it. Nothing is changed until it reads.
    record_unreadable_ = "record not readable: " + loaded.error().message +
                         "; nothing was changed (a record that cannot be trusted or read "
                         "whole is never replaced)";
  } else if (!loaded) {
    report_.warnings.push_back(loaded.error().message +
                               "; starting from an empty record: files that already match are "
                               "adopted, not rewritten");
  } else if (*loaded != nullptr) {
    record_ = std::move(*loaded);
    had_record_ = true;
  }
}

void ApplyRun::TakeLookAhead() {
  if (std::optional<StatCache> ahead = look_ahead_.Take()) stats_ = std::move(*ahead);
}

bool ApplyRun::LoadIntent() {
  if (intent_.has_value()) return intent_unreadable_.empty();
  auto loaded = ports_.records->LoadIntent();
  if (loaded) {
    intent_ = std::move(*loaded);
  } else {
    // What is owed cannot be known: guessing "nothing" could report a
    // daemon on its old config as unchanged for ever. The apply changes
    // nothing and says why, until the file is readable or removed.
    // Not trusted (the state directory opened to others): mended by its
    // owner and mode; removing the intent would forget what is owed.
    intent_unreadable_ = "intent not readable: " + loaded.error().message +
                         (loaded.error().kind == core::ErrorKind::kUntrusted
                              ? "; nothing was changed"
                              : "; nothing was changed (remove the intent file to forget what "
                                "it left undone, or restore it)");
    intent_ = core::Intent{};
  }
  saved_ = *intent_;
  return intent_unreadable_.empty();
}

bool ApplyRun::SaveIntent(const Plan& plan) {
  if (options_.dry_run || !plan.ChangesMachine() || plan.intent == saved_) return true;
  if (auto st = ports_.records->SaveIntent(plan.intent); !st) {
    report_.error = "intent not saved: " + st.error().message + "; nothing was changed";
    report_.result = ApplyResult::kFailed;
    return false;
  }
  saved_ = plan.intent;
  return true;
}

void ApplyRun::Run(ports::DeclarationSource& source) {
  source_ = &source;
  if (options_.verify_key.has_value()) {
    auto signer = VerifyDeclarationSignature(source, *options_.verify_key);
    if (!signer) return Refuse(signer.error());
    report_.signer = std::move(*signer);
  } else if (auto alone = CheckChangedByRootAlone(source); !alone) {
    return Refuse(alone.error());
  }
  // Only the digest at first: a no-op proven from the record never reads
  // the text.
  auto digest = source.Digest();
  if (!digest) return Refuse(digest.error());
  // A file others may read is proven only from a record without
  // credentials; else it is parsed, and refused (private_declaration.h).
  if (options_.confirm_from_record && !digest->empty() &&
      ProveNoop({.ports = ports_,
                 .options = options_,
                 .digest = *digest,
                 .sink = sink_,
                 .nothing_owed = [this] { return LoadIntent() && intent_->empty(); },
                 .last_good_kept =
                     [this](const std::vector<std::string>& ids,
                            const NoopInputs::RecordedWant& recorded) {
                       return LastGoodKeeps(ids, recorded);
                     },
                 .exposed = source.ReadableByOthers().has_value()},
                kept_proof_, report_, stats_)) {
    return;
  }
  ports_.progress->Step();
  LoadRecord();
  // Nothing to look ahead at when a failed record proof looked already.
  if (stats_.stats.empty()) look_ahead_.Start(ports_.background, ports_.root, record_);
  ports_.progress->Step();
  auto text = source.Text();
  if (!text) return Refuse(text.error());
  const HostDirs& dirs = DirsAsOpened(source);
  if (ApplyInChunks(source, *text, dirs)) return;
  auto decl =
      core::ParseDeclaration(*text, [&](const core::Declaration& parsed, core::Problems& problems) {
        // Named by a refusal too, as what was refused.
        report_.machine = parsed.machine;
        report_.generation = parsed.generation;
        report_.declaration_digest = parsed.digest;
        problems.Add(CheckCredentialsPrivate(parsed, source));
        CheckDeclaration(parsed, *record_, had_record_, options_.machine, dirs, problems);
        if (options_.verify_key.has_value()) {
          problems.Add(CheckSignedGeneration(parsed, *record_, had_record_));
        }
      });
  source.ReleaseText();
  if (!decl) return Refuse(decl.error());
  Apply(std::move(*decl));
}

const HostDirs& ApplyRun::DirsAsOpened(const ports::DeclarationSource& source) {
  auto at = source.OpenedAt();
  if (!at) return options_.dirs;  // not a file: as the host's start found it
  std::vector<std::string> links = source.LinksOnTheWay();
  const HostDirs::Resolved& start = options_.dirs.resolved;
  if (*at == start.declaration && links == start.declaration_links) return options_.dirs;
  dirs_as_opened_ = options_.dirs;
  dirs_as_opened_->resolved.declaration = std::move(*at);
  dirs_as_opened_->resolved.declaration_links = std::move(links);
  return *dirs_as_opened_;
}

bool ApplyRun::ApplyInChunks(ports::DeclarationSource& source, std::string_view text,
                             const HostDirs& dirs) {
  // With --verify-key and a record, the whole pass checks the generation.
  // A file others may read that may hold credentials goes to the whole
  // pass, which refuses it if it does.
  if (options_.chunk == 0 || options_.dry_run || !record_unreadable_.empty() ||
      !record_->resources.empty() || !LoadIntent() ||
      (source.ReadableByOthers().has_value() && MayHoldCredentials(text)) || intent_->Owes() ||
      (options_.verify_key.has_value() && had_record_)) {
    return false;
  }
  TakeLookAhead();  // none ran with an empty record; the chunks use the root themselves
  ChunkedApply in{.ports = &ports_,
                  .text = text,
                  .chunk = options_.chunk,
                  .record = record_.get(),
                  .had_record = had_record_,
                  .machine = options_.machine,
                  .dirs = &dirs,
                  .now = core::FormatTimestamp(report_.started_at),
                  .emit =
                      [&](ResourceOutcome&& out) {
                        if (sink_) {
                          ++report_.resources;
                          report_.failed += out.outcome == core::Outcome::kFailed;
                          sink_(out);
                        } else {
                          report_.outcomes.push_back(std::move(out));
                        }
                      },
                  .release_text = [&] { source.ReleaseText(); }};
  return reconcile::ApplyInChunks(in, report_);
}

std::string ApplyRun::CredentialKey(const Declaration& decl) {
  if (std::none_of(decl.resources.begin(), decl.resources.end(),
                   [](const Resource& r) { return r.kind == core::Kind::kCredential; })) {
    return "";
  }
  auto key = ports_.records->LoadDigestKey();
  if (!key.warning.empty()) report_.warnings.push_back(std::move(key.warning));
  return std::move(key.bytes);
}

// The phases of one apply over one ApplyState (pipeline.h): observe, plan,
// intent, then what Carry does.
void ApplyRun::Apply(Declaration decl) {
  ApplyState s{.decl = std::move(decl),
               .record = record_.get(),
               .had_record = had_record_,
               .now = core::FormatTimestamp(report_.started_at),
               .dry_run = options_.dry_run,
               .dirs = &options_.dirs};
  // What the state directory holds and cannot be read is never guessed:
  // the apply fails, saying why, and only says what it would have done.
  const std::string& unreadable = LoadIntent() ? record_unreadable_ : intent_unreadable_;
  if (!unreadable.empty()) {
    report_.error = unreadable;
    report_.result = ApplyResult::kFailed;
    s.dry_run = true;
  }
  if (!LoadLastGood()) s.dry_run = true;
  s.owed = &*intent_;
  s.olds = OldEntriesOf(s.decl, *record_);
  if (ports_.services != nullptr && !intent_->creating_unit_files.empty()) {
    AdoptCutShortUnits(s.decl, *record_, *intent_, *ports_.units, s.olds);
  }
  std::string key = CredentialKey(s.decl);
  s.wants = Wants(s.decl, *s.record, s.olds, s.had_record, key);
  TakeHolds(s.decl, s.wants, key);
  std::set<std::string> kept_bundles;  // swapped in by a hold: their kept copies may serve
  for (const HeldUnit& h : held_) {
    for (size_t i : h.held) {
      if (s.decl.resources[i].IsTree()) kept_bundles.insert(s.decl.resources[i].sha256);
    }
  }
  TakeLookAhead();
  auto observed = ObserveOf(s, ports_, stats_, &kept_bundles);
  stats_ = StatCache();  // read by the observation only: not held through the writes
  if (!observed) return Refuse(observed.error());
  s.observed = std::move(*observed);
  NoteWhatStartsRead(s.decl, s.observed.seen);
  if (!s.dry_run) {
    for (std::string& w : RecoverFromCutShort(s.decl, *record_, *intent_, s.olds, *ports_.root,
                                              *ports_.units, s.observed)) {
      report_.warnings.push_back(std::move(w));
    }
  }
  ClaimWhatWasBeingCreated(s.decl, *intent_, s.observed);
  // A rollback's second pass acts on the units it puts back only.
  auto make_plan = [&] {
    Plan p = PlanOf(s, ports_.services != nullptr);
    if (only_units_.empty()) return p;
    for (UnitPlan& u : p.units) {
      if (std::find(only_units_.begin(), only_units_.end(), u.index) != only_units_.end()) continue;
      u.action.reset();
      u.stop = false;
      u.set_enabled.reset();
    }
    p.removals.clear();  // the first pass's, kept with its words
    return p;
  };
  s.plan = make_plan();
  // Nothing is written unless what it will owe is written down first; if
  // it cannot be, the apply says what it would have done.
  if (!s.dry_run && !SaveIntent(s.plan)) {
    s.dry_run = true;
    s.plan = make_plan();
    // A state directory that cannot be read keeps showing what it would do
    // (with each unit's live state): there is no picture to keep instead.
    report_.changed_nothing = true;
  }
  if (options_.dry_run && options_.diff) {
    report_.diffs = Diffs({.declaration = &s.decl,
                           .record = record_.get(),
                           .plan = &s.plan,
                           .seen = &s.observed.seen,
                           .bundles = &s.observed.bundles,
                           .wants = &s.wants,
                           .dirs = &options_.dirs},
                          ports_);
  }
  s.wants = std::vector<std::string>();  // read by the observation and the plan only
  Carry(s);
  if (!s.dry_run && !rollback_pass_) AfterCommit();
}

void ApplyRun::Carry(ApplyState& s) {
  Settled settled = WriteAndSettle(s, ports_, options_.settle);
  report_.daemon_reloaded = s.reloaded.done();
  report_.removal_waits = settled.pending;
  // Read by the settle only (each is assigned a new object: `= {}` is
  // clear(), which keeps the buffers).
  s.writes = Writes();
  s.enabled = std::vector<SystemdAnswer>();
  s.acts = std::vector<Acted>();
  s.confirmed = std::vector<std::optional<Confirmation>>();
  ports_.progress->Step();
  // Held resources are not as declared: they fail (so the record is never
  // settled on them, and no no-op is proven from it while they are held).
  for (const HeldUnit& h : held_) {
    settled.failed = true;
    if (rollback_pass_) continue;  // merged by the first pass
    if (SayPutBack(h, s.olds.recorded, settled.outcomes, last_good_)) last_good_changed_ = true;
    SayHeld(h, s.decl, h.index, settled.outcomes[h.index]);
    for (size_t i : h.held) {
      if (i != h.index) SayHeld(h, s.decl, i, settled.outcomes[i]);
    }
  }
  if (settled.failed) report_.result = ApplyResult::kFailed;
  report_.outcomes = std::move(settled.outcomes);
  if (s.dry_run) return;
  // The commit reads the settled entries and the declaration's machine,
  // generation and digest (CommitInputs). The plan and the declared
  // resources go first (what was seen went after the writes), so that the
  // record's text and the new record come on top of the settled entries
  // alone, not of the whole pass.
  s.plan = Plan();
  s.olds = OldEntries();
  s.decl.resources = std::vector<core::Resource>();
  s.decl.index = decltype(s.decl.index)();
  if (!rollback_pass_) KeepConfirmed();
  auto committed = Commit(ports_,
                          {.declaration = &s.decl,
                           .record = record_.get(),
                           .had_record = s.had_record,
                           .saved = &saved_,
                           .owners = &s.owners},
                          std::move(settled));
  if (!committed) {
    report_.error = committed.error().message;
    report_.result = ApplyResult::kFailed;
  }
}

}  // namespace apply_internal

namespace {

using core::ResourceOutcome;
using core::Result;

// A declaration already in memory.
class TextSource : public ports::DeclarationSource {
 public:
  explicit TextSource(std::string_view text) : text_(text) {}
  Result<std::string> Digest() override {
    if (text_.size() > core::kMaxDeclarationBytes) return std::string();
    return core::Sha256Hex(text_);
  }
  Result<std::string_view> Text() override { return text_; }
  Result<std::string> TextAgain() override { return std::string(text_); }

 private:
  std::string_view text_;
};

}  // namespace

std::optional<core::RecordedState> Reconciler::Recorded(RecordedFor why) {
  auto record = ports_.records->Load();
  if (!record || *record == nullptr) return std::nullopt;
  // An intent that cannot be read owes nothing known here; the apply that
  // follows changes nothing and says why.
  auto intent = ports_.records->LoadIntent();
  auto last_good = ports_.records->LoadLastGood();
  return RecordedTruth(**record, intent ? *intent : core::Intent{},
                       last_good ? &*last_good : nullptr, ports_.services, why);
}

ApplyReport Reconciler::Apply(std::string_view declaration_text, const OutcomeSink& sink) {
  TextSource source(declaration_text);
  return Apply(source, sink);
}

ApplyReport Reconciler::Apply(ports::DeclarationSource& declaration, const OutcomeSink& sink) {
  ApplyReport report;
  progress_.Begin();
  report.started_at = ports_.clock->Now();
  auto t0 = ports_.clock->Monotonic();
  // Under a memory limit an allocation may fail anywhere in the pass (its
  // state's own included): the apply fails and says so, and whatever it
  // wrote is already covered by the intent saved before its first write.
  try {
    apply_internal::ApplyRun run(ports_, options_, sink, report, kept_proof_);
    run.Run(declaration);
  } catch (const std::bad_alloc&) {
    report.result = ApplyResult::kFailed;
    report.error = "out of memory during the apply; the next apply finishes what it left undone";
  }
  // What the pass still holds (the full pass needs every outcome until its
  // end: the unit phase and the record amend them).
  for (const ResourceOutcome& o : report.outcomes) {
    ++report.resources;
    report.failed += o.outcome == core::Outcome::kFailed;
    if (sink) sink(o);
  }
  if (sink) report.outcomes = std::vector<ResourceOutcome>();
  report.finished_at = ports_.clock->Now();
  report.duration = ports_.clock->Monotonic() - t0;
  return report;
}

}  // namespace mesh::reconcile
