// The two guards before a request is routed: the web config's rate limit
// and basic auth's memory of what it checked (issue 39, items 2 and 3).
#include <crypt.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "http/basic_auth.h"
#include "http/rate_limiter.h"

namespace mesh::http {
namespace {

using std::chrono::milliseconds;

TEST(RateLimiterTest, ABurstThenOnePerInterval) {
  RateLimiter::Clock::time_point t0{};
  RateLimiter limiter(milliseconds(100), 3, t0);
  EXPECT_TRUE(limiter.Allow(t0));
  EXPECT_TRUE(limiter.Allow(t0));
  EXPECT_TRUE(limiter.Allow(t0));
  EXPECT_FALSE(limiter.Allow(t0)) << "the burst is spent";
  EXPECT_FALSE(limiter.Allow(t0 + milliseconds(99)));
  EXPECT_TRUE(limiter.Allow(t0 + milliseconds(100))) << "one more per interval";
  EXPECT_FALSE(limiter.Allow(t0 + milliseconds(100)));
  EXPECT_TRUE(limiter.Allow(t0 + milliseconds(10'000)));
  EXPECT_TRUE(limiter.Allow(t0 + milliseconds(10'000)));
  EXPECT_TRUE(limiter.Allow(t0 + milliseconds(10'000)));
  EXPECT_FALSE(limiter.Allow(t0 + milliseconds(10'000))) << "never more than the burst";
}

TEST(RateLimiterTest, NoIntervalNoLimit) {
  RateLimiter limiter(milliseconds(0), 0, {});
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(limiter.Allow({}));
}

// A crypt_r that takes a while and counts how many run at once: "right"
// hashes to the setting itself, anything else to something else.
std::atomic<int> running{0};
std::atomic<int> most{0};
std::atomic<int> calls{0};
char* SlowCrypt(const char* phrase, const char* setting, struct crypt_data* data) {
  int now = ++running;
  int seen = most.load();
  while (now > seen && !most.compare_exchange_weak(seen, now)) {
  }
  ++calls;
  std::this_thread::sleep_for(milliseconds(20));
  std::string out = std::string(phrase) == "right" ? setting : "$2y$10$not-it";
  std::snprintf(data->output, sizeof data->output, "%s", out.c_str());
  --running;
  return data->output;
}

constexpr const char* kHash = "$2y$10$ms8Ckawy3NvASqsENYQ.fuFUry0F8/9tDNQ/Phle5Y668iJa8eiO6";

std::string Header(const std::string& user, const std::string& password) {
  std::string plain = user + ":" + password;
  std::string out(4 * ((plain.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(plain.data()),
                          static_cast<int>(plain.size()));
  out.resize(static_cast<size_t>(n));
  return "Basic " + out;
}

TEST(BasicAuthTest, RemembersWhatItCheckedRightOrWrong) {
  calls = 0;
  BasicAuth auth({{"prometheus", kHash}}, &SlowCrypt);
  EXPECT_TRUE(auth.Decided("")) << "no header: 401 without a hash";
  EXPECT_TRUE(auth.Decided("Basic !!!")) << "malformed: 401 without a hash";
  EXPECT_FALSE(auth.Decided(Header("prometheus", "wrong")));
  EXPECT_FALSE(auth.Allows(Header("prometheus", "wrong")));
  EXPECT_TRUE(auth.Decided(Header("prometheus", "wrong"))) << "a wrong password remembered";
  EXPECT_FALSE(auth.Allows(Header("prometheus", "wrong")));
  EXPECT_FALSE(auth.Decided(Header("prometheus", "right")));
  EXPECT_TRUE(auth.Allows(Header("prometheus", "right")));
  EXPECT_TRUE(auth.Decided(Header("prometheus", "right")));
  EXPECT_TRUE(auth.Allows(Header("prometheus", "right")));
  EXPECT_FALSE(auth.Allows(Header("stranger", "right"))) << "an unknown user never passes";
  EXPECT_EQ(calls.load(), 3) << "each user and password hashed once";
}

// The scheme is case-insensitive (RFC 9110), as exporter-toolkit reads it:
// "basic" and "BASIC" were answered 401 whatever the password.
TEST(BasicAuthTest, TheSchemeIsReadInAnyCase) {
  BasicAuth auth({{"prometheus", kHash}}, &SlowCrypt);
  std::string right = Header("prometheus", "right").substr(6);
  for (const char* scheme : {"Basic ", "basic ", "BASIC ", "bAsIc "}) {
    EXPECT_TRUE(auth.Allows(scheme + right)) << scheme;
  }
  EXPECT_FALSE(auth.Allows("Basi " + right));
  EXPECT_FALSE(auth.Allows("Bearer " + right));
  EXPECT_FALSE(auth.Allows("basic"));
}

// A fast worker never hashes: what is not remembered is refused there,
// and not remembered as refused either (the slow lane decides it).
TEST(BasicAuthTest, WithoutLeaveToHashOnlyTheRememberedPass) {
  calls = 0;
  BasicAuth auth({{"prometheus", kHash}}, &SlowCrypt);
  EXPECT_FALSE(auth.Allows(Header("prometheus", "right"), /*may_hash=*/false));
  EXPECT_EQ(calls.load(), 0);
  EXPECT_FALSE(auth.Decided(Header("prometheus", "right")));
  EXPECT_TRUE(auth.Allows(Header("prometheus", "right")));
  EXPECT_TRUE(auth.Allows(Header("prometheus", "right"), /*may_hash=*/false));
  EXPECT_EQ(calls.load(), 1);
}

// exporter-toolkit hashes one password at a time: wrong passwords from
// many clients take at most one core, not one per worker.
TEST(BasicAuthTest, OneHashAtATime) {
  running = 0;
  most = 0;
  BasicAuth auth({{"prometheus", kHash}}, &SlowCrypt);
  std::vector<std::thread> clients;
  for (int i = 0; i < 8; ++i) {
    clients.emplace_back([&auth, i] {
      for (int j = 0; j < 3; ++j) {
        EXPECT_FALSE(auth.Allows(Header("prometheus", "wrong " + std::to_string(i * 10 + j))));
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(most.load(), 1);
}

// A hash whose salt ends in a character carrying bits bcrypt drops (the
// 22nd encodes 2 bits): the same salt as its canonical spelling, and
// exporter-toolkit (Go's bcrypt compares the hash part) lets its password
// in. libxcrypt writes the salt back canonical, so comparing all of crypt's
// output refused every login with the right password.
TEST(BasicAuthTest, ASaltSpelledOtherwiseVerifiesAsTheToolkits) {
  auto crypt = BasicAuth::LoadCrypt();
  ASSERT_TRUE(crypt.has_value()) << crypt.error().message;
  const std::string salt(22, 'a');  // canonical: 21 'a' and an 'O'
  crypt_data data{};
  const char* made = (*crypt)("pw", ("$2y$04$" + salt).c_str(), &data);
  ASSERT_NE(made, nullptr);
  std::string canonical(made);
  ASSERT_EQ(canonical.size(), 60u);
  ASSERT_NE(canonical.substr(7, 22), salt) << "libxcrypt no longer writes the salt back canonical";
  std::string stored = "$2y$04$" + salt + canonical.substr(29);
  BasicAuth auth({{"u", stored}}, *crypt);
  EXPECT_TRUE(auth.Allows(Header("u", "pw")));
  BasicAuth again({{"u", stored}}, *crypt);
  EXPECT_FALSE(again.Allows(Header("u", "wrong")));
  BasicAuth canon({{"u", canonical}}, *crypt);
  EXPECT_TRUE(canon.Allows(Header("u", "pw")));
}

}  // namespace
}  // namespace mesh::http
