#include "http/web_config.h"

#include <sys/stat.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "host/core/printable.h"
#include "http/regular_file.h"

namespace mesh::http {
namespace {

// The toolkit's keys: those mesh-host implements, and those it accepts and
// says it does not (refused with that reason, never silently ignored).
const std::set<std::string> kTopKeys = {"tls_server_config", "http_server_config",
                                        "basic_auth_users", "rate_limit"};
const std::set<std::string> kRateKeys = {"interval", "burst"};
const std::set<std::string> kTlsKeys = {
    "cert_file",   "key_file",    "client_auth_type",           "client_ca_file",
    "min_version", "max_version", "prefer_server_cipher_suites"};
const std::set<std::string> kTlsUnsupported = {
    "cipher_suites", "curve_preferences", "client_allowed_sans", "cert", "key", "client_ca"};
const std::set<std::string> kHttpKeys = {"http2", "headers"};
// The toolkit allows only these response headers, and of two of them
// only these values (compared exactly, as it compares them).
const std::map<std::string, std::vector<std::string>> kHeaders = {
    {"Strict-Transport-Security", {}},
    {"X-Content-Type-Options", {"nosniff"}},
    {"X-Frame-Options", {"deny", "sameorigin"}},
    {"X-XSS-Protection", {}},
    {"Content-Security-Policy", {}}};

std::unexpected<core::Error> Bad(const std::string& where, const std::string& what) {
  return core::Fail(where + ": " + what);
}

core::Result<std::string> Scalar(const YAML::Node& node, const std::string& where) {
  if (!node.IsScalar()) return Bad(where, "must be a string");
  return node.as<std::string>();
}

core::Result<bool> Bool(const YAML::Node& node, const std::string& where) {
  if (!node.IsScalar()) return Bad(where, "must be true or false");
  std::string v = node.as<std::string>();
  if (v == "true") return true;
  if (v == "false") return false;
  return Bad(where, "\"" + v + "\" is not true or false");
}

core::Status OnlyKeys(const YAML::Node& map, const std::set<std::string>& known,
                      const std::set<std::string>& unsupported, const std::string& where) {
  if (!map.IsMap()) return Bad(where, "must be a mapping");
  for (const auto& kv : map) {
    std::string key = kv.first.as<std::string>();
    if (unsupported.contains(key)) {
      return Bad(where + "." + key,
                 "not supported by mesh-host (remove it; OpenSSL's defaults "
                 "apply)");
    }
    if (!known.contains(key)) return Bad(where + "." + key, "unknown key");
  }
  return core::Ok();
}

// exporter-toolkit reads the file strictly (yaml.v2's UnmarshalStrict), which
// refuses a key given twice; yaml-cpp keeps both and answers the first, so
// an empty `basic_auth_users:` above the real one turned auth off. Refused
// anywhere in the file, naming the key and its line.
// Aliases can make a node hold itself, or fan out without end: the walk is
// bounded in depth and in nodes, as no web config needs more.
constexpr int kMaxYamlDepth = 32;
constexpr size_t kMaxYamlNodes = 10000;
// The highest bcrypt cost a basic_auth_users hash may have (BcryptFault).
constexpr int kMostBcryptCost = 16;

core::Status NoKeyTwice(const YAML::Node& node, const std::string& where, int depth,
                        size_t& nodes) {
  if (depth > kMaxYamlDepth) return Bad(where, "nested deeper than 32 levels");
  if (++nodes > kMaxYamlNodes) return Bad(where, "more than 10,000 nodes (aliases?)");
  if (node.IsMap()) {
    std::set<std::string> seen;
    for (const auto& kv : node) {
      std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "(a non-scalar key)";
      std::string at = where.empty() ? key : where + "." + key;
      if (!seen.insert(key).second) {
        return Bad(at, "given twice (again at line " + std::to_string(kv.first.Mark().line + 1) +
                           "); each key may appear once");
      }
      if (auto st = NoKeyTwice(kv.second, at, depth + 1, nodes); !st) return st;
    }
  } else if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) {
      auto st = NoKeyTwice(node[i], where + "[" + std::to_string(i) + "]", depth + 1, nodes);
      if (!st) return st;
    }
  }
  return core::Ok();
}

