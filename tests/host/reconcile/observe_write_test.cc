// The observe and write phases on a real temporary root: what is found,
// in which words, and what a write reports back.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "host/core/want.h"
#include "host/reconcile/observe.h"
#include "host/reconcile/write.h"
#include "tests/fakes/faulty_file_system.h"
#include "tests/host/reconcile/reconciler_fixture.h"

namespace mesh::reconcile {
namespace {

using ::testing::HasSubstr;

// The reconciler's temporary root, artifacts, unit dir and fakes, driven
// one phase at a time.
class PhaseTest : public ReconcilerTest {
 protected:
  void SetUp() override {
    ReconcilerTest::SetUp();
    std::filesystem::create_directories(dir_.Sub("root/etc"));
  }
  void Declare(json resources) {
    decl_ = *core::ParseDeclaration(
        json{{"machine", "m"}, {"generation", 1}, {"resources", resources}}.dump());
    wants_.clear();
    for (const core::Resource& r : decl_.resources) wants_.push_back(core::WantDigest(r, "key"));
  }
  core::Result<Observation> Look() {
    olds_ = OldEntriesOf(decl_, record_);
    return Observe(decl_, record_, olds_, wants_,
                   {.root = root_.get(),
                    .artifacts = artifacts_.get(),
                    .units = units_.get(),
                    .archives = &archives_,
                    .services = &services_},
                   nullptr, cache_);
  }
  static json File(const char* content) {
    return {{"id", "f"}, {"kind", "file"}, {"path", "/etc/f"}, {"content", content}};
  }

