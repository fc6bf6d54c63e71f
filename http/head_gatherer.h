// HeadGatherer: where every connection waits until a whole request head
// has come, all of them on one thread (epoll). A client that connects and
// says nothing, or trickles a byte a second, costs the daemon a descriptor
// and the bytes it sent — never a worker — so the workers are free for
// the requests that are whole, /healthz among them.
//
// Under this thread a connection: finishes its TLS handshake, then
// gathers bytes until its head is whole (handed on, in arrival order),
// its deadline passes or its byte budget is spent (cut), or a new one
// needs its room (shed). The one shed is the longest silent of those that
// have sent nothing yet, and only when there are none, the one that sent
// its last byte longest ago: a client that connects and says nothing
// takes the room of its own kind, never of one midway through a TLS
// handshake or a head. A connection answered and kept alive comes back
// here, silent, to wait for the next.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "host/core/result.h"
#include "http/connection.h"

namespace mesh::http {

class HeadGatherer {
 public:
  // `ready` is called on the gatherer's thread with each connection whose
  // head is whole (`buffered` begins with it); it must not block.
  using Ready = std::function<void(std::unique_ptr<Connection>)>;

  // `tally` counts every connection open, held here or not: past
  // `limits.max_connections`, a new one sheds the oldest waiting here.
  HeadGatherer(const ConnectionLimits& limits, ConnectionTally& tally, Ready ready);
  ~HeadGatherer();  // Stop()
  HeadGatherer(const HeadGatherer&) = delete;
  HeadGatherer& operator=(const HeadGatherer&) = delete;

  core::Status Start();
  // From any thread: a new connection (waiting while too many new ones
  // are not yet taken in), or one answered and kept alive. After Stop(),
  // the connection is closed.
  void Hold(std::unique_ptr<Connection> c);
  // Closes every connection held and joins the thread.
  void Stop();

 private:
  struct Held {
    std::unique_ptr<Connection> c;
    bool talking = false;               // in talking_ (else in silent_)
    std::list<int>::iterator in_order;  // its place there
    uint32_t events = 0;                // what epoll waits for (0: not yet added)
  };
  // What reading a connection came to.
  enum class Gathered { kWaitRead, kWaitWrite, kWhole, kClose };

  void Run();
  void TakeInbox();
  void Admit(std::unique_ptr<Connection> c);
  // Sheds one held connection for a new one; false when none is held.
  bool MakeRoom();
  void Drop(int sock);
  // Takes the connection out of its list, for good or to move it.
  void Unlist(Held& h);
  void Advance(int sock);
  void Expire(SteadyClock::time_point now);
  Gathered Gather(Connection& c);
  // Bytes the connection has sent so far (TLS records included).
  static uint64_t BytesIn(const Connection& c);

  const ConnectionLimits limits_;
  ConnectionTally& tally_;
  const Ready ready_;
  int epoll_ = -1;
  int wake_ = -1;  // an eventfd: the inbox has something, or stop
  std::thread thread_;

  std::mutex mu_;
  std::condition_variable room_;  // the inbox has room again
  std::vector<std::unique_ptr<Connection>> inbox_;
  bool running_ = false;  // Start() succeeded
  // New connections in the inbox, counted in the tally but not yet here.
  std::atomic<size_t> queued_{0};
  bool stopping_ = false;

  // The gatherer thread's own: connections by socket; their sockets in
  // two lists, each least recent first: those that have sent nothing
  // since they came here, and those that have. Deadlines are found by a
  // sweep a few times a second: a few hundred comparisons, and no
  // structure that grows with churn.
  std::unordered_map<int, Held> held_;
  std::list<int> silent_;
  std::list<int> talking_;
  SteadyClock::time_point next_sweep_{};
};

}  // namespace mesh::http
