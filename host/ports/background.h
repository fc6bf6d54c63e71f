// Background: work an apply hands to another thread while it goes on.
//
// The full pass looks at every recorded path while the declaration is
// still being read and parsed, on a second core, instead of after; the
// record proof stats half of a large batch there while it stats the other.
// What runs here must not throw and must touch nothing the caller uses
// until Wait() returns.
#pragma once

#include <functional>
#include <memory>

namespace mesh::ports {

class Background {
 public:
  class Job {
   public:
    // Waits for the work too, if Wait() was not called.
    virtual ~Job() = default;
    // Returns once the work has ended; false when it did not end well (it
    // threw), and what it was to produce must not be used.
    virtual bool Wait() = 0;
  };

  virtual ~Background() = default;
  // Starts `work`; null when it could not be started (no thread to be had):
  // the caller then goes without.
  virtual std::unique_ptr<Job> Start(std::function<void()> work) = 0;
};

}  // namespace mesh::ports
