// The record proof on its own, fed entry by entry as a streamed record feeds
// it: batches of paths checked as they fill, the report in declaration order
// whatever the record's order, and the looks of a failed batch handed over.
#include "host/reconcile/record_proof.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "host/adapters/posix_file_system.h"
#include "host/core/want.h"
#include "tests/fakes/fake_background.h"
#include "tests/fakes/faulty_file_system.h"
#include "tests/testing/temp_dir.h"

namespace mesh::reconcile {
namespace {

using ::testing::ElementsAre;

class RecordProofTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir_.Sub("root"));
    std::filesystem::create_directories(dir_.Sub("units"));
    root_ = std::move(*adapters::PosixFileSystem::Open(dir_.Sub("root")));
    units_ = std::move(*adapters::PosixFileSystem::Open(dir_.Sub("units")));
    record_.declaration_digest = record_.settled_declaration_digest = "d";
    record_.owners = core::OwnerIds{};  // no owner names: none to look up
    record_.want_version = core::Record::kWantVersion;
    record_.machine = "m";
    record_.generation = 3;
    // Five files, ids in the opposite order of their declaration.
    for (int i = 0; i < 5; ++i) {
      std::string path = "/etc/f" + std::to_string(i);
      testing::WriteText(dir_.Sub("root") + path, "x");
      core::RecordEntry e;
      e.kind = "file";
      e.digest = "sha256:" + std::to_string(i);
      e.applied_at = i < 3 ? "2026-11-30T00:00:00.000Z" : "2026-11-30T01:00:00.000Z";
      e.position = static_cast<uint64_t>(4 - i);
      e.written.push_back({path, core::FileFingerprint(*root_->Stat(path)), "", 0, false});
      record_.resources["r" + std::to_string(i)] = e;
    }
  }

  bool Prove(RecordProof& proof) { return core::VisitRecord(record_, proof) && proof.Finish(); }

  testing::TempDir dir_;
  std::unique_ptr<adapters::PosixFileSystem> root_, units_;
  core::Record record_;
};

TEST_F(RecordProofTest, ChecksInBatchesAndReportsInDeclarationOrder) {
  fakes::FaultyFileSystem counted(*root_);
  RecordProof proof({.root = &counted, .units = units_.get()}, "d", "m", /*batch=*/2);
  ASSERT_TRUE(Prove(proof));
  EXPECT_EQ(counted.stats(), 5u);
  std::vector<std::string> lines;
  proof.Report([&](core::ResourceOutcome&& o) {
    lines.push_back(core::FormatOutcomeLine(o) + " " + o.digest + " " + o.applied_at);
  });
  EXPECT_THAT(lines,
              ElementsAre("unchanged r4 (file): as declared sha256:4 2026-11-30T01:00:00.000Z",
                          "unchanged r3 (file): as declared sha256:3 2026-11-30T01:00:00.000Z",
                          "unchanged r2 (file): as declared sha256:2 2026-11-30T00:00:00.000Z",
                          "unchanged r1 (file): as declared sha256:1 2026-11-30T00:00:00.000Z",
                          "unchanged r0 (file): as declared sha256:0 2026-11-30T00:00:00.000Z"));
  EXPECT_EQ(proof.header().generation, 3u);
}

TEST_F(RecordProofTest, AMovedFileStopsTheProofAtItsBatchAndHandsItsLooksOver) {
  std::filesystem::last_write_time(
      dir_.Sub("root/etc/f3"),
      std::filesystem::file_time_type::clock::now() + std::chrono::hours(1));
  RecordProof proof({.root = root_.get(), .units = units_.get()}, "d", "m", /*batch=*/2);
  // r0, r1: first batch holds; r2, r3: the second does not, and the visit stops.
  EXPECT_FALSE(core::VisitRecord(record_, proof));
  auto looks = proof.TakeLooks();
  ASSERT_EQ(looks.size(), 2u);
  EXPECT_EQ(looks[0].first, "/etc/f2");
  EXPECT_EQ(looks[1].first, "/etc/f3");
  EXPECT_TRUE(looks[1].second.has_value());
}

TEST_F(RecordProofTest, ProvesNothingForAnotherDeclarationOrMachineOrABrokenOrder) {
  RecordProof other_digest({.root = root_.get(), .units = units_.get()}, "e", "m");
  EXPECT_FALSE(Prove(other_digest));
  RecordProof other_machine({.root = root_.get(), .units = units_.get()}, "d", "n");
  EXPECT_FALSE(Prove(other_machine));
  record_.resources["r3"].position = 0;  // two resources at position 0
  RecordProof twice({.root = root_.get(), .units = units_.get()}, "d", "m");
  EXPECT_FALSE(Prove(twice));
  record_.resources["r3"].position = 7;  // a gap
  RecordProof gap({.root = root_.get(), .units = units_.get()}, "d", "m");
  EXPECT_FALSE(Prove(gap));
  record_.resources["r3"].position = 1;
  RecordProof whole({.root = root_.get(), .units = units_.get()}, "d", "m");
  EXPECT_TRUE(Prove(whole)) << "the record as written";
  record_.resources["r4"].kind = "future-kind";
  RecordProof unknown({.root = root_.get(), .units = units_.get()}, "d", "m");
  EXPECT_FALSE(Prove(unknown));
}

