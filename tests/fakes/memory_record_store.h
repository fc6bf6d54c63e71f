// MemoryRecordStore: a RecordStore that keeps the serialized record in a
// string, so tests see exactly the bytes state.json would hold.
#pragma once

#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "host/ports/record_store.h"

namespace mesh::fakes {

class MemoryRecordStore : public ports::RecordStore {
 public:
  core::Result<std::shared_ptr<const core::Record>> Load() override {
    ++loads;
    if (!text.has_value()) return std::shared_ptr<const core::Record>();
    auto r = core::ParseRecord(*text);
    if (!r) return std::unexpected(r.error());
    return std::make_shared<const core::Record>(std::move(*r));
  }
  // Streams the text as a one-shot apply streams state.json; with `stream`
  // false, walks a loaded record as the daemon's store does.
  core::Result<bool> Scan(core::RecordVisitor& visitor) override {
    if (!stream) return RecordStore::Scan(visitor);
    if (!text.has_value()) return false;
    std::istringstream in(*text);
    return core::ScanRecord(in, visitor);
  }
  core::Status Save(const core::Record& record) override {
    ++saves;
    if (fail_saves) return core::Fail("disk full (fake)");
    text = core::SerializeRecord(record);
    return core::Ok();
  }

  core::Result<bool> Interrupted() override { return applying; }
  core::Status BeginApply() override {
    ++marks;
    applying = true;
    return core::Ok();
  }
  core::Status EndApply() override {
    applying = false;
    return core::Ok();
  }

  std::optional<std::string> text;
  bool applying = false;
  bool stream = true;
  int loads = 0;
  int saves = 0;
  int marks = 0;  // BeginApply calls: an apply that writes nothing makes none
  bool fail_saves = false;
};

}  // namespace mesh::fakes
