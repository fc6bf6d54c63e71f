// gzip of a response body, for a body the server compresses once and sends
// many times (/status: httplib would compress it again for every request).
#pragma once

#include <string>
#include <string_view>

#include "host/core/result.h"

namespace mesh::http {

// `text` as one gzip member (RFC 1952), at zlib's default level.
core::Result<std::string> Gzip(std::string_view text);

}  // namespace mesh::http
