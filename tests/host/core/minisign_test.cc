#include "host/core/minisign.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace mesh::core {
namespace {

using ::testing::HasSubstr;

// Made by Debian's minisign 0.11 (tests/host/core/testdata/minisign): a key,
// a declaration signed prehashed (the default) and legacy (-l), both with the
// trusted comment "generation 2", and one signed by another key.
std::string Read(const std::string& name) {
  std::ifstream in("tests/host/core/testdata/minisign/" + name, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_TRUE(in.good() || in.eof()) << name;
  return s.str();
}

class MinisignTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto key = ParseMinisignKey(Read("key.pub"));
    ASSERT_TRUE(key.has_value()) << key.error().message;
    key_ = *key;
    message_ = Read("message.json");
  }
  MinisignKey key_;
  std::string message_;
};

TEST_F(MinisignTest, KeyIdReadsAsMinisignPrintsIt) {
  EXPECT_EQ(MinisignKeyId(key_.id), "62DA9E45B3F8B0AF");
}

TEST_F(MinisignTest, PrehashedAndLegacySignaturesVerify) {
  for (const char* name : {"prehashed.minisig", "legacy.minisig"}) {
    auto ok = VerifyMinisign(key_, Read(name), message_);
    ASSERT_TRUE(ok.has_value()) << name << ": " << ok.error().message;
    // The trusted comment, as signed: what /status shows as the signer's words.
    std::string sig = Read(name);
    size_t at = sig.find("\ntrusted comment: ") + 18;
    EXPECT_EQ(*ok, sig.substr(at, sig.find('\n', at) - at)) << name;
    EXPECT_FALSE(ok->empty());
  }
}

TEST_F(MinisignTest, OneByteChangedIsTampered) {
  for (const char* name : {"prehashed.minisig", "legacy.minisig"}) {
    std::string changed = message_;
    changed[changed.find('2')] = '3';  // generation 2 -> 3
    auto bad = VerifyMinisign(key_, Read(name), changed);
    ASSERT_FALSE(bad.has_value()) << name;
    EXPECT_EQ(bad.error().problem, SignatureProblem::kTampered);
    EXPECT_THAT(bad.error().message, HasSubstr("not the one that was signed"));
  }
}

TEST_F(MinisignTest, AnotherKeysSignatureIsForeign) {
  auto bad = VerifyMinisign(key_, Read("foreign.minisig"), message_);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().problem, SignatureProblem::kForeign);
  EXPECT_THAT(bad.error().message, HasSubstr("--verify-key is key ID 62DA9E45B3F8B0AF"));
}

TEST_F(MinisignTest, AlteredTrustedCommentIsTampered) {
  std::string sig = Read("prehashed.minisig");
  size_t at = sig.find("generation 2");
  ASSERT_NE(at, std::string::npos);
  sig.replace(at, 12, "generation 9");
  auto bad = VerifyMinisign(key_, sig, message_);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().problem, SignatureProblem::kTampered);
  EXPECT_THAT(bad.error().message, HasSubstr("trusted comment"));
}

TEST_F(MinisignTest, ASignatureOfTheRightKeyWithAFlippedBitIsTampered) {
  std::string sig = Read("legacy.minisig");
  size_t line = sig.find('\n') + 1;
  // The last base64 digits of the signature line carry signature bits.
  size_t at = sig.find('\n', line) - 3;
  sig[at] = sig[at] == 'A' ? 'B' : 'A';
  auto bad = VerifyMinisign(key_, sig, message_);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().problem, SignatureProblem::kTampered);
}

TEST_F(MinisignTest, MalformedSignaturesSaySo) {
  for (std::string sig : {std::string(), std::string("hello\n"), message_, Read("key.pub"),
                          Read("prehashed.minisig").substr(0, 60)}) {
    auto bad = VerifyMinisign(key_, sig, message_);
    ASSERT_FALSE(bad.has_value());
    EXPECT_EQ(bad.error().problem, SignatureProblem::kMalformed);
    EXPECT_THAT(bad.error().message, HasSubstr("not a minisign signature"));
  }
}

TEST_F(MinisignTest, UnknownAlgorithmIsMalformed) {
  std::string sig = Read("prehashed.minisig");
  size_t line = sig.find('\n') + 1;
  ASSERT_EQ(sig.substr(line, 2), "RU");  // base64 of "ED"
  sig[line + 1] = 'V';                   // "EE..."
  auto bad = VerifyMinisign(key_, sig, message_);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().problem, SignatureProblem::kMalformed);
}

TEST(MinisignKeyTest, TheBareKeyLineIsAKeyToo) {
  std::string text = Read("key.pub");
  auto bare = ParseMinisignKey(text.substr(text.find('\n') + 1));
  ASSERT_TRUE(bare.has_value()) << bare.error().message;
  EXPECT_EQ(MinisignKeyId(bare->id), "62DA9E45B3F8B0AF");
}

TEST(MinisignKeyTest, MalformedKeysSayWhat) {
  for (std::string text : {std::string(), std::string("untrusted comment: x\n"),
                           std::string("untrusted comment: x\nnot base64!\n"),
                           std::string("c2VjcmV0\n"), Read("prehashed.minisig")}) {
    auto key = ParseMinisignKey(text);
    ASSERT_FALSE(key.has_value()) << text;
    EXPECT_THAT(key.error().message, HasSubstr("not a minisign public key"));
  }
}

}  // namespace
}  // namespace mesh::core