core::Result<int> TlsVersion(const std::string& v, const std::string& where) {
  static const std::map<std::string, int> kVersions = {
      {"TLS10", 0x0301}, {"TLS11", 0x0302}, {"TLS12", 0x0303}, {"TLS13", 0x0304}};
  auto it = kVersions.find(v);
  if (it == kVersions.end()) {
    return Bad(where, "unknown TLS version \"" + v + "\" (TLS10, TLS11, TLS12 or TLS13)");
  }
  return it->second;
}

std::string Resolve(const std::string& path, const std::string& dir) {
  if (path.empty() || path[0] == '/' || dir.empty()) return path;
  return dir + "/" + path;
}

core::Result<ClientAuth> ClientAuthType(const std::string& value, const std::string& at) {
  static const std::map<std::string, ClientAuth> kTypes = {
      {"NoClientCert", ClientAuth::kNone},
      {"RequestClientCert", ClientAuth::kRequest},
      {"RequireAnyClientCert", ClientAuth::kRequireAny},
      // The toolkit's older name for it, which it still reads.
      {"RequireClientCert", ClientAuth::kRequireAny},
      {"VerifyClientCertIfGiven", ClientAuth::kVerifyIfGiven},
      {"RequireAndVerifyClientCert", ClientAuth::kRequireAndVerify}};
  auto it = kTypes.find(value);
  if (it == kTypes.end()) {
    return Bad(at, "unknown client auth type \"" + value +
                       "\" (NoClientCert, RequestClientCert, RequireAnyClientCert, "
                       "VerifyClientCertIfGiven or RequireAndVerifyClientCert)");
  }
  return it->second;
}

// What the settings must hold together: a key pair, client CAs exactly
// when client certificates are verified, versions in order.
core::Status CheckTls(const TlsSettings& tls, const std::string& where) {
  if (tls.cert_file.empty() && tls.key_file.empty()) {
    return Bad(where, "cert_file and key_file missing: TLS needs a certificate and its key");
  }
  if (tls.cert_file.empty())
    return Bad(where + ".cert_file", "missing (a key needs its certificate)");
  if (tls.key_file.empty())
    return Bad(where + ".key_file", "missing (a certificate needs its key)");
  bool verifies = tls.client_auth == ClientAuth::kVerifyIfGiven ||
                  tls.client_auth == ClientAuth::kRequireAndVerify;
  if (verifies && tls.client_ca_file.empty()) {
    return Bad(where + ".client_ca_file",
               "missing: client_auth_type verifies client certificates "
               "against it");
  }
  if (!verifies && !tls.client_ca_file.empty()) {
    return Bad(where + ".client_ca_file",
               "set, but client_auth_type does not verify client certificates (use "
               "RequireAndVerifyClientCert or VerifyClientCertIfGiven)");
  }
  if (tls.max_version != 0 && tls.max_version < tls.min_version) {
    return Bad(where + ".max_version", "lower than min_version");
  }
  return core::Ok();
}

core::Result<TlsSettings> ParseTls(const YAML::Node& node, const std::string& dir) {
  const std::string where = "tls_server_config";
  if (auto st = OnlyKeys(node, kTlsKeys, kTlsUnsupported, where); !st) {
    return std::unexpected(st.error());
  }
  TlsSettings tls;
  for (const auto& kv : node) {
    std::string key = kv.first.as<std::string>();
    std::string at = where + "." + key;
    if (key == "prefer_server_cipher_suites") {
      auto b = Bool(kv.second, at);
      if (!b) return std::unexpected(b.error());
      tls.prefer_server_cipher_suites = *b;
      continue;
    }
    auto value = Scalar(kv.second, at);
    if (!value) return std::unexpected(value.error());
    if (key == "cert_file") {
      tls.cert_file = Resolve(*value, dir);
    } else if (key == "key_file") {
      tls.key_file = Resolve(*value, dir);
    } else if (key == "client_ca_file") {
      tls.client_ca_file = Resolve(*value, dir);
    } else if (key == "client_auth_type") {
      auto type = ClientAuthType(*value, at);
      if (!type) return std::unexpected(type.error());
      tls.client_auth = *type;
    } else {
      auto v = TlsVersion(*value, at);
      if (!v) return std::unexpected(v.error());
      (key == "min_version" ? tls.min_version : tls.max_version) = *v;
    }
  }
  if (auto st = CheckTls(tls, where); !st) return std::unexpected(st.error());
  return tls;
}