// Streamed, each entry lives only for its visit: what the proof keeps of it
// must be its own copy, across many batches and many blocks of text (under
// AddressSanitizer a kept view into the parser's entry would be caught).
TEST_F(RecordProofTest, AStreamedRecordOfThousandsIsProvenFromItsOwnCopies) {
  record_.resources.clear();
  std::filesystem::create_directories(dir_.Sub("root/many"));
  constexpr int kFiles = 3000;
  for (int i = 0; i < kFiles; ++i) {
    std::string path = "/many/file-with-a-rather-long-name-" + std::to_string(i);
    testing::WriteText(dir_.Sub("root") + path, "x");
    core::RecordEntry e;
    e.kind = "credential";
    e.digest = "sha256:" + std::string(64, static_cast<char>('a' + i % 26));
    e.applied_at = "2026-11-30T00:00:0" + std::to_string(i % 3) + ".000Z";
    e.position = static_cast<uint64_t>(kFiles - 1 - i);
    e.written.push_back({path, core::FileFingerprint(*root_->Stat(path)), "", 0, false});
    record_.resources["resource-with-a-long-identifier-" + std::to_string(i)] = e;
  }
  RecordProof proof({.root = root_.get(), .units = units_.get()}, "d", "m", /*batch=*/256);
  std::istringstream text(core::SerializeRecord(record_));
  auto scanned = core::ScanRecord(text, proof);
  ASSERT_TRUE(scanned.has_value()) << scanned.error().message;
  ASSERT_TRUE(*scanned);
  ASSERT_TRUE(proof.Finish());
  int k = kFiles - 1;
  proof.Report([&](core::ResourceOutcome&& o) {
    const core::RecordEntry& e =
        record_.resources.at("resource-with-a-long-identifier-" + std::to_string(k));
    EXPECT_EQ(o.id, "resource-with-a-long-identifier-" + std::to_string(k));
    EXPECT_EQ(o.digest, e.digest);
    EXPECT_EQ(o.applied_at, e.applied_at);
    EXPECT_EQ(o.kind, "credential");
    --k;
  });
  EXPECT_EQ(k, -1);
}

// Kept (the daemon's record): gathered once, rerun in batches. A rerun that
// fails hands over the looks of the batch it failed in, each path with its
// own stat, and the gathered proof stays whole for the next rerun.
TEST_F(RecordProofTest, AKeptProofRerunsInBatchesAndHandsTheFailingBatchsLooksOver) {
  fakes::FaultyFileSystem counted(*root_);
  RecordProof proof({.root = &counted, .units = units_.get()}, "d", "m", /*batch=*/2);
  proof.KeepForReruns();
  ASSERT_TRUE(Prove(proof));
  EXPECT_TRUE(proof.gathered());
  EXPECT_EQ(counted.stats(), 5u);
  ASSERT_TRUE(proof.Rerun("d"));
  EXPECT_EQ(counted.stats(), 10u) << "every path looked at again";
  EXPECT_FALSE(proof.Rerun("e")) << "another declaration";
  ASSERT_TRUE(proof.Rerun("d")) << "the digest is compared at each rerun, not remembered";

  std::filesystem::last_write_time(
      dir_.Sub("root/etc/f3"),
      std::filesystem::file_time_type::clock::now() + std::chrono::hours(1));
  for (int attempt = 0; attempt < 2; ++attempt) {
    EXPECT_FALSE(proof.Rerun("d"));
    // Sorted by path: f0 f1 | f2 f3 | f4. The second batch failed.
    auto looks = proof.TakeLooks();
    ASSERT_EQ(looks.size(), 2u);
    EXPECT_EQ(looks[0].first, "/etc/f2");
    EXPECT_EQ(looks[1].first, "/etc/f3");
    for (const auto& [path, info] : looks) {
      ASSERT_TRUE(info.has_value());
      EXPECT_EQ(core::FileFingerprint(*info), core::FileFingerprint(*root_->Stat(path))) << path;
    }
  }
}

