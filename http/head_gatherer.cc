#include "http/head_gatherer.h"

#include <openssl/err.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>

namespace mesh::http {
namespace {

constexpr auto kSweep = std::chrono::milliseconds(100);
// New connections handed over and not yet taken in (the thread takes them
// all at every turn).
constexpr size_t kInbox = 64;
// A request line and headers, whole: httplib reads lines of at most 8 KiB.
constexpr size_t kMaxHead = size_t{16} * 1024;

}  // namespace

HeadGatherer::HeadGatherer(const ConnectionLimits& limits, ConnectionTally& tally, Ready ready)
    : limits_(limits), tally_(tally), ready_(std::move(ready)) {}

HeadGatherer::~HeadGatherer() {
  Stop();
  if (epoll_ >= 0) ::close(epoll_);
  if (wake_ >= 0) ::close(wake_);
}

core::Status HeadGatherer::Start() {
  epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (epoll_ < 0 || wake_ < 0) {
    return core::Fail(std::string("the HTTP server's event loop: ") + std::strerror(errno));
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_;
  if (::epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &ev) != 0) {
    return core::Fail(std::string("the HTTP server's event loop: ") + std::strerror(errno));
  }
  std::lock_guard<std::mutex> lock(mu_);
  try {
    thread_ = std::thread([this] { Run(); });
  } catch (const std::system_error& e) {  // a tasks limit: no thread to join at Stop
    return core::Fail(std::string("the HTTP server's event loop: ") + e.what());
  }
  running_ = true;
  return {};
}

void HeadGatherer::Hold(std::unique_ptr<Connection> c) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    // A new connection waits while the inbox is full: the accepting thread
    // stops accepting, and the kernel's queue holds the rest in arrival
    // order, so a flood slows itself down and nobody is turned away
    // unread. One back from a worker never waits (there are at most as
    // many as workers).
    if (c->served == 0) {
      room_.wait(lock, [&] { return stopping_ || !running_ || inbox_.size() < kInbox; });
    }
    if (!stopping_ && running_) {
      if (c->served == 0) ++queued_;
      inbox_.push_back(std::move(c));
    }
  }
  if (c != nullptr) {
    ++tally_.shed;
    return;  // closed as it goes out of scope
  }
  uint64_t one = 1;
  (void)!::write(wake_, &one, sizeof one);
}

void HeadGatherer::Stop() {
  bool running;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    running = running_;
  }
  room_.notify_all();
  if (running) {
    uint64_t one = 1;
    (void)!::write(wake_, &one, sizeof one);
    thread_.join();
  }
}

void HeadGatherer::Run() {
  epoll_event events[64];
  for (;;) {
    int wait = -1;
    if (!held_.empty()) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(next_sweep_ - SteadyClock::now());
      wait = static_cast<int>(std::clamp<int64_t>(left.count(), 0, kSweep.count()));
    }
    int n = ::epoll_wait(epoll_, events, 64, wait);
    for (int i = 0; i < n; ++i) {
      if (events[i].data.fd == wake_) {
        uint64_t count;
        (void)!::read(wake_, &count, sizeof count);
      } else {
        Advance(events[i].data.fd);
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) break;
    }
    TakeInbox();
    SteadyClock::time_point now = SteadyClock::now();
    if (now >= next_sweep_) {
      Expire(now);
      next_sweep_ = now + kSweep;
    }
  }
  std::vector<std::unique_ptr<Connection>> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    left.swap(inbox_);
  }
  silent_.clear();
  talking_.clear();
  held_.clear();
}

void HeadGatherer::TakeInbox() {
  std::vector<std::unique_ptr<Connection>> taken;
  {
    std::lock_guard<std::mutex> lock(mu_);
    taken.swap(inbox_);
  }
  room_.notify_all();
  for (auto& c : taken) Admit(std::move(c));
}

void HeadGatherer::Admit(std::unique_ptr<Connection> c) {
  const SteadyClock::time_point now = SteadyClock::now();
  if (c->served == 0) {
    --queued_;
    // httplib refuses (500) a socket its select() cannot watch.
    if (c->sock >= FD_SETSIZE) {
      ++tally_.shed;
      return;
    }
    // A new connection over the limit (those still in the inbox aside)
    // takes the room of the longest silent one here; with none here (every
    // one is being answered), it is the one closed.
    if (tally_.open - queued_ > limits_.max_connections && !MakeRoom()) {
      ++tally_.shed;
      return;
    }
  } else {
    if (now >= c->ends) return;  // its life is over: closed, not read again
    // Back from a worker, kept alive: it waits for the next request.
    c->scanned = 0;
    c->started = !c->buffered.empty();
    c->deadline = std::min(now + (c->started ? limits_.request_head : limits_.idle), c->ends);
  }
  int sock = c->sock;
  silent_.push_back(sock);
  Held& h = held_[sock];
  h.c = std::move(c);
  h.talking = false;
  h.in_order = std::prev(silent_.end());
  h.events = 0;
  // What it has sent already (often its whole head) is read now.
  Advance(sock);
}

bool HeadGatherer::MakeRoom() {
  // One that looks silent may have bytes waiting that no event has brought
  // yet: it is read first, and is silent no longer. A few are tried; then
  // the longest silent goes, or, with none silent, the one that sent its
  // last byte longest ago.
  for (int tries = 0; tries < 8 && !silent_.empty(); ++tries) {
    int sock = silent_.front();
    char byte;
    if (::recv(sock, &byte, 1, MSG_PEEK | MSG_DONTWAIT) <= 0) break;
    Advance(sock);
    // Reading it may have closed it (its client had gone): room made.
    if (tally_.open - queued_ <= limits_.max_connections) return true;
    if (held_.contains(sock) && !held_.at(sock).talking) break;  // still silent after all
  }
  if (silent_.empty() && talking_.empty()) return false;
  Drop(!silent_.empty() ? silent_.front() : talking_.front());
  ++tally_.shed;
  return true;
}