// What is wrong with a bcrypt hash, or "" when nothing is: "$2a$", "$2b$"
// or "$2y$", a cost of 04 to 31 (the toolkit refuses others at start) and
// at most kMostBcryptCost,
// then 22 characters of salt and 31 of hash in bcrypt's alphabet (the
// toolkit accepts others, and then no password ever matches). The hash
// itself is never quoted: it is as good as an offline dictionary target.
std::string BcryptFault(const std::string& hash) {
  if (hash.size() != 60 || hash[0] != '$' || hash[1] != '2' ||
      (hash[2] != 'a' && hash[2] != 'b' && hash[2] != 'y') || hash[3] != '$' || hash[6] != '$') {
    return "not a bcrypt hash ($2a$, $2b$ or $2y$, a cost, then 53 characters)";
  }
  if (!std::isdigit(static_cast<unsigned char>(hash[4])) ||
      !std::isdigit(static_cast<unsigned char>(hash[5]))) {
    return "the bcrypt cost is not two digits";
  }
  int cost = (hash[4] - '0') * 10 + (hash[5] - '0');
  if (cost < 4 || cost > 31) {
    return "bcrypt cost " + hash.substr(4, 2) + " is outside 04 to 31";
  }
  // Beyond the toolkit: each step doubles a login's hash, and a stop
  // (SIGTERM) waits for the one being checked. Cost 16 takes seconds; 31
  // takes days, and nothing could stop the daemon but SIGKILL.
  if (cost > kMostBcryptCost) {
    return "bcrypt cost " + hash.substr(4, 2) + " is above " + std::to_string(kMostBcryptCost) +
           ": each step doubles the time a login takes (cost " + std::to_string(kMostBcryptCost) +
           " some seconds), and a stop waits for the one being checked";
  }
  for (size_t i = 7; i < hash.size(); ++i) {
    unsigned char ch = static_cast<unsigned char>(hash[i]);
    if (!std::isalnum(ch) && ch != '.' && ch != '/') {
      return std::string(i < 29 ? "the salt" : "the hash") +
             " holds a character outside "
             "bcrypt's alphabet (./A-Za-z0-9): no password would ever match it";
    }
  }
  return "";
}

// A Go duration, as the toolkit reads `rate_limit.interval`: "1s", "100ms",
// "1m30s" (units h, m, s, ms, us, µs, ns).
std::optional<std::chrono::nanoseconds> GoDuration(const std::string& text) {
  static const std::vector<std::pair<std::string_view, double>> kUnits = {
      {"ns", 1},   {"us", 1e3}, {"\xc2\xb5s", 1e3}, {"\xce\xbcs", 1e3},
      {"ms", 1e6}, {"s", 1e9},  {"m", 60e9},        {"h", 3600e9}};
  if (text == "0") return std::chrono::nanoseconds(0);
  if (text.empty()) return std::nullopt;
  double total = 0;
  const char* at = text.data();
  const char* end = text.data() + text.size();
  while (at < end) {
    // A number as Go writes one here: digits, at most one point.
    const char* start = at;
    while (at < end && (std::isdigit(static_cast<unsigned char>(*at)) || *at == '.')) ++at;
    double number = 0;
    auto [past, ec] = std::from_chars(start, at, number, std::chars_format::fixed);
    if (at == start || ec != std::errc() || past != at) return std::nullopt;
    const char* unit_start = at;
    while (at < end && !std::isdigit(static_cast<unsigned char>(*at)) && *at != '.') ++at;
    std::string_view unit(unit_start, static_cast<size_t>(at - unit_start));
    auto it =
        std::find_if(kUnits.begin(), kUnits.end(), [&](const auto& u) { return u.first == unit; });
    if (it == kUnits.end()) return std::nullopt;
    total += number * it->second;
  }
  // A day is far beyond any interval worth limiting by.
  if (!(total <= 86400e9)) return std::nullopt;
  return std::chrono::nanoseconds(std::llround(total));
}

