// BoundedServer: httplib's Server with the limits the library (0.11, as
// Debian 12 ships it) does not have: it bounds neither the size of a
// request's headers, nor the time to receive them, nor the connections it
// holds. Without them, one client sending 30 MB of headers grows the
// daemon by half a gigabyte, sixteen clients trickling a header line every
// three seconds hold every worker (so /healthz is never answered), and idle
// connections use up the descriptors the reconcile needs.
//
// Every accepted connection waits in the head gatherer (head_gatherer.h)
// until its request head is whole, and only then takes a worker; the
// limits are ConnectionLimits (connection.h):
//   - at most `max_connections` held; past that, a new one takes the room
//     of the one waiting longest for its head;
//   - a request (line and headers) must arrive within `request_head`;
//   - a connection reads at most `bytes_per_connection` and lives at most
//     `connection`, then is closed;
//   - between keep-alive requests it may idle for `idle`;
//   - with a TLS context, the handshake must be done within `request_head`
//     (a plain-HTTP client gets nothing but the connection closed), and
//     every byte goes through OpenSSL under the same budget and deadlines;
//   - a request the server says is slow (a password to hash) waits for one
//     of `slow_workers`, taking turns by client address; the others never
//     wait behind it;
//   - a request the server says is brief (/healthz: a few bytes, never a
//     wait on the client) is taken by `brief_workers`, which take nothing
//     else, and by the others when they are idle: clients that do not read
//     large answers hold the other workers for their write deadline, never
//     those.
#pragma once

#include <httplib.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "http/connection.h"
#include "http/tls_context.h"

namespace mesh::http {

class BoundedServer : public httplib::Server {
 public:
  // `on_idle`, when given, is called (on the server's own threads) each
  // time the last open connection has closed: the moment to tidy up after
  // a burst of requests without competing with one.
  explicit BoundedServer(ConnectionLimits limits = {}, std::function<void()> on_idle = nullptr);
  ~BoundedServer() override { ReleaseListener(); }

  // TLS for the connections accepted from now on (null: plain HTTP).
  void SetTls(std::shared_ptr<const TlsContext> tls);
  // Which whole request heads go to the slow lane (set before listening;
  // called on the gatherer's thread, so it must be quick).
  void SetSlow(std::function<bool(std::string_view head)> slow) { slow_ = std::move(slow); }
  // Which whole request heads go to the brief lane (as SetSlow; a slow one
  // is slow first).
  void SetBrief(std::function<bool(std::string_view head)> brief) { brief_ = std::move(brief); }

  // After bind: the kernel's queue of connections not yet accepted, from
  // the library's 5 to the system's most. With 5, a client opening
  // connections in a loop fills it, and everyone else's connect is
  // dropped and retried a second later.
  void WidenBacklog();

  // After bind: a descriptor of the listening socket that this server
  // owns. httplib closes its own on an accept error and keeps the number,
  // which another thread may open a file under before its loop is over:
  // only a descriptor of our own is safe to act on then. False when none
  // could be made (no descriptor left).
  bool HoldListener();
  // Makes listen_after_bind() return, at any moment: before its loop has
  // begun (accept fails at once), during it, or after it ended on its own.
  // Used instead of httplib's stop(), which acts on its number.
  void Interrupt();
  // Lets the socket go, once listen_after_bind() has returned.
  void ReleaseListener();

  // Whether the calling thread is a slow worker: only there may a request
  // wait for a password's hash (a fast worker answers 401 instead).
  static bool OnSlowWorker();

  // Why this server cannot serve, when it found it could not (its head
  // gatherer or its workers could not start): it then stops listening, so
  // that listen_after_bind() returns. Empty otherwise.
  std::string failure() const;

  // Connections open (held, queued or being answered).
  size_t open() const { return tally_.open.load(); }
  // Connections closed to make room, or turned away with none.
  uint64_t shed() const { return tally_.shed.load(); }
  // Connections cut for a deadline or the byte budget.
  uint64_t cut() const { return tally_.cut.load(); }

 private:
  class Queue;
  class LimitedStream;

  // Called by httplib's accepting thread, through Queue::enqueue: the
  // socket goes to the gatherer, and this returns at once.
  bool process_and_close_socket(socket_t sock) override;
  // Answers the one request whose head `c` holds, on a worker; returns
  // the connection when it is to be kept alive.
  std::unique_ptr<Connection> Serve(std::unique_ptr<Connection> c);

  std::shared_ptr<const TlsContext> Tls() const;
  void Fail(std::string why);

  ConnectionLimits limits_;
  ConnectionTally tally_;
  std::atomic<int> listening_{-1};  // the socket bound last: httplib's number
  std::mutex held_mu_;
  int held_ = -1;  // our own descriptor of it (HoldListener)
  std::function<bool(std::string_view)> slow_;
  std::function<bool(std::string_view)> brief_;
  mutable std::mutex failure_mu_;
  std::string failure_;
  mutable std::mutex tls_mu_;
  std::shared_ptr<const TlsContext> tls_;
};

}  // namespace mesh::http
