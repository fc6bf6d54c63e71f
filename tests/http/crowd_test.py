#!/usr/bin/env python3
"""/healthz under a crowd: the target of issue 39, item 3, in one test.

Against `mesh-host run` (file resources, a SIGHUP apply every half second),
at once and for the whole window, from a separate attacking process:
  - 1,000 silent connections (each reopened as soon as the host closes it);
  - 32 clients trickling a header line a second (reopened when cut);
  - 32 clients sending a new wrong password each time (basic auth mode).
Meanwhile a probe asks /healthz ten times a second, a new connection each
time, and must be answered 200 within 1 s at p99 (a probe unanswered in
5 s counts as 5 s). Run twice: plain HTTP, then TLS with basic auth at
bcrypt cost 12. Every figure is printed; every process started is stopped.

usage: crowd_test.py MESH_HOST_BINARY
"""
import base64, json, multiprocessing, os, random, re, resource, selectors, shutil, signal
import socket, ssl, statistics, subprocess, sys, tempfile, threading, time
import warnings

BIN = sys.argv[1]
T = tempfile.mkdtemp(prefix="mesh-host-crowd.")
WINDOW = 12.0
USER, RIGHT = "prometheus", "the right one"
# The crowd's own address: it opens connections faster than TIME_WAIT frees
# ports, and would otherwise use up the probe's ephemeral ports too.
CROWD = "127.0.0.3"
procs, failures = [], []
START = time.time()


def check(ok, what):
    print(("ok   - " if ok else "FAIL - ") + what + f" [{time.time() - START:.1f} s]", flush=True)
    if not ok:
        failures.append(what)


def cleanup():
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    shutil.rmtree(T, ignore_errors=True)


soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))


def connect(port, tls, timeout, source="127.0.0.1"):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                 source_address=(source, 0))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if tls:
        ctx = ssl.create_default_context(cafile=os.path.join(T, "server.crt"))
        ctx.check_hostname = False
        s = ctx.wrap_socket(s)
    return s


def auth(password, user=USER):
    return "Authorization: Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def get(port, tls, path, password=None, timeout=5.0, user=USER, source="127.0.0.1"):
    """One request on a new connection: (status or None, seconds)."""
    t0 = time.monotonic()
    try:
        with connect(port, tls, timeout, source) as s:
            s.settimeout(max(0.05, timeout - (time.monotonic() - t0)))
            head = f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            if password is not None:
                head += auth(password, user) + "\r\n"
            s.sendall((head + "\r\n").encode())
            data = b""
            while b"\r\n" not in data:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        m = re.match(rb"HTTP/1\.1 (\d+)", data)
        return (int(m.group(1)) if m else None), time.monotonic() - t0
    except (OSError, ssl.SSLError):
        return None, time.monotonic() - t0


