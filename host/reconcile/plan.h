// One apply, planned: from the declaration, the record, what earlier applies
// still owe (the intent) and what the machine showed (observe.h), the
// writes and unit actions this apply will take, each with its reason.
//
// Pure: nothing here calls a port, so every decision of an apply is tested
// with values (tests/host/reconcile/plan_test.cc). The phases that follow
// take the plan as it is — write.h, daemon_reload.h, act.h, confirm.h —
// and commit.h turns their results into outcomes, the record and what is
// still owed.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/boxed.h"
#include "host/core/declaration.h"
#include "host/core/file_info.h"
#include "host/core/intent.h"
#include "host/core/outcome.h"
#include "host/core/record.h"
#include "host/core/result.h"
#include "host/core/unit_status.h"

namespace mesh::reconcile {

// How a resource's files, or its unit file, compare with the declaration.
enum class Found {
  kAsRecorded,  // the recorded fingerprint still holds: nothing was read
  kAsDeclared,  // the fingerprint moved (or there is no record), the content matches
  kDiffers,     // it must be written
  kError,       // it could not be looked at: the resource fails
};

struct FilesSeen {
  Found found = Found::kAsRecorded;
  std::string error;           // kError
  std::string drift;           // kDiffers: what is different ("content changed", "deleted", ...)
  bool acl = false;            // kDiffers: it carries an ACL (access beyond its mode)
  bool missing = false;        // nothing at the path
  bool preexisting = false;    // there before the host first managed it
  std::string fingerprint;     // as found (kAsRecorded, kAsDeclared)
  std::string content_digest;  // trees: what the tree holds once as declared
  uint64_t file_count = 0;     // trees
  uint32_t uid = 0, gid = 0;   // files: the declared owner and group, resolved
  std::string meta;            // files: FileMeta as declared (empty: the record's digest holds)
  // Trees: under a directory at the path that was not this resource's
  // tree, the first entry that is not the host's content — or the path
  // itself, when it is a file, a link or a FIFO the host did not write; the
  // plan refuses to swap it out unless an apply cut short was creating the
  // tree (the intent says so).
  std::string foreign;
};

// A drop-in in --unit-dir/UNIT.d/, declared or recorded.
struct DropInSeen {
  Found found = Found::kAsRecorded;  // a recorded one no longer declared: still as written?
  std::string error;
  bool missing = false;
  bool preexisting = false;  // there, and not in the record: not the host's to delete
  // Neither declared nor recorded: written by an apply cut short (the
  // intent's creating_drop_ins), still the file it was writing. The host's
  // to delete, through the plan, so that its unit's restart is owed first.
  bool cut_short = false;
  std::string fingerprint;  // as found
};

struct UnitFileSeen {
  Found found = Found::kAsRecorded;  // also when the unit file is not the host's
  std::string error;
  bool missing = false;
  bool preexisting = false;  // there before the host first wrote it
  // A link to /dev/null at the unit file's place: an operator's mask,
  // whether or not systemd has loaded it yet.
  bool masked = false;
  // Why what the host writes would not run: systemd loads a file of that
  // name from a directory it reads first (LoadedFiles), in the words of the
  // failed outcome. Nothing is then written or asked.
  std::string shadowed;
  std::string fingerprint;
  // The declared drop-ins, and the recorded ones no longer declared.
  std::map<std::string, DropInSeen> drop_ins;
};

// A path the record says the host wrote, for a resource no longer declared:
// what is there now, so that prune deletes only what is still the host's.
struct DroppedSeen {
  std::string error;     // could not be looked at: left
  bool missing = false;  // already gone
  core::FileType type = core::FileType::kMissing;
  std::string fingerprint;  // as found: a file's stat fingerprint, a tree's
  size_t entries = 0;       // a declared directory's: what is inside
};

// What observe.h saw of the machine, by resource index.
struct Seen {
  std::vector<FilesSeen> files;  // resources with files
  // Resources with a unit, each of them, keyed by index: a few among
  // thousands of files, so not a slot per resource.
  std::map<size_t, UnitFileSeen> unit_files;
  // Resources with a unit, read before anything was written (none when
  // there is no service manager).
  std::map<size_t, core::Result<core::UnitStatus>> units;

