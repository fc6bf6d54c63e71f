#include "host/reconcile/chunked.h"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "host/core/declaration.h"
#include "host/core/intent.h"
#include "host/reconcile/commit.h"
#include "host/reconcile/observe.h"
#include "host/reconcile/pipeline.h"

namespace mesh::reconcile {
namespace {

using core::Declaration;
using core::Resource;

// Below this many resources a declaration is carried whole: the chunks would
// save little and cost a second parse.
constexpr size_t kMinChunks = 2;
// A resource takes some 40 bytes of text at least (ParseDeclaration's bound).
constexpr size_t kMinResourceBytes = 40;

// What the first pass keeps of the whole declaration: the paths that are
// missing (what the apply creates), end to end in one buffer, in
// declaration order.
struct Creating {
  struct At {
    uint32_t offset, size;  // in `paths` (the text is at most 64 MiB)
    uint32_t position;      // the resource's, in the declaration
  };
  std::string paths;
  std::vector<At> at;

  std::string_view operator[](size_t k) const {
    return std::string_view(paths).substr(at[k].offset, at[k].size);
  }
};

struct FirstPass {
  Declaration header;  // machine, generation, digest
  size_t resources = 0;
  bool credentials = false;
  Creating creating;
};

// Whether a list of hashes holds one twice: an id or a path given twice, or
// two that hash alike (about one declaration of 100,000 in 3 billion), which
// only sends the declaration to the whole pass.
bool Repeats(std::vector<size_t>& hashes) {
  std::sort(hashes.begin(), hashes.end());
  return std::adjacent_find(hashes.begin(), hashes.end()) != hashes.end();
}

// The first pass: every check the whole pass makes before it writes, over
// one chunk at a time, and the missing paths. nullopt: the whole pass takes
// the declaration (it does not fit, or it is refused: the whole pass says
// why, in its own words).
std::optional<FirstPass> Check(const ChunkedApply& in) {
  FirstPass out;
  // Ids and paths by their hashes: 8 bytes each, not a set of strings.
  std::vector<size_t> ids, paths;
  std::hash<std::string_view> hash;
  // Every path, looked at once the whole declaration is known to be one
  // for this path: none is looked at twice when the whole pass takes it.
  Creating all;
  auto on_chunk = [&](Declaration& chunk) {
    for (const Resource& r : chunk.resources) {
      if (!r.IsFile() || UnitDefinitionAt(*in.dirs, r.path).has_value()) return false;
      ids.push_back(hash(r.id));
      paths.push_back(hash(r.path));
      out.credentials |= r.kind == core::Kind::kCredential;
      all.at.push_back({static_cast<uint32_t>(all.paths.size()),
                        static_cast<uint32_t>(r.path.size()),
                        static_cast<uint32_t>(out.resources++)});
      all.paths += r.path;
    }
    // The host's own places (the machine and generation are checked once
    // the document's fields are known).
    core::Problems problems;
    CheckDeclaration(chunk, *in.record, /*had_record=*/false, "", *in.dirs, problems);
    return problems.empty();
  };
  auto header = core::ParseDeclarationInChunks(in.text, in.chunk, on_chunk);
  if (!header || out.resources < kMinChunks * in.chunk || Repeats(ids) || Repeats(paths)) {
    return std::nullopt;
  }
  core::Problems problems;
  CheckDeclaration(*header, *in.record, in.had_record, in.machine, *in.dirs, problems);
  if (!problems.empty()) return std::nullopt;
  // Only a directory holds declared paths (CheckClaims), and every one here
  // is a file: a path under another one is the whole pass's to refuse.
  for (size_t k = 0; k < all.at.size(); ++k) {
    if (core::AnyAncestor(all[k], [&](std::string_view parent) {
          return std::binary_search(paths.begin(), paths.end(), hash(parent));
        })) {
      return std::nullopt;
    }
  }
  ids = paths = std::vector<size_t>();
  // A chunk's paths at a time; the missing ones kept.
  std::vector<std::string_view> looked;
  size_t kept = 0;
  for (size_t from = 0; from < all.at.size(); from += in.chunk) {
    size_t to = std::min(all.at.size(), from + in.chunk);
    looked.clear();
    for (size_t k = from; k < to; ++k) looked.push_back(all[k]);
    std::vector<core::Result<core::FileInfo>> seen = in.ports->root->StatMany(looked);
    for (size_t k = from; k < to; ++k) {
      const core::Result<core::FileInfo>& info = seen[k - from];
      if (!info && info.error().kind == core::ErrorKind::kOutsideRoot) return std::nullopt;
      if (info && info->type == core::FileType::kMissing) all.at[kept++] = all.at[k];
    }
  }
  all.at.resize(kept);
  for (Creating::At& at : all.at) {
    std::string_view path = all[static_cast<size_t>(&at - all.at.data())];
    at.offset = static_cast<uint32_t>(out.creating.paths.size());
    out.creating.paths += path;
  }
  out.creating.at = std::move(all.at);
  out.header = std::move(*header);
  return out;
}

// `creating`'s paths (those `only` marks, when given) and `more`.
core::Intent IntentOf(const Creating& creating, const std::vector<bool>* only,
                      const std::vector<std::string>& more, bool applying) {
  core::Intent intent;
  intent.applying = applying;
  intent.creating.reserve(creating.at.size() + more.size());
  for (size_t k = 0; k < creating.at.size(); ++k) {
    if (only == nullptr || (*only)[k]) intent.creating.emplace_back(creating[k]);
  }
  intent.creating.insert(intent.creating.end(), more.begin(), more.end());
  return intent;
}

// The second pass and the commit, once the first found nothing to refuse.
class Run {
 public:
  Run(const ChunkedApply& in, FirstPass& first, core::ApplyReport& report,
      std::unique_ptr<ports::RecordBuilder> builder, std::string credential_key)
      : in_(in),
        first_(first),
        report_(report),
        builder_(std::move(builder)),
        credential_key_(std::move(credential_key)) {}

