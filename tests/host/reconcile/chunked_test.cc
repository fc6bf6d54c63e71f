// A first apply carried in chunks (chunked.h): it ends as the whole pass
// ends — the same outcomes, files and record — refuses what the whole pass
// refuses before it writes anything, and a kill at any of its steps leaves
// what the next apply puts right.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <new>
#include <string>
#include <vector>

#include "host/adapters/file_record_store.h"
#include "host/core/sha256.h"
#include "host/ports/declaration_source.h"
#include "tests/fakes/faulty_file_system.h"
#include "tests/fakes/kill_switch.h"
#include "tests/host/reconcile/reconciler_fixture.h"

namespace mesh::reconcile {
namespace {

using ::testing::Each;
using ::testing::HasSubstr;

constexpr size_t kChunk = 3;

class ChunkedTest : public ReconcilerTest {
 protected:
  void SetUp() override {
    ReconcilerTest::SetUp();
    root_faulty_ = std::make_unique<fakes::FaultyFileSystem>(*root_);
    root_faulty_->kill = &kill_;
    store_.kill = &kill_;
  }

  // `chunk` 0: the whole pass. Each outcome as "OUTCOME ID: DETAIL".
  ApplyReport Apply(const json& decl, size_t chunk = kChunk,
                    std::vector<std::string>* lines = nullptr) {
    ReconcilerPorts ports = Ports();
    ports.root = root_faulty_.get();
    ReconcilerOptions options = Options();
    options.chunk = chunk;
    // Where systemd's unit directory lies under the root: a file declared
    // there is a unit's definition.
    options.dirs.root = dir_.Sub("root");
    options.dirs.units = dir_.Sub("root") + "/etc/systemd/system";
    options.dirs.state = dir_.Sub("root") + "/var/lib/mesh-host";
    return Reconciler(ports, options).Apply(decl.dump(), [&](const core::ResourceOutcome& o) {
      if (lines != nullptr) {
        lines->push_back(std::string(core::OutcomeName(o.outcome)) + " " + o.id + ": " + o.detail);
      }
    });
  }

  // Paths looked at so far (a chunked apply looks at each twice: once to
  // check, once to carry it).
  size_t Stats() const { return root_faulty_->stats(); }

  static json File(const std::string& name, const std::string& content = "") {
    return json{{"id", name},
                {"kind", "file"},
                {"path", "/srv/" + name + ".conf"},
                {"content", content.empty() ? name + "\n" : content}};
  }
  static json Files(const std::vector<std::string>& names) {
    json out = json::array();
    for (const std::string& n : names) out.push_back(File(n));
    return out;
  }
  static std::vector<std::string> Names(size_t n, const std::string& prefix = "f") {
    std::vector<std::string> out;
    for (size_t k = 0; k < n; ++k) out.push_back(prefix + std::to_string(k));
    return out;
  }

  // The record without what differs from one run to another (the times,
  // and fingerprints, which hold inode numbers).
  json Comparable() const {
    json r = Record();
    for (auto& [id, e] : r["resources"].items()) {
      e.erase("applied_at");
      for (auto& w : e["written"]) w.erase("fingerprint");
    }
    return r;
  }

  void Forget() {
    std::filesystem::remove_all(Root("/srv"));
    store_.text.reset();
    store_.intent.reset();
  }

