// BoundedServer: httplib's Server with the limits the library (0.11, as
// Debian 12 ships it) does not have: it bounds neither the size of a
// request's headers, nor the time to receive them, nor the connections it
// holds. Without them, one client sending 30 MB of headers grows the
// daemon by half a gigabyte, sixteen clients trickling a header line every
// three seconds hold every worker (so /healthz is never answered), and idle
// connections use up the descriptors the reconcile needs.
//
// Every accepted connection is served here, through a stream that enforces
// a byte budget and deadlines on httplib's own request parser:
//   - at most `max_connections` accepted and not yet closed; past that, a
//     new connection is closed at once;
//   - a request (line and headers) must arrive within `request_head`;
//   - a connection reads at most `bytes_per_connection` and lives at most
//     `connection`, then is closed;
//   - between keep-alive requests it may idle for `idle`;
//   - with a TLS context, the handshake must be done within `request_head`
//     (a plain-HTTP client gets nothing but the connection closed), and
//     every byte goes through OpenSSL under the same budget and deadlines.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

#include "http/tls_context.h"

namespace mesh::http {

struct ConnectionLimits {
  size_t workers = 16;
  size_t max_connections = 64;
  std::chrono::milliseconds request_head{2000};
  std::chrono::milliseconds connection{30000};
  std::chrono::milliseconds idle{2000};
  std::chrono::milliseconds write{5000};
  size_t bytes_per_connection = 64UL * 1024;
  size_t requests_per_connection = 100;
};

class BoundedServer : public httplib::Server {
 public:
  // `on_idle`, when given, is called on a worker thread each time the last
  // open connection has closed: the moment to tidy up after a burst of
  // requests without competing with one.
  explicit BoundedServer(ConnectionLimits limits = {}, std::function<void()> on_idle = nullptr);

  // TLS for the connections accepted from now on (null: plain HTTP).
  void SetTls(std::shared_ptr<const TlsContext> tls);

  // Connections closed unserved because `max_connections` were open.
  uint64_t turned_away() const { return turned_away_.load(); }
  // Connections cut for a deadline or the byte budget.
  uint64_t cut() const { return cut_.load(); }

 private:
  class Queue;
  class LimitedStream;

  bool process_and_close_socket(socket_t sock) override;

  std::shared_ptr<const TlsContext> Tls() const;

  ConnectionLimits limits_;
  std::function<void()> on_idle_;
  mutable std::mutex tls_mu_;
  std::shared_ptr<const TlsContext> tls_;
  std::atomic<uint64_t> turned_away_{0};
  std::atomic<uint64_t> cut_{0};
};

}  // namespace mesh::http
