#include "host/core/minisign.h"

#include <openssl/evp.h>

#include <cstring>
#include <memory>
#include <vector>

#include "host/core/sha256.h"

namespace mesh::core {
namespace {

constexpr std::string_view kUntrusted = "untrusted comment: ";
constexpr std::string_view kTrusted = "trusted comment: ";
constexpr size_t kSignatureBytes = 64;

// Lines without their "\n" or "\r\n", as minisign reads them.
std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    if (line.ends_with('\r')) line.remove_suffix(1);
    lines.push_back(line);
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

bool Ed25519Verify(const MinisignKey& key, std::string_view signature, std::string_view message) {
  std::unique_ptr<EVP_PKEY, PkeyFree> pkey(EVP_PKEY_new_raw_public_key(
      EVP_PKEY_ED25519, nullptr, key.public_key.data(), key.public_key.size()));
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  if (pkey == nullptr || ctx == nullptr) return false;
  if (EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, pkey.get()) != 1) return false;
  return EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()),
                          signature.size(), reinterpret_cast<const unsigned char*>(message.data()),
                          message.size()) == 1;
}

Result<std::string> Blake2b512(std::string_view message) {
  std::string out(EVP_MAX_MD_SIZE, '\0');
  unsigned int size = 0;
  if (EVP_Digest(message.data(), message.size(), reinterpret_cast<unsigned char*>(out.data()),
                 &size, EVP_blake2b512(), nullptr) != 1) {
    return Fail("BLAKE2b-512 is not available in this OpenSSL");
  }
  out.resize(size);
  return out;
}

std::unexpected<SignatureError> Problem(SignatureProblem problem, std::string message) {
  return std::unexpected<SignatureError>(SignatureError{problem, std::move(message)});
}

}  // namespace

std::string MinisignKeyId(const std::array<uint8_t, 8>& id) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  // minisign prints the id as a little-endian 64-bit number.
  for (size_t i = id.size(); i-- > 0;) {
    out += kHex[id[i] >> 4];
    out += kHex[id[i] & 0xf];
  }
  return out;
}

Result<MinisignKey> ParseMinisignKey(std::string_view text) {
  std::vector<std::string_view> lines = Lines(text);
  size_t at = !lines.empty() && lines[0].starts_with(kUntrusted) ? 1 : 0;
  if (at >= lines.size() || lines[at].empty()) {
    return Fail(
        "not a minisign public key: no key line (expected the base64 line that "
        "`minisign -G` writes)");
  }
  for (size_t i = at + 1; i < lines.size(); ++i) {
    if (!lines[i].empty()) return Fail("not a minisign public key: more than one key line");
  }
  auto bytes = DecodeBase64(lines[at]);
  if (!bytes) return Fail("not a minisign public key: " + bytes.error().message);
  if (bytes->size() != 42 || bytes->compare(0, 2, "Ed") != 0) {
    return Fail("not a minisign public key: " + std::to_string(bytes->size()) +
                " bytes (expected 42, starting with \"Ed\")");
  }
  MinisignKey key;
  std::memcpy(key.id.data(), bytes->data() + 2, key.id.size());
  std::memcpy(key.public_key.data(), bytes->data() + 10, key.public_key.size());
  return key;
}

std::expected<std::string, SignatureError> VerifyMinisign(const MinisignKey& key,
                                                          std::string_view signature,
                                                          std::string_view message) {
  using enum SignatureProblem;
  std::vector<std::string_view> lines = Lines(signature);
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  if (lines.size() != 4 || !lines[0].starts_with(kUntrusted) || !lines[2].starts_with(kTrusted)) {
    return Problem(kMalformed,
                   "not a minisign signature (expected four lines: untrusted comment, "
                   "signature, trusted comment, global signature)");
  }
  auto sig = DecodeBase64(lines[1]);
  if (!sig || sig->size() != 2 + 8 + kSignatureBytes) {
    return Problem(kMalformed,
                   "not a minisign signature: the signature line is not 74 bytes "
                   "of base64");
  }
  auto global = DecodeBase64(lines[3]);
  if (!global || global->size() != kSignatureBytes) {
    return Problem(kMalformed,
                   "not a minisign signature: the global signature line is not 64 "
                   "bytes of base64");
  }
  std::string_view algorithm = std::string_view(*sig).substr(0, 2);
  if (algorithm != "Ed" && algorithm != "ED") {
    return Problem(kMalformed, "not a minisign signature: unknown algorithm (expected Ed or ED)");
  }
  std::array<uint8_t, 8> id;
  std::memcpy(id.data(), sig->data() + 2, id.size());
  if (id != key.id) {
    return Problem(kForeign, "signed by another key (key ID " + MinisignKeyId(id) +
                                 "; --verify-key is key ID " + MinisignKeyId(key.id) + ")");
  }
  std::string_view bare = std::string_view(*sig).substr(10);
  bool verified;
  if (algorithm == "ED") {
    auto digest = Blake2b512(message);
    if (!digest) return Problem(kMalformed, digest.error().message);
    verified = Ed25519Verify(key, bare, *digest);
  } else {
    verified = Ed25519Verify(key, bare, message);
  }
  if (!verified) {
    return Problem(kTampered,
                   "does not verify: the declaration is not the one that was signed (changed "
                   "after signing, or the signature is for another declaration)");
  }
  std::string trusted(bare);
  trusted += lines[2].substr(kTrusted.size());
  if (!Ed25519Verify(key, *global, trusted)) {
    return Problem(kTampered, "the trusted comment does not verify: it was changed after signing");
  }
  return std::string(lines[2].substr(kTrusted.size()));
}

}  // namespace mesh::core