core::Result<RateLimit> ParseRateLimit(const YAML::Node& node) {
  if (auto st = OnlyKeys(node, kRateKeys, {}, "rate_limit"); !st)
    return std::unexpected(st.error());
  RateLimit limit;
  if (const YAML::Node interval = node["interval"]; interval && !interval.IsNull()) {
    auto text = Scalar(interval, "rate_limit.interval");
    if (!text) return std::unexpected(text.error());
    auto d = GoDuration(*text);
    if (!d || d->count() < 0) {
      return Bad("rate_limit.interval",
                 "\"" + *text + "\" is not a duration of a day or less, such as 1s or 100ms");
    }
    limit.interval = *d;
  }
  if (const YAML::Node burst = node["burst"]; burst && !burst.IsNull()) {
    auto text = Scalar(burst, "rate_limit.burst");
    if (!text) return std::unexpected(text.error());
    int value = 0;
    auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
    if (text->empty() || ec != std::errc() || end != text->data() + text->size() || value < 0) {
      return Bad("rate_limit.burst", "must be a whole number of 0 or more");
    }
    limit.burst = value;
  }
  if (limit.interval.count() > 0 && limit.burst == 0) {
    return Bad("rate_limit.burst", "0 with an interval refuses every request (give 1 or more)");
  }
  return limit;
}

core::Result<WebConfig> Parse(const YAML::Node& root, const std::string& dir) {
  WebConfig config;
  if (root.IsNull()) return config;  // an empty file: plain HTTP, as the toolkit
  if (auto st = OnlyKeys(root, kTopKeys, {}, "the file"); !st) {
    // "the file.x: unknown key" reads badly: name the key alone.
    std::string m = st.error().message;
    if (m.starts_with("the file.")) m = m.substr(9);
    return core::Fail(m);
  }
  if (root["tls_server_config"] && !root["tls_server_config"].IsNull()) {
    auto tls = ParseTls(root["tls_server_config"], dir);
    if (!tls) return std::unexpected(tls.error());
    config.tls = std::move(*tls);
  }
  if (const YAML::Node http = root["http_server_config"]; http && !http.IsNull()) {
    if (auto st = OnlyKeys(http, kHttpKeys, {}, "http_server_config"); !st) {
      return std::unexpected(st.error());
    }
    if (http["http2"]) {
      if (auto b = Bool(http["http2"], "http_server_config.http2"); !b) {
        return std::unexpected(b.error());
      }
    }
    if (const YAML::Node headers = http["headers"]; headers && !headers.IsNull()) {
      if (!headers.IsMap()) return Bad("http_server_config.headers", "must be a mapping");
      for (const auto& kv : headers) {
        std::string name = kv.first.as<std::string>();
        std::string at = "http_server_config.headers." + name;
        auto allowed = kHeaders.find(name);
        if (allowed == kHeaders.end()) {
          return Bad(at,
                     "not a header the web config may set (Strict-Transport-Security, "
                     "X-Content-Type-Options, X-Frame-Options, X-XSS-Protection, "
                     "Content-Security-Policy)");
        }
        auto value = Scalar(kv.second, at);
        if (!value) return std::unexpected(value.error());
        const std::vector<std::string>& values = allowed->second;
        if (!values.empty() && std::find(values.begin(), values.end(), *value) == values.end()) {
          std::string list;
          for (const std::string& v : values) list += (list.empty() ? "" : " or ") + v;
          return Bad(at, "must be " + list + " (as exporter-toolkit allows), not \"" +
                             core::Printable(*value, 80) + "\"");
        }
        if (value->find_first_of("\r\n") != std::string::npos) return Bad(at, "contains a newline");
        // A header's value is visible text, spaces and tabs (RFC 9110): a
        // NUL cut the value where it stood, served as what came before.
        if (std::any_of(value->begin(), value->end(), [](char c) {
              auto u = static_cast<unsigned char>(c);
              return (u < 0x20 && u != '\t') || u == 0x7f;
            })) {
          return Bad(at, "contains a control character");
        }
        config.headers[name] = *value;
      }
    }
  }
  if (const YAML::Node rate = root["rate_limit"]; rate && !rate.IsNull()) {
    auto limit = ParseRateLimit(rate);
    if (!limit) return std::unexpected(limit.error());
    config.rate_limit = *limit;
  }
  if (const YAML::Node users = root["basic_auth_users"]; users && !users.IsNull()) {
    if (!users.IsMap()) return Bad("basic_auth_users", "must map each user to a bcrypt hash");
    for (const auto& kv : users) {
      std::string user = kv.first.as<std::string>();
      std::string at = "basic_auth_users." + user;
      if (user.empty() || user.find(':') != std::string::npos) {
        return Bad("basic_auth_users", "a user name is empty or contains \":\"");
      }
      auto hash = Scalar(kv.second, at);
      if (!hash) return std::unexpected(hash.error());
      if (std::string fault = BcryptFault(*hash); !fault.empty()) return Bad(at, fault);
      config.basic_auth_users[user] = *hash;
    }
  }
  return config;
}

}  // namespace

