// What both of mesh-host's binaries are made of: one reconciler wired onto
// this machine (its file systems, record store, archive reader, service
// manager and clock), and the verbs that need nothing else.
//
// `mesh-host` runs those verbs (--help, --version, apply, plan) itself and
// loads neither the HTTP side, TLS nor the metrics; for `run` and `status`
// it becomes `mesh-host-serve` (exec), which links everything. Only the
// two mains name concrete adapters beyond this file.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "host/adapters/file_record_store.h"
#include "host/adapters/libarchive_reader.h"
#include "host/adapters/posix_file_system.h"
#include "host/adapters/sd_journal.h"
#include "host/adapters/sdbus_service_manager.h"
#include "host/adapters/system_clock.h"
#include "host/adapters/thread_background.h"
#include "host/cli/flags.h"
#include "host/core/result.h"
#include "host/reconcile/reconciler.h"

namespace mesh::wiring {

// Everything one reconciler needs, owned together.
struct Machine {
  std::unique_ptr<adapters::PosixFileSystem> root, artifacts, units;
  std::unique_ptr<adapters::FileRecordStore> records;
  adapters::LibarchiveReader archives;
  adapters::SdbusServiceManager services;
  std::unique_ptr<adapters::SdJournal> journal;
  adapters::SystemClock clock;
  adapters::ThreadBackground background;
  std::unique_ptr<reconcile::Reconciler> reconciler;
  // The directories Wire's own mkdir made (the unit and state directories
  // and their missing parents), in the order made: a refused apply removes
  // them again.
  std::vector<std::string> made;
};

// Leaves the machine as it was before Wire: what a refusal left in a state
// directory Wire made (its lock, a digest key no record uses), then each
// directory Wire made that is still empty, the last made first.
void RemoveWhatWireMade(Machine& m);

// The wired machine, or an error message for exit 2. `daemon`: the record
// is kept in memory between applies (a one-shot apply streams it instead).
core::Result<std::unique_ptr<Machine>> Wire(const cli::Flags& flags, bool plan, bool daemon);

// Set by mesh-host to its VersionLine() when it becomes mesh-host-serve,
// which refuses to run another version's flags (one binary upgraded and
// not yet the other, a copy paired with another build).
inline constexpr char kFrontVersion[] = "MESH_HOST_FRONT_VERSION";
// In mesh-host-serve: an error message when mesh-host was another build;
// the variable is cleared either way.
std::string CheckFrontVersion();

// The flags of argv, or none after saying why on stderr (exit 2).
std::unique_ptr<cli::Flags> ParseArgs(int argc, char** argv);

// The flags given that the verb does not use, said on stderr: by the binary
// that runs the verb, so once (mesh-host hands run and status, arguments
// and all, to mesh-host-serve, which parses them again).
void SayIgnored(const cli::Flags& flags);

// --help, --version, apply and plan: the verbs that serve nothing.
bool IsOneShot(cli::Verb verb);
// Runs one of them; returns the process's exit code.
int RunOneShot(const cli::Flags& flags);

}  // namespace mesh::wiring
