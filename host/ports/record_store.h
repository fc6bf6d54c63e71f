// RecordStore: where the record lives between applies.
//
// Load distinguishes "no record yet" (nullptr) from a record that cannot be
// read (an error), so the reconciler can say which it met; either way it
// adopts files that already match rather than rewriting them. The record is
// shared and immutable: a store may hand out the same one again (the
// daemon's no-op copies nothing).
#pragma once

#include <memory>

#include "host/core/record.h"
#include "host/core/result.h"

namespace mesh::ports {

class RecordStore {
 public:
  virtual ~RecordStore() = default;
  virtual core::Result<std::shared_ptr<const core::Record>> Load() = 0;
  // Atomic: the old record or the new one survives a crash, never a mix.
  virtual core::Status Save(const core::Record& record) = 0;

  // True when an earlier apply was interrupted (kill -9, power loss) after
  // it began writing: its temporary files need sweeping. Removes the
  // store's own leftovers (a half-written record or mark) either way.
  virtual core::Result<bool> Interrupted() = 0;
  // Marks an apply in progress, durably, before its first write. An apply
  // that writes nothing never calls it: the no-op costs no fsync.
  virtual core::Status BeginApply() = 0;
  virtual core::Status EndApply() = 0;
};

}  // namespace mesh::ports