namespace {

// Counts documents, building nothing.
class Ignore : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// Whether a second document follows the first. Two at most are asked
// for: yaml-cpp 0.7 (Debian 12's) reads a stray top-level "," as an empty
// document for ever, never consuming it (upstream's fix came in 2024), so
// YAML::LoadAll never returns.
bool MoreThanOneDocument(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  Ignore ignore;
  int documents = 0;
  while (documents < 2 && parser.HandleNextDocument(ignore)) ++documents;
  return documents > 1;
}

}  // namespace

core::Result<WebConfig> ParseWebConfig(const std::string& text, const std::string& dir) {
  // yaml-cpp throws; nothing it throws leaves this function.
  try {
    // The toolkit reads the first document only: a second one (a file
    // appended to) would be ignored, its users and TLS with it.
    if (MoreThanOneDocument(text)) {
      return core::Fail(
          "holds more than one YAML document (---), or text after its end (a stray ,): give one");
    }
    YAML::Node root = YAML::Load(text);
    size_t nodes = 0;
    if (auto st = NoKeyTwice(root, "", 0, nodes); !st) return std::unexpected(st.error());
    return Parse(root, dir);
  } catch (const YAML::Exception& e) {
    return core::Fail("not valid YAML at line " + std::to_string(e.mark.line + 1) + ", column " +
                      std::to_string(e.mark.column + 1) + ": " + e.msg);
  } catch (const std::exception& e) {
    return core::Fail(std::string("cannot be read: ") + e.what());
  }
}

namespace {

// A web config is a few lines; this bounds what a wrong path can make the
// daemon hold.
constexpr size_t kMaxWebConfigBytes = 1 << 20;

// The text of a regular file at `path` (regular_file.h: a directory read
// as an empty file would be plain HTTP with no auth), at most
// kMaxWebConfigBytes.
core::Result<std::string> ReadConfigFile(const std::string& path) {
  auto file = RegularFile::Open(path);
  if (!file) return std::unexpected(file.error());
  return file->Read(kMaxWebConfigBytes);
}

}  // namespace

core::Result<WebConfig> LoadWebConfig(const std::string& path) {
  auto text = ReadConfigFile(path);
  if (!text) return core::Fail("--web-config " + path + ": " + text.error().message);
  std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
  if (dir.empty()) dir = "/";
  auto config = ParseWebConfig(*text, dir);
  if (!config) return core::Fail("--web-config " + path + ": " + config.error().message);
  // Taken as exporter-toolkit takes it, but said: sshd refuses such a key.
  struct stat st {};
  if (config->tls.has_value() && !config->tls->key_file.empty() &&
      ::stat(config->tls->key_file.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
      (st.st_mode & S_IROTH) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
    config->warnings.push_back("--web-config " + path + ": tls_server_config.key_file " +
                               config->tls->key_file + " is readable by every user (mode " + mode +
                               "): keep a private key from them (chmod o-r)");
  }
  return config;
}

}  // namespace mesh::http
