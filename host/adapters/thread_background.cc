#include "host/adapters/thread_background.h"

#include <exception>
#include <system_error>
#include <thread>
#include <utility>

namespace mesh::adapters {

namespace {

class ThreadJob : public ports::Background::Job {
 public:
  explicit ThreadJob(std::function<void()> work) : work_(std::move(work)) {
    thread_ = std::thread([this] {
      // An exception leaving a thread ends the process: it ends here, and
      // Wait() says the work is not to be used.
      try {
        work_();
        ok_ = true;
      } catch (...) {
        ok_ = false;
      }
    });
  }
  ~ThreadJob() override { Join(); }

  bool Wait() override {
    Join();
    return ok_;
  }

 private:
  void Join() {
    if (thread_.joinable()) thread_.join();
  }

  std::function<void()> work_;
  bool ok_ = false;  // written by the thread, read after the join
  std::thread thread_;
};

}  // namespace

std::unique_ptr<ports::Background::Job> ThreadBackground::Start(std::function<void()> work) {
  try {
    return std::make_unique<ThreadJob>(std::move(work));
  } catch (const std::system_error&) {
    return nullptr;  // no thread (a tasks limit): the caller does without
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}

}  // namespace mesh::adapters
