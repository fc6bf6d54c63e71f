#include "http/tls_context.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "http/regular_file.h"
#include "third_party/tls_digests.h"

namespace mesh::http {
namespace {

// OpenSSL's error strings are not loaded in this process (see
// third_party/httplib_no_tls_init.cc): say what was being done instead,
// or the system's error when OpenSSL could not open the checked file again
// (no descriptor left, say).
std::unexpected<core::Error> FileError(const char* what, const std::string& path,
                                       const char* otherwise) {
  unsigned long first = ERR_peek_error();
  std::string why = first != 0 && ERR_GET_LIB(first) == ERR_LIB_SYS
                        ? std::strerror(ERR_GET_REASON(first))
                        : otherwise;
  ERR_clear_error();
  return core::Fail(std::string(what) + " " + path + ": " + why);
}

// A TLS file opened once and checked (regular_file.h): OpenSSL reads
// files by name only, with a blocking fopen and no bound, so it is handed
// `/proc/self/fd/N`, which opens the very file checked.
class CheckedFile {
 public:
  static core::Result<CheckedFile> Open(const char* what, const std::string& path) {
    auto fail = [&](const std::string& why) {
      return core::Fail(std::string(what) + " " + path + ": " + why);
    };
    auto file = RegularFile::Open(path);
    if (!file) return fail(file.error().message);
    std::string proc_path = file->ProcPath();
    if (::access(proc_path.c_str(), R_OK) != 0) {
      return fail("cannot be read again through /proc/self/fd (is /proc mounted?)");
    }
    return CheckedFile(std::move(*file), std::move(proc_path));
  }
  // Where OpenSSL opens it again.
  const char* path() const { return proc_path_.c_str(); }

 private:
  CheckedFile(RegularFile file, std::string proc_path)
      : file_(std::move(file)), proc_path_(std::move(proc_path)) {}
  RegularFile file_;
  std::string proc_path_;
};

// The files of a context, each opened and checked; a file not given is not.
struct CheckedFiles {
  std::optional<CheckedFile> cert, key, client_ca;
};

core::Result<CheckedFiles> OpenAll(const TlsSettings& s) {
  CheckedFiles files;
  for (auto [what, path, slot] :
       {std::tuple{"tls_server_config.cert_file", &s.cert_file, &files.cert},
        {"tls_server_config.key_file", &s.key_file, &files.key},
        {"tls_server_config.client_ca_file", &s.client_ca_file, &files.client_ca}}) {
    if (path->empty()) continue;
    auto opened = CheckedFile::Open(what, *path);
    if (!opened) return std::unexpected(opened.error());
    slot->emplace(std::move(*opened));
  }
  return files;
}

// RequestClientCert and RequireAnyClientCert ask for a certificate but do
// not verify it (as Go's crypto/tls, which the toolkit's names come from).
int AcceptAny(int, X509_STORE_CTX*) { return 1; }

// The certificate chain and its private key, which must match.
core::Status UseKeyPair(SSL_CTX* ctx, const TlsSettings& s, const CheckedFiles& files) {
  if (!files.cert || !files.key) {
    return core::Fail("tls_server_config: cert_file and key_file are both required");
  }
  if (SSL_CTX_use_certificate_chain_file(ctx, files.cert->path()) != 1) {
    return FileError("tls_server_config.cert_file", s.cert_file, "not a PEM certificate");
  }
  EVP_PKEY* key = nullptr;
  if (BIO* in = BIO_new_file(files.key->path(), "r"); in != nullptr) {
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
core::Status UseClientAuth(SSL_CTX* ctx, const TlsSettings& s, const CheckedFiles& files) {
  if (files.client_ca) {
    if (SSL_CTX_load_verify_locations(ctx, files.client_ca->path(), nullptr) != 1) {
      return FileError("tls_server_config.client_ca_file", s.client_ca_file,
                       "not a PEM certificate bundle");
    }
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(files.client_ca->path());
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
  auto files = OpenAll(s);
  if (!files) return std::unexpected(files.error());
  if (auto st = UseKeyPair(ctx, s, *files); !st) return std::unexpected(st.error());
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
  if (auto st = UseClientAuth(ctx, s, *files); !st) return std::unexpected(st.error());
  return made;
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

}  // namespace mesh::http
