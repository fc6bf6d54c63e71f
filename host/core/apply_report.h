// ApplyReport: what one apply (or plan) did — its result, every outcome or
// their count, when, and why it was refused — the value the CLI prints, the
// status board shows and the metrics count. A value of the core, so that
// host/status and metrics/ read it without depending on the reconciler.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/outcome.h"

namespace mesh::core {

enum class ApplyResult { kOk, kFailed, kRefused };
std::string_view ApplyResultName(ApplyResult result);  // "ok", "failed", "refused"

// What the record says the last applied generation left: its machine,
// generation and each resource (failed where an action is still owed),
// with the units as systemd shows them now.
struct RecordedState {
  std::string machine;
  uint64_t generation = 0;
  std::string declaration_digest;
  std::vector<ResourceOutcome> resources;
};

// Who signed the declaration applied (--verify-key): the key and the
// trusted comment its signature covers.
struct Signer {
  std::string key_id;  // as minisign prints it
  std::string trusted_comment;
};

struct ApplyReport {
  ApplyResult result = ApplyResult::kOk;
  // Why the declaration was refused, or a failure outside any one resource
  // (the record could not be saved).
  std::string error;
  // A refusal of several problems (core::Error::details): each whole.
  std::vector<std::string> refusals;
  std::vector<std::string> warnings;
  std::string machine;
  uint64_t generation = 0;
  std::string declaration_digest;
  // Every resource's outcome in declaration order — unless the apply was
  // given an OutcomeSink, which received them instead.
  std::vector<ResourceOutcome> outcomes;
  // Counted either way.
  uint64_t resources = 0;
  uint64_t failed = 0;
  std::chrono::system_clock::time_point started_at;
  std::chrono::system_clock::time_point finished_at;
  std::chrono::nanoseconds duration{0};
  bool daemon_reloaded = false;
  // The apply became a plan (its intent could not be saved): its outcomes
  // say what it would have done, none of which was done. Neither counted
  // nor shown as the machine's state.
  bool changed_nothing = false;
  // A removal waits for its unit to stop: its files go at the first apply
  // that finds it stopped (a daemon applies again soon, not an interval on).
  bool removal_waits = false;
  // The declaration was byte for byte the one the record was settled from,
  // and every recorded fingerprint and unit state still held: the no-op was
  // proven from the record without parsing the declaration.
  bool from_record = false;
  // `plan --diff`: what each change would do to the machine, one block per
  // resource (diff.h).
  std::vector<std::string> diffs;
  // A refused apply, when asked for (ReconcilerOptions::recorded_on_refusal):
  // the recorded truth, for a daemon that has shown no apply yet — a bad
  // push must not blind /status and /metrics.
  std::optional<RecordedState> recorded;
  // With --verify-key: the signature the declaration was accepted under.
  std::optional<Signer> signer;
};

}  // namespace mesh::core
