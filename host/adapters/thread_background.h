// ThreadBackground: the Background port on a thread of its own per job.
//
// A job is a few milliseconds of work (a full pass's look ahead, half of a
// large batch of the record proof's stats), so a thread is made for it and
// joined after: nothing idles between applies.
// The new thread inherits the caller's blocked signals (the daemon blocks
// its own before any thread exists), so none is delivered there.
#pragma once

#include "host/ports/background.h"

namespace mesh::adapters {

class ThreadBackground : public ports::Background {
 public:
  std::unique_ptr<Job> Start(std::function<void()> work) override;
};

}  // namespace mesh::adapters
