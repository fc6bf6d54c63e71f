#include "host/wiring.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "host/adapters/file_declaration.h"
#include "host/adapters/host_paths.h"
#include "host/adapters/one_shot_heap.h"
#include "host/adapters/process_guard.h"
#include "host/adapters/unit_verifier.h"
#include "host/cli/apply_command.h"
#include "host/cli/validate_command.h"
#include "host/reconcile/observe.h"
#include "host/reconcile/private_declaration.h"
#include "host/reconcile/signature.h"
#include "host/version/version.h"

namespace mesh::wiring {
namespace {

// Where the host lives, as the flags name it and as it resolves: what no
// declared path may overlap. `writer`: who the host writes as. `read`: the
// declaration read, which says where it was and the links on its way
// (rather than where the flag leads now).
reconcile::HostDirs DirsOf(const cli::Flags& flags, std::optional<core::HostIds> writer,
                           const ports::DeclarationSource* read = nullptr) {
  // A relative --declaration against the working directory; one that
  // cannot be made absolute is not compared (FileDeclaration refuses it).
  std::string declaration = adapters::AbsolutePath(flags.declaration).value_or("");
  std::string key =
      flags.verify_key.empty() ? "" : adapters::AbsolutePath(flags.verify_key).value_or("");
  reconcile::HostDirs dirs{
      flags.root, flags.unit_dir, flags.state_dir, flags.artifacts, writer, declaration, key};
  dirs.resolved = {adapters::ResolvedPath(flags.root),      adapters::ResolvedPath(flags.unit_dir),
                   adapters::ResolvedPath(flags.state_dir), adapters::ResolvedPath(flags.artifacts),
                   adapters::ResolvedPath(declaration),     adapters::LinksOnTheWay(declaration)};
  if (!key.empty()) {
    dirs.resolved.verify_key = adapters::ResolvedPath(key);
    dirs.resolved.verify_key_links = adapters::LinksOnTheWay(key);
  }
  if (auto at = read != nullptr ? read->OpenedAt() : std::nullopt) {
    dirs.resolved.declaration = std::move(*at);
    dirs.resolved.declaration_links = read->LinksOnTheWay();
  }
  return dirs;
}

std::string HostName() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
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
  if (report.result == core::ApplyResult::kRefused) RemoveWhatWireMade(**machine);
  return cli::PrintReport(report, plan, std::cout, std::cerr, format);
}

// Bundles, where the artifacts are: each file there, as its sha256 says,
// unpacked and checked as an apply does: a bundle every apply would refuse
// is refused here.
// Not given, a default directory that is not there (validate run where the
// declaration is built) only warns; given, it refuses, as apply would.
void CheckBundles(const core::Declaration& decl, const std::string& artifacts_dir, bool given,
                  cli::Validation& v) {
  auto artifacts = adapters::PosixFileSystem::Open(artifacts_dir);
  bool bundles = std::any_of(decl.resources.begin(), decl.resources.end(),
                             [](const core::Resource& r) { return r.IsTree(); });
  if (bundles && !artifacts) {
    std::string why = "--artifacts " + artifacts_dir + ": " + artifacts.error().message;
    if (given) {
      v.refusals.push_back("bundles cannot be read: " + why);
    } else {
      v.warnings.push_back("bundles not checked: " + why);
    }
  }
  adapters::LibarchiveReader archives;
  uint64_t held = 0;
  std::set<std::pair<std::string, std::string>> unpacked;  // one bundle, read once, as apply does
  for (const core::Resource& r : decl.resources) {
    if (!r.IsTree() || !artifacts || !unpacked.emplace(r.source, r.sha256).second) continue;
    auto bytes = reconcile::ReadArtifact(**artifacts, r);
    if (!bytes) {
      v.refusals.push_back(bytes.error().message);
      continue;
    }
    auto entries = reconcile::UnpackBundle(archives, r, *bytes, held);
    if (!entries) {
      v.refusals.push_back(entries.error().message);
      continue;
    }
    for (const core::TreeEntry& e : *entries) held += e.content.size();
  }
}

// The look an apply takes at each path before it writes: a symlink on the
// way under --root refuses the declaration. Under a root not given, this
// machine's /, it is what apply here would refuse: a warning.
void LookUnderRoot(const core::Declaration& decl, const cli::Flags& flags, core::Problems& problems,
                   cli::Validation& v) {
  auto root = adapters::PosixFileSystem::Open(flags.root);
  if (!root) {
    v.warnings.push_back("paths not looked at under --root " + flags.root + ": " +
                         root.error().message);
    return;
  }
  core::Problems outside;
  reconcile::RefusePathsOutsideRoot(decl, **root, outside);
  if (flags.root_given) {
    problems.Append(outside);
    return;
  }
  const std::string would = "apply on this machine (--root /) would refuse ";
  for (const std::string& w : outside.named()) v.warnings.push_back(would + w);
  if (outside.total() > outside.named().size()) {
    v.warnings.push_back(would + std::to_string(outside.total() - outside.named().size()) +
                         " more path(s) so");
  }
}

// Every check an apply makes of the declaration before it touches the
// machine, and systemd's own reading of the unit texts; nothing written.
int Validate(const cli::Flags& flags) {
  adapters::KeepSecretsOutOfCoreFiles();
  cli::Validation v;
  v.declaration = flags.declaration;
  bool json = flags.output == "json";
  auto done = [&] { return cli::PrintValidation(v, json, std::cout, std::cerr); };
  auto source = adapters::FileDeclaration::Open(flags.declaration);
  if (!source) {
    v.refusals.push_back(source.error().message);
    return done();
  }
  if (flags.verify_key.empty()) {
    if (auto alone = reconcile::CheckChangedByRootAlone(**source); !alone) {
      v.refusals.push_back(alone.error().message);
    }
  } else {
    auto key = adapters::ReadVerifyKey(flags.verify_key);
    if (!key) {
      v.refusals.push_back(key.error().message);
    } else if (auto signer = reconcile::VerifyDeclarationSignature(**source, *key); !signer) {
      v.refusals.push_back(signer.error().message);
    } else {
      v.signer = std::move(*signer);
    }
  }
  auto text = (*source)->Text();
  if (!text) {
    v.refusals.push_back(text.error().message);
    return done();
  }
  auto refuse = [&v](const core::Error& e) {
    if (e.details.empty()) v.refusals.push_back(e.message);
    // Not the line that counts the unnamed ones: counted as they are.
    size_t named = e.details.size() - (e.unnamed > 0 ? 1 : 0);
    v.refusals.insert(v.refusals.end(), e.details.begin(), e.details.begin() + named);
    v.unnamed += e.unnamed;
  };
  // The host's own places, as given (or their defaults); the generation,
  // which needs this machine's record, is not asked.
  auto decl =
      core::ParseDeclaration(*text, [&](const core::Declaration& parsed, core::Problems& problems) {
        v.machine = parsed.machine;
        v.generation = parsed.generation;
        v.resources = parsed.resources.size();
        if (!flags.machine.empty() && parsed.machine != flags.machine) {
          problems.Add("declaration, field machine: \"" + parsed.machine +
                       "\" is not this machine (--machine " + flags.machine + ")");
        }
        problems.Add(reconcile::CheckCredentialsPrivate(parsed, **source));
        reconcile::CheckDeclaration(parsed, core::Record{}, /*had_record=*/false, /*machine=*/"",
                                    DirsOf(flags, std::nullopt, source->get()), problems);
        LookUnderRoot(parsed, flags, problems, v);
        cli::Validation bundles;
        CheckBundles(parsed, flags.artifacts, flags.artifacts_given, bundles);
        for (std::string& r : bundles.refusals) problems.Add(std::move(r));
        for (std::string& w : bundles.warnings) v.warnings.push_back(std::move(w));
        for (std::string& w : adapters::VerifyUnitTexts(parsed)) v.warnings.push_back(std::move(w));
        for (std::string& w : reconcile::NothingToEnable(parsed))
          v.warnings.push_back(std::move(w));
      });
  if (!decl) refuse(decl.error());
  return done();
}

}  // namespace

