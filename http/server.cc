#include "http/server.h"

#include <httplib.h>
#include <strings.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "host/status/status_page.h"
#include "http/basic_auth.h"
#include "http/bounded_server.h"
#include "http/gzip.h"
#include "http/rate_limiter.h"
#include "http/tls_context.h"

namespace mesh::http {
namespace {

// A head asking for /healthz: a few bytes, written whole into the socket's
// buffer, so it takes the brief lane and never waits on a worker that
// waits on a client not reading /metrics (BoundedServer::SetBrief).
bool HealthzHead(std::string_view head) {
  std::string_view line = head.substr(0, head.find_first_of("\r\n"));
  for (std::string_view method : {"GET ", "HEAD "}) {
    if (!line.starts_with(method)) continue;
    std::string_view target = line.substr(method.size());
    return target.substr(0, target.find_first_of(" ?")) == "/healthz";
  }
  return false;
}

bool RequiresCert(ClientAuth a) {
  return a == ClientAuth::kRequireAny || a == ClientAuth::kRequireAndVerify;
}
bool VerifiesCert(ClientAuth a) {
  return a == ClientAuth::kVerifyIfGiven || a == ClientAuth::kRequireAndVerify;
}

// A file caught half-written (cut before client_auth_type, say) reads as a
// web config that asks less of clients: a reload may tighten TLS, never
// loosen it.
core::Status NoWeaker(const TlsSettings& now, const TlsSettings& next) {
  const char* why = nullptr;
  if (RequiresCert(now.client_auth) && !RequiresCert(next.client_auth)) {
    why = "client certificates would no longer be required";
  } else if (VerifiesCert(now.client_auth) && !VerifiesCert(next.client_auth)) {
    why = "client certificates would no longer be verified";
  } else if (next.min_version < now.min_version) {
    why = "min_version would be lowered";
  }
  if (why == nullptr) return core::Ok();
  return core::Fail(std::string("tls_server_config: ") + why +
                    ": TLS is not loosened by a reload (restart mesh-host for that)");
}

// The values of a raw request head's Authorization headers (httplib's
// reading of a name: up to the colon, any case; the value without the
// blanks around it).
std::vector<std::string_view> AuthorizationsOf(std::string_view head) {
  std::vector<std::string_view> found;
  size_t eol = head.find("\r\n");
  while (eol != std::string_view::npos) {
    head.remove_prefix(eol + 2);
    eol = head.find("\r\n");
    std::string_view line = head.substr(0, eol);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view name = line.substr(0, colon);
    while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.remove_suffix(1);
    if (name.size() != 13 || strncasecmp(name.data(), "authorization", 13) != 0) continue;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    found.push_back(value);
  }
  return found;
}

}  // namespace

core::Result<ListenAddress> ParseListen(const std::string& text) {
  ListenAddress a;
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return core::Fail("listen address \"" + text + "\" is not HOST:PORT");
  }
  a.host = text.substr(0, colon);
  if (a.host.size() > 2 && a.host.front() == '[' && a.host.back() == ']') {
    a.host = a.host.substr(1, a.host.size() - 2);
  }
  std::string port = text.substr(colon + 1);
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), a.port);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || a.port < 0 ||
      a.port > 65535) {
    return core::Fail("listen address \"" + text + "\": port must be 0 to 65535");
  }
  return a;
}

StatusServer::StatusServer(const status::StatusBoard& board,
                           std::function<std::string()> metrics_text, std::function<void()> on_idle)
    : board_(board), metrics_text_(std::move(metrics_text)), on_idle_(std::move(on_idle)) {}

StatusServer::~StatusServer() { Stop(); }

core::Status StatusServer::Configure(const WebConfig& config) {
  std::shared_ptr<const TlsContext> tls;
  if (config.tls.has_value()) {
    auto made = TlsContext::Make(*config.tls);
    if (!made) return std::unexpected(made.error());
    tls = std::move(*made);
  }
  BasicAuth::Crypt crypt = nullptr;
  if (!config.basic_auth_users.empty()) {
    auto loaded = BasicAuth::LoadCrypt();
    if (!loaded) return core::Fail("basic_auth_users: " + loaded.error().message);
    crypt = *loaded;
  }
  auto policy = std::make_shared<Policy>();
  policy->headers = config.headers;
  policy->rate_limit = config.rate_limit;
  std::lock_guard<std::mutex> lock(mu_);
  // A reload that leaves the users as they were keeps what was checked:
  // every SIGHUP would otherwise send each scrape back to the hashing
  // lane, behind whatever wrong passwords are queued there. Likewise the
  // rate limit's bucket is not refilled by a reload.
  if (policy_ != nullptr && policy_->auth->users() == config.basic_auth_users) {
    policy->auth = policy_->auth;
  } else {
    policy->auth = std::make_shared<BasicAuth>(config.basic_auth_users, crypt);
  }
  if (policy_ != nullptr && policy_->rate_limit.interval == config.rate_limit.interval &&
      policy_->rate_limit.burst == config.rate_limit.burst) {
    policy->limiter = policy_->limiter;
  } else {
    policy->limiter = std::make_shared<RateLimiter>(
        config.rate_limit.interval, config.rate_limit.burst, RateLimiter::Clock::now());
  }
  policy_ = std::move(policy);
  tls_ = tls;
  tls_settings_ = config.tls;
  if (server_ != nullptr) server_->SetTls(std::move(tls));
  return core::Ok();
}

