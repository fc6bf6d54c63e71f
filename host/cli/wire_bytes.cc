// Apart from peer.cc: <linux/tcp.h> (which has tcpi_bytes_received) and
// glibc's <netinet/tcp.h> (which httplib includes) define struct tcp_info
// twice.
#include "host/cli/wire_bytes.h"

#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>

namespace mesh::cli {

uint64_t TcpBytesReceived(int sock) {
  struct tcp_info info {};
  socklen_t size = sizeof(info);
  if (::getsockopt(sock, IPPROTO_TCP, TCP_INFO, &info, &size) != 0 ||
      size < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(info.tcpi_bytes_received)) {
    return 0;
  }
  return info.tcpi_bytes_received;
}

}  // namespace mesh::cli