  std::unique_ptr<fakes::FaultyFileSystem> root_faulty_;
  fakes::KillSwitch kill_;
};

TEST_F(ChunkedTest, EndsAsTheWholePassEnds) {
  json decl = Decl(Files(Names(10)));
  decl["resources"][4]["kind"] = "credential";
  decl["resources"][4]["mode"] = "0600";
  std::vector<std::string> chunked, whole;
  ApplyReport c = Apply(decl, kChunk, &chunked);
  ASSERT_EQ(c.result, ApplyResult::kOk) << c.error;
  EXPECT_EQ(Stats(), 20u) << "each path looked at twice: checked, then carried";
  EXPECT_EQ(c.resources, 10u);
  json record = Comparable();
  std::string credential = testing::ReadText(Root("/srv/f4.conf"));

  Forget();
  size_t before = Stats();
  ApplyReport w = Apply(decl, /*chunk=*/0, &whole);
  ASSERT_EQ(w.result, ApplyResult::kOk) << w.error;
  EXPECT_EQ(Stats() - before, 10u) << "the whole pass";
  EXPECT_EQ(chunked, whole);
  EXPECT_EQ(record, Comparable());
  EXPECT_EQ(credential, testing::ReadText(Root("/srv/f4.conf")));
  EXPECT_EQ(c.declaration_digest, w.declaration_digest);
  EXPECT_EQ(c.generation, w.generation);
  EXPECT_EQ(record["settled_declaration_digest"], c.declaration_digest);
  EXPECT_FALSE(store_.intent.has_value());

  // And what it recorded proves the next apply a no-op, outcome by outcome
  // in declaration order (each entry's position is its place in the whole
  // declaration, not in its chunk).
  Forget();
  Apply(decl);
  std::vector<std::string> again;
  ApplyReport n = Apply(decl, kChunk, &again);
  EXPECT_TRUE(n.from_record);
  ASSERT_EQ(again.size(), 10u);
  for (size_t k = 0; k < 10; ++k) {
    EXPECT_THAT(again[k], HasSubstr("unchanged f" + std::to_string(k) + ":"));
  }
}

// What the whole pass takes, it takes alone: nothing is looked at twice.
TEST_F(ChunkedTest, SmallOrMixedDeclarationsAndRecordedMachinesGoWhole) {
  auto looks = [&](const json& decl, size_t chunk) {
    Forget();
    size_t before = Stats();
    Apply(decl, chunk);
    return Stats() - before;
  };
  json with_service = Decl(Files(Names(10)));
  with_service["resources"].push_back(
      {{"id", "web"}, {"kind", "service"}, {"unit", "web.service"}, {"state", "stopped"}});
  services_.AddUnit("web.service", {});
  json with_directory = Decl(Files(Names(10)));
  with_directory["resources"].push_back({{"id", "d"}, {"kind", "directory"}, {"path", "/srv/d"}});
  json unit_file = Decl(Files(Names(10)));
  unit_file["resources"][7]["path"] = "/etc/systemd/system/x.service";
  for (const json& decl : {Decl(Files(Names(5))), with_service, with_directory, unit_file}) {
    EXPECT_EQ(looks(decl, kChunk), looks(decl, 0)) << decl.dump();
  }
  // A record with entries: what is dropped, matched and kept needs it whole.
  json decl = Decl(Files(Names(10)));
  Forget();
  Apply(Decl(Files(Names(2))));
  size_t before = Stats();
  ASSERT_EQ(Apply(decl).result, ApplyResult::kOk);
  EXPECT_EQ(Stats() - before, 10u);
  EXPECT_EQ(looks(decl, kChunk), 20u) << "and without one, it is carried in chunks";
}

TEST_F(ChunkedTest, ARefusalInALaterChunkIsTheWholePassesAndWritesNothing) {
  // A symlink on the way out of the root, met only by the last chunk.
  std::filesystem::create_directories(Root("/srv"));
  std::filesystem::create_symlink(dir_.Sub("artifacts"), Root("/srv/out"));
  struct Case {
    const char* field;
    json value;
    size_t at;
    const char* says;
  } cases[] = {
      {"id", "f1", 8, "resource f1, field id: duplicate id (also resource #1)"},
      {"path", "/srv/f0.conf", 9, "also claimed by resource f0"},
      {"path", "/var/lib/mesh-host/x", 9, "overlaps the host's state directory"},
      {"path", "/srv/out/x.conf", 9, "resource f9, field path"},
      {"mode", "0999", 9, "resource f9, field mode: \"0999\" is not an octal mode"},
      {"path", "/srv/f0.conf/x", 9, "lies under the path of resource f0, which is not a directory"},
  };
  for (const Case& c : cases) {
    json decl = Decl(Files(Names(10)));
    decl["resources"][c.at][c.field] = c.value;
    ApplyReport r = Apply(decl);
    EXPECT_EQ(r.result, ApplyResult::kRefused) << c.says;
    EXPECT_THAT(r.error, HasSubstr(c.says));
  }
  json other_machine = Decl(Files(Names(10)));
  other_machine["machine"] = "edge-2";
  ApplyReport r = Apply(other_machine);
  EXPECT_EQ(r.result, ApplyResult::kRefused);
  EXPECT_THAT(r.error, HasSubstr("is not this machine"));

  for (size_t k = 0; k < 10; ++k) {
    EXPECT_FALSE(testing::Exists(Root("/srv/f" + std::to_string(k) + ".conf"))) << k;
  }
  EXPECT_FALSE(store_.text.has_value());
  EXPECT_FALSE(store_.intent.has_value());
}

// A declaration read from a file `at`, as FileDeclaration opens one
// through a link.
class ReadAt : public ports::DeclarationSource {
 public:
  ReadAt(const nlohmann::json& decl, std::string at) : text_(decl.dump()), at_(std::move(at)) {}
  core::Result<std::string> Digest() override { return core::Sha256Hex(text_); }
  core::Result<std::string_view> Text() override { return std::string_view(text_); }
  std::optional<std::string> OpenedAt() const override { return at_; }

