#!/usr/bin/env python3
"""What HTTP clients can do to a running host, on loopback, bounded.

Against `mesh-host run` (file resources only, no systemd needed):
  1. 32 clients trickling a header line every second: /healthz is still
     answered, each probe within 10 s, and a SIGHUP apply runs meanwhile.
  2. 1,500 idle connections: the daemon holds no more than 512 of them
     (its descriptors stay bounded) and a SIGHUP apply succeeds meanwhile.
  3. One connection sending 30 MB of headers: the daemon's peak memory
     grows by less than 16 MiB.
  4. A second daemon on the same port: refused at start, not a silent twin.
Every figure is printed; every process started is stopped.

usage: load_test.py MESH_HOST_BINARY
"""
import json, os, re, resource, shutil, signal, socket, subprocess, sys, tempfile, threading, time

BIN = sys.argv[1]
T = tempfile.mkdtemp(prefix="mesh-host-load.")
procs = []
failures = []
START = time.time()


def cleanup():
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    shutil.rmtree(T, ignore_errors=True)


def check(ok, what):
    print(("ok   - " if ok else "FAIL - ") + what + f" [{time.time() - START:.1f} s]")
    if not ok:
        failures.append(what)


soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))

decl = os.path.join(T, "declaration.json")
with open(decl, "w") as f:
    json.dump({"machine": "m", "generation": 1, "resources": [
        {"id": f"f{i}", "kind": "file", "path": f"/etc/f{i}", "content": "x"} for i in range(20)]}, f)
log_path = os.path.join(T, "log")
os.makedirs(os.path.join(T, "root"))


def start(listen, log, state="state"):
    p = subprocess.Popen([BIN, "run", "--declaration", decl, "--root", os.path.join(T, "root"),
                          "--state-dir", os.path.join(T, state), "--unit-dir",
                          os.path.join(T, "units"), "--machine", "m", "--listen", listen,
                          "--interval", "1h"], stderr=open(log, "w"))
    procs.append(p)
    return p


def log_text(path=log_path):
    with open(path, errors="replace") as f:
        return f.read()


def wait_for(pattern, path=log_path, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        if re.search(pattern, log_text(path), re.M):
            return True
        time.sleep(0.05)
    return False


def healthz(port, timeout):
    t0 = time.time()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = b""
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        return data.startswith(b"HTTP/1.1 200"), time.time() - t0
    except OSError:
        return False, time.time() - t0


def applies():
    return len(re.findall(r"^apply ok", log_text(), re.M))


def sighup_apply(host):
    before = applies()
    host.send_signal(signal.SIGHUP)
    end = time.time() + 10
    while time.time() < end and applies() == before:
        time.sleep(0.05)
    return applies() > before


def peak_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1))


try:
    host = start("127.0.0.1:0", log_path)
    assert wait_for(r"listening on 127\.0\.0\.1:(\d+)"), log_text()
    assert wait_for(r"^apply ok", timeout=20), log_text()
    port = int(re.search(r"listening on 127\.0\.0\.1:(\d+)", log_text()).group(1))

    # 1. Slow clients.
    stop = threading.Event()

    def trickle():
        while not stop.is_set():
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=2)
                s.sendall(b"GET /healthz HTTP/1.1\r\n")
                while not stop.is_set():
                    time.sleep(1)
                    s.sendall(b"X-Slow: 1\r\n")
            except OSError:
                pass  # cut by the host: come back

    threads = [threading.Thread(target=trickle, daemon=True) for _ in range(32)]
    for th in threads:
        th.start()
    time.sleep(1)
    probes = [healthz(port, 10) for _ in range(4)]
    slowest = max(t for _, t in probes)
    check(all(ok for ok, _ in probes),
          f"/healthz answered under 32 trickling clients (slowest of 4 probes {slowest:.1f} s)")
    check(sighup_apply(host), "an apply runs under 32 trickling clients")
    stop.set()
    for th in threads:
        th.join(5)

    # 2. Many idle connections.
    idle = []
    for _ in range(1500):  # connecting at once, not one by one: the backlog is short
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        idle.append(s)
    time.sleep(1.5)
    held = sum(1 for fd in os.listdir(f"/proc/{host.pid}/fd")
               if os.readlink(f"/proc/{host.pid}/fd/{fd}").startswith("socket:"))
    check(held <= 512 + 64 + 8, f"{len(idle)} idle connections: the daemon holds {held} sockets")
    check(sighup_apply(host), f"an apply runs beside {len(idle)} idle connections")
    for s in idle:
        s.close()
    time.sleep(2.5)  # the held ones time out
    ok, took = healthz(port, 10)
    check(ok, f"/healthz answers once they are gone ({took:.2f} s)")

    # 3. 30 MB of headers on one connection.
    before = peak_kib(host.pid)
    sent = 0
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"GET /healthz HTTP/1.1\r\nX-Big: ")
            chunk = b"a" * (1 << 20)
            for _ in range(30):
                s.sendall(chunk)
                sent += len(chunk)
    except OSError:
        pass  # cut: what it should be
    time.sleep(0.5)
    grown = (peak_kib(host.pid) - before) // 1024
    check(grown < 16, f"30 MB of headers ({sent >> 20} MiB sent before the cut): peak memory "
                      f"grew {grown} MiB")
    ok, _ = healthz(port, 10)
    check(ok and host.poll() is None, "the daemon answers afterwards")

    # 4. The same port twice.
    twin_log = os.path.join(T, "twin.log")
    twin = start(f"127.0.0.1:{port}", twin_log, state="twin-state")
    try:
        rc = twin.wait(10)
    except subprocess.TimeoutExpired:
        rc = None
    check(rc == 2 and "cannot bind" in log_text(twin_log),
          f"a second daemon on port {port} is refused at start, exit 2 (exit {rc})")

    host.send_signal(signal.SIGTERM)
    check(host.wait(15) == 0, "SIGTERM: exit 0")
finally:
    cleanup()

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
