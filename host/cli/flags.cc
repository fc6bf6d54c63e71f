#include "host/cli/flags.h"

#include <map>

#include "host/core/time_format.h"

namespace mesh::cli {

std::string UsageText() {
  return R"(usage: mesh-host VERB [flags]

Makes this machine match its declaration, records what it wrote, and reports
the truth about the result. A unit it starts or restarts is looked at twice
(ADR 184): once when systemd's job is done, again after --settle.

verbs:
  run      the daemon: reconcile now, every --interval, when the declaration
           file changes, and on SIGHUP; serves /status, /healthz, /metrics
  apply    one reconcile; prints one line per resource: OUTCOME ID (KIND): DETAIL
           exit 0 all good, 1 a resource failed, 2 declaration refused or bad usage
  plan     what apply would do; writes nothing, restarts nothing; same exit codes
  status   reads /status of a running host and prints a table
           exit 0 healthy, 1 not healthy, 2 unreachable

flags:
  --declaration FILE   the declaration (default /etc/mesh-host/declaration.json)
  --state-dir DIR      where the record state.json lives (default /var/lib/mesh-host)
  --root DIR           every declared path is resolved under DIR and may not
                       leave it (default /)
  --artifacts DIR      where bundles named by `source` are found
                       (default /var/lib/mesh-host/artifacts)
  --unit-dir DIR       where unit_text is written (default /etc/systemd/system)
  --listen HOST:PORT   HTTP address for run (default 127.0.0.1:9479; port 0
                       picks a free one and the log says `listening on HOST:PORT`)
  --interval DURATION  time between reconciles in run (default 5m)
  --settle DURATION    pause between the two looks at a unit (default 1s, at least 100ms)
  --machine NAME       this machine's name, checked against the declaration
                       (default: the host name)
  --verify-key FILE    a minisign public key: every declaration must then come
                       with DECLARATION.minisig (minisign -S) by that key, or
                       it is refused whole
  --web-config FILE    run: TLS, basic auth and response headers, in the
                       exporter-toolkit web-config.yml format node_exporter
                       reads (re-read on SIGHUP); default plain HTTP
  --ca FILE, --cert FILE, --key FILE, --user NAME, --password-file FILE
                       status: reach a host behind its web config (the
                       password may come from MESH_HOST_PASSWORD instead)
  --url URL            status: the host to ask (default http://127.0.0.1:9479);
                       given more than once, one line per machine
  --targets FILE       status: the hosts of a Prometheus file_sd JSON file,
                       one line per machine; exit 0 only when all are healthy
  --prometheus URL     status: the fleet as that Prometheus (or any store with
                       its HTTP API) sees it: hosts down, refusing, failing,
                       dead or flapping units; one line per instance
  --timeout DURATION   status: every answer whole by then, or its host is
                       unreachable, saying so (default 10s); an answer over
                       16 MiB is cut off
  --output text|json   apply, plan: the outcome lines (default), or one JSON
                       object per outcome, then a {"summary": ...} object
  --diff               plan: after the outcome lines, what each change does: a
                       unified diff per file (a credential: its digests only),
                       a bundle's members added, removed and changed
  --metrics-resources all|failing
                       run: per-resource change counters for every resource
                       that changed (default all), or only for failed and
                       churning ones (fleets of large declarations)
  -v, --verbose        run: log every outcome, unchanged ones too (default:
                       changes, failures and one summary line per apply)
  --help               this text
  --version            the release and, for a packaged build, the commit

Durations read as 250ms, 1s, 5m, 1h. The service manager is the system bus
(DBUS_SYSTEM_BUS_ADDRESS is honoured).
)";
}

namespace {

// Where each flag that takes a value lands in `flags`.
struct ValueFlags {
  std::map<std::string, std::string*> strings;
  std::map<std::string, std::chrono::nanoseconds*> durations;
};

ValueFlags ValueFlagsOf(Flags& flags) {
  return {{{"--declaration", &flags.declaration},
           {"--state-dir", &flags.state_dir},
           {"--root", &flags.root},
           {"--artifacts", &flags.artifacts},
           {"--unit-dir", &flags.unit_dir},
           {"--listen", &flags.listen},
           {"--machine", &flags.machine},
           {"--url", &flags.url},
           {"--output", &flags.output},
           {"--verify-key", &flags.verify_key},
           {"--metrics-resources", &flags.metrics_resources},
           {"--targets", &flags.targets},
           {"--prometheus", &flags.prometheus},
           {"--web-config", &flags.web_config},
           {"--ca", &flags.ca},
           {"--cert", &flags.cert},
           {"--key", &flags.key},
           {"--user", &flags.user},
           {"--password-file", &flags.password_file}},
          {{"--interval", &flags.interval},
           {"--settle", &flags.settle},
           {"--timeout", &flags.status_timeout}}};
}

// One flag's value, checked as it is read.
core::Status SetValue(ValueFlags& into, Flags& flags, const std::string& name,
                      const std::string& value) {
  if (auto s = into.strings.find(name); s != into.strings.end()) {
    if (value.empty()) return core::Fail("flag " + name + " needs a non-empty value");
    *s->second = value;
    if (name == "--url") flags.urls.push_back(value);
    return core::Ok();
  }
  auto d = core::ParseDuration(value);
  if (!d) return core::Fail("flag " + name + ": " + d.error().message);
  if (d->count() <= 0 && (name == "--interval" || name == "--timeout"))
    return core::Fail("flag " + name + " must be positive");
  // Shorter, the second look is the first look again: ADR 184 off.
  if (name == "--settle" && *d < kMinSettle) {
    return core::Fail("flag --settle: " + value +
                      " is below 100ms, too short for the second look to see a daemon "
                      "that refuses its configuration");
  }
  *into.durations.at(name) = *d;
  return core::Ok();
}

// What holds only of the flags together, once all are read.
core::Status CheckTogether(const Flags& flags) {
  if (flags.output != "text" && flags.output != "json") {
    return core::Fail("flag --output: \"" + flags.output + "\" is not text or json");
  }
  if (flags.metrics_resources != "all" && flags.metrics_resources != "failing") {
    return core::Fail("flag --metrics-resources: \"" + flags.metrics_resources +
                      "\" is not all or failing");
  }
  if (flags.cert.empty() != flags.key.empty()) {
    return core::Fail("flags --cert and --key go together (a client certificate and its key)");
  }
  if (!flags.prometheus.empty() && (!flags.targets.empty() || !flags.urls.empty())) {
    return core::Fail(
        "flag --prometheus asks Prometheus for the fleet: not with --url or --targets");
  }
  if (flags.diff && flags.verb != Verb::kPlan) {
    return core::Fail("flag --diff is for plan (mesh-host plan --diff)");
  }
  for (const auto& [dir, v] : {std::pair{"--root", &flags.root},
                               {"--state-dir", &flags.state_dir},
                               {"--artifacts", &flags.artifacts},
                               {"--unit-dir", &flags.unit_dir}}) {
    if (v->empty() || (*v)[0] != '/') {
      return core::Fail("flag " + std::string(dir) + ": \"" + *v + "\" is not an absolute path");
    }
  }
  return core::Ok();
}

}  // namespace

core::Result<Flags> ParseFlags(const std::vector<std::string>& args) {
  Flags flags;
  if (args.empty()) return core::Fail("no verb given (run, apply, plan or status)");
  static const std::map<std::string, Verb> kVerbs = {
      {"run", Verb::kRun},       {"apply", Verb::kApply},       {"plan", Verb::kPlan},
      {"status", Verb::kStatus}, {"help", Verb::kHelp},         {"--help", Verb::kHelp},
      {"-h", Verb::kHelp},       {"--version", Verb::kVersion}, {"version", Verb::kVersion}};
  auto verb = kVerbs.find(args[0]);
  if (verb == kVerbs.end()) {
    return core::Fail("unknown verb \"" + args[0] + "\" (expected run, apply, plan or status)");
  }
  flags.verb = verb->second;
  ValueFlags values = ValueFlagsOf(flags);
  for (size_t i = 1; i < args.size(); ++i) {
    std::string name = args[i];
    if (name == "--help" || name == "-h") {
      flags.verb = Verb::kHelp;
      return flags;
    }
    if (name == "--verbose" || name == "-v" || name == "--diff") {
      (name == "--diff" ? flags.diff : flags.verbose) = true;
      continue;
    }
    std::string value;
    bool inline_value = false;
    if (size_t eq = name.find('='); name.starts_with("--") && eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      inline_value = true;
    }
    if (!values.strings.contains(name) && !values.durations.contains(name)) {
      return core::Fail("unknown flag \"" + name + "\"");
    }
    if (!inline_value) {
      if (i + 1 >= args.size()) return core::Fail("flag " + name + " needs a value");
      value = args[++i];
    }
    if (auto st = SetValue(values, flags, name, value); !st) return std::unexpected(st.error());
  }
  if (auto st = CheckTogether(flags); !st) return std::unexpected(st.error());
  return flags;
}

}  // namespace mesh::cli
