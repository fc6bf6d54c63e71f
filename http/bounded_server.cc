#include "http/bounded_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "http/head_gatherer.h"

namespace mesh::http {
namespace {

using Clock = std::chrono::steady_clock;

// Set for the life of each slow worker's thread.
thread_local bool on_slow_worker = false;

// The peer has closed (or reset) its connection: nothing it asked for can
// reach it. A client that only half-closes while it waits is taken for
// gone too; HTTP clients do not.
bool PeerGone(int sock) {
  pollfd p{sock, POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

// Waits for `events` on `sock` until `deadline`; false on timeout or error.
bool WaitFor(int sock, short events, Clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{sock, events, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 60000)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    return (p.revents & (events | POLLHUP)) != 0 && (p.revents & POLLNVAL) == 0;
  }
}

void Address(int sock, bool peer, std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  int rc = peer ? ::getpeername(sock, reinterpret_cast<sockaddr*>(&addr), &len)
                : ::getsockname(sock, reinterpret_cast<sockaddr*>(&addr), &len);
  if (rc != 0) return;
  char buf[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&addr);
    ::inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf);
    port = ntohs(in->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&addr);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof buf);
    port = ntohs(in6->sin6_port);
  }
  ip = buf;
}

}  // namespace

namespace {

std::string_view Trim(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

// Whether Accept-Encoding offers gzip: with a weight above 0 (RFC 9110
// 12.5.3: "gzip;q=0" refuses it), by name, or by "*" when gzip is not named.
bool OffersGzip(const httplib::Headers& headers) {
  std::optional<bool> named, any;
  auto [from, to] = headers.equal_range("Accept-Encoding");
  for (auto it = from; it != to; ++it) {
    std::string_view list = it->second;
    while (!list.empty()) {
      size_t comma = list.find(',');
      std::string_view item = list.substr(0, comma);
      list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
      size_t semi = item.find(';');
      std::string_view coding = Trim(item.substr(0, semi));
      std::string_view param = semi == std::string_view::npos ? "" : Trim(item.substr(semi + 1));
      // q=0, 0.0, 0.000: refused; any other weight, or none, offers it.
      std::string_view q = param.starts_with("q=") || param.starts_with("Q=")
                               ? Trim(param.substr(2))
                               : std::string_view("1");
      bool weighted = !(q.starts_with("0") && q.find_first_not_of("0.") == std::string_view::npos);
      if (coding.size() == 4 && strncasecmp(coding.data(), "gzip", 4) == 0) {
        named = weighted;
      } else if (coding == "*") {
        any = weighted;
      }
    }
  }
  return named.value_or(any.value_or(false));
}

// What every request is narrowed to before it is routed:
// - A client that accepts brotli gets gzip or nothing: httplib compresses
//   with brotli's slowest quality, 3.9 s of CPU for /status of 10,000
//   resources (gzip: 63 ms), and browsers offer it by default.
// - No byte ranges: every page is small or made whole for each picture,
//   and httplib does not check a range against the length of a body that
//   a content provider sends (/status): a range past its end would read
//   past the text or keep a worker asking for bytes that never come.
void NarrowRequest(httplib::Request& req) {
  bool gzip = OffersGzip(req.headers);
  auto [from, to] = req.headers.equal_range("Accept-Encoding");
  req.headers.erase(from, to);
  if (gzip) req.headers.emplace("Accept-Encoding", "gzip");
  req.ranges.clear();
  req.headers.erase("Range");
}

}  // namespace

// The workers, and the three lanes of whole requests they take: the fast
// and the brief lane in arrival order; the slow lane by turns, one request
// per client address, so that one client sending wrong passwords cannot
// keep another waiting for more than a hash per address ahead of it. Slow
// workers take the others when the slow lane is empty; fast workers never
// take slow ones; brief workers take only brief ones, which the others
// take when their own lanes are empty. It also owns the gatherer, so
// that both live exactly as long as httplib's listening loop.
class BoundedServer::Queue : public httplib::TaskQueue {
 public:
  explicit Queue(BoundedServer& server)
      : server_(server),
        gatherer_(server.limits_, server.tally_,
                  [this](std::unique_ptr<Connection> c) { Push(std::move(c)); }) {
    if (auto started = gatherer_.Start(); !started) {
      server.Fail("its connection gatherer could not start: " + started.error().message);
      return;
    }
    const size_t workers = server.limits_.workers;
    size_t slow = std::min(server.limits_.slow_workers, workers);
    size_t brief =
        std::min(server.limits_.brief_workers, workers > slow + 1 ? workers - slow - 1 : 0);
    try {
      for (size_t i = 0; i < workers; ++i) {
        Lane lane = i < slow ? Lane::kSlow : i < slow + brief ? Lane::kBrief : Lane::kFast;
        threads_.emplace_back([this, lane] { Work(lane); });
      }
    } catch (const std::system_error& e) {
      // A thread not made (a tasks limit) throws here, on httplib's
      // accepting thread: those made are joined, or their destruction
      // would terminate the process.
      StopWorkers();
      server.Fail(std::string("its workers could not start: ") + e.what());
      return;
    }
    started_ = true;
  }