// A rerun starts from nothing it saw before: the touched files of a rerun
// that failed are not handed over by the next one.
TEST_F(RecordProofTest, AKeptProofForgetsWhatAFailedRerunFoundTouched) {
  auto info = root_->Stat("/etc/f0");
  record_.resources["r0"].written[0].content_digest =
      core::FileDigest(core::FileMeta(info->mode, info->uid, info->gid), "x");
  fakes::FaultyFileSystem root(*root_);
  bool hide = false;
  root.before_read = [&](const std::string& path) {
    if (hide && path == "/etc/f0") {
      std::filesystem::rename(dir_.Sub("root/etc/f0"), dir_.Sub("root/etc/f0.away"));
    }
  };
  RecordProof proof({.root = &root, .units = units_.get()}, "d", "m", /*batch=*/2);
  proof.KeepForReruns();
  ASSERT_TRUE(Prove(proof));
  std::filesystem::last_write_time(
      dir_.Sub("root/etc/f0"),
      std::filesystem::file_time_type::clock::now() + std::chrono::hours(1));
  hide = true;
  EXPECT_FALSE(proof.Rerun("d")) << "the touched file could not be read";
  hide = false;
  std::filesystem::rename(dir_.Sub("root/etc/f0.away"), dir_.Sub("root/etc/f0"));
  ASSERT_TRUE(proof.Rerun("d")) << "read as the host left it";
  auto touched = proof.TakeTouched();
  ASSERT_EQ(touched.size(), 1u);
  EXPECT_EQ(touched[0].id, "r0");
  EXPECT_EQ(touched[0].fingerprint, core::FileFingerprint(*root_->Stat("/etc/f0")));
}

// A unit needs a service manager to be proven running or stopped.
TEST_F(RecordProofTest, AUnitWithoutAServiceManagerIsNotProven) {
  core::RecordEntry& e = record_.resources["s"];
  e.kind = "service";
  e.digest = "sha256:s";
  e.applied_at = "t";
  e.mutable_unit().name = "s.service";
  e.mutable_unit().state = "running";
  e.position = 5;
  RecordProof proof({.root = root_.get(), .units = units_.get()}, "d", "m");
  EXPECT_FALSE(Prove(proof));
}

// A large batch is looked at in two halves, the second on another thread:
// the same verdict and the same looks handed over as from one thread,
// whichever half moved, and when the second thread fails or cannot start.
using Halves = fakes::FakeBackground;
constexpr Halves::Mode kModes[] = {Halves::Mode::kThread, Halves::Mode::kFails,
                                   Halves::Mode::kNoThread};

TEST_F(RecordProofTest, ALargeBatchInTwoHalvesIsOneBatch) {
  constexpr int kFiles = 1500;  // over the halves' threshold (1,024)
  for (int i = 0; i < kFiles; ++i) {
    std::string path = "/srv/d" + std::to_string(i % 9) + "/g" + std::to_string(i);
    testing::WriteText(dir_.Sub("root") + path, "y");
    core::RecordEntry e;
    e.kind = "file";
    e.digest = "sha256:g" + std::to_string(i);
    e.applied_at = "2026-11-30T00:00:00.000Z";
    e.position = static_cast<uint64_t>(5 + i);
    e.written.push_back({path, core::FileFingerprint(*root_->Stat(path)), "", 0, false});
    record_.resources["g" + std::to_string(i)] = e;
  }
  auto looks = [&](RecordProof& proof) {
    std::vector<std::string> out;
    for (auto& [path, info] : proof.TakeLooks()) {
      out.push_back(path + " " + (info ? core::FileFingerprint(*info) : info.error().message));
    }
    return out;
  };
  for (Halves::Mode mode : kModes) {
    Halves halves(mode);
    RecordProof proof({.root = root_.get(), .units = units_.get(), .background = &halves}, "d",
                      "m");
    EXPECT_TRUE(Prove(proof)) << static_cast<int>(mode);
    EXPECT_EQ(halves.started, 1) << static_cast<int>(mode);
  }
  // A file moved in the second half (paths sorted: /srv/d8 last), then one
  // in the first as well (/etc first).
  for (const char* moved : {"/srv/d8/g1493", "/etc/f2"}) {
    std::filesystem::last_write_time(
        dir_.Sub("root") + moved,
        std::filesystem::file_time_type::clock::now() + std::chrono::hours(1));
    RecordProof alone({.root = root_.get(), .units = units_.get()}, "d", "m");
    EXPECT_FALSE(Prove(alone)) << moved;
    std::vector<std::string> expected = looks(alone);
    ASSERT_FALSE(expected.empty());
    for (Halves::Mode mode : kModes) {
      Halves halves(mode);
      RecordProof proof({.root = root_.get(), .units = units_.get(), .background = &halves}, "d",
                        "m");
      EXPECT_FALSE(Prove(proof)) << moved << " " << static_cast<int>(mode);
      EXPECT_EQ(looks(proof), expected) << moved << " " << static_cast<int>(mode);
    }
  }
}

}  // namespace
}  // namespace mesh::reconcile
