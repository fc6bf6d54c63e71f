// Issue 39: a declaration holding a credential that others than its owner
// can read is refused before anything is touched — also when the record
// would prove it a no-op — and one without credentials is not.
#include "host/reconcile/private_declaration.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "host/core/sha256.h"
#include "tests/host/reconcile/reconciler_fixture.h"

namespace mesh::reconcile {
namespace {

using ::testing::HasSubstr;

class Exposed : public ports::DeclarationSource {
 public:
  Exposed(std::string text, std::optional<uint32_t> mode,
          std::optional<std::string> changeable = {})
      : text_(std::move(text)), mode_(mode), changeable_(std::move(changeable)) {}
  std::optional<std::string> ChangeableByOthers() const override { return changeable_; }
  core::Result<std::string> Digest() override { return core::Sha256Hex(text_); }
  core::Result<std::string_view> Text() override { return text_; }
  std::optional<ports::DeclarationSource::Exposed> ReadableByOthers() const override {
    if (!mode_.has_value()) return std::nullopt;
    return ports::DeclarationSource::Exposed{*mode_, "/etc/mesh-host/declaration.json"};
  }

 private:
  std::string text_;
  std::optional<uint32_t> mode_;
  std::optional<std::string> changeable_;
};

class PrivateDeclarationTest : public ReconcilerTest {
 protected:
  ApplyReport Apply(const json& decl, std::optional<uint32_t> mode) {
    Exposed source(decl.dump(), mode);
    return Reconciler(Ports(), Options()).Apply(source);
  }
  static json WithToken() {
    return Decl(
        {{{"id", "token"}, {"kind", "credential"}, {"path", "/etc/token"}, {"content", "s3cret"}}});
  }
};

TEST_F(PrivateDeclarationTest, ReadableWithACredentialIsRefused) {
  ApplyReport r = Apply(WithToken(), 0644);
  EXPECT_EQ(r.result, ApplyResult::kRefused);
  EXPECT_THAT(r.error, HasSubstr("declaration /etc/mesh-host/declaration.json holds credentials "
                                 "(resource token) and users other than its owner can read it "
                                 "(mode 0644): chmod 0600 /etc/mesh-host/declaration.json"));
  EXPECT_THAT(r.error, ::testing::Not(HasSubstr("s3cret")));
  EXPECT_FALSE(testing::Exists(Root("/etc/token"))) << "nothing touched";
  EXPECT_EQ(Apply(WithToken(), 0640).result, ApplyResult::kRefused) << "group-readable too";
}

TEST_F(PrivateDeclarationTest, PrivateOrWithoutCredentialsApplies) {
  EXPECT_EQ(Apply(WithToken(), std::nullopt).result, ApplyResult::kOk);
  json files = Decl({{{"id", "a"}, {"kind", "file"}, {"path", "/etc/a"}, {"content", "a"}}});
  EXPECT_EQ(Apply(files, 0644).result, ApplyResult::kOk);
}

// The no-op proof never parses: a declaration made readable after it was
// applied would pass it. A readable source is parsed whatever the record.
TEST_F(PrivateDeclarationTest, ANoOpFromTheRecordDoesNotHideIt) {
  ASSERT_EQ(Apply(WithToken(), std::nullopt).result, ApplyResult::kOk);
  ApplyReport noop = Apply(WithToken(), std::nullopt);
  ASSERT_TRUE(noop.from_record);
  EXPECT_EQ(Apply(WithToken(), 0604).result, ApplyResult::kRefused);
}

// Most declarations hold no credential and are 0644: they kept the full
// pass at every apply (twice the no-op's time, three times its memory,
// measured by tools/bench) and lost the chunked first apply. A record
// without a credential proves a declaration of its digest has none.
TEST_F(PrivateDeclarationTest, AReadableDeclarationWithoutCredentialsIsStillProven) {
  json files = Decl({{{"id", "a"}, {"kind", "file"}, {"path", "/etc/a"}, {"content", "a"}}});
  ASSERT_EQ(Apply(files, 0644).result, ApplyResult::kOk);
  ApplyReport noop = Apply(files, 0644);
  EXPECT_EQ(noop.result, ApplyResult::kOk);
  EXPECT_TRUE(noop.from_record) << "proven from the record, not parsed";
}

// Whoever can change the declaration decides what this host runs as root
// (a unit_text's ExecStart=): one that a user other than root (or this
// process's user) can change is refused before anything is touched, unless
// its signature is checked. It was applied as root.
TEST_F(PrivateDeclarationTest, ADeclarationOthersCanChangeIsRefusedUnsigned) {
  json files = Decl({{{"id", "a"}, {"kind", "file"}, {"path", "/etc/a"}, {"content", "a"}}});
  Exposed source(files.dump(), std::nullopt,
                 "declaration /etc/mesh-host/declaration.json: owned by uid 65534, neither root "
                 "nor this process's user");
  ApplyReport r = Reconciler(Ports(), Options()).Apply(source);
  EXPECT_EQ(r.result, ApplyResult::kRefused);
  EXPECT_EQ(r.error,
            "declaration /etc/mesh-host/declaration.json: owned by uid 65534, neither root nor "
            "this process's user; whoever can change it decides what this host runs as root: "
            "make it and its directories root's alone, or sign it and pass --verify-key");
  EXPECT_FALSE(testing::Exists(Root("/etc/a"))) << "nothing touched";
}

TEST(MayHoldCredentialsTest, ReadsTheLettersAndTheEscapes) {
  EXPECT_TRUE(MayHoldCredentials(R"({"kind":"credential"})"));
  EXPECT_TRUE(MayHoldCredentials(R"({"kind":"cred\u0065ntial"})")) << "spelt with an escape";
  EXPECT_FALSE(MayHoldCredentials(R"({"kind":"file","content":"a\nb"})"));
}

}  // namespace
}  // namespace mesh::reconcile