  core::Declaration decl_;
  core::Record record_;
  OldEntries olds_;
  std::vector<std::string> wants_;
  StatCache cache_;
};

TEST_F(PhaseTest, ObserveSaysWhatDiffers) {
  Declare({File("abc")});
  EXPECT_EQ(Look()->seen.files[0].drift, "deleted");
  EXPECT_TRUE(Look()->seen.files[0].missing);
  testing::WriteText(dir_.Sub("root/etc/f"), "abd");
  cache_ = {};
  EXPECT_EQ(Look()->seen.files[0].drift, "content changed");
  ::chmod(dir_.Sub("root/etc/f").c_str(), 0600);
  cache_ = {};
  EXPECT_EQ(Look()->seen.files[0].drift, "mode changed");
  testing::WriteText(dir_.Sub("root/etc/f"), "abc");
  ::chmod(dir_.Sub("root/etc/f").c_str(), 0644);
  cache_ = {};
  auto seen = Look();
  EXPECT_EQ(seen->seen.files[0].found, Found::kAsDeclared) << "no record: compared, matches";
  EXPECT_TRUE(seen->seen.files[0].preexisting);
}

// The hot path: a recorded fingerprint that holds is taken as it is.
TEST_F(PhaseTest, ARecordedFingerprintThatHoldsIsNotRead) {
  Declare({File("abc")});
  testing::WriteText(dir_.Sub("root/etc/f"), "something else entirely");
  auto info = root_->Stat("/etc/f");
  core::RecordEntry e;
  e.kind = "file";
  e.digest = wants_[0];
  e.written.push_back({"/etc/f", core::FileFingerprint(*info), "", 0, false});
  record_.resources["f"] = e;
  auto seen = Look();
  EXPECT_EQ(seen->seen.files[0].found, Found::kAsRecorded);
  EXPECT_FALSE(seen->seen.files[0].preexisting);
}

TEST_F(PhaseTest, APathThatLeavesTheRootRefusesTheDeclaration) {
  Declare({{{"id", "f"}, {"kind", "file"}, {"path", "/out/f"}, {"content", "x"}}});
  std::filesystem::create_directory_symlink("/", dir_.Sub("root/out"));
  auto seen = Look();
  ASSERT_FALSE(seen.has_value());
  EXPECT_THAT(seen.error().message, HasSubstr("resource f, field path: "));
}

TEST_F(PhaseTest, UnitFilesAndUnitsAreLookedAt) {
  services_.AddUnit("s.service", {});
  Declare({{{"id", "s"},
            {"kind", "service"},
            {"unit", "s.service"},
            {"state", "running"},
            {"unit_text", "[Service]\nExecStart=/bin/s\n"}}});
  auto seen = Look();
  EXPECT_EQ(seen->seen.unit_files[0].found, Found::kDiffers);
  EXPECT_TRUE(seen->seen.unit_files[0].missing);
  ASSERT_NE(seen->seen.UnitOf(0), nullptr);
  ASSERT_TRUE(seen->seen.UnitOf(0)->has_value());
  EXPECT_EQ((*seen->seen.UnitOf(0))->active_state, "inactive");
  testing::WriteText(dir_.Sub("units/s.service"), "[Service]\nExecStart=/bin/s\n");
  ::chmod(dir_.Sub("units/s.service").c_str(), 0644);
  EXPECT_EQ(Look()->seen.unit_files[0].found, Found::kAsDeclared);
}

TEST_F(PhaseTest, WriteReportsWhatLandedAndStopsAtTheFirstFailure) {
  Declare({File("new"),
           {{"id", "s"},
            {"kind", "service"},
            {"unit", "s.service"},
            {"state", "running"},
            {"unit_text", "[Service]\nExecStart=/bin/s\n"}}});
  Plan plan;
  plan.steps.resize(2);
  plan.steps[0].write_files = true;
  plan.steps[1].write_unit_file = true;
  Seen seen;
  seen.files.resize(2);
  fakes::FaultyFileSystem root(*root_);
  Writes w =
      Write(decl_, plan, {}, seen, {.root = &root, .units = units_.get(), .services = &services_});
  ASSERT_TRUE(w.steps[0].status.has_value());
  EXPECT_EQ(w.steps[0].fingerprint, core::FileFingerprint(*root_->Stat("/etc/f")));
  EXPECT_EQ(w.steps[1].unit().file_fingerprint, core::FileFingerprint(*units_->Stat("/s.service")));
  // The unit's part is boxed (write.h): a file's write carries none.
  EXPECT_FALSE(w.steps[0].unit_written.has_value());
  EXPECT_TRUE(w.unit_files_changed);
  root.FailWrites("/etc/f", ENOSPC);
  w = Write(decl_, plan, {}, seen, {.root = &root, .units = units_.get(), .services = &services_});
  EXPECT_THAT(w.steps[0].status.error().message, HasSubstr("No space left on device"));
  EXPECT_TRUE(w.steps[1].status.has_value()) << "one failure stops no other resource";
}

TEST_F(PhaseTest, ARemovalStopsItsUnitAndDeletesOnlyItsPaths) {
  services_.AddUnit("old.service", {fakes::FakeServiceManager::Behavior::kHealthy, {}, true});
  testing::WriteText(dir_.Sub("root/etc/old"), "x");
  testing::WriteText(dir_.Sub("units/old.service"), "[Service]\n");
  Declare(json::array());
  Plan plan;
  Removal rm;
  rm.id = "old";
  rm.entry.mutable_unit().name = "old.service";
  rm.stop = true;
  rm.delete_paths = {"/etc/old"};
  rm.delete_unit_file = true;
  plan.removals.push_back(rm);
  Writes w = Write(decl_, plan, {}, Seen{},
                   {.root = root_.get(), .units = units_.get(), .services = &services_});
  EXPECT_TRUE(w.removals[0].has_value());
  EXPECT_FALSE(testing::Exists(dir_.Sub("root/etc/old")));
  EXPECT_FALSE(testing::Exists(dir_.Sub("units/old.service")));
  EXPECT_EQ(services_.calls().back().kind, ports::JobKind::kStop);
}

}  // namespace
}  // namespace mesh::reconcile
