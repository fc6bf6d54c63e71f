#include "third_party/tls_digests.h"

#include <openssl/evp.h>

#include <mutex>

namespace mesh::third_party {

void RegisterTlsDigests() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const EVP_MD* md :
         {EVP_sha1(), EVP_sha224(), EVP_sha256(), EVP_sha384(), EVP_sha512(), EVP_sha512_224(),
          EVP_sha512_256(), EVP_sha3_224(), EVP_sha3_256(), EVP_sha3_384(), EVP_sha3_512()}) {
      EVP_add_digest(md);
    }
  });
}

}  // namespace mesh::third_party
