// One accepted HTTP connection, the limits every connection lives under,
// and the tally of those open. A connection is owned by one thread at a
// time: the head gatherer while it waits for a request head
// (head_gatherer.h), then the worker that answers that request
// (bounded_server.h), then the gatherer again if it is kept alive.
#pragma once

#include <openssl/ssl.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "http/tls_context.h"

namespace mesh::http {

using SteadyClock = std::chrono::steady_clock;

struct ConnectionLimits {
  // Workers that answer requests whose head is whole; `slow_workers` of
  // them take the requests that need a password hashed (basic_auth.h),
  // which never wait for a fast one and never hold more than these.
  size_t workers = 16;
  size_t slow_workers = 1;
  // Of the others, kept for brief requests (BoundedServer::SetBrief); at
  // least one worker takes the rest.
  size_t brief_workers = 1;
  // Held at once, waiting for a head or being answered. Past that, the
  // connection waiting longest for its head is closed to make room: a
  // client that connects and says nothing cannot keep a new one out.
  size_t max_connections = 512;
  // Requests that need a password hashed, queued for the slow workers;
  // past that, the oldest of the address with the most queued is closed.
  size_t max_slow_queued = 64;
  std::chrono::milliseconds request_head{2000};
  std::chrono::milliseconds connection{30000};
  std::chrono::milliseconds idle{2000};
  std::chrono::milliseconds write{5000};
  size_t bytes_per_connection = 64UL * 1024;
  size_t requests_per_connection = 100;
};

// Connections open, what became of those closed early, and what to do
// when the last one closes.
struct ConnectionTally {
  std::atomic<size_t> open{0};
  // Closed to make room for a new one, or turned away with no room.
  std::atomic<uint64_t> shed{0};
  // Closed for a deadline or the byte budget.
  std::atomic<uint64_t> cut{0};
  // Called on whichever thread closed the last open connection.
  std::function<void()> on_idle;
};

struct SslFree {
  void operator()(SSL* ssl) const { SSL_free(ssl); }
};

struct Connection {
  // Counts itself in `tally` (which outlives it) until destroyed.
  Connection(int sock, const ConnectionLimits& limits, ConnectionTally* tally);
  // A best-effort close_notify, never waited on; the socket closed.
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  const int sock;
  // The TLS context of the moment it was accepted (null: plain HTTP), and
  // its session, made once the client has sent something: a connection
  // that says nothing costs no TLS state.
  std::shared_ptr<const TlsContext> tls;
  std::unique_ptr<SSL, SslFree> ssl;
  bool handshaken = false;
  std::string peer;  // the client's address, for the slow lane's turns
  // Read from the client and not yet parsed: a head, and maybe the start
  // of what follows it.
  std::string buffered;
  size_t scanned = 0;                  // bytes of `buffered` known to hold no head's end
  size_t budget;                       // bytes the client may still send
  size_t served = 0;                   // requests answered on it
  const SteadyClock::time_point ends;  // the end of its life
  // The end of its current wait: for a head's first byte (`idle`, or
  // `request_head` for the first request), then for the rest of it.
  SteadyClock::time_point deadline;
  bool started = false;  // the current request's first byte has come
  // Set when the connection is cut for a deadline or its byte budget.
  bool cut = false;

 private:
  ConnectionTally* const tally_;
};

// Where the head that `buffered` begins with ends (one past its blank
// line), or 0 while it is not whole. Resumes from `scanned`.
size_t HeadEnd(Connection& c);

}  // namespace mesh::http
