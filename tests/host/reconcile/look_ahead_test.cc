// The full pass with the recorded paths looked at ahead, on another thread
// while the declaration is parsed (reconciler.cc, LookAhead): the same
// outcomes and the same record as without, whatever the machine did since
// the last apply, and whether the look ahead ran, failed or could not start.
// Also: a step that keeps the record's entry (Step::keeps_old) still
// records where a resource moved to in the declaration.
#include <gmock/gmock.h>

#include <atomic>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "tests/fakes/fake_background.h"
#include "tests/host/reconcile/reconciler_fixture.h"

namespace mesh::reconcile {
namespace {

using json = nlohmann::json;

// How the look ahead runs: not asked for (no Background), or each way a
// FakeBackground goes.
enum class Ahead { kNone, kThread, kFails, kNoThread };

fakes::FakeBackground::Mode ModeOf(Ahead ahead) {
  return ahead == Ahead::kThread  ? fakes::FakeBackground::Mode::kThread
         : ahead == Ahead::kFails ? fakes::FakeBackground::Mode::kFails
                                  : fakes::FakeBackground::Mode::kNoThread;
}

constexpr int kFiles = 300;  // over the look ahead's threshold (256)

json Files(int generation, bool changed) {
  json resources = json::array();
  for (int i = 0; i < kFiles; ++i) {
    if (changed && i == 11) continue;  // dropped
    std::string content = "value " + std::to_string(i) + "\n";
    if (changed && i == 10) content = "declared anew\n";
    resources.push_back({{"id", "f" + std::to_string(i)},
                         {"kind", "file"},
                         {"path", "/etc/d" + std::to_string(i % 7) + "/f" + std::to_string(i)},
                         {"content", content}});
  }
  if (changed) {
    resources.push_back({{"id", "new"}, {"kind", "file"}, {"path", "/etc/new"}, {"content", "n"}});
    std::swap(resources[20], resources[21]);  // moved in the declaration
  }
  return json{{"machine", "edge-1"}, {"generation", generation}, {"resources", resources}};
}

// One machine, each time a new one: the first apply, then what happened to
// it since, then the full pass of a changed declaration.
struct Result {
  std::vector<std::string> outcomes;  // id, outcome, detail
  std::string record;                 // without the files' fingerprints
  int started = 0;
};

Result FullPass(Ahead mode) {
  namespace fs = std::filesystem;
  testing::TempDir dir;
  for (const char* d : {"root", "artifacts", "units"}) fs::create_directories(dir.Sub(d));
  auto root = std::move(*adapters::PosixFileSystem::Open(dir.Sub("root")));
  auto artifacts = std::move(*adapters::PosixFileSystem::Open(dir.Sub("artifacts")));
  auto units = std::move(*adapters::PosixFileSystem::Open(dir.Sub("units")));
  adapters::LibarchiveReader archives;
  fakes::FakeClock clock;
  fakes::FakeServiceManager services{clock};
  fakes::MemoryRecordStore store;
  fakes::FakeBackground background(ModeOf(mode));
  ReconcilerPorts ports{.root = root.get(),
                        .artifacts = artifacts.get(),
                        .units = units.get(),
                        .archives = &archives,
                        .services = &services,
                        .records = &store,
                        .clock = &clock};
  if (mode != Ahead::kNone) ports.background = &background;
  ReconcilerOptions options;
  options.machine = "edge-1";
  options.confirm_from_record = false;
  EXPECT_EQ(Reconciler(ports, options).Apply(Files(1, false).dump()).result, ApplyResult::kOk);
  auto at = [&](const std::string& rel) { return dir.Sub("root") + rel; };
  testing::WriteText(at("/etc/d5/f5"), "value X\n");  // same size, other bytes
  fs::remove(at("/etc/d6/f6"));
  fs::remove(at("/etc/d0/f7"));
  fs::create_directory(at("/etc/d0/f7"));
  fs::permissions(at("/etc/d1/f8"), fs::perms::owner_all);
  fs::last_write_time(at("/etc/d2/f9"), fs::file_time_type::clock::now() + std::chrono::hours(1));
  fs::remove_all(at("/etc/d4"));  // a whole directory of them
  background.started = 0;
  ApplyReport report = Reconciler(ports, options).Apply(Files(2, true).dump());
  Result out;
  for (const auto& o : report.outcomes) {
    out.outcomes.push_back(o.id + " " + std::string(core::OutcomeName(o.outcome)) + " " + o.detail);
  }
  // Less what two machines cannot share: inodes and times.
  json record = testing::RecordJson(*store.text);
  for (auto& [id, entry] : record["resources"].items()) {
    for (auto& w : entry["written"]) w.erase("fingerprint");
  }
  out.record = record.dump();
  out.started = background.started;
  return out;
}

TEST(LookAhead, WithoutIt) {
  Result without = FullPass(Ahead::kNone);
  EXPECT_EQ(without.started, 0);
  // What the machine and the declaration did is all seen (the test below
  // compares with this).
  for (const char* seen : {"f5 updated", "f6 updated", "f7 failed", "f8 updated", "f9 unchanged",
                           "f10 updated", "f11 removed", "f4 updated", "new created"}) {
    EXPECT_THAT(without.outcomes, ::testing::Contains(::testing::StartsWith(seen)));
  }
}

class LookAheadModes : public ::testing::TestWithParam<Ahead> {};

TEST_P(LookAheadModes, SameOutcomesAndRecordAsWithout) {
  Result with = FullPass(GetParam());
  EXPECT_EQ(with.started, 1) << "the full pass of a record of " << kFiles << " looks ahead";
  Result without = FullPass(Ahead::kNone);
  EXPECT_EQ(with.outcomes, without.outcomes);
  EXPECT_EQ(with.record, without.record);
}

INSTANTIATE_TEST_SUITE_P(Ways, LookAheadModes,
                         ::testing::Values(Ahead::kThread, Ahead::kFails, Ahead::kNoThread));

class LookAheadTest : public ReconcilerTest {};

// A full pass refused after the look ahead started waits for it before
// anything it fills goes away.
TEST_F(LookAheadTest, ARefusedDeclarationWaitsForIt) {
  fakes::FakeBackground background(fakes::FakeBackground::Mode::kThread);
  ReconcilerPorts ports = Ports();
  ports.background = &background;
  ReconcilerOptions options = Options();
  options.confirm_from_record = false;
  ASSERT_EQ(Reconciler(ports, options).Apply(Files(1, false).dump()).result, ApplyResult::kOk);
  for (int i = 0; i < 20; ++i) {
    ApplyReport r = Reconciler(ports, options).Apply("{\"machine\": \"edge-1\", \"resources\": [");
    EXPECT_EQ(r.result, ApplyResult::kRefused);
  }
  EXPECT_EQ(background.started, 20);
}

// A file found as recorded keeps the record's entry (Step::keeps_old), but
// only while it is where the record has it in the declaration: the no-op
// reports in declaration order from the record's positions.
TEST_F(LookAheadTest, AResourceThatMovedIsRecordedWhereItIsNow) {
  json decl = Files(1, false);
  ASSERT_EQ(Run(decl).result, ApplyResult::kOk);
  std::string before = *store_.text;
  ASSERT_EQ(Run(decl, false, /*from_record=*/false).result, ApplyResult::kOk);
  EXPECT_EQ(*store_.text, before) << "a full pass that changes nothing keeps the record";
  std::swap(decl["resources"][3], decl["resources"][4]);
  ApplyReport moved = Run(decl, false, /*from_record=*/false);
  ASSERT_EQ(moved.result, ApplyResult::kOk);
  EXPECT_EQ(Record()["resources"]["f3"]["position"], 4);
  EXPECT_EQ(Record()["resources"]["f4"]["position"], 3);
  ApplyReport proven = Run(decl);
  ASSERT_TRUE(proven.from_record);
  EXPECT_EQ(proven.outcomes[3].id, "f4");
  EXPECT_EQ(proven.outcomes[4].id, "f3");
}

}  // namespace
}  // namespace mesh::reconcile
