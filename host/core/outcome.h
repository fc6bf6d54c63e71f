// What happened to one resource in one apply, and how it reads in the log.
//
// The outcome vocabulary is part of the contract (SPEC "Reconcile"): the log
// line is `OUTCOME ID (KIND): DETAIL`, the same words appear on /status and as
// the `outcome` label of mesh_host_resource_outcomes_total.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/boxed.h"
#include "host/core/declaration.h"
#include "host/core/restart_reason.h"

namespace mesh::core {

enum class Outcome {
  kCreated,
  kUpdated,
  kUnchanged,
  kStarted,
  kRestarted,
  kReloaded,
  kStopped,
  kRemoved,
  kFailed,
};

inline constexpr std::array<Outcome, 9> kAllOutcomes = {
    Outcome::kCreated, Outcome::kUpdated,   Outcome::kUnchanged,
    Outcome::kStarted, Outcome::kRestarted, Outcome::kReloaded,
    Outcome::kStopped, Outcome::kRemoved,   Outcome::kFailed};

std::string_view OutcomeName(Outcome outcome);

// Whether an apply can give a resource of `kind` this outcome: a unit's
// resource (service, process) can have every one; a file, credential,
// bundle, directory or symlink is never started, restarted, reloaded or
// stopped. The metrics create a counter only for what can happen.
constexpr bool OutcomeCanHappen(Kind kind, Outcome outcome) {
  if (kind == Kind::kService || kind == Kind::kProcess) return true;
  return outcome != Outcome::kStarted && outcome != Outcome::kRestarted &&
         outcome != Outcome::kReloaded && outcome != Outcome::kStopped;
}

// At most this many journal lines per unit, each cut at this many bytes of
// what the run wrote, then escaped: enough for a daemon's complaint, never a
// page of its log.
inline constexpr size_t kJournalLines = 5;
inline constexpr size_t kJournalLineBytes = 240;

// What the host saw of a unit, carried on /status for services and processes.
struct UnitSnapshot {
  std::string name;
  std::string active_state;
  std::string sub_state;
  std::string result;
  uint32_t n_restarts = 0;
  uint64_t host_restarts = 0;
  // Declared running and as declared at that look (core::UnitUp, and not
  // restarted by systemd since the host's look before): what /healthz and
  // mesh_host_unit_active hold the unit to.
  bool up = false;
  // Restarted by systemd more than twice in 15 minutes (a crash loop, which
  // may be slower than a settle): the longer of the loop's last two runs as
  // the watch saw them, which a run must outlast by a settle to be up.
  bool crash_loop = false;
  std::chrono::nanoseconds loop_longest_run{0};
  // A resource failed on this unit: the last lines its failed run logged
  // (the journal, by InvocationID), bounded and escaped, oldest first; or
  // why there are none in `journal_note`. Both empty: not looked.
  std::vector<std::string> journal;  // kJournalLines of kJournalLineBytes
  std::string journal_note;
  // UnitStatus::started_realtime: what the last good judges the run by.
  std::chrono::microseconds started_realtime{0};
};

// A service's or process's words in its outcome. Boxed: a file's outcome
// (most of a large apply's, and of /status's picture) carries one empty
// pointer for them.
// A unit declared on_failure: rollback, held at its last good generation
// because the daemon refused a later one.
struct HeldAt {
  uint64_t generation = 0;          // the last good
  uint64_t refused_generation = 0;  // the one the daemon refused
  std::string since;                // RFC 3339

  // "held at generation 14 since …, generation 15 refused by the daemon"
  std::string Words() const {
    return "held at generation " + std::to_string(generation) + " since " + since +
           ", generation " + std::to_string(refused_generation) + " refused by the daemon";
  }
};

struct DeclaredUnit {
  std::string unit;
  std::optional<RestartReason> restart_reason;
  std::string state;  // running, stopped, triggered (UnitStateName)
  // on_failure: rollback. Held (the daemon refused a later generation):
  // what mesh_host_unit_held and MeshHostRolledBack report.
  std::optional<HeldAt> held;
  bool rollback = false;  // declared on_failure: rollback
  // This apply put the unit back onto its last good (mesh_host_rollbacks_total).
  bool rolled_back = false;
  // The rollback's own restart, a second one the host asked for in this
  // apply, and whether its second look failed: counted beside the first.
  std::optional<RestartReason> rollback_restart;
  bool rollback_confirm_failed = false;
};

struct ResourceOutcome {
  std::string id;
  std::string kind;  // KindName() of the resource, or the record's kind for a pruned one
  Outcome outcome = Outcome::kUnchanged;
  std::string detail;
  // The want digest that the record now holds for this resource; empty only
  // for a removed resource. Issue 210: an unchanged outcome carries it too.
  std::string digest;
  std::string applied_at;
  Boxed<UnitSnapshot> unit;  // services and processes
  // Services and processes only; read through declared_unit() and
  // restart_reason() below.
  Boxed<DeclaredUnit> declared;
  bool host_acted = false;
  // The second look found the unit not running as asked.
  bool confirm_failed = false;
  // ... because its job was still queued behind another unit's: it never
  // ran on what the apply wrote (nothing to roll back).
  bool never_ran = false;

  // service and process: the declared unit; empty for every other kind.
  const std::string& declared_unit() const { return declared.value_or_empty().unit; }
  // Set when the host asked systemd to start or restart the unit in this
  // apply (the metric's reason).
  std::optional<RestartReason> restart_reason() const {
    return declared.value_or_empty().restart_reason;
  }
  // Its name, "" when none ("declared", "restart_on", "was_dead").
  std::string_view restart_reason_name() const {
    auto r = restart_reason();
    return r ? RestartReasonName(*r) : std::string_view();
  }
  // service and process: whether it is declared running (what /healthz and
  // MeshHostDaemonDead hold it to): its declared state, not a second field.
  bool unit_should_run() const {
    return declared.value_or_empty().state == UnitStateName(UnitState::kRunning);
  }
  // Made on first use: call it for a unit's outcome only.
  DeclaredUnit& mutable_declared() { return declared.get_or_make(); }
};

// `OUTCOME ID (KIND): DETAIL`
std::string FormatOutcomeLine(const ResourceOutcome& o);
// The lines shown under that one for a failed unit: `  journal: LINE` for
// each line its failed run logged, or `  journal: (NOTE)`; none when the
// journal was not looked at.
std::vector<std::string> FormatJournalLines(const ResourceOutcome& o);

}  // namespace mesh::core
