// An OpenSSL server context made from the web config's TLS settings: the
// certificate chain and its key, the client CA and how client certificates
// are asked for and verified, the protocol versions. Shared by the
// connections it was made for; a reload makes a new one.
#pragma once

#include <memory>

#include "host/core/result.h"
#include "http/web_config.h"

typedef struct ssl_ctx_st SSL_CTX;

namespace mesh::http {

class TlsContext {
 public:
  // Errors name the file and what is wrong with it (missing, not PEM, a
  // key that does not match the certificate).
  static core::Result<std::shared_ptr<const TlsContext>> Make(const TlsSettings& settings);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  SSL_CTX* get() const { return ctx_; }

 private:
  explicit TlsContext(SSL_CTX* ctx) : ctx_(ctx) {}
  SSL_CTX* ctx_;
};

}  // namespace mesh::http