  // Resource i's unit file as seen (an empty one for a resource without).
  const UnitFileSeen& UnitFileOf(size_t i) const;
  // Resource i's unit as systemd reported it; null when it was not read.
  const core::Result<core::UnitStatus>* UnitOf(size_t i) const;
  // The units of recorded resources no longer declared, by unit name.
  std::map<std::string, core::Result<core::UnitStatus>> dropped_units;
  // Their written paths (under --root) and unit files (by unit name).
  std::map<std::string, DroppedSeen> dropped_paths;
  std::map<std::string, DroppedSeen> dropped_unit_files;
  // Those units systemd loads from a file of their name in a directory it
  // reads before --unit-dir (an operator's, added since), or reads as an
  // alias of another unit: what it runs instead, in words, by unit.
  std::map<std::string, std::string> dropped_shadowed_by;
};

// Bundles read this apply, unpacked and checked, by resource id; two
// resources naming one artifact share one copy.
using BundlesById = std::map<std::string, std::shared_ptr<const std::vector<core::TreeEntry>>>;

// What one declared resource's writes make of it.
struct Step {
  core::Outcome outcome = core::Outcome::kUnchanged;  // created, updated, unchanged, failed
  std::string detail;
  bool write_files = false;  // a file to write or a tree to unpack
  bool write_unit_file = false;
  // The unit file is the host's, as recorded for this very declaration,
  // changed on the machine since: the write puts it back (drift).
  bool unit_file_put_back = false;
  // Drop-ins to write, and recorded ones no longer declared to delete.
  std::vector<std::string> write_drop_ins;
  std::vector<std::string> delete_drop_ins;
  // Its last drop-in deleted: UNIT.d/ too, when no resource declares it
  // (best effort: someone's file in it keeps it).
  bool delete_drop_in_dir = false;
  bool want_changed = false;  // the record held another want (a service's state)
  // A declared file inside --unit-dir (a unit file, a drop-in): writing it
  // changes what systemd must load, as a unit_text does. `defines` is the
  // unit it belongs to ("foo.service" for foo.service or
  // foo.service.d/x.conf), empty when it is no one unit's.
  bool unit_definition = false;
  std::string defines;
  // What the record holds once the writes are done (their fingerprints are
  // the write phase's; none when the resource failed), and what it held
  // before, in the loaded record (kept when the resource fails: writes are
  // atomic, so the old entry still describes the disk).
  // Boxed: Settle moves it into the new record and frees the box, so a
  // large apply's steps do not each keep an emptied entry's 340 bytes.
  core::Boxed<core::RecordEntry> entry;
  const core::RecordEntry* old = nullptr;
  // Nothing to write and nothing new to record: `entry` is empty and the
  // record's own entry (`old`) stands for it. A full pass of a large
  // declaration would otherwise make and free a copy of every entry.
  bool keeps_old = false;