void RemoveWhatWireMade(Machine& m) {
  if (m.records != nullptr) m.records->RemoveWhatARefusalLeft();
  // The last made first: a directory made later is never the parent of
  // one made before it (spelled with "..", the longest name may be). One
  // something else has written into since is not empty: kept.
  for (auto dir = m.made.rbegin(); dir != m.made.rend(); ++dir) ::rmdir(dir->c_str());
  m.made.clear();
}

core::Result<std::unique_ptr<Machine>> Wire(const cli::Flags& flags, bool plan, bool daemon) {
  auto m = std::make_unique<Machine>();
  // What fails after a directory was made leaves none.
  auto fail = [&m](std::string why) {
    RemoveWhatWireMade(*m);
    return core::Fail(std::move(why));
  };
  auto root = adapters::PosixFileSystem::Open(flags.root);
  if (!root) return fail("--root: " + root.error().message);
  m->root = std::move(*root);
  m->artifacts = adapters::PosixFileSystem::OpenOrDeferError(flags.artifacts);
  if (!plan) {
    auto units = adapters::PosixFileSystem::Open(flags.unit_dir, /*create=*/true, &m->made);
    if (units) m->units = std::move(*units);
  }
  if (!m->units) m->units = adapters::PosixFileSystem::OpenOrDeferError(flags.unit_dir);
  m->units->set_errors_name_root(true);
  auto records =
      adapters::FileRecordStore::Open(flags.state_dir, /*create=*/!plan, daemon, &m->made);
  if (!records) return fail("--state-dir: " + records.error().message);
  m->records = std::move(*records);
  if (!plan) {
    // Held by another process: what this one made, that one may use.
    if (auto st = m->records->Lock(); !st) {
      if (st.error().kind == core::ErrorKind::kHeld) return core::Fail(st.error().message);
      return fail(st.error().message);
    }
  }
  reconcile::ReconcilerPorts ports;
  ports.root = m->root.get();
  ports.artifacts = m->artifacts.get();
  ports.units = m->units.get();
  ports.archives = &m->archives;
  ports.services = &m->services;
  ports.records = m->records.get();
  ports.clock = &m->clock;
  ports.background = &m->background;
  m->journal = std::make_unique<adapters::SdJournal>(flags.journal_dir);
  ports.journal = m->journal.get();
  reconcile::ReconcilerOptions options;
  options.machine = flags.machine.empty() ? HostName() : flags.machine;
  options.settle = flags.settle;
  options.dirs = DirsOf(flags, core::HostIds{::geteuid(), ::getegid()});
  options.dry_run = plan;
  options.diff = flags.diff;
  // The staged writes' batch of files (write.cc): a chunk of small files
  // is made durable by one syncfs.
  if (!daemon) options.chunk = 4096;
  options.recorded_on_refusal = daemon;
  if (!flags.verify_key.empty()) {
    auto key = adapters::ReadVerifyKey(flags.verify_key);
    if (!key) return fail(key.error().message);
    options.verify_key = *key;
  }
  m->reconciler = std::make_unique<reconcile::Reconciler>(ports, options);
  return m;
}