void HeadGatherer::Drop(int sock) {
  auto it = held_.find(sock);
  if (it == held_.end()) return;
  if (it->second.c->cut) ++tally_.cut;
  if (it->second.events != 0) ::epoll_ctl(epoll_, EPOLL_CTL_DEL, sock, nullptr);
  Unlist(it->second);
  held_.erase(it);
}

void HeadGatherer::Unlist(Held& h) { (h.talking ? talking_ : silent_).erase(h.in_order); }

void HeadGatherer::Advance(int sock) {
  auto it = held_.find(sock);
  if (it == held_.end()) return;
  Held& h = it->second;
  const uint64_t had = BytesIn(*h.c);
  Gathered g = Gather(*h.c);
  if (g == Gathered::kClose) {
    Drop(sock);
    return;
  }
  if (g == Gathered::kWhole) {
    std::unique_ptr<Connection> c = std::move(h.c);
    if (h.events != 0) ::epoll_ctl(epoll_, EPOLL_CTL_DEL, sock, nullptr);
    Unlist(h);
    held_.erase(it);
    ready_(std::move(c));
    return;
  }
  // Bytes came (a head's, or a handshake's): the most recent of those
  // talking.
  if (BytesIn(*h.c) != had) {
    Unlist(h);
    talking_.push_back(sock);
    h.talking = true;
    h.in_order = std::prev(talking_.end());
  }
  uint32_t want = (g == Gathered::kWaitRead ? EPOLLIN : EPOLLOUT) | EPOLLRDHUP;
  if (want == h.events) return;
  epoll_event ev{};
  ev.events = want;
  ev.data.fd = sock;
  if (::epoll_ctl(epoll_, h.events == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, sock, &ev) != 0) {
    Drop(sock);
    return;
  }
  h.events = want;
}

uint64_t HeadGatherer::BytesIn(const Connection& c) {
  if (c.ssl == nullptr) return c.buffered.size();
  // What OpenSSL took from the socket, handshake records included.
  return BIO_number_read(SSL_get_rbio(c.ssl.get())) + c.buffered.size();
}

HeadGatherer::Gathered HeadGatherer::Gather(Connection& c) {
  // A pipelined request already here needs no more bytes.
  if (!c.buffered.empty() && HeadEnd(c) > 0) return Gathered::kWhole;
  if (c.tls != nullptr && c.ssl == nullptr) {
    // No TLS state for a connection that has sent nothing yet.
    char byte;
    ssize_t n = ::recv(c.sock, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      return Gathered::kWaitRead;
    }
    if (n <= 0) return Gathered::kClose;
    c.ssl.reset(SSL_new(c.tls->get()));
    if (c.ssl == nullptr || SSL_set_fd(c.ssl.get(), c.sock) != 1) {
      c.cut = true;
      return Gathered::kClose;
    }
    SSL_set_accept_state(c.ssl.get());
  }
  SSL* ssl = c.ssl.get();
  if (ssl != nullptr && !c.handshaken) {
    // SSL_get_error reads this thread's error queue first: an error left
    // by another connection would read as this one's.
    ERR_clear_error();
    int rc = SSL_do_handshake(ssl);
    if (rc != 1) {
      int err = SSL_get_error(ssl, rc);
      if (err == SSL_ERROR_WANT_READ) return Gathered::kWaitRead;
      if (err == SSL_ERROR_WANT_WRITE) return Gathered::kWaitWrite;
      c.cut = true;  // not TLS, or not a handshake this server can make
      return Gathered::kClose;
    }
    c.handshaken = true;
  }
  char buf[4096];
  for (;;) {
    size_t room = std::min(sizeof buf, c.budget);
    if (room == 0 || c.buffered.size() >= kMaxHead) {
      c.cut = true;  // a head larger than a head may be, or than the budget
      return Gathered::kClose;
    }
    ssize_t n;
    if (ssl != nullptr) {
      ERR_clear_error();
      n = SSL_read(ssl, buf, static_cast<int>(room));
      if (n <= 0) {
        int err = SSL_get_error(ssl, static_cast<int>(n));
        if (err == SSL_ERROR_WANT_READ) return Gathered::kWaitRead;
        if (err == SSL_ERROR_WANT_WRITE) return Gathered::kWaitWrite;
        return Gathered::kClose;
      }
    } else {
      n = ::recv(c.sock, buf, room, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Gathered::kWaitRead;
      if (n <= 0) return Gathered::kClose;
    }
    c.budget -= static_cast<size_t>(n);
    c.buffered.append(buf, static_cast<size_t>(n));
    if (!c.started) {
      c.started = true;
      c.deadline = std::min(SteadyClock::now() + limits_.request_head, c.ends);
    }
    if (HeadEnd(c) > 0) return Gathered::kWhole;
  }
}

void HeadGatherer::Expire(SteadyClock::time_point now) {
  for (std::list<int>* list : {&silent_, &talking_}) {
    for (auto it = list->begin(); it != list->end();) {
      int sock = *it++;  // Drop erases this entry, never the next
      Connection& c = *held_.at(sock).c;
      if (now >= c.deadline) {
        c.cut = true;
        Drop(sock);
      }
    }
  }
}

}  // namespace mesh::http
