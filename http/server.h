// The HTTP face of mesh-host: GET / (a page for a browser), /status (JSON),
// /healthz, /metrics.
//
// Handlers read a StatusBoard snapshot and the metrics text; they never
// reach the machine and never wait on an apply. A bounded thread pool and
// read/write timeouts keep slow or malformed clients from stalling it.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "host/core/result.h"
#include "host/status/status_board.h"
#include "http/web_config.h"

namespace httplib {
class Server;
}

namespace mesh::http {

class BasicAuth;
class BoundedServer;
class RateLimiter;
class TlsContext;

struct ListenAddress {
  std::string host;
  int port = 0;
};

// "127.0.0.1:9479", "[::1]:0", "localhost:9479".
core::Result<ListenAddress> ParseListen(const std::string& text);

class StatusServer {
 public:
  // `on_idle`: called when the last open connection has closed (BoundedServer).
  StatusServer(const status::StatusBoard& board, std::function<std::string()> metrics_text,
               std::function<void()> on_idle = nullptr);
  ~StatusServer();

  // The --web-config: TLS, basic auth, response headers. Before Start, or
  // at any time after (SIGHUP): connections accepted from then on follow
  // the new one. A config that cannot be used (a certificate that does not
  // load) is an error and leaves the one in force.
  core::Status Configure(const WebConfig& config);
  // Configure, for a config re-read while serving (SIGHUP): one that would
  // drop TLS or basic auth in force is refused (a file caught half-written
  // must not open the listener); turning them off takes a restart.
  core::Status Reload(const WebConfig& config);

  // Binds and starts serving on a thread of its own; returns "HOST:PORT"
  // as bound (port 0 picks a free port).
  core::Result<std::string> Start(const ListenAddress& address);
  void Stop();

  // Called once, on the listening thread, when serving ends without Stop
  // (an accept error other than too many open files ends httplib's loop
  // and closes the socket; the workers could not start): from then on
  // nothing is answered, so the caller must not carry on as if it were.
  // Set before Start.
  void set_on_lost(std::function<void(std::string why)> on_lost) { on_lost_ = std::move(on_lost); }

  // What the page at / names as this program ("0.1.0 (commit ...)").
  void set_version(std::string version) { version_ = std::move(version); }

  // "https" once TLS is configured, else "http".
  std::string scheme() const;

 private:
  struct Policy {
    std::shared_ptr<BasicAuth> auth;
    std::shared_ptr<RateLimiter> limiter;
    RateLimit rate_limit;  // what `limiter` was made of
    std::map<std::string, std::string> headers;
  };
  std::shared_ptr<const Policy> CurrentPolicy() const;
  void Route(httplib::Server& s);
  // /status's body for the board's current picture, rendered once and
  // shared by every request while a connection is open; gzipped, once,
  // for the clients that accept it (null when zlib failed: sent plain).
  std::shared_ptr<const std::string> StatusBody(bool gzip);
  // The last open connection closed: the shared body goes, then on_idle_.
  void Idle();
  void Guard(httplib::Server& s);

  const status::StatusBoard& board_;
  std::function<std::string()> metrics_text_;
  std::function<void()> on_idle_;
  std::string version_;  // set before Start
  // Rendered with status_mu_ held: requests that arrive together after the
  // picture changed wait for one rendering instead of each building a
  // document of every outcome (sixteen at once at 10,000 resources took
  // the daemon from 23 to 240 MiB). Kept only while connections are open,
  // so the idle daemon does not hold the text of its picture twice.
  std::mutex status_mu_;
  std::weak_ptr<const status::Snapshot> status_of_;
  std::shared_ptr<const std::string> status_body_;
  std::shared_ptr<const std::string> status_gzip_;
  mutable std::mutex mu_;
  std::shared_ptr<const Policy> policy_;
  std::shared_ptr<const TlsContext> tls_;
  std::optional<TlsSettings> tls_settings_;  // what tls_ was made of
  std::unique_ptr<BoundedServer> server_;
  std::function<void(std::string)> on_lost_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace mesh::http