 private:
  std::string text_, at_;
};

// Under `mesh-host run` the mesh re-points --declaration's link between
// applies. Each apply guards the file it read, not the one the link led to
// when the host started: in chunks, and whole by the same host later.
TEST_F(ChunkedTest, EachApplyGuardsTheDeclarationWhereItOpenedIt) {
  ReconcilerPorts ports = Ports();
  ports.root = root_faulty_.get();
  ReconcilerOptions options = Options();
  options.chunk = kChunk;
  options.dirs.root = dir_.Sub("root");
  options.dirs.declaration = Root("/etc/mesh/current.json");
  options.dirs.resolved.declaration = Root("/etc/mesh/gen-12.json");
  Reconciler host(ports, options);
  json over_new = Decl(Files(Names(10)));  // enough to be carried in chunks
  over_new["resources"][9]["path"] = "/etc/mesh/gen-13.json";
  const std::string says = "overlaps the declaration itself (--declaration " +
                           Root("/etc/mesh/current.json") + ", which is " +
                           Root("/etc/mesh/gen-13.json") + ")";

  ReadAt first(over_new, Root("/etc/mesh/gen-13.json"));
  ApplyReport r = host.Apply(first);
  EXPECT_EQ(r.result, ApplyResult::kRefused);
  EXPECT_THAT(r.error, HasSubstr(says));

  ReadAt at_start(Decl(Files(Names(10))), Root("/etc/mesh/gen-12.json"));
  ASSERT_EQ(host.Apply(at_start).result, ApplyResult::kOk);
  ReadAt swapped(over_new, Root("/etc/mesh/gen-13.json"));
  r = host.Apply(swapped);
  EXPECT_EQ(r.result, ApplyResult::kRefused);
  EXPECT_THAT(r.error, HasSubstr(says));
  EXPECT_FALSE(testing::Exists(Root("/etc/mesh/gen-13.json")));
}

TEST_F(ChunkedTest, AWriteThatFailsFailsItsResourceAloneAndIsTriedAgain) {
  root_faulty_->FailWrites("/srv/f7.conf", ENOSPC);
  std::vector<std::string> lines;
  ApplyReport r = Apply(Decl(Files(Names(10))), kChunk, &lines);
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_EQ(r.failed, 1u);
  ASSERT_EQ(lines.size(), 10u);
  EXPECT_THAT(lines[7], HasSubstr("failed f7"));
  EXPECT_TRUE(testing::Exists(Root("/srv/f9.conf"))) << "the chunks after it were carried";
  EXPECT_FALSE(Record()["resources"].contains("f7"));
  EXPECT_EQ(Record()["settled_declaration_digest"], "");
  ASSERT_TRUE(store_.Owed().failed.contains("f7"))
      << "what it left failed is told on, as after a whole pass";
  EXPECT_EQ(store_.Owed().failed.size(), 1u);
  // What an earlier apply left failed owes nothing: a first apply after it
  // is still carried in chunks.
  store_.text.reset();
  std::filesystem::remove_all(Root("/srv"));
  size_t before = Stats();
  Apply(Decl(Files(Names(10))));
  EXPECT_EQ(Stats() - before, 20u) << "each path looked at twice: in chunks";
  root_faulty_->Heal();
  r = Apply(Decl(Files(Names(10))));
  EXPECT_EQ(r.result, ApplyResult::kOk) << r.error;
  EXPECT_EQ(testing::ReadText(Root("/srv/f7.conf")), "f7\n");
}

// The records a chunked and a whole first apply leave in a real state
// directory, the chunked one's entries spilled to disk and sorted at the
// commit: ids given in another order than theirs.
TEST_F(ChunkedTest, TheRecordOnDiskIsTheWholePasses) {
  json decl = Decl(Files({"zeta", "b", "m10", "m2", "a", "y", "c", "m1", "x"}));
  auto record_of = [&](size_t chunk) {
    Forget();
    std::string state = dir_.Sub("state-" + std::to_string(chunk));
    auto store = adapters::FileRecordStore::Open(state, /*create=*/true);
    EXPECT_TRUE(store.has_value()) << store.error().message;
    ReconcilerPorts ports = Ports();
    ports.root = root_faulty_.get();
    ports.records = store->get();
    ReconcilerOptions options = Options();
    options.chunk = chunk;
    size_t before = Stats();
    ApplyReport r = Reconciler(ports, options).Apply(decl.dump());
    EXPECT_EQ(r.result, ApplyResult::kOk) << r.error;
    EXPECT_EQ(Stats() - before, chunk == 0 ? 9u : 18u);
    std::string text = testing::ReadText(state + "/state.json");
    // The ids in the order the file has them (one entry a line), then the
    // entries without what differs from run to run.
    std::string ids;
    for (size_t at = text.find("\n{\"id\":"); at != std::string::npos;
         at = text.find("\n{\"id\":", at + 1)) {
      ids += text.substr(at + 7, text.find(',', at) - at - 7) + " ";
    }
    json record = testing::RecordJson(text);
    for (auto& [id, e] : record["resources"].items()) {
      e.erase("applied_at");
      for (auto& w : e["written"]) w.erase("fingerprint");
    }
    return ids + record.dump();
  };
  std::string chunked = record_of(kChunk);
  EXPECT_EQ(chunked, record_of(0));
  EXPECT_THAT(chunked, ::testing::StartsWith(R"("a" "b" "c" "m1" "m10" "m2" "x" "y" "zeta" )"));
}

// A file gone between the first pass and its chunk is created, and named
// in the intent before it is: lost with the record, it is still the
// host's (pruned when dropped).
TEST_F(ChunkedTest, AFileGoneBetweenThePassesIsNamedBeforeItIsCreated) {
  std::filesystem::create_directories(Root("/srv"));
  testing::WriteText(Root("/srv/f7.conf"), "f7\n");
  root_faulty_->before_write = [&](const std::string&) {
    std::filesystem::remove(Root("/srv/f7.conf"));
    root_faulty_->before_write = nullptr;
  };
  store_.fail_saves = true;  // written, then the record not saved
  Apply(Decl(Files(Names(10))));
  store_.fail_saves = false;
  ASSERT_TRUE(testing::Exists(Root("/srv/f7.conf")));
  json without = Decl(Files(Names(10)), 2);
  without["resources"].erase(7);
  Apply(without);
  EXPECT_FALSE(testing::Exists(Root("/srv/f7.conf"))) << "created by the host: removed";
}

// A file put at a declared path by someone else between the first pass and
// its chunk was there before the host wrote it: once the apply has
// settled, the intent no longer names it, and dropping it leaves it.
TEST_F(ChunkedTest, AFileAnotherPutThereMeanwhileIsNotNamedAtTheCommit) {
  root_faulty_->before_write = [&](const std::string&) {
    testing::WriteText(Root("/srv/f8.conf"), "theirs\n");
    root_faulty_->before_write = nullptr;
  };
  store_.fail_saves = true;
  Apply(Decl(Files(Names(10))));
  store_.fail_saves = false;
  EXPECT_THAT(store_.Owed().creating, ::testing::Not(::testing::Contains("/srv/f8.conf")));
  EXPECT_THAT(store_.Owed().creating, ::testing::Contains("/srv/f9.conf"));
  json without = Decl(Files(Names(10)), 2);
  without["resources"].erase(8);
  Apply(without);
  EXPECT_TRUE(testing::Exists(Root("/srv/f8.conf"))) << "there before the host: left";
}

// Out of memory in a chunk, after earlier chunks wrote: the apply fails as
// the whole pass does when memory runs out, and the intent still says an
// apply was under way, so the next one sweeps and finishes.
TEST_F(ChunkedTest, AnExceptionInAChunkIsTheApplysNotTheDeclarations) {
  root_faulty_->before_write = [&](const std::string& path) {
    if (path == "/srv/f7.conf") throw std::bad_alloc();
  };
  ApplyReport r = Apply(Decl(Files(Names(10))));
  root_faulty_->before_write = nullptr;
  EXPECT_EQ(r.result, ApplyResult::kFailed);
  EXPECT_THAT(r.error, HasSubstr("out of memory during the apply"));
  EXPECT_TRUE(store_.Applying());
  EXPECT_THAT(store_.Owed().creating, ::testing::Contains("/srv/f9.conf"));
  ApplyReport next = Apply(Decl(Files(Names(10))));
  EXPECT_EQ(next.result, ApplyResult::kOk) << next.error;
  for (const std::string& n : Names(10)) {
    EXPECT_EQ(testing::ReadText(Root("/srv/" + n + ".conf")), n + "\n");
  }
}

// Killed before each of its steps in turn (every write, flush, intent and
// record save), then applied again without the first four files: what the
// dead apply created of them is removed, the rest is as declared, nothing
// temporary is left, and the apply after finds nothing to do.
TEST_F(ChunkedTest, KilledAtEveryStepTheNextApplyLeavesTheMachineRight) {
  std::vector<std::string> all = Names(4, "gone");
  for (const std::string& n : Names(8)) all.push_back(n);
  std::vector<std::string> kept = Names(8);
  int kills = 0;
  for (int step = 0;; ++step) {
    SCOPED_TRACE("killed before step " + std::to_string(step));
    Forget();
    kill_.KillAt(step);
    Apply(Decl(Files(all)));
    bool killed = kill_.Killed();
    kill_.Disarm();
    ApplyReport next = Apply(Decl(Files(kept), 2));
    EXPECT_EQ(next.result, ApplyResult::kOk) << next.error;
    for (const std::string& n : Names(4, "gone")) {
      EXPECT_FALSE(testing::Exists(Root("/srv/" + n + ".conf"))) << n << " orphaned";
    }
    std::vector<std::string> entries;
    for (const auto& e : std::filesystem::directory_iterator(Root("/srv"))) {
      entries.push_back(e.path().filename().string());
    }
    EXPECT_EQ(entries.size(), kept.size()) << "temporaries left behind";
    for (const std::string& n : kept) {
      EXPECT_EQ(testing::ReadText(Root("/srv/" + n + ".conf")), n + "\n");
    }
    std::vector<std::string> lines;
    Apply(Decl(Files(kept), 2), kChunk, &lines);
    std::vector<std::string> outcomes;
    outcomes.reserve(lines.size());
    for (const std::string& l : lines) outcomes.push_back(l.substr(0, l.find(' ')));
    EXPECT_THAT(outcomes, Each(std::string("unchanged")));
    if (!killed) break;
    ++kills;
  }
  EXPECT_GE(kills, 6) << "intent, four chunks' writes and flushes, record";
}

}  // namespace
}  // namespace mesh::reconcile
