// A reconciler on a temporary root, real POSIX files and libarchive, over a
// fake service manager, fake clock and in-memory record store.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "host/adapters/libarchive_reader.h"
#include "host/adapters/posix_file_system.h"
#include "host/core/sha256.h"
#include "host/reconcile/reconciler.h"
#include "tests/fakes/fake_clock.h"
#include "tests/fakes/fake_service_manager.h"
#include "tests/fakes/fake_unit_journal.h"
#include "tests/fakes/memory_record_store.h"
#include "tests/testing/record_json.h"
#include "tests/testing/tar_builder.h"
#include "tests/testing/temp_dir.h"

namespace mesh::reconcile {

class ReconcilerTest : public ::testing::Test {
 protected:
  using json = nlohmann::json;

  void SetUp() override {
    for (const char* d : {"root", "artifacts", "units"}) {
      std::filesystem::create_directories(dir_.Sub(d));
    }
    root_ = std::move(*adapters::PosixFileSystem::Open(dir_.Sub("root")));
    artifacts_ = std::move(*adapters::PosixFileSystem::Open(dir_.Sub("artifacts")));
    units_ = std::move(*adapters::PosixFileSystem::Open(dir_.Sub("units")));
  }

  // `from_record`: let a no-op be proven from the record (the default, as
  // in production); false forces the full pass.
  // With a store that keeps the record (`store_.stream` false), the applies
  // that may be proven go through one reconciler, as the daemon's do.
  ApplyReport Run(const json& decl, bool dry_run = false, bool from_record = true) {
    ReconcilerOptions options = Options();
    options.dry_run = dry_run;
    options.confirm_from_record = from_record;
    if (!store_.stream && !dry_run && from_record) {
      if (daemon_ == nullptr) daemon_ = std::make_unique<Reconciler>(Ports(), options);
      return daemon_->Apply(decl.dump());
    }
    return Reconciler(Ports(), options).Apply(decl.dump());
  }

  // The fixture's machine, for a test that drives a Reconciler itself.
  ReconcilerPorts Ports() {
    return {.root = root_.get(),
            .artifacts = artifacts_.get(),
            .units = units_.get(),
            .archives = &archives_,
            .services = &services_,
            .records = &store_,
            .clock = &clock_,
            .journal = &journal_};
  }
  static ReconcilerOptions Options() {
    ReconcilerOptions options;
    options.machine = "edge-1";
    options.settle = std::chrono::seconds(1);
    options.dirs.writer = core::HostIds{::geteuid(), ::getegid()};
    return options;
  }

  // A bundle in --artifacts; returns its sha256.
  std::string Bundle(const std::string& name, const std::vector<testing::TarMember>& members) {
    std::string bytes = testing::BuildTar(members);
    testing::WriteText(dir_.Sub("artifacts/" + name), bytes);
    return core::Sha256Hex(bytes);
  }

  static json Decl(json resources, uint64_t generation = 1) {
    return json{
        {"machine", "edge-1"}, {"generation", generation}, {"resources", std::move(resources)}};
  }

  static std::vector<std::string> Outcomes(const ApplyReport& r) {
    std::vector<std::string> out;
    for (const auto& o : r.outcomes) out.push_back(std::string(core::OutcomeName(o.outcome)));
    return out;
  }

  std::string Root(const std::string& rel) const { return dir_.Sub("root") + rel; }

  json Record() const { return testing::RecordJson(*store_.text); }

  // A machine whose --unit-dir lies under --root (/etc/systemd/system, as
  // with the defaults), so that a declared file can land in it.
  ApplyReport ApplyWithUnitsInRoot(const json& decl, bool from_record = true) {
    if (units_in_root_ == nullptr) {
      std::filesystem::create_directories(dir_.Sub("root/etc/systemd/system"));
      units_in_root_ =
          std::move(*adapters::PosixFileSystem::Open(dir_.Sub("root/etc/systemd/system")));
    }
    ReconcilerPorts ports = Ports();
    ports.units = units_in_root_.get();
    ReconcilerOptions options = Options();
    options.dirs = {dir_.Sub("root"), dir_.Sub("root/etc/systemd/system"), "", ""};
    options.confirm_from_record = from_record;
    return Reconciler(ports, options).Apply(decl.dump());
  }

  testing::TempDir dir_;
  std::unique_ptr<adapters::PosixFileSystem> root_, artifacts_, units_, units_in_root_;
  adapters::LibarchiveReader archives_;
  fakes::FakeClock clock_;
  fakes::FakeServiceManager services_{clock_};
  fakes::FakeUnitJournal journal_;
  fakes::MemoryRecordStore store_;
  std::unique_ptr<Reconciler> daemon_;  // see Run
};

}  // namespace mesh::reconcile
