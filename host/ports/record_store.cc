#include "host/ports/record_store.h"

#include <utility>

namespace mesh::ports {
namespace {

// Gathers the entries in a Record and saves it whole.
class GatheringBuilder : public RecordBuilder {
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
    return store_.Save(std::move(record_));
  }

 private:
  RecordStore& store_;
  core::Record record_;
};

}  // namespace

core::Result<std::unique_ptr<RecordBuilder>> RecordStore::BuildRecord() {
  return std::make_unique<GatheringBuilder>(*this);
}

}  // namespace mesh::ports
