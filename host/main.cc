// mesh-host's entry point: parses flags and wires adapters into the core.
// Nothing else names a concrete adapter.
#include <unistd.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "host/adapters/daemon_heap.h"
#include "host/adapters/file_declaration.h"
#include "host/adapters/file_record_store.h"
#include "host/adapters/libarchive_reader.h"
#include "host/adapters/linux_event_source.h"
#include "host/adapters/one_shot_heap.h"
#include "host/adapters/posix_file_system.h"
#include "host/adapters/process_guard.h"
#include "host/adapters/sd_notifier.h"
#include "host/adapters/sdbus_service_manager.h"
#include "host/adapters/system_clock.h"
#include "host/cli/apply_command.h"
#include "host/cli/flags.h"
#include "host/cli/status_command.h"
#include "host/daemon/daemon.h"
#include "host/daemon/log.h"
#include "host/reconcile/reconciler.h"
#include "host/status/status_board.h"
#include "host/version/version.h"
#include "http/server.h"
#include "metrics/host_metrics.h"

namespace {

using namespace mesh;

std::string HostName() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

// Everything one reconciler needs, owned together.
struct Machine {
  std::unique_ptr<adapters::PosixFileSystem> root, artifacts, units;
  std::unique_ptr<adapters::FileRecordStore> records;
  adapters::LibarchiveReader archives;
  adapters::SdbusServiceManager services;
  adapters::SystemClock clock;
  std::unique_ptr<reconcile::Reconciler> reconciler;
};

// Returns an error message for exit 2, or the wired machine.
// `daemon`: the record is kept in memory between applies (a one-shot apply
// streams it instead).
core::Result<std::unique_ptr<Machine>> Wire(const cli::Flags& flags, bool plan, bool daemon) {
  auto m = std::make_unique<Machine>();
  auto root = adapters::PosixFileSystem::Open(flags.root);
  if (!root) return core::Fail("--root: " + root.error().message);
  m->root = std::move(*root);
  m->artifacts = adapters::PosixFileSystem::OpenOrDeferError(flags.artifacts);
  if (!plan) {
    auto units = adapters::PosixFileSystem::Open(flags.unit_dir, /*create=*/true);
    if (units) m->units = std::move(*units);
  }
  if (!m->units) m->units = adapters::PosixFileSystem::OpenOrDeferError(flags.unit_dir);
  auto records = adapters::FileRecordStore::Open(flags.state_dir, /*create=*/!plan, daemon);
  if (!records) return core::Fail("--state-dir: " + records.error().message);
  m->records = std::move(*records);
  if (!plan) {
    if (auto st = m->records->Lock(); !st) return core::Fail(st.error().message);
  }
  reconcile::ReconcilerPorts ports;
  ports.root = m->root.get();
  ports.artifacts = m->artifacts.get();
  ports.units = m->units.get();
  ports.archives = &m->archives;
  ports.services = &m->services;
  ports.records = m->records.get();
  ports.clock = &m->clock;
  reconcile::ReconcilerOptions options;
  options.machine = flags.machine.empty() ? HostName() : flags.machine;
  options.settle = flags.settle;
  options.dirs = {flags.root, flags.unit_dir, flags.state_dir, flags.artifacts};
  options.dry_run = plan;
  options.diff = flags.diff;
  if (!flags.verify_key.empty()) {
    auto key = adapters::ReadVerifyKey(flags.verify_key);
    if (!key) return std::unexpected(key.error());
    options.verify_key = *key;
  }
  m->reconciler = std::make_unique<reconcile::Reconciler>(ports, options);
  return m;
}

int ApplyOrPlan(const cli::Flags& flags, bool plan) {
  adapters::KeepSecretsOutOfCoreFiles();
  adapters::PrepareOneShotHeap();
  auto declaration = adapters::FileDeclaration::Open(flags.declaration);
  if (!declaration) {
    std::cerr << "mesh-host: " << declaration.error().message << "\n";
    return cli::kExitRefused;
  }
  auto machine = Wire(flags, plan, /*daemon=*/false);
  if (!machine) {
    std::cerr << "mesh-host: " << machine.error().message << "\n";
    return cli::kExitRefused;
  }
  auto format = flags.output == "json" ? cli::Output::kJson : cli::Output::kText;
  auto report = (*machine)->reconciler->Apply(**declaration, cli::PrintOutcomes(std::cout, format));
  return cli::PrintReport(report, plan, std::cout, std::cerr, format);
}

// TLS and basic auth of the listener, when --web-config names a file.
core::Status ConfigureWeb(const cli::Flags& flags, http::StatusServer& server) {
  if (flags.web_config.empty()) return core::Ok();
  auto web = http::LoadWebConfig(flags.web_config);
  if (!web) return std::unexpected(web.error());
  if (auto st = server.Configure(*web); !st) {
    return core::Fail("--web-config " + flags.web_config + ": " + st.error().message);
  }
  return core::Ok();
}

daemon::DaemonOptions DaemonOptionsOf(const cli::Flags& flags, http::StatusServer& server,
                                      daemon::Log& log) {
  daemon::DaemonOptions options;
  options.declaration = flags.declaration;
  options.open_declaration =
      [path = flags.declaration]() -> core::Result<std::unique_ptr<ports::DeclarationSource>> {
    auto opened = adapters::FileDeclaration::Open(path);
    if (!opened) return std::unexpected(opened.error());
    return std::move(*opened);
  };
  options.interval = flags.interval;
  options.verbose = flags.verbose;
  if (!flags.web_config.empty()) {
    // A file that no longer reads keeps the one in force: never a listener
    // dropped to plain HTTP or left open by a typo.
    options.on_sighup = [&server, &log, path = flags.web_config] {
      auto web = http::LoadWebConfig(path);
      auto st = web ? server.Reload(*web) : core::Status(std::unexpected(web.error()));
      if (st) {
        log.Line(daemon::Priority::kNotice, "--web-config " + path + " re-read");
      } else {
        log.Line(daemon::Priority::kErr, st.error().message + "; the web config in force is kept");
      }
    };
  }
  return options;
}

int Run(const cli::Flags& flags) {
  adapters::BlockDaemonSignals();  // before any thread exists
  adapters::PrepareDaemonHeap();
  adapters::KeepSecretsOutOfCoreFiles();
  adapters::RaiseOpenFileLimit();
  daemon::Log log;
  auto listen = http::ParseListen(flags.listen);
  if (!listen) {
    log.Line(daemon::Priority::kErr, "--listen: " + listen.error().message);
    return cli::kExitRefused;
  }
  auto machine = Wire(flags, /*plan=*/false, /*daemon=*/true);
  if (!machine) {
    log.Line(daemon::Priority::kErr, machine.error().message);
    return cli::kExitRefused;
  }
  status::StatusBoard board(flags.settle);
  metrics::HostMetrics metrics(std::string(mesh::Release()), flags.metrics_resources == "failing"
                                                                 ? metrics::ResourceSeries::kFailing
                                                                 : metrics::ResourceSeries::kAll);
  metrics.SetReconcileInterval(flags.interval);
  metrics.SetStartTime((*machine)->clock.Now());
  http::StatusServer server(
      board, [&metrics] { return metrics.Serialize(); }, adapters::ReleaseFreedHeap);
  if (auto st = ConfigureWeb(flags, server); !st) {
    log.Line(daemon::Priority::kErr, st.error().message);
    return cli::kExitRefused;
  }
  auto bound = server.Start(*listen);
  if (!bound) {
    log.Line(daemon::Priority::kErr, bound.error().message);
    return cli::kExitFailed;
  }
  log.Line(daemon::Priority::kNotice, "listening on " + *bound + " (" + server.scheme() + ")");
  adapters::SdbusServiceManager watch;  // its own bus connection, for its own thread
  adapters::SdNotifier notifier;
  daemon::DaemonOptions options = DaemonOptionsOf(flags, server, log);
  std::string watch_warning;
  auto events = adapters::LinuxEventSource::Open(flags.declaration, &watch_warning);
  if (!events) {
    log.Line(daemon::Priority::kErr, events.error().message);
    return cli::kExitFailed;
  }
  if (!watch_warning.empty()) log.Line(daemon::Priority::kWarning, watch_warning);
  daemon::Daemon d(options, *(*machine)->reconciler, board, metrics, &watch, notifier, **events,
                   (*machine)->clock, log);
  int code = d.Run();
  server.Stop();
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  auto flags = mesh::cli::ParseFlags(args);
  if (!flags) {
    std::cerr << "mesh-host: " << flags.error().message << "\n"
              << "usage: mesh-host run|apply|plan|status [flags]; mesh-host --help lists them\n";
    return mesh::cli::kExitRefused;
  }
  switch (flags->verb) {
    case mesh::cli::Verb::kHelp:
      std::cout << mesh::cli::UsageText();
      return 0;
    case mesh::cli::Verb::kVersion:
      std::cout << "mesh-host " << mesh::VersionLine() << "\n";
      return 0;
    case mesh::cli::Verb::kApply:
      return ApplyOrPlan(*flags, /*plan=*/false);
    case mesh::cli::Verb::kPlan:
      return ApplyOrPlan(*flags, /*plan=*/true);
    case mesh::cli::Verb::kRun:
      return Run(*flags);
    case mesh::cli::Verb::kStatus:
      return mesh::cli::RunStatusVerb(flags->urls, flags->targets, flags->url, std::cout, std::cerr,
                                      {flags->ca, flags->cert, flags->key, flags->user, ""},
                                      flags->password_file);
  }
  return mesh::cli::kExitRefused;
}