  void Carry();

 private:
  bool Chunk(Declaration& chunk);
  // Names in the intent, before the chunk writes, what it creates that the
  // first pass did not see missing (gone since): false when it cannot.
  bool Claim(const Plan& plan, size_t resources);
  void Fail(std::string error) {
    if (report_.error.empty()) report_.error = std::move(error);
    report_.result = core::ApplyResult::kFailed;
  }
  core::Status Commit();

  const ChunkedApply& in_;
  FirstPass& first_;
  core::ApplyReport& report_;
  std::unique_ptr<ports::RecordBuilder> builder_;
  std::string credential_key_;
  core::Intent owed_;  // nothing: this path is taken only then
  size_t done_ = 0;    // resources carried
  // In first_.creating: every path before it was claimed, or found since
  // (by the chunk's own look) not to be created after all.
  size_t cursor_ = 0;
  // What the chunks' plans created, of first_.creating and beyond it (a
  // path gone since the first pass looked): what the commit names.
  std::vector<bool> claimed_;
  std::vector<std::string> more_creating_;
  // Thrown inside a chunk: carried past the parser (which would take it for
  // the declaration's) and thrown again after it.
  std::exception_ptr thrown_;
  bool failed_ = false;       // some resource failed
  core::Intent left_failed_;  // what the chunks left failed (Intent::failed)
  core::OwnerIds owners_;     // what each chunk checked paths' owners under
  StatCache stats_;
};

bool Run::Claim(const Plan& plan, size_t resources) {
  size_t before = more_creating_.size();
  const auto& at = first_.creating.at;
  for (const std::string& path : plan.intent.creating) {
    // Both in declaration order: a walk over this chunk's, not a search.
    size_t k = cursor_;
    while (k < at.size() && at[k].position < done_ + resources && first_.creating[k] != path) ++k;
    if (k < at.size() && at[k].position < done_ + resources) {
      claimed_[k] = true;
      cursor_ = k + 1;
    } else {
      more_creating_.push_back(path);
    }
  }
  if (more_creating_.size() == before) return true;
  if (auto st =
          in_.ports->records->SaveIntent(IntentOf(first_.creating, nullptr, more_creating_, true));
      !st) {
    Fail("intent not saved: " + st.error().message + "; the apply stopped after " +
         std::to_string(done_) + " resource(s)");
    return false;
  }
  return true;
}

// A chunk through the whole pass's own pipeline (pipeline.h), its outcomes
// handed on and its record entries to the builder.
bool Run::Chunk(Declaration& chunk) {
  ApplyState s{.decl = std::move(chunk),
               .record = in_.record,
               .had_record = in_.had_record,
               .owed = &owed_,
               .now = in_.now,
               .dirs = in_.dirs};
  s.decl.machine = first_.header.machine;
  s.decl.generation = first_.header.generation;
  s.decl.digest = first_.header.digest;
  s.olds = OldEntriesOf(s.decl, *in_.record);
  s.wants = Wants(s.decl, *s.record, s.olds, s.had_record, credential_key_);
  auto observed = ObserveOf(s, *in_.ports, stats_);
  if (!observed) {
    // A path made to lead out of the root since the first pass looked.
    Fail(observed.error().message + "; the apply stopped after " + std::to_string(done_) +
         " resource(s)");
    return false;
  }
  s.observed = std::move(*observed);
  s.plan = PlanOf(s, in_.ports->services != nullptr);
  s.wants = std::vector<std::string>();
  if (!Claim(s.plan, s.decl.resources.size())) return false;
  Settled settled = WriteAndSettle(s, *in_.ports, std::chrono::nanoseconds(0));
  owners_.merge(s.owners);
  failed_ |= settled.failed;
  for (auto& [id, f] : settled.intent.failed)
    left_failed_.LeaveFailed(id, f.kind, f.detail, f.generation);
  for (core::ResourceOutcome& o : settled.outcomes) in_.emit(std::move(o));
  for (auto& [id, entry] : settled.entries) {
    if (!entry.has_value()) continue;  // nothing was recorded: nothing to erase
    entry->position = done_ + entry->position.value_or(0);
    if (auto st = builder_->Add(id, *entry); !st) {
      Fail("record not saved: " + st.error().message);
      return false;
    }
  }
  done_ += s.decl.resources.size();
  if (in_.ports->progress != nullptr) in_.ports->progress->Step();
  return true;
}

// The whole pass's commit (commit.h), with the record from the builder.
core::Status Run::Commit() {
  core::Status flushed = in_.ports->root->Flush();
  if (flushed) flushed = in_.ports->units->Flush();
  if (!flushed) return core::Fail("record not saved: " + flushed.error().message);
  // `creating` stays named until the record holds it.
  core::Intent settled = IntentOf(first_.creating, &claimed_, more_creating_, false);
  settled.failed = left_failed_.failed;
  if (auto st = in_.ports->records->SaveIntent(settled); !st) {
    return core::Fail("intent not saved: " + st.error().message);
  }
  settled = core::Intent();
  core::Record header;
  header.want_version = core::Record::kWantVersion;
  header.settled_declaration_digest =
      failed_ || done_ < first_.resources ? "" : first_.header.digest;
  header.machine = first_.header.machine;
  header.generation = first_.header.generation;
  header.declaration_digest = first_.header.digest;
  header.owners = core::RecordableOwners(std::move(owners_));
  if (auto st = builder_->Commit(header); !st) {
    return core::Fail("record not saved: " + st.error().message);
  }
  // An apply stopped part way keeps them named: the chunk that failed may
  // have written what it could not record; the next apply claims it (or
  // removes it).
  if (done_ < first_.resources) return core::Ok();
  core::Intent done;
  done.failed = std::move(left_failed_.failed);  // what it left failed is told on
  if (auto st = in_.ports->records->SaveIntent(done); !st) {
    return core::Fail("intent not saved: " + st.error().message);
  }
  return core::Ok();
}

void Run::Carry() {
  claimed_.assign(first_.creating.at.size(), false);
  auto parsed = core::ParseDeclarationInChunks(in_.text, in_.chunk, [&](Declaration& chunk) {
    try {
      return Chunk(chunk);
    } catch (...) {
      thrown_ = std::current_exception();
      return false;
    }
  });
  // Out of memory, say: thrown on as from the whole pass, the intent saved
  // first still saying that an apply is under way.
  if (thrown_) std::rethrow_exception(thrown_);
  // The first pass parsed these same bytes: only a chunk that stopped the
  // run (its error said) ends the parse early.
  if (!parsed && report_.error.empty()) Fail("declaration: " + parsed.error().message);
  if (in_.release_text) in_.release_text();
  if (failed_) report_.result = core::ApplyResult::kFailed;
  if (auto st = Commit(); !st) Fail(st.error().message);
}

}  // namespace

bool ApplyInChunks(const ChunkedApply& in, core::ApplyReport& report) {
  if (in.chunk == 0 || in.text.size() < kMinChunks * in.chunk * kMinResourceBytes ||
      !in.record->resources.empty()) {
    return false;
  }
  std::optional<FirstPass> first = Check(in);
  if (!first.has_value()) return false;
  // Whatever cannot be set up is left to the whole pass, which meets it
  // again and says so, before anything is written.
  auto builder = in.ports->records->BuildRecord();
  if (!builder) return false;
  std::string key;
  std::string warning;
  if (first->credentials) {
    auto loaded = in.ports->records->LoadDigestKey();
    key = std::move(loaded.bytes);
    warning = std::move(loaded.warning);
  }
  if (!in.ports->records->SaveIntent(IntentOf(first->creating, nullptr, {}, /*applying=*/true))) {
    return false;
  }
  report.machine = first->header.machine;
  report.generation = first->header.generation;
  report.declaration_digest = first->header.digest;
  if (!warning.empty()) report.warnings.push_back(std::move(warning));
  Run(in, *first, report, std::move(*builder), std::move(key)).Carry();
  return true;
}

}  // namespace mesh::reconcile
