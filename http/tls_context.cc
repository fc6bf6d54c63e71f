#include "http/tls_context.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "third_party/tls_digests.h"

namespace mesh::http {
namespace {

// OpenSSL's error strings are not loaded in this process (see
// third_party/httplib_no_tls_init.cc): say what was being done instead,
// and first whether the file can be read at all.
std::unexpected<core::Error> FileError(const char* what, const std::string& path,
                                       const char* otherwise) {
  ERR_clear_error();
  if (FILE* f = std::fopen(path.c_str(), "r"); f == nullptr) {
    return core::Fail(std::string(what) + " " + path + ": " + std::strerror(errno));
  } else {
    std::fclose(f);
  }
  return core::Fail(std::string(what) + " " + path + ": " + otherwise);
}

// OpenSSL reads these files with a blocking fopen and no bound: a FIFO at
// the path would hang the start (or the daemon's loop on SIGHUP), a device
// never end. Only a regular file is handed to it (a symlink to one is).
core::Status RegularFile(const char* what, const std::string& path) {
  struct stat st {};
  if (path.empty()) return core::Ok();
  if (::stat(path.c_str(), &st) != 0) {
    return core::Fail(std::string(what) + " " + path + ": " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return core::Fail(std::string(what) + " " + path + ": " +
                      (S_ISDIR(st.st_mode) ? "a directory, not a file" : "not a regular file"));
  }
  return core::Ok();
}

// RequestClientCert and RequireAnyClientCert ask for a certificate but do
// not verify it (as Go's crypto/tls, which the toolkit's names come from).
int AcceptAny(int, X509_STORE_CTX*) { return 1; }

// The certificate chain and its private key, which must match.
core::Status UseKeyPair(SSL_CTX* ctx, const TlsSettings& s) {
  if (SSL_CTX_use_certificate_chain_file(ctx, s.cert_file.c_str()) != 1) {
    return FileError("tls_server_config.cert_file", s.cert_file, "not a PEM certificate");
  }
  EVP_PKEY* key = nullptr;
  if (BIO* in = BIO_new_file(s.key_file.c_str(), "r"); in != nullptr) {
    key = PEM_read_bio_PrivateKey(in, nullptr, nullptr, nullptr);
    BIO_free(in);
  }
  if (key == nullptr) {
    return FileError("tls_server_config.key_file", s.key_file, "not a PEM private key");
  }
  // OpenSSL refuses a key that is not the certificate's here already.
  bool used = SSL_CTX_use_PrivateKey(ctx, key) == 1;
  EVP_PKEY_free(key);
  if (!used || SSL_CTX_check_private_key(ctx) != 1) {
    ERR_clear_error();
    return core::Fail("tls_server_config.key_file " + s.key_file +
                      ": not the key of the certificate in " + s.cert_file);
  }
  return core::Ok();
}

// Which client certificates are asked for, and against which CAs verified.
core::Status UseClientAuth(SSL_CTX* ctx, const TlsSettings& s) {
  if (!s.client_ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, s.client_ca_file.c_str(), nullptr) != 1) {
      return FileError("tls_server_config.client_ca_file", s.client_ca_file,
                       "not a PEM certificate bundle");
    }
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(s.client_ca_file.c_str());
    if (names == nullptr) {
      return FileError("tls_server_config.client_ca_file", s.client_ca_file,
                       "holds no certificate");
    }
    SSL_CTX_set_client_CA_list(ctx, names);
  }
  switch (s.client_auth) {
    case ClientAuth::kNone:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
      break;
    case ClientAuth::kRequest:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, AcceptAny);
      break;
    case ClientAuth::kRequireAny:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, AcceptAny);
      break;
    case ClientAuth::kVerifyIfGiven:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
      break;
    case ClientAuth::kRequireAndVerify:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
      break;
  }
  return core::Ok();
}

}  // namespace

core::Result<std::shared_ptr<const TlsContext>> TlsContext::Make(const TlsSettings& s) {
  third_party::RegisterTlsDigests();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return core::Fail("TLS: OpenSSL could not make a server context");
  std::shared_ptr<const TlsContext> made(new TlsContext(ctx));
  for (const auto& [what, path] : {std::pair{"tls_server_config.cert_file", &s.cert_file},
                                   {"tls_server_config.key_file", &s.key_file},
                                   {"tls_server_config.client_ca_file", &s.client_ca_file}}) {
    if (auto st = RegularFile(what, *path); !st) return std::unexpected(st.error());
  }
  if (auto st = UseKeyPair(ctx, s); !st) return std::unexpected(st.error());
  if (SSL_CTX_set_min_proto_version(ctx, s.min_version) != 1 ||
      (s.max_version != 0 && SSL_CTX_set_max_proto_version(ctx, s.max_version) != 1)) {
    ERR_clear_error();
    return core::Fail("tls_server_config: this OpenSSL does not offer the TLS versions asked for");
  }
  if (s.prefer_server_cipher_suites) SSL_CTX_set_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
  // Required for session resumption when client certificates are asked for.
  static constexpr unsigned char kSessionContext[] = "mesh-host";
  SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof kSessionContext - 1);
  if (auto st = UseClientAuth(ctx, s); !st) return std::unexpected(st.error());
  return made;
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

}  // namespace mesh::http
