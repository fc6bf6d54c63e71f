// mesh-host-serve: `mesh-host run` and `mesh-host status`, which mesh-host
// becomes for them (host/wiring.h), with the HTTP side, TLS and the metrics
// linked in; the other verbs too, as mesh-host runs them.
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <iostream>
#include <memory>
#include <string>

#include "host/adapters/daemon_heap.h"
#include "host/adapters/file_declaration.h"
#include "host/adapters/linux_event_source.h"
#include "host/adapters/process_guard.h"
#include "host/adapters/sd_notifier.h"
#include "host/adapters/sdbus_service_manager.h"
#include "host/cli/apply_command.h"
#include "host/cli/flags.h"
#include "host/cli/status_command.h"
#include "host/daemon/daemon.h"
#include "host/daemon/log.h"
#include "host/status/status_board.h"
#include "host/version/version.h"
#include "host/wiring.h"
#include "http/server.h"
#include "metrics/host_metrics.h"

namespace {

using namespace mesh;  // NOLINT: the one namespace of this program

// TLS and basic auth of the listener, when --web-config names a file.
core::Status ConfigureWeb(const cli::Flags& flags, http::StatusServer& server, daemon::Log& log) {
  if (flags.web_config.empty()) return core::Ok();
  auto web = http::LoadWebConfig(flags.web_config);
  if (!web) return std::unexpected(web.error());
  for (const std::string& w : web->warnings) log.Line(daemon::Priority::kWarning, w);
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
  options.release_memory = adapters::ReleaseFreedHeap;
  if (!flags.web_config.empty()) {
    // A file that no longer reads keeps the one in force: never a listener
    // dropped to plain HTTP or left open by a typo.
    options.on_sighup = [&server, &log, path = flags.web_config] {
      auto web = http::LoadWebConfig(path);
      auto st = web ? server.Reload(*web) : core::Status(std::unexpected(web.error()));
      // The file's own errors name it; the server's refusals, of what it
      // asks, are named as coming from it too.
      if (web && !st) st = core::Fail("--web-config " + path + ": " + st.error().message);
      if (st) {
        for (const std::string& w : web->warnings) log.Line(daemon::Priority::kWarning, w);
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
  status::StatusBoard board(flags.settle);
  metrics::HostMetrics metrics(std::string(mesh::Release()), flags.metrics_resources == "failing"
                                                                 ? metrics::ResourceSeries::kFailing
                                                                 : metrics::ResourceSeries::kAll);
  http::StatusServer server(
      board, [&metrics] { return metrics.Serialize(); }, adapters::ReleaseFreedHeap);
  server.set_version(mesh::VersionLine());
  // Before the state directory is made or locked: a refused web config
  // leaves the machine as it was.
  if (auto st = ConfigureWeb(flags, server, log); !st) {
    log.Line(daemon::Priority::kErr, st.error().message);
    return cli::kExitRefused;
  }
  auto machine = wiring::Wire(flags, /*plan=*/false, /*daemon=*/true);
  if (!machine) {
    log.Line(daemon::Priority::kErr, machine.error().message);
    return cli::kExitRefused;
  }
  metrics.SetClock(&(*machine)->clock);
  metrics.SetReconcileInterval(flags.interval);
  metrics.SetStartTime((*machine)->clock.Now());
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
  // Before the first answer: a scrape never finds the units' series absent
  // while the host restarts.
  d.ShowRecorded();
  // A daemon nobody can ask is not left running blind: it stops as on
  // SIGTERM (the apply under way finishes), exits 1, and the service
  // manager starts it again (Restart=on-failure), listening anew.
  std::atomic<bool> listener_lost{false};
  server.set_on_lost([&log, &listener_lost](const std::string& why) {
    log.Line(daemon::Priority::kErr, why + "; stopping, to be started again (exit 1)");
    listener_lost = true;
    ::kill(::getpid(), SIGTERM);
  });
  auto bound = server.Start(*listen);
  if (!bound) {
    // SPEC: an address already in use is an error at start, as a bad flag.
    log.Line(daemon::Priority::kErr, bound.error().message);
    return cli::kExitRefused;
  }
  log.Line(daemon::Priority::kNotice, "listening on " + *bound + " (" + server.scheme() + ")");
  int code = d.Run();
  server.Stop();
  return listener_lost && code == cli::kExitOk ? cli::kExitFailed : code;
}

}  // namespace

int main(int argc, char** argv) {
  // What ps, top and pgrep -x show, as before mesh-host became this binary
  // for `run` and `status`.
  ::prctl(PR_SET_NAME, "mesh-host");
  // A peer that closed a connection this process writes to is that
  // connection's error (EPIPE), never the death of `run` or `status`:
  // OpenSSL writes TLS records with write(2), without MSG_NOSIGNAL. Nothing
  // this binary runs is spawned, so no child inherits the disposition.
  ::signal(SIGPIPE, SIG_IGN);
  if (std::string skew = mesh::wiring::CheckFrontVersion(); !skew.empty()) {
    std::cerr << "mesh-host: " << skew << "\n";
    return mesh::cli::kExitFailed;
  }
  auto flags = mesh::wiring::ParseArgs(argc, argv);
  if (flags == nullptr) return mesh::cli::kExitRefused;
  mesh::wiring::SayIgnored(*flags);
  if (mesh::wiring::IsOneShot(flags->verb)) return mesh::wiring::RunOneShot(*flags);
  if (flags->verb == mesh::cli::Verb::kRun) return Run(*flags);
  mesh::cli::ClientOptions client;
  client.ca = flags->ca;
  client.cert = flags->cert;
  client.key = flags->key;
  client.user = flags->user;
  return mesh::cli::RunStatusVerb(flags->urls, flags->target_files, flags->url, std::cout,
                                  std::cerr, client, flags->password_file, flags->status_timeout,
                                  flags->prometheus);
}
