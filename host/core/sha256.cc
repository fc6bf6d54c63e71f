#include "host/core/sha256.h"

// SHA256_Init/Update/Final are deprecated in OpenSSL 3 in favour of EVP, but
// kept; see the header for why this daemon uses them.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cstring>

namespace mesh::core {
namespace {
SHA256_CTX* Ctx(unsigned char* storage) { return reinterpret_cast<SHA256_CTX*>(storage); }

std::string Hex(const unsigned char* bytes, size_t size) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(2 * size, '0');
  for (size_t i = 0; i < size; ++i) {
    out[2 * i] = kHex[bytes[i] >> 4];
    out[2 * i + 1] = kHex[bytes[i] & 0xf];
  }
  return out;
}
}  // namespace

Sha256::Sha256() {
  static_assert(sizeof(SHA256_CTX) <= sizeof(ctx_) && alignof(SHA256_CTX) <= 8);
  SHA256_Init(Ctx(ctx_));
}

Sha256::~Sha256() = default;

Sha256& Sha256::Update(std::string_view bytes) {
  SHA256_Update(Ctx(ctx_), bytes.data(), bytes.size());
  return *this;
}

Sha256& Sha256::Field(std::string_view bytes) {
  Field(static_cast<uint64_t>(bytes.size()));
  return Update(bytes);
}

Sha256& Sha256::Field(uint64_t number) {
  unsigned char le[8];
  for (int i = 0; i < 8; ++i) le[i] = static_cast<unsigned char>(number >> (8 * i));
  return Update(std::string_view(reinterpret_cast<const char*>(le), sizeof le));
}

std::string Sha256::HexDigest() {
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256_Final(md, Ctx(ctx_));
  return Hex(md, sizeof md);
}

std::string Sha256Hex(std::string_view bytes) {
  Sha256 h;
  h.Update(bytes);
  return h.HexDigest();
}

std::string Sha256Base64(std::string_view bytes) {
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), md);
  return EncodeBase64(std::string_view(reinterpret_cast<const char*>(md), sizeof md));
}

std::string EncodeBase64(std::string_view bytes) {
  // EVP_EncodeBlock takes an int length: whole groups of 3 bytes at a time
  // keep the padding to the last call and the length in range.
  constexpr size_t kStep = size_t{3} << 20;
  std::string out((bytes.size() + 2) / 3 * 4 + 1, '\0');
  size_t written = 0;
  for (size_t at = 0; at < bytes.size(); at += kStep) {
    size_t n = std::min(kStep, bytes.size() - at);
    written += static_cast<size_t>(EVP_EncodeBlock(
        reinterpret_cast<unsigned char*>(out.data() + written),
        reinterpret_cast<const unsigned char*>(bytes.data() + at), static_cast<int>(n)));
  }
  out.resize(written);
  return out;
}

std::string HmacSha256Hex(std::string_view key, std::string_view bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  // HMAC() fails only when OpenSSL cannot allocate or has no SHA-256; the
  // digest is then empty, which never equals a recorded one.
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), md,
           &len) == nullptr) {
    return std::string();
  }
  return Hex(md, len);
}

Result<std::string> DecodeBase64(std::string_view text) {
  // EVP_DecodeBlock ignores neither padding nor junk the way we want, so
  // check the shape first and let OpenSSL do the decoding.
  // A blank or a line break (base64 as `base64` wraps it) is named before
  // the length it throws off.
  if (size_t at = text.find_first_of(" \t\r\n"); at != std::string_view::npos) {
    return Fail("base64 holds a blank or line break at offset " + std::to_string(at) +
                ": write it on one line (base64 -w0)");
  }
  if (text.size() % 4 != 0) {
    return Fail("base64 length " + std::to_string(text.size()) + " is not a multiple of 4");
  }
  size_t pad = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                 c == '+' || c == '/';
    if (c == '=') {
      if (i + 2 < text.size()) return Fail("base64 padding inside the text");
      ++pad;
    } else if (!alpha || pad > 0) {
      return Fail("base64 has an invalid character at offset " + std::to_string(i));
    }
  }
  // Canonical only (RFC 4648 3.5): the bits the padding leaves over are
  // zero, so that one content has one spelling.
  if (pad > 0) {
    char last = text[text.size() - pad - 1];
    int v = last >= 'A' && last <= 'Z'   ? last - 'A'
            : last >= 'a' && last <= 'z' ? last - 'a' + 26
            : last >= '0' && last <= '9' ? last - '0' + 52
            : last == '+'                ? 62
                                         : 63;
    if ((v & (pad == 1 ? 0x3 : 0xf)) != 0) {
      return Fail("base64 is not canonical: bits set past the last byte, before the padding");
    }
  }
  std::string out(text.size() / 4 * 3, '\0');
  if (text.empty()) return out;
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(text.data()),
                          static_cast<int>(text.size()));
  if (n < 0) return Fail("base64 does not decode");
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

}  // namespace mesh::core