  bool failed() const { return outcome == core::Outcome::kFailed; }
  bool changes_drop_ins() const { return !write_drop_ins.empty() || !delete_drop_ins.empty(); }
  bool changes() const { return write_files || write_unit_file || changes_drop_ins(); }
  // Found already as a changed declaration says: nothing is written, but
  // what runs on it read the content before (a restart_on's unit restarts).
  bool adopted_change = false;
  // What a unit that runs on it is asked for: a change written or found.
  bool changed_for_units() const { return changes() || adopted_change; }
  // A service's or process's own unit file and drop-ins ("unit file
  // x.service", "drop-in x.service.d/y.conf") the host wrote before, found
  // changed since and as a changed declaration says: nothing is written,
  // but the unit's run may predate them (plan_units.cc): what each is, and
  // when it last changed (its ctime; INT64_MAX when not known).
  struct AdoptedPart {
    std::string what;
    int64_t changed_ns = 0;
  };
  std::vector<AdoptedPart> adopted_definitions;
};

// What one declared unit is asked for.
struct UnitPlan {
  size_t index = 0;         // the resource
  core::UnitStatus status;  // as read before anything was written
  // systemd read its name as another unit's alias before the host's file
  // was read (AliasOfName kUnjudged): `status` is then a new unit's, and
  // Act reads it again after the reload, asked anything or not.
  bool alias_unjudged = false;
  // Declared running and as declared against the record (core::UpAsRecorded).
  bool up = false;
  std::optional<core::UnitAction> action;
  bool stop = false;      // declared stopped and running: stopped, never waited on
  bool stopping = false;  // declared stopped and still deactivating: not stopped yet
  // A start asked of a unit not running that stands for what this apply
  // changed (its files, its definition, a restart_on): found running when
  // the host asks (someone else started it since it was looked at), it is
  // restarted instead, as a start would leave it on what it started with.
  bool start_loads_changes = false;
  // Declared running, last seen by the host on its way up and found failed
  // now: that start failed (the words), whatever the start asked now does.
  std::string start_failed;
  bool daemon_reload = false;                 // its definition must be loaded first
  std::optional<core::RestartReason> reason;  // the metric's; set with `action`
  std::string why;                            // the words: "restart_on app.conf changed"
  // Said after `why` in this apply's outcome, never owed (its figures are
  // this apply's): systemd restarted the unit since the record.
  std::string also_seen;
  // Set when the action is one an earlier apply owed (the words say so).
  std::optional<uint64_t> owed_since;
  // The resources whose writes in this apply ask for the action (empty when
  // it is owed from before, or not caused by a write): the outcome then
  // speaks of this apply's change rather than of the debt.
  std::vector<size_t> causes;
  // Could not be planned (no service manager, unit unreadable): the detail.
  std::string failed;
  // `enabled` declared and systemd's UnitFileState not as declared: what
  // to make it (links through systemd, before the daemon-reload).
  std::optional<bool> set_enabled;
  // It was as declared at the last apply: someone changed it since.
  bool enabled_drifted = false;
  // `enabled: true` for a unit that has no [Install] links to make.
  std::string enable_impossible;
};

// A recorded resource that is no longer declared.
// How long other stops wait for the stops of the triggers (timer, socket,
// path units) stopped before them (stop_order.h): systemd stops such a
// unit at once.
inline constexpr std::chrono::seconds kTriggerStopBound{5};

// The words of a removal kept while the resource that left it fails
// (Removal::left_by).
std::string KeptForItsSuccessor(std::string_view id);

struct Removal {
  std::string id;
  core::RecordEntry entry;
  // Set: nothing of this removal is done in this apply, for this reason
  // (its unit, the host's to stop, could not be read): it fails and stays
  // recorded, and the next apply removes it.
  std::string not_now;
  // Set: a dropped process whose unit still runs or stops. SPEC 8: its
  // tree (and its unit file and drop-ins) go once the unit no longer runs;
  // until then this apply does only the stop (when the unit is the host's)
  // and the removal stays recorded. These are the words for what waits.
  std::string until_stopped;
  bool stop = false;  // its unit is the host's and runs
  // Its unit starts others (Triggers=: a timer, socket or path unit): its
  // stop is done before the other removals' stops, or it starts again a
  // service they stop.
  bool stops_a_trigger = false;
  // Its unit is the host's: once dropped, systemd is told to forget its
  // failure (a failed unit stays listed, with no file, until a reboot).
  bool forget_failure = false;
  // Its unit has no unit_text: the operator's, forgotten (never stopped) —
  // unless this apply deletes the `file` that defines it.
  bool unit_without_text = false;
  // What a declared resource left (OldEntries::left_behind): not in the
  // record, so recorded by this removal while it is pending or failed.
  bool left_behind = false;
  // Its unit file was gone already (deleted by an apply cut short): the
  // removal deletes nothing of it, and still has systemd reload.
  bool unit_file_gone = false;
  // The declared resource that left it (ID~UNIT, ID~PATH): while that one
  // fails, in the plan or at its write, nothing of this removal is done,
  // and the old copy stays until the new one is in place.
  std::optional<size_t> left_by;
  std::vector<std::string> delete_paths;
  // What is left, each with why: a path there before the host, or declared
  // by another resource now; one no longer as the host wrote it
  // ("/srv/db: now a directory"); a unit and its unit file not the host's.
  std::vector<std::string> left;
  // Paths inside a declared bundle's path, in words ("/opt/app/conf,
  // replaced by app's bundle"): its swap replaced them, nothing else
  // deletes them.
  std::vector<std::string> taken_over;
  // The bundle (by resource index) that takes them over: while its write
  // fails, they stay recorded as the host's.
  std::optional<size_t> taken_by;
  bool delete_unit_file = false;
  // Its [Install] links, undone through systemd before its unit file goes:
  // links to a deleted file would dangle.
  bool disable = false;
  bool deletes_unit_definition = false;      // a deleted path lies inside --unit-dir
  std::vector<std::string> delete_drop_ins;  // "UNIT.d/NAME", still as the host wrote them
  // UNIT.d/ itself once those are gone, when nothing else is in it.
  bool delete_drop_in_dir = false;
  // Declared directories, removed only when empty: after every removal's
  // paths, deepest first, so one emptied by this apply goes too.
  std::vector<std::string> delete_empty_dirs;
  // While planning: directories that held `entries` when looked at.
  std::vector<std::pair<std::string, size_t>> held_dirs;

