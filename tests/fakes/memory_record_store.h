// MemoryRecordStore: a RecordStore that keeps the serialized record in a
// string, so tests see exactly the bytes state.json would hold.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "host/ports/record_store.h"
#include "tests/fakes/kill_switch.h"

namespace mesh::fakes {

class MemoryRecordStore : public ports::RecordStore {
 public:
  // Walked in memory (`stream` false), the record parsed is kept and handed
  // out again until the text changes, as the daemon's store keeps it.
  core::Result<std::shared_ptr<const core::Record>> Load() override {
    ++loads;
    if (fail_loads.has_value()) return std::unexpected(*fail_loads);
    if (!text.has_value()) return std::shared_ptr<const core::Record>();
    if (!stream && kept_ != nullptr && kept_text_ == *text) return kept_;
    auto r = core::ParseRecord(*text, limits);
    if (!r) return std::unexpected(r.error());
    auto loaded = std::make_shared<const core::Record>(std::move(*r));
    if (!stream) {
      kept_ = loaded;
      kept_text_ = *text;
      ++version_;
    }
    return loaded;
  }
  std::optional<uint64_t> KeptRecordVersion() const override {
    return stream ? std::nullopt : std::optional<uint64_t>(version_);
  }
  // Streams the text as a one-shot apply streams a large state.json, a line
  // at a time; with `stream` false, walks a loaded record as the daemon's
  // store does.
  core::Result<bool> Scan(core::RecordVisitor& visitor) override {
    if (!stream) return RecordStore::Scan(visitor);
    if (fail_loads.has_value()) return std::unexpected(*fail_loads);
    if (!text.has_value()) return false;
    std::istringstream in(*text);
    return core::ScanRecord(in, visitor, limits);
  }
  core::Status Save(core::Record record) override {
    if (kill != nullptr && !kill->Alive()) return core::Ok();  // dead: nothing lands
    ++saves;
    if (fail_saves) return core::Fail("disk full (fake)");
    text = core::SerializeRecord(record);
    return core::Ok();
  }

  core::Result<core::Intent> LoadIntent() override {
    if (intent_load_error.has_value()) return std::unexpected(*intent_load_error);
    if (!intent.has_value()) return core::Intent{};
    return core::ParseIntent(*intent);
  }
  core::Status SaveIntent(const core::Intent& next) override {
    if (kill != nullptr && !kill->Alive()) return core::Ok();
    if (next.applying) ++marks;
    if (fail_intent_saves) return core::Fail("disk full (fake)");
    if (next.empty()) {
      intent.reset();
    } else {
      intent = core::SerializeIntent(next);
    }
    return core::Ok();
  }
  core::Result<core::LastGood> LoadLastGood() override {
    if (!last_good.has_value()) return core::LastGood{};
    return core::ParseLastGood(*last_good);
  }
  core::Status SaveLastGood(const core::LastGood& next, std::string_view machine) override {
    if (kill != nullptr && !kill->Alive()) return core::Ok();
    if (fail_last_good_saves) return core::Fail("disk full (fake)");
    for (const auto& [unit, kept] : next.units) {
      for (const auto& [id, r] : kept.resources) {
        if (keeps_artifacts && r.IsTree() && !artifacts.contains(r.sha256)) {
          named_not_kept.push_back(r.sha256);
        }
      }
    }
    if (next.empty()) {
      last_good.reset();
      return core::Ok();
    }
    auto text = core::SerializeLastGood(next, machine);
    if (!text) return std::unexpected(text.error());
    last_good = std::move(*text);
    return core::Ok();
  }
  DigestKey LoadDigestKey() override { return {digest_key, ""}; }
  // Gathers the entries in memory and saves them whole.
  core::Result<std::unique_ptr<ports::RecordBuilder>> BuildRecord() override {
    return std::make_unique<GatheringBuilder>(*this);
  }
  core::Status KeepArtifact(const std::string& sha256, const ArtifactReader& read) override {
    if (!keeps_artifacts) return core::Fail("this store keeps no bundles");
    if (kill != nullptr && !kill->Alive()) return core::Ok();
    if (artifacts.contains(sha256)) return core::Ok();
    auto bytes = read();
    if (!bytes) return std::unexpected(bytes.error());
    artifacts[sha256] = std::move(*bytes);
    return core::Ok();
  }
  core::Result<std::string> KeptArtifact(const std::string& sha256) override {
    auto it = artifacts.find(sha256);
    if (it == artifacts.end()) return core::Fail("no copy of " + sha256 + " is kept");
    return it->second;
  }
  core::Status KeepOnlyArtifacts(const std::set<std::string>& sha256s) override {
    if (kill != nullptr && !kill->Alive()) return core::Ok();
    std::erase_if(artifacts, [&](const auto& a) { return !sha256s.contains(a.first); });
    return core::Ok();
  }
  // What the last SaveIntent left (empty: no intent file).
  core::Intent Owed() const { return intent ? *core::ParseIntent(*intent) : core::Intent{}; }
  bool Applying() const { return Owed().applying; }
  // What kill -9 after an apply's first write leaves.
  void SetApplying() {
    core::Intent i = Owed();
    i.applying = true;
    intent = core::SerializeIntent(i);
  }

  std::optional<std::string> text;
  std::optional<std::string> intent;             // intent.json's bytes
  std::optional<std::string> last_good;          // last-good.json's bytes
  bool keeps_artifacts = true;                   // false: a store that keeps no bundles
  std::map<std::string, std::string> artifacts;  // kept bundles, by sha256
  // Bundles a saved last good named before their copy was kept.
  std::vector<std::string> named_not_kept;
  std::string digest_key = "this machine's secret (fake)";
  bool stream = true;
  int loads = 0;
  int saves = 0;
  int marks = 0;  // intents saved as applying: an apply that writes nothing makes none
  bool fail_saves = false;
  std::optional<core::Error> fail_loads;  // what Load (and a streamed Scan) fail with
  core::RecordLimits limits;              // the reader's bounds (lowered: reached by small texts)
  bool fail_intent_saves = false;
  // What LoadIntent fails with, when set (a state directory not trusted).
  std::optional<core::Error> intent_load_error;
  bool fail_last_good_saves = false;
  KillSwitch* kill = nullptr;

 private:
  class GatheringBuilder : public ports::RecordBuilder {
   public:
    explicit GatheringBuilder(RecordStore& store) : store_(store) {}
    core::Status Add(const std::string& id, const core::RecordEntry& entry) override {
      if (!record_.resources.emplace(id, entry).second) {
        return core::Fail("record entry " + id + " added twice");
      }
      return core::Ok();
    }
    core::Status Commit(const core::Record& header) override {
      record_.want_version = header.want_version;
      record_.settled_declaration_digest = header.settled_declaration_digest;
      record_.machine = header.machine;
      record_.generation = header.generation;
      record_.declaration_digest = header.declaration_digest;
      record_.owners = header.owners;
      return store_.Save(std::move(record_));
    }

   private:
    RecordStore& store_;
    core::Record record_;
  };

  std::shared_ptr<const core::Record> kept_;
  std::string kept_text_;
  uint64_t version_ = 0;
};

}  // namespace mesh::fakes
