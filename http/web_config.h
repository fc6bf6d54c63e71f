// The web configuration of exporter-toolkit (`--web-config FILE`): the file
// Prometheus exporters share, so an operator reuses the one node_exporter
// already has. TLS for the listener, HTTP basic auth with bcrypt hashes,
// and response headers:
//
//   tls_server_config:
//     cert_file: server.crt          # both, or no TLS
//     key_file: server.key
//     client_auth_type: RequireAndVerifyClientCert   # default NoClientCert
//     client_ca_file: ca.crt         # for the Verify* types
//     min_version: TLS12             # TLS10 … TLS13, default TLS12
//     max_version: TLS13
//     prefer_server_cipher_suites: true
//   http_server_config:
//     http2: true                    # accepted; mesh-host speaks HTTP/1.1
//     headers: {Strict-Transport-Security: max-age=31536000}
//   basic_auth_users:
//     prometheus: $2y$10$...         # bcrypt ($2a$, $2b$, $2y$; cost 04-31)
//   rate_limit:                      # every request, all clients together
//     interval: 100ms                # one more request allowed per interval
//     burst: 10
//
// A file that is not exactly this is refused with what is wrong, as the
// toolkit refuses it: an unknown or misspelt key, an unknown TLS version or
// client auth type, a certificate without its key. Relative paths are
// relative to the file. Parsing only: the certificates are loaded by
// tls_context.h.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "host/core/result.h"

namespace mesh::http {

enum class ClientAuth {
  kNone,              // NoClientCert
  kRequest,           // RequestClientCert
  kRequireAny,        // RequireAnyClientCert
  kVerifyIfGiven,     // VerifyClientCertIfGiven
  kRequireAndVerify,  // RequireAndVerifyClientCert
};

struct TlsSettings {
  std::string cert_file;
  std::string key_file;
  ClientAuth client_auth = ClientAuth::kNone;
  std::string client_ca_file;
  int min_version = 0x0303;  // TLS 1.2, as the toolkit's default
  int max_version = 0;       // none: the newest OpenSSL has
  bool prefer_server_cipher_suites = true;
};

// exporter-toolkit's limiter: a bucket of `burst` requests refilled one per
// `interval` (0: no limit); a request with none left is answered 429.
struct RateLimit {
  std::chrono::nanoseconds interval{0};
  int burst = 0;
};

struct WebConfig {
  std::optional<TlsSettings> tls;
  RateLimit rate_limit;
  std::map<std::string, std::string> basic_auth_users;  // user -> bcrypt hash
  std::map<std::string, std::string> headers;
  // What is taken but worth the operator's eye (LoadWebConfig): a private
  // key every user can read. Said in the log at start and at each reload.
  std::vector<std::string> warnings;
};

// Parses the file's text; `dir` is the file's directory, for relative paths.
core::Result<WebConfig> ParseWebConfig(const std::string& text, const std::string& dir);

// Reads and parses the file. Errors read "--web-config PATH: what".
core::Result<WebConfig> LoadWebConfig(const std::string& path);

}  // namespace mesh::http
