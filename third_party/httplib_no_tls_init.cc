// Keeps Debian's libcpp-httplib from initialising TLS that mesh-host never
// uses.
//
// Debian builds libcpp-httplib with OpenSSL support, and a static object in
// that library calls OPENSSL_init_ssl(LOAD_SSL_STRINGS | LOAD_CRYPTO_STRINGS)
// when it is loaded: OpenSSL then loads its configuration, every error
// string and every cipher and digest name, about 1.7 MiB of resident pages
// in a daemon whose idle size is measured in MiB (docs/performance.md).
// mesh-host serves plain HTTP on loopback and hashes with libcrypto's direct
// SHA-256 functions, so it needs none of it. OpenSSL runs each of those
// steps once; asking first for the "do not" variant makes the library's
// later request a no-op. It must come before any library's initialiser,
// which only an executable's .preinit_array does (so this target is linked
// statically, never as a shared object).
#include <openssl/crypto.h>
#include <openssl/ssl.h>

namespace {

void NoTlsInit(int, char**, char**) {
  OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CRYPTO_STRINGS | OPENSSL_INIT_NO_ADD_ALL_CIPHERS |
                          OPENSSL_INIT_NO_ADD_ALL_DIGESTS | OPENSSL_INIT_NO_LOAD_CONFIG,
                      nullptr);
  OPENSSL_init_ssl(OPENSSL_INIT_NO_LOAD_SSL_STRINGS | OPENSSL_INIT_NO_LOAD_CONFIG, nullptr);
}

[[gnu::section(".preinit_array"), gnu::used]] void (*const kPreinit)(int, char**,
                                                                     char**) = &NoTlsInit;

}  // namespace
