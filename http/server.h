// The HTTP face of mesh-host: GET /status (JSON), /healthz, /metrics.
//
// Handlers read a StatusBoard snapshot and the metrics text; they never
// reach the machine and never wait on an apply. A bounded thread pool and
// read/write timeouts keep slow or malformed clients from stalling it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "host/core/result.h"
#include "host/status/status_board.h"

namespace httplib {
class Server;
}

namespace mesh::http {

struct ListenAddress {
  std::string host;
  int port = 0;
};

// "127.0.0.1:9479", "[::1]:0", "localhost:9479".
core::Result<ListenAddress> ParseListen(const std::string& text);

class StatusServer {
 public:
  StatusServer(const status::StatusBoard& board, std::function<std::string()> metrics_text);
  ~StatusServer();

  // Binds and starts serving on a thread of its own; returns "HOST:PORT"
  // as bound (port 0 picks a free port).
  core::Result<std::string> Start(const ListenAddress& address);
  void Stop();

 private:
  const status::StatusBoard& board_;
  std::function<std::string()> metrics_text_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
};

}  // namespace mesh::http