std::string CheckFrontVersion() {
  const char* front = std::getenv(kFrontVersion);
  std::string why;
  if (front != nullptr && VersionLine() != front) {
    why = std::string("mesh-host ") + front + " and mesh-host-serve " + VersionLine() +
          " are not the same build: install both from one (tools/package, packaging/install.sh)";
  }
  ::unsetenv(kFrontVersion);
  return why;
}

std::unique_ptr<cli::Flags> ParseArgs(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  auto flags = cli::ParseFlags(args);
  if (!flags) {
    std::cerr << "mesh-host: " << flags.error().message << "\n"
              << "usage: mesh-host run|apply|plan|validate|status [flags]; mesh-host VERB --help "
                 "lists that verb's flags\n";
    return nullptr;
  }
  return std::make_unique<cli::Flags>(std::move(*flags));
}

void SayIgnored(const cli::Flags& flags) {
  for (const std::string& why : flags.ignored) std::cerr << "mesh-host: " << why << "\n";
}

bool IsOneShot(cli::Verb verb) { return verb != cli::Verb::kRun && verb != cli::Verb::kStatus; }

int RunOneShot(const cli::Flags& flags) {
  switch (flags.verb) {
    case cli::Verb::kHelp:
      std::cout << cli::UsageText(flags.help_for);
      return 0;
    case cli::Verb::kVersion:
      std::cout << "mesh-host " << VersionLine() << "\n";
      return 0;
    case cli::Verb::kApply:
      return ApplyOrPlan(flags, /*plan=*/false);
    case cli::Verb::kPlan:
      return ApplyOrPlan(flags, /*plan=*/true);
    case cli::Verb::kValidate:
      return Validate(flags);
    case cli::Verb::kRun:
    case cli::Verb::kStatus:
      break;
  }
  return cli::kExitRefused;
}

}  // namespace mesh::wiring