  // It deletes something on disk (a path, its unit file, drop-ins, an
  // emptied directory).
  bool DeletesFiles() const {
    return delete_unit_file || !delete_paths.empty() || !delete_drop_ins.empty() ||
           !delete_empty_dirs.empty();
  }
};

struct Plan {
  std::vector<Step> steps;      // by resource index
  std::vector<UnitPlan> units;  // declared units, in declaration order
  std::vector<Removal> removals;
  // What is owed once the apply is under way: saved before its first write
  // or unit action.
  core::Intent intent;

  // Whether the apply changes the machine at all (writes, deletes, asks
  // systemd for anything): only then is the intent saved first.
  bool ChangesMachine() const;
  // The units the apply asks systemd to change (a start, restart, reload or
  // stop; a removal's stop), a unit possibly twice: what the live watch
  // leaves to the apply's own looks while it runs (Progress::Handle).
  std::vector<std::string> UnitsActedOn(const core::Declaration& declaration) const;
};

// Where the host itself lives on this machine, as absolute paths: what a
// declared path must not overlap. Empty members are not checked. And who
// it writes as, which owns the bundles it unpacks (unknown: not checked).
struct HostDirs {
  std::string root = "/";  // --root: declared paths are under it
  std::string units;       // --unit-dir: unit_text lands here
  std::string state;       // --state-dir: the record
  std::string artifacts;   // --artifacts: bundles' sources
  std::optional<core::HostIds> writer;
  std::string declaration;  // --declaration, absolute: never written over
  std::string verify_key;   // --verify-key, absolute; empty: none
  // The same places with every symlink on the way resolved (the wiring's
  // adapters::ResolvedPath), for the overlap check alone: a declared path
  // is written with none followed, at the resolved root plus the path.
  // Empty members: not known, the above stand alone. The declaration as
  // the host's start resolved it: an apply compares where its source opened
  // it (ports::DeclarationSource::OpenedAt) when that is elsewhere.
  struct Resolved {
    std::string root, units, state, artifacts, declaration;
    // Each symlink on the way to the declaration, where it lies
    // (ports::DeclarationSource::LinksOnTheWay): none may be written over.
    std::vector<std::string> declaration_links;
    std::string verify_key;
    std::vector<std::string> verify_key_links;  // as declaration_links
  } resolved;
};

// A path in normal form, as the kernel resolves it when no symlink is on
// the way: "/var//lib/./x/" is "/var/lib/x", and ".." goes up (never above
// "/"). Empty stays empty. Compared as written, "/var//lib/mesh-host" let a
// declared file land on the record.
std::string NormalDirectory(std::string_view path);

// The record seen from the declaration, matched once per apply: every phase
// asks for a resource's entry, and prune for what is no longer declared.
struct OldEntries {
  // Moved, never copied: `dropped` points into left_behind, whose elements
  // stay put when the deque moves but not in a copy.
  OldEntries() = default;
  OldEntries(OldEntries&&) = default;
  OldEntries& operator=(OldEntries&&) = default;
  OldEntries(const OldEntries&) = delete;
  OldEntries& operator=(const OldEntries&) = delete;

  // By resource index: the record's entry when it is of the same kind (none:
  // a new resource, or one whose kind changed).
  std::vector<const core::RecordEntry*> by_index;
  // By resource index: the record's entry of that id, whatever its kind
  // (what the record holds of it now, which Settle compares with).
  std::vector<const core::RecordEntry*> recorded;
  // The record's entries whose ids are no longer declared, in id order;
  // then what declared resources left (left_behind).
  std::vector<const std::pair<const std::string, core::RecordEntry>*> dropped;
  // What a declared resource left, each dropped as a resource of its own
  // would be, under an id never declared, which the record holds only while
  // its removal is pending:
  // - its recorded unit when that is not its unit now (renamed, or the
  //   resource no longer a unit), as ID~UNIT, with the paths it no longer
  //   declares (a process renamed and moved: its old tree waits for its
  //   old unit's stop);
  // - else the paths it wrote and no longer declares (its path moved), as
  //   ID~PATH, the first of them; a process's keeps its unit's name, so
  //   that its old tree waits for the restart onto the new one.
  // Then the units an apply cut short created (recovery.h).
  std::deque<std::pair<const std::string, core::RecordEntry>> left_behind;

