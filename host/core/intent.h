// The intent: the unit actions the host owes, kept durably between applies.
//
// SPEC "Reconcile" 7: the start, restart, reload and daemon-reload an apply
// owes are written down before its first write, and each is cleared only
// when it was done and its two looks passed. Whatever ends an apply in
// between (SIGKILL, power loss, a job systemd refuses, a failed
// daemon-reload, a lost bus, a failed second look), the next apply reads
// what is still owed here and does it. docs/record.md describes the file.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "host/core/restart_reason.h"
#include "host/core/result.h"

namespace mesh::core {

enum class UnitAction { kStart, kRestart, kReload };

std::string_view UnitActionVerb(UnitAction action);  // "start", "restart", "reload"

// What one resource's unit is owed.
struct Owed {
  // Absent when only the daemon-reload is owed (a unit declared stopped
  // whose definition changed).
  std::optional<UnitAction> action;
  // Its definition changed on disk and systemd has not loaded it yet.
  bool daemon_reload = false;
  // The metric's reason (none when only the daemon-reload is owed) and the
  // words of the outcome ("restart_on app.conf changed").
  std::optional<RestartReason> reason;
  std::string why;
  // The generation of the apply that first owed it.
  uint64_t since = 0;

  bool operator==(const Owed&) const = default;
};

// A resource the last apply left failed: what /status, /metrics and the
// alerts say of it until an apply does better, also from a daemon started
// again under a refused declaration (the record holds no entry of a first
// write that failed, and an older, true entry of one that did not land).
struct LeftFailed {
  std::string kind;    // the resource's kind, as the outcome names it
  std::string detail;  // the outcome's words, escaped (Printable)
  uint64_t generation = 0;

  bool operator==(const LeftFailed&) const = default;
};

struct Intent {
  // An apply began changing the machine and has not finished: its
  // temporary files may be left behind.
  bool applying = false;
  // By resource id.
  std::map<std::string, Owed> owed;
  // What the apply creates (nothing was there when it planned): declared
  // paths under --root and the unit files a unit_text writes, by unit name.
  // Were it cut short, a later apply whose declaration no longer holds them
  // finds them neither declared nor recorded: it removes them, and sweeps
  // their directories of the temporary files a killed write leaves.
  std::vector<std::string> creating;
  std::vector<std::string> creating_unit_files;
  // The drop-ins it writes where none was, as UNIT.d/NAME: one no record
  // holds would otherwise be taken for the operator's (and never deleted),
  // or go unseen by an apply of a generation that does not declare it.
  std::vector<std::string> creating_drop_ins;
  // Which of `creating` are trees (archive, process): an orphan is removed
  // only when it is still of the type the apply was creating.
  std::vector<std::string> creating_trees;

  // Whether it names anything being created (the lists above).
  bool Creating() const {
    return !creating.empty() || !creating_unit_files.empty() || !creating_drop_ins.empty();
  }
  // What was being created is forgotten: the record holds it, or it is gone.
  void ForgetCreating() {
    creating.clear();
    creating_unit_files.clear();
    creating_drop_ins.clear();
    creating_trees.clear();
  }
  // What the last apply left failed, by resource id: never a reason to act,
  // only to tell. At most kMaxLeftFailed, each detail cut at
  // kLeftFailedBytes.
  std::map<std::string, LeftFailed> failed;
  static constexpr size_t kMaxLeftFailed = 1000;
  static constexpr size_t kLeftFailedBytes = 512;
  void LeaveFailed(const std::string& id, const std::string& kind, std::string_view detail,
                   uint64_t generation);

  // Whether anything is still to do (what is only told is not).
  bool Owes() const { return applying || !owed.empty() || Creating(); }
  bool empty() const { return !Owes() && failed.empty(); }
  bool operator==(const Intent&) const = default;
};

// "web.service.d/10-env.conf", as creating_drop_ins names a drop-in: its
// unit and its name (both empty for what is not so named).
std::pair<std::string_view, std::string_view> SplitDropIn(std::string_view drop_in);

std::string SerializeIntent(const Intent& intent);
// Refuses, naming the field, what this host cannot trust: a wrong shape, an
// entry that owes nothing, control characters in the words (they go into
// log lines). Fields it does not know are skipped, as in the record.
Result<Intent> ParseIntent(std::string_view text);

}  // namespace mesh::core
