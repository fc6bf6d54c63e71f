#include "http/gzip.h"

#include <zlib.h>

#include <climits>

namespace mesh::http {

core::Result<std::string> Gzip(std::string_view text) {
  if (text.size() > UINT_MAX) return core::Fail("gzip: body too large");
  z_stream z{};
  // 15 + 16: the largest window, with a gzip header and trailer.
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return core::Fail("gzip: cannot start zlib");
  }
  std::string out(deflateBound(&z, static_cast<uLong>(text.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&z, Z_FINISH);
  size_t made = out.size() - z.avail_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return core::Fail("gzip: zlib did not finish");
  out.resize(made);
  out.shrink_to_fit();
  return out;
}

}  // namespace mesh::http