core::Status StatusServer::Reload(const WebConfig& config) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (tls_ != nullptr && !config.tls.has_value()) {
      return core::Fail(
          "it has no tls_server_config: TLS is not turned off by a reload "
          "(restart mesh-host for that)");
    }
    if (policy_ != nullptr && policy_->auth->required() && config.basic_auth_users.empty()) {
      return core::Fail(
          "it has no basic_auth_users: basic auth is not turned off by a reload "
          "(restart mesh-host for that)");
    }
    if (tls_settings_.has_value() && config.tls.has_value()) {
      if (auto st = NoWeaker(*tls_settings_, *config.tls); !st) return st;
    }
  }
  return Configure(config);
}

std::shared_ptr<const StatusServer::Policy> StatusServer::CurrentPolicy() const {
  std::lock_guard<std::mutex> lock(mu_);
  return policy_;
}

std::string StatusServer::scheme() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tls_ != nullptr ? "https" : "http";
}

std::shared_ptr<const std::string> StatusServer::StatusBody(bool gzip) {
  std::lock_guard<std::mutex> lock(status_mu_);
  // Read under the lock: a request that waited must not render the picture
  // it saw before waiting over a newer one.
  std::shared_ptr<const status::Snapshot> now = board_.Get();
  // By the picture itself, not its address: one freed and another made in
  // its place is a new picture.
  if (status_body_ == nullptr || status_of_.lock() != now) {
    status_body_ = nullptr;  // the old texts freed before the new one is built
    status_gzip_ = nullptr;
    status_body_ = std::make_shared<const std::string>(
        status::ToJson(*now).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    status_of_ = now;
  }
  if (!gzip) return status_body_;
  if (status_gzip_ == nullptr) {
    auto packed = Gzip(*status_body_);
    if (!packed) return nullptr;
    status_gzip_ = std::make_shared<const std::string>(std::move(*packed));
  }
  return status_gzip_;
}

void StatusServer::Idle() {
  {
    std::lock_guard<std::mutex> lock(status_mu_);
    status_body_ = nullptr;
    status_gzip_ = nullptr;
    status_of_.reset();
  }
  if (on_idle_) on_idle_();
}

// The three pages, and what an unknown path gets.
void StatusServer::Route(httplib::Server& s) {
  // /status is compressed here, once per picture, and each response reads
  // the shared text rather than a copy of it (2.7 MB at 10,000 resources;
  // sixteen clients held sixteen copies). httplib compresses a body it
  // holds, never one a provider of known length sends, so it is not
  // gzipped twice (server_test checks it).
  s.Get("/status", [this](const httplib::Request& req, httplib::Response& res) {
    // BoundedServer leaves "gzip" or nothing, and no ranges (NarrowRequest).
    bool gzip = req.get_header_value("Accept-Encoding").find("gzip") != std::string::npos;
    std::shared_ptr<const std::string> body = StatusBody(gzip);
    if (body == nullptr) {
      gzip = false;
      body = StatusBody(false);
    }
    res.set_header("Vary", "Accept-Encoding");
    if (gzip) res.set_header("Content-Encoding", "gzip");
    res.set_content_provider(body->size(), "application/json",
                             [body](size_t offset, size_t length, httplib::DataSink& sink) {
                               if (offset >= body->size()) return false;
                               return sink.write(body->data() + offset,
                                                 std::min(length, body->size() - offset));
                             });
  });
  // The page for a browser: the same picture, its own strict policy.
  s.Get("/", [this](const httplib::Request& req, httplib::Response& res) {
    status::PageContext context{.version = version_};
    if (req.has_param("page")) {
      const std::string text = req.get_param_value("page");
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), context.page);
      if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
        res.status = 400;
        res.set_content("page must be a number of 1 or more\n", "text/plain");
        return;
      }
    }
    auto page = status::RenderStatusPage(*board_.Get(), context);
    if (!page) {
      res.status = 404;
      res.set_content(page.error().message + "\n", "text/plain");
      return;
    }
    res.set_header("Content-Security-Policy", status::StatusPagePolicy());
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_header("Referrer-Policy", "no-referrer");
    res.set_header("Cache-Control", "no-store");
    res.set_content(*page, "text/html; charset=utf-8");
  });
  s.Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
    status::Health h = status::Judge(*board_.Get(), status::kHealthzLines);
    res.status = h.healthy ? 200 : 503;
    res.set_content(h.text, "text/plain; charset=utf-8");
  });
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_text_(), "text/plain; version=0.0.4; charset=utf-8");
  });
  s.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty()) {
      res.set_content(
          res.status == 404 ? "not found: try /, /status, /healthz or /metrics\n" : "error\n",
          "text/plain");
    }
  });
}