  // httplib's accepting thread, with one connection's job: it runs here,
  // handing the socket to the gatherer (process_and_close_socket).
  void enqueue(std::function<void()> fn) override {
    accepting = started_ ? this : nullptr;
    fn();
    accepting = nullptr;
  }

  void shutdown() override {
    // Those waiting for a head first, then those queued for a worker are
    // closed unserved (the daemon's stop would wait on their deadlines);
    // a request being answered is finished, and its connection closed.
    gatherer_.Stop();
    std::deque<std::unique_ptr<Connection>> dropped;
    {
      std::lock_guard<std::mutex> lock(mu_);
      dropped.swap(fast_);
      for (auto& c : brief_) dropped.push_back(std::move(c));
      brief_.clear();
      for (auto& [peer, queued] : slow_) {
        for (auto& c : queued) dropped.push_back(std::move(c));
      }
      slow_.clear();
      turns_.clear();
    }
    StopWorkers();
  }

  void Hold(std::unique_ptr<Connection> c) { gatherer_.Hold(std::move(c)); }

  // Set on the accepting thread while it runs a job of this queue.
  static thread_local Queue* accepting;

 private:
  enum class Lane { kFast, kSlow, kBrief };

  void StopWorkers() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }

  // On the gatherer's thread: never blocks.
  void Push(std::unique_ptr<Connection> c) {
    const std::string_view head = std::string_view(c->buffered).substr(0, HeadEnd(*c));
    const bool slow = server_.slow_ && server_.slow_(head);
    const bool brief = !slow && server_.brief_ && server_.brief_(head);
    std::unique_ptr<Connection> dropped;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) {
        dropped = std::move(c);
      } else if (brief) {
        brief_.push_back(std::move(c));
      } else if (!slow) {
        fast_.push_back(std::move(c));
      } else {
        auto& queued = slow_[c->peer];
        if (queued.empty()) turns_.push_back(c->peer);
        queued.push_back(std::move(c));
        if (++slow_count_ > server_.limits_.max_slow_queued) dropped = DropSlowLocked();
      }
    }
    if (dropped != nullptr) ++server_.tally_.shed;
    cv_.notify_all();
  }

  // The oldest slow request of the address with the most queued.
  std::unique_ptr<Connection> DropSlowLocked() {
    auto most = std::max_element(slow_.begin(), slow_.end(), [](const auto& a, const auto& b) {
      return a.second.size() < b.second.size();
    });
    std::unique_ptr<Connection> c = std::move(most->second.front());
    most->second.pop_front();
    --slow_count_;
    if (most->second.empty()) {
      turns_.erase(std::find(turns_.begin(), turns_.end(), most->first));
      slow_.erase(most);
    }
    return c;
  }

  // `from_slow`: it came out of the slow lane's queue (a login to hash).
  std::unique_ptr<Connection> TakeLocked(Lane lane, bool& from_slow) {
    from_slow = false;
    auto front = [](std::deque<std::unique_ptr<Connection>>& lane_queue) {
      std::unique_ptr<Connection> c = std::move(lane_queue.front());
      lane_queue.pop_front();
      return c;
    };
    // The brief worker takes only brief requests; the others take them when
    // their own lanes are empty, so a flood of brief ones starves no lane.
    if (lane == Lane::kBrief || (fast_.empty() && (lane != Lane::kSlow || turns_.empty()))) {
      return brief_.empty() ? nullptr : front(brief_);
    }
    if (lane == Lane::kSlow && !turns_.empty()) {
      std::string peer = std::move(turns_.front());
      turns_.pop_front();
      auto it = slow_.find(peer);
      std::unique_ptr<Connection> c = std::move(it->second.front());
      it->second.pop_front();
      --slow_count_;
      if (it->second.empty()) {
        slow_.erase(it);
      } else {
        turns_.push_back(std::move(peer));
      }
      from_slow = true;
      return c;
    }
    return front(fast_);
  }

  void Work(Lane lane) {
    on_slow_worker = lane == Lane::kSlow;
    for (;;) {
      std::unique_ptr<Connection> c;
      bool from_slow = false;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] {
          return stopping_ || !brief_.empty() || (lane != Lane::kBrief && !fast_.empty()) ||
                 (lane == Lane::kSlow && !turns_.empty());
        });
        if (stopping_) return;
        c = TakeLocked(lane, from_slow);
      }
      if (c == nullptr) continue;
      // A client that gave up while its login waited for the hash is not
      // hashed for: that is a core's seconds for no one.
      if (from_slow && PeerGone(c->sock)) continue;
      c = server_.Serve(std::move(c));
      if (c != nullptr) gatherer_.Hold(std::move(c));
    }
  }

  BoundedServer& server_;
  HeadGatherer gatherer_;
  bool started_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Connection>> fast_;
  std::deque<std::unique_ptr<Connection>> brief_;
  std::map<std::string, std::deque<std::unique_ptr<Connection>>> slow_;
  std::deque<std::string> turns_;  // addresses with a slow request queued, next first
  size_t slow_count_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

