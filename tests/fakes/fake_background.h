// A Background in each of the ways a job can go: on a real thread, failed
// (the work never ran, Wait() says so), or not started at all. Counts the
// jobs asked for.
#pragma once

#include <functional>
#include <memory>
#include <utility>

#include "host/adapters/thread_background.h"
#include "host/ports/background.h"

namespace mesh::fakes {

class FakeBackground : public ports::Background {
 public:
  enum class Mode { kThread, kFails, kNoThread };
  explicit FakeBackground(Mode mode) : mode_(mode) {}

  std::unique_ptr<Job> Start(std::function<void()> work) override {
    ++started;
    switch (mode_) {
      case Mode::kThread:
        return thread_.Start(std::move(work));
      case Mode::kFails:
        return std::make_unique<FailedJob>();
      case Mode::kNoThread:
        break;
    }
    return nullptr;
  }
  int started = 0;

 private:
  struct FailedJob : Job {
    bool Wait() override { return false; }
  };
  Mode mode_;
  adapters::ThreadBackground thread_;
};

}  // namespace mesh::fakes
