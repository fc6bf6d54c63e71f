// mesh-host's entry point: parses flags and wires adapters into the core.
// Nothing else names a concrete adapter.
#include <unistd.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "host/adapters/file_record_store.h"
#include "host/adapters/libarchive_reader.h"
#include "host/adapters/posix_file_system.h"
#include "host/adapters/sdbus_service_manager.h"
#include "host/adapters/system_clock.h"
#include "host/cli/apply_command.h"
#include "host/cli/flags.h"
#include "host/reconcile/reconciler.h"

namespace {

using namespace mesh;

std::string HostName() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

int ApplyOrPlan(const cli::Flags& flags, bool plan) {
  auto text = cli::ReadDeclarationFile(flags.declaration);
  if (!text) {
    std::cerr << "mesh-host: " << text.error().message << "\n";
    return cli::kExitRefused;
  }
  auto root = adapters::PosixFileSystem::Open(flags.root);
  if (!root) {
    std::cerr << "mesh-host: --root: " << root.error().message << "\n";
    return cli::kExitRefused;
  }
  auto artifacts = adapters::PosixFileSystem::OpenOrDeferError(flags.artifacts);
  auto units = plan ? adapters::PosixFileSystem::OpenOrDeferError(flags.unit_dir)
                    : adapters::PosixFileSystem::Open(flags.unit_dir, /*create=*/true)
                          .value_or(adapters::PosixFileSystem::OpenOrDeferError(flags.unit_dir));
  auto records = adapters::FileRecordStore::Open(flags.state_dir, /*create=*/!plan);
  if (!records) {
    std::cerr << "mesh-host: --state-dir: " << records.error().message << "\n";
    return cli::kExitRefused;
  }
  if (!plan) {
    if (auto st = (*records)->Lock(); !st) {
      std::cerr << "mesh-host: " << st.error().message << "\n";
      return cli::kExitRefused;
    }
  }
  adapters::LibarchiveReader archives;
  adapters::SdbusServiceManager services;
  adapters::SystemClock clock;
  reconcile::ReconcilerPorts ports;
  ports.root = root->get();
  ports.artifacts = artifacts.get();
  ports.units = units.get();
  ports.archives = &archives;
  ports.services = &services;
  ports.records = records->get();
  ports.clock = &clock;
  reconcile::ReconcilerOptions options;
  options.machine = flags.machine.empty() ? HostName() : flags.machine;
  options.settle = flags.settle;
  options.dry_run = plan;
  reconcile::Reconciler reconciler(ports, options);
  return cli::PrintReport(reconciler.Apply(*text), plan, std::cout, std::cerr);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  auto flags = mesh::cli::ParseFlags(args);
  if (!flags) {
    std::cerr << "mesh-host: " << flags.error().message << "\n\n" << mesh::cli::UsageText();
    return mesh::cli::kExitRefused;
  }
  switch (flags->verb) {
    case mesh::cli::Verb::kHelp:
      std::cout << mesh::cli::UsageText();
      return 0;
    case mesh::cli::Verb::kVersion:
      std::cout << "mesh-host " << MESH_HOST_VERSION << "\n";
      return 0;
    case mesh::cli::Verb::kApply:
      return ApplyOrPlan(*flags, /*plan=*/false);
    case mesh::cli::Verb::kPlan:
      return ApplyOrPlan(*flags, /*plan=*/true);
    case mesh::cli::Verb::kRun:
    case mesh::cli::Verb::kStatus:
      std::cerr << "mesh-host: this verb is not built yet\n";
      return mesh::cli::kExitRefused;
  }
  return mesh::cli::kExitRefused;
}