def attack(port, tls, wrong_passwords, stop, report):
    """The crowd, in its own process so that it competes with the host for
    the cores, not with the probe for the interpreter. Its counts go to
    `report` once `stop` is set."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
    counts = {k: 0 for k in ("silent_opened", "trickle_cut", "wrong_401", "wrong_other")}

    def silent():
        sel = selectors.DefaultSelector()

        def open_one():
            s = socket.socket()
            s.bind((CROWD, 0))
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", port))
            sel.register(s, selectors.EVENT_READ)
            counts["silent_opened"] += 1

        for _ in range(1000):
            open_one()
        while not stop.is_set():
            for key, _ in sel.select(timeout=0.1):
                s = key.fileobj
                try:
                    gone = s.recv(1) == b""
                except BlockingIOError:
                    gone = False
                except OSError:
                    gone = True
                if gone:
                    sel.unregister(s)
                    s.close()
                    open_one()
        for key in list(sel.get_map().values()):
            key.fileobj.close()

    def trickle():
        while not stop.is_set():
            try:
                s = connect(port, tls, 2, CROWD)
                s.sendall(b"GET /healthz HTTP/1.1\r\n")
                while not stop.is_set():
                    time.sleep(1)
                    s.sendall(b"X-Slow: 1\r\n")
            except (OSError, ssl.SSLError):
                counts["trickle_cut"] += 1

    def wrong():
        while not stop.is_set():
            status, _ = get(port, tls, "/metrics", f"wrong {random.random()}", timeout=30,
                            source=CROWD)
            counts["wrong_401" if status == 401 else "wrong_other"] += 1

    threads = [threading.Thread(target=silent, daemon=True)]
    threads += [threading.Thread(target=trickle, daemon=True) for _ in range(32)]
    if wrong_passwords:
        threads += [threading.Thread(target=wrong, daemon=True) for _ in range(32)]
    for t in threads:
        t.start()
    stop.wait()
    time.sleep(0.2)
    report.put(dict(counts))


def sockets(pid):
    """Sockets `pid` holds (descriptors come and go while they are counted)."""
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            n += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
        except OSError:
            pass
    return n


def applies(log):
    with open(log, errors="replace") as f:
        return len(re.findall(r"^apply ok", f.read(), re.M))


def run(mode):
    tls = mode == "TLS with basic auth"
    tag = "tls" if tls else "plain"
    decl = os.path.join(T, f"{tag}.json")
    with open(decl, "w") as f:
        json.dump({"machine": "m", "generation": 1, "resources": [
            {"id": f"f{i}", "kind": "file", "path": f"/etc/f{i}", "content": "x"}
            for i in range(20)]}, f)
    log = os.path.join(T, f"{tag}.log")
    args = [BIN, "run", "--declaration", decl, "--root", os.path.join(T, tag, "root"),
            "--state-dir", os.path.join(T, tag, "state"), "--unit-dir",
            os.path.join(T, tag, "units"), "--machine", "m", "--listen", "127.0.0.1:0",
            "--interval", "1h"]
    password = None
    if tls:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import crypt
            hashed = crypt.crypt(RIGHT, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 12))
        assert hashed.startswith("$2b$12$"), hashed
        with open(os.path.join(T, "web.yml"), "w") as f:
            f.write(f"tls_server_config:\n  cert_file: {T}/server.crt\n  key_file: {T}/server.key\n"
                    f"basic_auth_users:\n  {USER}: '{hashed}'\n  late: '{hashed}'\n")
        args += ["--web-config", os.path.join(T, "web.yml")]
        password = RIGHT
    os.makedirs(os.path.join(T, tag, "root"))
    host = subprocess.Popen(args, stderr=open(log, "w"))
    procs.append(host)
    end = time.time() + 20
    port = None
    while time.time() < end and (port is None or applies(log) == 0):
        with open(log, errors="replace") as f:
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", f.read())
        port = int(m.group(1)) if m else None
        time.sleep(0.05)
    assert port is not None and applies(log) > 0, open(log).read()
    first_status, first = get(port, tls, "/healthz", password)
    check(first_status == 200, f"{mode}: /healthz before the crowd: {first_status} in {first:.3f} s")

    report = multiprocessing.Queue()
    stop = multiprocessing.Event()
    crowd = multiprocessing.Process(target=attack, args=(port, tls, tls, stop, report))
    crowd.start()
    time.sleep(2.0)  # the crowd in place: every slot taken, the first trickles cut
    applies_before = applies(log)
    # The median of five looks: at ~20,000 connections a second, a look
    # also counts those accepted and not yet closed as the room of another
    # (a passing spike), where a leak would raise every look.
    looks = []
    for _ in range(5):
        looks.append(sockets(host.pid))
        time.sleep(0.1)
    held = int(statistics.median(looks))

    stop_hup = threading.Event()

    def hup():
        while not stop_hup.wait(0.5):
            host.send_signal(signal.SIGHUP)

    hupper = threading.Thread(target=hup, daemon=True)
    hupper.start()
    times, answered, misses = [], 0, []
    end = time.monotonic() + WINDOW
    while time.monotonic() < end:
        t0 = time.monotonic()
        status, took = get(port, tls, "/healthz", password)
        if status != 200:
            misses.append(f"{status} after {took:.3f} s")
        answered += status == 200
        times.append(took if status == 200 else 5.0)
        time.sleep(max(0.0, 0.1 - (time.monotonic() - t0)))
    # A user whose first login comes now, from an address of its own: its
    # password is hashed behind at most one of the crowd's.
    if tls:
        late_status, late = get(port, tls, "/healthz", RIGHT, user="late", source="127.0.0.2")
    stop_hup.set()
    hupper.join()
    applied = applies(log) - applies_before
    stop.set()
    c = report.get(timeout=30)
    crowd.join(30)
    if crowd.is_alive():
        crowd.kill()

    times.sort()
    p50 = times[len(times) // 2]
    p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
    crowd_text = (f"{c['silent_opened']} silent connections opened, {c['trickle_cut']} trickles cut"
                  + (f", {c['wrong_401']} wrong passwords refused" if tls else ""))
    print(f"# {mode}: {len(times)} probes, {answered} answered 200; p50 {p50 * 1000:.1f} ms, "
          f"p99 {p99 * 1000:.1f} ms, slowest {times[-1] * 1000:.1f} ms; the host held {held} "
          f"sockets; {crowd_text}; {applied} applies", flush=True)
    check(c["silent_opened"] >= 1000 and c["trickle_cut"] >= 32,
          f"{mode}: the crowd was there ({crowd_text})")
    if tls:
        check(c["wrong_401"] >= 32,
              f"{mode}: wrong passwords refused 401 ({c['wrong_401']}; "
              f"{c['wrong_other']} cut or shed)")
    check(answered == len(times), f"{mode}: every /healthz probe answered 200 "
                                  f"({answered} of {len(times)}; the others: "
                                  f"{', '.join(misses[:5]) or 'none'}"
                                  f"{' …' if len(misses) > 5 else ''})")
    check(p99 < 1.0, f"{mode}: /healthz p99 {p99 * 1000:.1f} ms < 1 s")
    if tls:
        print(f"# {mode}: a first login from 127.0.0.2 under the crowd: {late_status} in "
              f"{late * 1000:.0f} ms", flush=True)
        # Its own hash and at most one of the crowd's ahead of it, each
        # slower for sharing the cores with the crowd (and, in CI, with
        # compilers): within six of an idle host's. Behind the crowd's
        # queue, as before issue 39, it took 3.4-5.4 s.
        bound = max(1.5, 6 * first)
        check(late_status == 200 and late < bound,
              f"{mode}: a first login from another address answered {late_status} in "
              f"{late * 1000:.0f} ms (< {bound * 1000:.0f} ms: 6 x the first login's "
              f"{first * 1000:.0f} ms on an idle host, or 1.5 s)")
    check(applied >= WINDOW / 2, f"{mode}: applies went on ({applied} in {WINDOW:.0f} s)")
    check(held <= 512 + 64 + 16, f"{mode}: the host held {held} sockets (at most 512 connections)")
    host.send_signal(signal.SIGTERM)
    check(host.wait(15) == 0, f"{mode}: SIGTERM: exit 0")


try:
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-keyout", os.path.join(T, "server.key"),
                    "-out", os.path.join(T, "server.crt"), "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    run("plain HTTP")
    run("TLS with basic auth")
finally:
    cleanup()

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