thread_local BoundedServer::Queue* BoundedServer::Queue::accepting = nullptr;

bool BoundedServer::OnSlowWorker() { return on_slow_worker; }

std::string BoundedServer::failure() const {
  std::lock_guard<std::mutex> lock(failure_mu_);
  return failure_;
}

// On httplib's accepting thread, inside its loop: stop() ends the loop.
void BoundedServer::Fail(std::string why) {
  {
    std::lock_guard<std::mutex> lock(failure_mu_);
    failure_ = std::move(why);
  }
  Interrupt();
}

// The connection as httplib's parser reads it: first what the gatherer
// read, then the socket, within the connection's budget and deadlines.
class BoundedServer::LimitedStream : public httplib::Stream {
 public:
  LimitedStream(Connection& c, const ConnectionLimits& limits) : c_(c), limits_(limits) {}
  ~LimitedStream() override { c_.buffered.erase(0, taken_); }

  bool exhausted() const { return exhausted_; }

  bool is_readable() const override {
    return Buffered() > 0 || Pending() || WaitFor(c_.sock, POLLIN, c_.deadline);
  }
  bool is_writable() const override { return WaitFor(c_.sock, POLLOUT, WriteDeadline()); }
  ssize_t read(char* ptr, size_t size) override {
    if (size_t n = std::min(size, Buffered()); n > 0) {
      std::memcpy(ptr, c_.buffered.data() + taken_, n);
      taken_ += n;
      return static_cast<ssize_t>(n);
    }
    if (c_.budget == 0) {
      exhausted_ = true;
      return -1;
    }
    if (c_.ssl != nullptr) {
      ssize_t n = TlsIo(
          [&] { return SSL_read(c_.ssl.get(), ptr, static_cast<int>(std::min(size, c_.budget))); },
          c_.deadline);
      if (n > 0) c_.budget -= static_cast<size_t>(n);
      return n;
    }
    for (;;) {
      ssize_t n = ::recv(c_.sock, ptr, std::min(size, c_.budget), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (WaitFor(c_.sock, POLLIN, c_.deadline)) continue;
        exhausted_ = true;
        return -1;
      }
      if (n > 0) c_.budget -= static_cast<size_t>(n);
      return n;
    }
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (!WaitFor(c_.sock, POLLOUT, WriteDeadline())) return -1;
    if (c_.ssl != nullptr) {
      return TlsIo(
          [&] {
            return SSL_write(c_.ssl.get(), ptr, static_cast<int>(std::min<size_t>(size, 1 << 20)));
          },
          WriteDeadline());
    }
    for (;;) {
      // Never blocks: a client reading slowly is waited for only until the
      // write deadline, itself within the connection's life.
      ssize_t n = ::send(c_.sock, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (!WaitFor(c_.sock, POLLOUT, WriteDeadline())) return -1;
        continue;
      }
      return n;
    }
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    Address(c_.sock, true, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    Address(c_.sock, false, ip, port);
  }
  socket_t socket() const override { return c_.sock; }

 private:
  size_t Buffered() const { return c_.buffered.size() - taken_; }
  // Bytes OpenSSL already decrypted: there is no socket event for them.
  bool Pending() const { return c_.ssl != nullptr && SSL_pending(c_.ssl.get()) > 0; }

  // One SSL_read or SSL_write on the non-blocking socket, retried as
  // OpenSSL asks until `deadline`.
  template <typename Op>
  ssize_t TlsIo(Op op, Clock::time_point deadline) {
    for (;;) {
      // SSL_get_error reads this thread's error queue first: an error left
      // by another connection would read as this one's.
      ERR_clear_error();
      int n = op();
      if (n > 0) return n;
      int err = SSL_get_error(c_.ssl.get(), n);
      if (err == SSL_ERROR_WANT_READ && WaitFor(c_.sock, POLLIN, deadline)) continue;
      if (err == SSL_ERROR_WANT_WRITE && WaitFor(c_.sock, POLLOUT, deadline)) continue;
      if (err == SSL_ERROR_ZERO_RETURN) return 0;
      exhausted_ = err != SSL_ERROR_SYSCALL || n != 0;
      return -1;
    }
  }

  Clock::time_point WriteDeadline() const {
    return std::min(Clock::now() + limits_.write, c_.ends);
  }

  Connection& c_;
  const ConnectionLimits& limits_;
  size_t taken_ = 0;  // of c_.buffered, read by the parser
  bool exhausted_ = false;
};

BoundedServer::BoundedServer(ConnectionLimits limits, std::function<void()> on_idle)
    : limits_(limits) {
  tally_.on_idle = std::move(on_idle);
  new_task_queue = [this] { return new Queue(*this); };
  // Not httplib's default, which adds SO_REUSEPORT: with it, a second
  // daemon binds the same port and the kernel splits requests between the
  // two. A port in use must be an error at start.
  set_socket_options([this](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    listening_ = sock;
  });
  // What each answer's Keep-Alive header tells the client: these limits,
  // not httplib's own (timeout=5, max=5), which a client reusing an idle
  // connection after 3 s would trust and find closed.
  set_keep_alive_timeout(
      std::max<time_t>(1, std::chrono::duration_cast<std::chrono::seconds>(limits_.idle).count()));
  set_keep_alive_max_count(limits_.requests_per_connection);
}

void BoundedServer::WidenBacklog() {
  // listen() again on a listening socket sets its backlog; the kernel
  // caps it at net.core.somaxconn.
  if (int sock = listening_.load(); sock >= 0) (void)::listen(sock, SOMAXCONN);
}

bool BoundedServer::HoldListener() {
  std::lock_guard<std::mutex> lock(held_mu_);
  if (int sock = listening_.load(); sock >= 0 && held_ < 0) {
    held_ = ::fcntl(sock, F_DUPFD_CLOEXEC, 3);
  }
  return held_ >= 0;
}

void BoundedServer::Interrupt() {
  // A listening socket shut down fails accept() with EINVAL: httplib's
  // loop then closes its own descriptor and ends.
  std::lock_guard<std::mutex> lock(held_mu_);
  if (held_ >= 0) (void)::shutdown(held_, SHUT_RDWR);
}

void BoundedServer::ReleaseListener() {
  std::lock_guard<std::mutex> lock(held_mu_);
  if (held_ >= 0) ::close(held_);
  held_ = -1;
}

void BoundedServer::SetTls(std::shared_ptr<const TlsContext> tls) {
  std::lock_guard<std::mutex> lock(tls_mu_);
  tls_ = std::move(tls);
}

std::shared_ptr<const TlsContext> BoundedServer::Tls() const {
  std::lock_guard<std::mutex> lock(tls_mu_);
  return tls_;
}

bool BoundedServer::process_and_close_socket(socket_t sock) {
  auto c = std::make_unique<Connection>(sock, limits_, &tally_);
  Queue* queue = Queue::accepting;
  if (queue == nullptr) {
    ++tally_.shed;  // the server could not start its event loop
    return false;
  }
  // A response goes out as two writes, its head and then its body (/status
  // from a content provider): with Nagle's algorithm the body waits for the
  // client's delayed acknowledgement of the head, 40 ms.
  int yes = 1;
  ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
  // Every read and write is polled for, within its deadline.
  ::fcntl(sock, F_SETFL, ::fcntl(sock, F_GETFL) | O_NONBLOCK);
  int port = 0;
  Address(sock, true, c->peer, port);
  // The context of this moment: a reload may replace it meanwhile.
  c->tls = Tls();
  queue->Hold(std::move(c));
  return true;
}

std::unique_ptr<Connection> BoundedServer::Serve(std::unique_ptr<Connection> c) {
  bool closed = false;
  bool last = c->served + 1 >= limits_.requests_per_connection;
  bool exhausted = false;
  bool answered = false;
  // Only GET is served, and no body is read: left on the connection, its
  // bytes would be taken for the next request (one smuggled past a proxy in
  // front). A request httplib answers before it is looked at (a head it
  // cannot parse, a URI too long, a range it refuses) may have one too.
  bool has_body = true;
  {
    LimitedStream stream(*c, limits_);
    answered = process_request(stream, last, closed, [&has_body](httplib::Request& req) {
      NarrowRequest(req);
      auto [from, to] = req.headers.equal_range("Content-Length");
      has_body = req.has_header("Transfer-Encoding") ||
                 std::any_of(from, to, [](const auto& h) { return h.second != "0"; });
      // The answer says the connection ends, and it does.
      if (has_body) {
        req.headers.erase("Connection");
        req.headers.emplace("Connection", "close");
      }
    });
    exhausted = stream.exhausted();
  }
  // A request cut short is answered 400 by httplib, which would then wait
  // for the next one on the same connection: that is the slow client's
  // way back in, so the connection ends here.
  if (exhausted) {
    ++tally_.cut;
    return nullptr;
  }
  if (!answered || closed || last || has_body) return nullptr;
  ++c->served;
  return c;
}

}  // namespace mesh::http
