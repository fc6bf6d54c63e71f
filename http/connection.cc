#include "http/connection.h"

#include <openssl/err.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string_view>

namespace mesh::http {

Connection::Connection(int sock, const ConnectionLimits& limits, ConnectionTally* tally)
    : sock(sock),
      budget(limits.bytes_per_connection),
      ends(SteadyClock::now() + limits.connection),
      deadline(std::min(SteadyClock::now() + limits.request_head, ends)),
      tally_(tally) {
  ++tally_->open;
}

Connection::~Connection() {
  if (ssl != nullptr && handshaken) {
    (void)SSL_shutdown(ssl.get());
    ERR_clear_error();  // what a closed peer left is of no later connection
  }
  ssl.reset();
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  if (--tally_->open == 0 && tally_->on_idle) tally_->on_idle();
}

size_t HeadEnd(Connection& c) {
  // httplib ends a head only at a CRLF line of its own.
  constexpr std::string_view kEnd = "\r\n\r\n";
  std::string_view text = c.buffered;
  size_t from = c.scanned >= 3 ? c.scanned - 3 : 0;
  size_t at = text.find(kEnd, from);
  if (at == std::string_view::npos) {
    c.scanned = text.size();
    return 0;
  }
  return at + kEnd.size();
}

}  // namespace mesh::http