// Authentication and the web config's headers on every request; anything
// but GET (and the HEAD httplib derives from it) is refused before routing,
// whatever the path.
void StatusServer::Guard(httplib::Server& s) {
  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    std::shared_ptr<const Policy> policy = CurrentPolicy();
    if (policy != nullptr) {
      for (const auto& [name, value] : policy->headers) res.set_header(name, value);
      if (!policy->limiter->Allow(RateLimiter::Clock::now())) {
        res.status = 429;
        res.set_content("too many requests\n", "text/plain");
        return httplib::Server::HandlerResponse::Handled;
      }
      if (!policy->auth->Allows(req.get_header_value("Authorization"),
                                BoundedServer::OnSlowWorker())) {
        res.status = 401;
        res.set_header("WWW-Authenticate", "Basic realm=\"mesh-host\"");
        res.set_content("unauthorized\n", "text/plain");
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    if (req.method == "GET" || req.method == "HEAD")
      return httplib::Server::HandlerResponse::Unhandled;
    res.status = 405;
    res.set_header("Allow", "GET, HEAD");
    res.set_content("method not allowed: only GET\n", "text/plain");
    return httplib::Server::HandlerResponse::Handled;
  });
}

core::Result<std::string> StatusServer::Start(const ListenAddress& address) {
  // Sixteen workers (one for password hashes), at most 512 connections, a
  // request head within 2 s and 64 KiB per connection (connection.h): no
  // client, slow, silent, large or many, keeps /healthz unanswered or
  // takes the reconcile's descriptors.
  server_ = std::make_unique<BoundedServer>(ConnectionLimits{}, [this] { Idle(); });
  {
    std::lock_guard<std::mutex> lock(mu_);
    server_->SetTls(tls_);
  }
  httplib::Server& s = *server_;
  s.set_payload_max_length(64UL * 1024);

  Route(s);
  Guard(s);
  // A request whose password must be hashed waits for the slow lane; one
  // with none, or one remembered, never waits behind it. More than one
  // Authorization header: slow, whichever the parser reads.
  server_->SetSlow([this](std::string_view head) {
    std::shared_ptr<const Policy> policy = CurrentPolicy();
    if (policy == nullptr || !policy->auth->required()) return false;
    // httplib ends a line at a bare LF too, and percent-decodes values:
    // a head that has either is read here as httplib may not, so it is
    // slow (a fast worker would refuse it rather than hash).
    for (size_t lf = head.find('\n'); lf != std::string_view::npos; lf = head.find('\n', lf + 1)) {
      if (lf == 0 || head[lf - 1] != '\r') return true;
    }
    std::vector<std::string_view> given = AuthorizationsOf(head);
    if (given.size() > 1) return true;
    if (!given.empty() && given.front().find('%') != std::string_view::npos) return true;
    return !policy->auth->Decided(given.empty() ? std::string_view() : given.front());
  });

  server_->SetBrief(&HealthzHead);

  int port = address.port;
  if (port == 0) {
    port = s.bind_to_any_port(address.host);
    if (port < 0) return core::Fail("listen on " + address.host + ":0: cannot bind");
  } else if (!s.bind_to_port(address.host, port)) {
    return core::Fail("listen on " + address.host + ":" + std::to_string(port) +
                      ": cannot bind (in use, or not an address of this machine)");
  }
  server_->WidenBacklog();
  if (!server_->HoldListener()) {
    return core::Fail("listen on " + address.host + ":" + std::to_string(port) +
                      ": no descriptor left to hold the socket by: " + std::strerror(errno));
  }
  std::string host =
      address.host.find(':') != std::string::npos ? "[" + address.host + "]" : address.host;
  std::string where = host + ":" + std::to_string(port);
  try {
    thread_ = std::thread([this, where] {
      std::string why;
      try {
        server_->listen_after_bind();
      } catch (const std::exception& e) {
        why = e.what();
      }
      server_->ReleaseListener();
      if (stopping_ || !on_lost_) return;
      std::string failure = server_->failure();
      on_lost_("the HTTP listener on " + where + " stopped: " +
               (!failure.empty() ? failure
                : !why.empty()   ? why
                                 : "accepting a connection failed, and the socket was closed"));
    });
  } catch (const std::system_error& e) {
    return core::Fail("listen on " + where + ": no thread to listen on: " + e.what());
  }
  return where;
}

void StatusServer::Stop() {
  stopping_ = true;
  if (!thread_.joinable()) return;
  server_->Interrupt();
  thread_.join();
}

}  // namespace mesh::http