  const core::RecordEntry* operator[](size_t i) const { return by_index[i]; }
  bool LeftBehind(const std::pair<const std::string, core::RecordEntry>* dropped_entry) const;
};

// The id what resource `id` left (a unit's name, a path) is removed under.
std::string LeftBehindId(std::string_view id, std::string_view unit);

struct PlanInputs {
  const core::Declaration* declaration = nullptr;
  const core::Record* record = nullptr;
  const OldEntries* olds = nullptr;    // the record's entries, by resource index
  const core::Intent* owed = nullptr;  // what earlier applies left owed
  const Seen* seen = nullptr;
  const std::vector<std::string>* wants = nullptr;  // by resource index
  std::string now;                                  // applied_at of what this apply writes
  bool dry_run = false;
  bool services = true;  // a service manager is there
  // Where --unit-dir lies under --root: a declared file there is a unit
  // definition (null: none is).
  const HostDirs* dirs = nullptr;
};

// The refusals that need only the record and the host's own places:
// another machine's declaration, an older generation than the one applied,
// a declared path over the host's state or artifacts, over the unit
// directory (a tree), or on a unit file a unit_text writes (a file): two
// writers of one file fight forever, and a tree unpacked over the state
// directory destroys the record. Paths are compared in normal form
// ("/var//lib/./x/" is "/var/lib/x"; symlinks in the flags are not
// resolved).
void CheckDeclaration(const core::Declaration& declaration, const core::Record& record,
                      bool had_record, std::string_view machine, const HostDirs& dirs,
                      core::Problems& problems);

// Whether a unit's unit_text or a declared drop-in says what enabling it
// makes ([Install] WantedBy=, RequiredBy=, UpheldBy=, Alias=): without,
// systemd has nothing to enable.
bool DeclaresInstall(const core::Resource& r);

// What validate says of each resource declared `enabled: true` whose
// unit_text declares nothing to enable: apply fails it, unless systemd has
// the unit enabled already (a link made by hand), which validate cannot
// see.
std::vector<std::string> NothingToEnable(const core::Declaration& declaration);

// `unit` as systemd reads it when its name is an alias of another unit
// (status.id): a link of that name to the other unit's file, read before
// the host's file (or in its directory), or a name the other unit claimed
// while loaded. systemd asks and answers that unit for it, so what the host
// writes never runs. The words of a failed outcome; nullopt when the name
// is the unit's own (or systemd did not say).
std::optional<std::string> AliasWords(std::string_view unit, const core::UnitStatus& status,
                                      bool after_reload);

// Whether systemd's answer for resource `i`'s unit is another unit's (its
// name an alias, AliasWords), as far as this apply can judge: kJudged once
// the host's unit file is in place and systemd has read it since (no view
// it says is stale, no daemon-reload owed): the alias wins, and the
// resource fails `shadowed`; kUnjudged before that: the host's file, once
// read, may be what a later directory's alias link gives way to. Then
// nothing the other unit's state would ask is asked of the name (no stop,
// no enablement) until the apply's own daemon-reload shows which unit it is.
enum class AliasView { kNone, kJudged, kUnjudged };
AliasView AliasOfName(const PlanInputs& in, size_t i);

// Where --unit-dir lies as a declared path ("/etc/systemd/system" with the
// defaults); none when it is not under --root.
std::optional<std::string_view> UnitDirInRoot(const HostDirs& dirs);

// Whether `path` (declared, under dirs.root) lies inside dirs.units; then
// the unit it defines ("" when none: a .wants link, say).
std::optional<std::string> UnitDefinitionAt(const HostDirs& dirs, std::string_view path);

// Whether systemd reads the declared file at `path`, which defines
// `defines` (UnitDefinitionAt), as part of `unit`'s definition
// (core::PartOfDefinition): but for a template's own file when the
// instance is loaded from a unit file of its own (`own_file`), which reads
// only the template's drop-ins.
bool ReadAsDefinitionOf(std::string_view defines, std::string_view path, std::string_view unit,
                        bool own_file);

// Every resource's want digest, credentials' keyed with `credential_key`.
// When the declaration is byte for byte the one the record was settled
// from, the recorded digests are the wants and nothing is re-hashed.
std::vector<std::string> Wants(const core::Declaration& declaration, const core::Record& record,
                               const OldEntries& olds, bool had_record,
                               std::string_view credential_key);

// The record's entry of every declared resource, by index, when it is of
// the same kind (else none: a resource whose kind changed starts afresh).
// Looked up once per apply: every phase asks for it.
OldEntries OldEntriesOf(const core::Declaration& declaration, const core::Record& record);

// Whether the record's entry describes `r` at `want` (its path and digest).
bool RecordedAt(const core::Resource& r, const core::RecordEntry* old, const std::string& want);

Plan MakePlan(const PlanInputs& in);

}  // namespace mesh::reconcile
