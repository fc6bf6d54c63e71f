#include "host/cli/flags.h"

#include <map>

#include "host/core/did_you_mean.h"
#include "host/core/time_format.h"

namespace mesh::cli {

namespace {

enum VerbBit : unsigned {
  kRunBit = 1,
  kApplyBit = 2,
  kPlanBit = 4,
  kValidateBit = 8,
  kStatusBit = 16,
  kAllBits = 31,
};

unsigned BitOf(Verb verb) {
  switch (verb) {
    case Verb::kRun:
      return kRunBit;
    case Verb::kApply:
      return kApplyBit;
    case Verb::kPlan:
      return kPlanBit;
    case Verb::kValidate:
      return kValidateBit;
    case Verb::kStatus:
      return kStatusBit;
    case Verb::kHelp:
    case Verb::kVersion:
      break;
  }
  return kAllBits;
}

struct Doc {
  unsigned verbs;
  const char* text;  // lines of the help, each ending in a newline
};

// The verbs, in the order of the help, with what each says of itself.
const Doc kVerbDocs[] = {
    {kRunBit,
     "  run      the daemon: reconcile now, every --interval, when the declaration\n"
     "           file changes, and on SIGHUP; serves /, /status, /healthz, /metrics\n"},
    {kApplyBit,
     "  apply    one reconcile; prints one line per resource: OUTCOME ID (KIND): DETAIL\n"
     "           exit 0 all good, 1 a resource failed, 2 declaration refused or bad usage\n"},
    {kPlanBit,
     "  plan     what apply would do; writes nothing, restarts nothing; same exit codes\n"},
    {kValidateBit,
     "  validate checks a declaration as apply would before touching anything (every\n"
     "           refusal at once, the signature, the bundles' digests and entries)\n"
     "           and its unit texts with systemd-analyze verify; touches nothing\n"
     "           exit 0 valid, 2 refused\n"},
    {kStatusBit,
     "  status   reads /status of a running host and prints a table\n"
     "           exit 0 healthy, 1 not healthy, 2 unreachable or bad usage; of\n"
     "           several hosts, 0 all healthy, 1 any not (unreachable too); with\n"
     "           --prometheus, 2 when that Prometheus cannot be asked\n"},
};

// Each flag, with the verbs it is for.
const Doc kFlagDocs[] = {
    {kRunBit | kApplyBit | kPlanBit | kValidateBit,
     "  --declaration FILE   the declaration (default /etc/mesh-host/declaration.json)\n"},
    {kRunBit | kApplyBit | kPlanBit | kValidateBit,
     "  --state-dir DIR      where the record state.json lives (default /var/lib/mesh-host)\n"},
    {kRunBit | kApplyBit | kPlanBit | kValidateBit,
     "  --root DIR           every declared path is resolved under DIR and may not\n"
     "                       leave it (default /; validate: a symlink on the way\n"
     "                       refuses only when given, else it warns)\n"},
    {kRunBit | kApplyBit | kPlanBit | kValidateBit,
     "  --artifacts DIR      where bundles named by `source` are found\n"
     "                       (default /var/lib/mesh-host/artifacts)\n"},
    {kRunBit | kApplyBit | kPlanBit | kValidateBit,
     "  --unit-dir DIR       where unit_text is written (default /etc/systemd/system)\n"},
    {kRunBit | kApplyBit,
     "  --journal-dir DIR    where a failed unit's journal lines are read (default:\n"
     "                       this machine's system journal; a container's: its\n"
     "                       /run/log/journal or /var/log/journal)\n"},
    {kRunBit,
     "  --listen HOST:PORT   HTTP address for run (default 127.0.0.1:9479; port 0\n"
     "                       picks a free one and the log says `listening on HOST:PORT`)\n"},
    {kRunBit, "  --interval DURATION  time between reconciles in run (default 5m, at least 1s)\n"},
    {kRunBit | kApplyBit,
     "  --settle DURATION    pause between the two looks at a unit (default 1s, at least 100ms)\n"},
    {kRunBit | kApplyBit | kPlanBit | kValidateBit,
     "  --machine NAME       this machine's name, checked against the declaration\n"
     "                       (default: the host name; validate: checked only when given)\n"},
    {kRunBit | kApplyBit | kPlanBit | kValidateBit,
     "  --verify-key FILE    a minisign public key: every declaration must then come\n"
     "                       with DECLARATION.minisig (minisign -S) by that key, or\n"
     "                       it is refused whole\n"},
    {kRunBit,
     "  --web-config FILE    run: TLS, basic auth and response headers, in the\n"
     "                       exporter-toolkit web-config.yml format node_exporter\n"
     "                       reads (re-read on SIGHUP); default plain HTTP\n"},
    {kStatusBit,
     "  --ca FILE, --cert FILE, --key FILE, --user NAME, --password-file FILE\n"
     "                       status: reach a host behind its web config (the\n"
     "                       password may come from MESH_HOST_PASSWORD instead)\n"},
    {kStatusBit,
     "  --url URL            status: the host to ask (default http://127.0.0.1:9479);\n"
     "                       given more than once, one line per machine\n"},
    {kStatusBit,
     "  --targets FILE       status: the hosts of a Prometheus file_sd JSON file\n"
     "                       (again for each file), one line per machine; exit 0\n"
     "                       only when all are healthy\n"},
    {kStatusBit,
     "  --prometheus URL     status: the fleet as that Prometheus (or any store with\n"
     "                       its HTTP API) sees it: hosts down, refusing, failing,\n"
     "                       dead or flapping units; one line per instance\n"},
    {kStatusBit,
     "  --timeout DURATION   status: every answer whole by then, or its host is\n"
     "                       unreachable, saying so (default 10s); an answer over\n"
     "                       16 MiB is cut off\n"},
    {kApplyBit | kPlanBit | kValidateBit,
     "  --output text|json   apply, plan: the outcome lines (default), or one JSON\n"
     "                       object per outcome, then a {\"summary\": ...} object;\n"
     "                       validate: one JSON object (valid, refusals, warnings)\n"},
    {kPlanBit,
     "  --diff               plan: after the outcome lines, what each change does: a\n"
     "                       unified diff per file (a credential: its digests only),\n"
     "                       a bundle's members added, removed and changed\n"},
    {kRunBit,
     "  --metrics-resources all|failing\n"
     "                       run: per-resource change counters for every resource\n"
     "                       that changed (default all), or only for failed and\n"
     "                       churning ones (fleets of large declarations)\n"},
    {kRunBit,
     "  --log-level info|debug\n"
     "                       run: info (default) logs changes, failures and one\n"
     "                       summary line per apply; debug every outcome, unchanged\n"
     "                       ones too\n"
     "  -v, --verbose        run: as --log-level debug\n"},
    {kAllBits, "  --help               this text\n"},
};

constexpr const char* kTail =
    "\nDurations read as 250ms, 1s, 5m, 1h. The service manager is the system bus\n"
    "(DBUS_SYSTEM_BUS_ADDRESS is honoured).\n";

}  // namespace

std::string UsageText(Verb verb) {
  unsigned bit = BitOf(verb);
  bool all = bit == kAllBits;
  std::string out;
  if (all) {
    out +=
        "usage: mesh-host VERB [flags]\n\n"
        "Makes this machine match its declaration, records what it wrote, and reports\n"
        "the truth about the result. A unit it starts or restarts is looked at twice:\n"
        "once when systemd's job is done, again after --settle.\n\nverbs:\n";
  }
  for (const Doc& d : kVerbDocs) {
    if (!(d.verbs & bit)) continue;
    if (!all) {
      std::string_view text = d.text + 2;  // "  run      ..." as "usage: mesh-host run ..."
      size_t space = text.find(' ');
      out += "usage: mesh-host " + std::string(text.substr(0, space)) + " [flags]\n\n";
    }
    out += d.text;
  }
  out += all ? "\nflags (mesh-host VERB --help: that verb's only):\n" : "\nflags:\n";
  for (const Doc& d : kFlagDocs) {
    if (d.verbs & bit) out += d.text;
  }
  if (all) out += "  --version            the release and, for a packaged build, the commit\n";
  return out + kTail;
}

std::string UsageText() { return UsageText(Verb::kHelp); }

namespace {

// The verbs a flag is for, as its help names them (the first line of its
// entry in kFlagDocs); kAllBits for one no entry names.
unsigned VerbsOf(std::string_view name) {
  for (const Doc& d : kFlagDocs) {
    std::string_view head(d.text);
    head = head.substr(0, head.find('\n'));
    for (size_t at = head.find(name); at != std::string_view::npos; at = head.find(name, at + 1)) {
      size_t end = at + name.size();
      bool starts = at > 0 && head[at - 1] == ' ';
      bool ends = end == head.size() || head[end] == ' ' || head[end] == ',';
      if (starts && ends) return d.verbs;
    }
  }
  return kAllBits;
}

// "plan", "run and apply", "run, apply and plan": the verbs of `bits`.
std::string VerbsNamed(unsigned bits) {
  std::vector<std::string_view> names;
  for (const Doc& d : kVerbDocs) {
    if (!(d.verbs & bits)) continue;
    std::string_view text = d.text + 2;
    names.push_back(text.substr(0, text.find(' ')));
  }
  std::string out;
  for (size_t k = 0; k < names.size(); ++k) {
    out += (k == 0 ? "" : k + 1 == names.size() ? " and " : ", ") + std::string(names[k]);
  }
  return out;
}

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
           {"--journal-dir", &flags.journal_dir},
           {"--listen", &flags.listen},
           {"--machine", &flags.machine},
           {"--url", &flags.url},
           {"--output", &flags.output},
           {"--verify-key", &flags.verify_key},
           {"--metrics-resources", &flags.metrics_resources},
           {"--log-level", &flags.log_level},
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
    if (name == "--targets") flags.target_files.push_back(value);
    if (name == "--artifacts") flags.artifacts_given = true;
    if (name == "--root") flags.root_given = true;
    return core::Ok();
  }
  auto d = core::ParseDuration(value);
  if (!d) return core::Fail("flag " + name + ": " + d.error().message);
  if (d->count() <= 0 && (name == "--interval" || name == "--timeout"))
    return core::Fail("flag " + name + " must be positive");
  if (name == "--interval" && *d < kMinInterval) {
    return core::Fail("flag --interval: " + value +
                      " is below 1s: the daemon would apply again without pause");
  }
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
  if (flags.log_level != "info" && flags.log_level != "debug") {
    return core::Fail("flag --log-level: \"" + flags.log_level +
                      "\" is not info or debug (debug: every unchanged outcome too)");
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
  if (args.empty()) return core::Fail("no verb given (run, apply, plan, validate or status)");
  static const std::map<std::string, Verb> kVerbs = {
      {"run", Verb::kRun},           {"apply", Verb::kApply},   {"plan", Verb::kPlan},
      {"validate", Verb::kValidate}, {"status", Verb::kStatus}, {"help", Verb::kHelp},
      {"--help", Verb::kHelp},       {"-h", Verb::kHelp},       {"--version", Verb::kVersion},
      {"version", Verb::kVersion}};
  auto verb = kVerbs.find(args[0]);
  if (verb == kVerbs.end()) {
    return core::Fail("unknown verb \"" + args[0] +
                      "\" (expected run, apply, plan, validate or status)" +
                      core::DidYouMean(args[0], {"run", "apply", "plan", "validate", "status"}));
  }
  flags.verb = verb->second;
  // `mesh-host help VERB`, as `mesh-host VERB --help`.
  if (flags.verb == Verb::kHelp && args.size() == 2 && kVerbs.contains(args[1])) {
    flags.help_for = kVerbs.at(args[1]);
    return flags;
  }
  ValueFlags values = ValueFlagsOf(flags);
  for (size_t i = 1; i < args.size(); ++i) {
    std::string name = args[i];
    if (name == "--help" || name == "-h") {
      flags.help_for = flags.verb;
      flags.verb = Verb::kHelp;
      return flags;
    }
    // A flag the verb has no use for is said, not silently dropped:
    // `validate --root` says nothing of paths under that root. Not refused:
    // one set of flags given to every verb (a wrapper's) keeps working.
    if (std::string_view flag = std::string_view(name).substr(0, name.find('='));
        flag.size() > 1 && flag[0] == '-') {
      if (unsigned verbs = VerbsOf(flag); !(verbs & BitOf(flags.verb))) {
        flags.ignored.push_back("flag " + std::string(flag) + " is for " + VerbsNamed(verbs) +
                                ": " + args[0] + " does not use it (ignored)");
      }
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
      std::vector<std::string_view> known = {"--verbose", "--diff", "--help"};
      for (const auto& [flag, at] : values.strings) known.push_back(flag);
      for (const auto& [flag, at] : values.durations) known.push_back(flag);
      return core::Fail("unknown flag \"" + name + "\"" + core::DidYouMean(name, known));
    }
    if (!inline_value) {
      if (i + 1 >= args.size()) return core::Fail("flag " + name + " needs a value");
      value = args[++i];
    }
    if (auto st = SetValue(values, flags, name, value); !st) return std::unexpected(st.error());
  }
  if (auto st = CheckTogether(flags); !st) return std::unexpected(st.error());
  flags.verbose = flags.verbose || flags.log_level == "debug";
  return flags;
}

}  // namespace mesh::cli
