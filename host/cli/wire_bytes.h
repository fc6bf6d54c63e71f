// What a client socket has read off the wire, headers and framing
// included: the bound on an answer that its HTTP library does not keep.
#pragma once

#include <cstdint>

namespace mesh::cli {

// The bytes TCP socket `sock` has received so far (TCP_INFO,
// tcpi_bytes_received); 0 when the kernel does not say.
uint64_t TcpBytesReceived(int sock);

}  // namespace mesh::cli
