#!/usr/bin/env python3
"""A neighbour who can write in a managed tree swaps a file and a FIFO.

A bundle ships a 0777 directory. As `nobody`, a loop exchanges a regular
file and a FIFO in it (renameat2 RENAME_EXCHANGE) as fast as it can, while
the host applies again and again. Each apply hashes the tree (the swaps make
it drift, so the full pass runs); its openat is slowed by strace so that the
swap lands between the stat that said "regular" and the open, every few
applies. A blocking open of a FIFO waits for a writer forever: every apply
must still finish, within a bound, whatever it reports.

usage: fifo_race_test.py MESH_HOST_BINARY
"""
import ctypes, hashlib, io, json, os, pwd, shutil, signal, subprocess, sys, tarfile, tempfile, time

BIN = sys.argv[1]
APPLIES = 8
BOUND_S = 20  # one apply of a 3-file tree takes well under a second, even traced

if os.geteuid() != 0 or shutil.which("strace") is None:
    print("SKIP: needs root (to act as nobody) and strace")
    sys.exit(0)

T = tempfile.mkdtemp(prefix="mesh-host-fifo.")
os.chmod(T, 0o755)
ROOT, ART, STATE, UNITS = (os.path.join(T, d) for d in ("root", "art", "state", "units"))
for d in (ROOT, ART):
    os.makedirs(d)

buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w:gz") as t:
    spool = tarfile.TarInfo("spool")
    spool.type, spool.mode = tarfile.DIRTYPE, 0o777
    t.addfile(spool)
    for name in ("spool/a", "spool/b"):
        info = tarfile.TarInfo(name)
        info.size, info.mode = 2, 0o644
        t.addfile(info, io.BytesIO(b"x\n"))
data = buf.getvalue()
with open(os.path.join(ART, "b.tar.gz"), "wb") as f:
    f.write(data)
decl = {"machine": "m", "generation": 1, "resources": [
    {"id": "b", "kind": "archive", "path": "/opt/b", "source": "b.tar.gz",
     "sha256": hashlib.sha256(data).hexdigest()}]}
DECL = os.path.join(T, "declaration.json")
with open(DECL, "w") as f:
    json.dump(decl, f)
FLAGS = ["--declaration", DECL, "--root", ROOT, "--state-dir", STATE, "--artifacts", ART,
         "--unit-dir", UNITS, "--machine", "m"]
r = subprocess.run([BIN, "apply", *FLAGS], capture_output=True, text=True)
assert r.returncode == 0, r.stderr
SPOOL = os.path.join(ROOT, "opt/b/spool")


def attacker():
    """As nobody: keep a FIFO beside a file and exchange them, forever."""
    nobody = pwd.getpwnam("nobody")
    os.setgid(nobody.pw_gid)
    os.setuid(nobody.pw_uid)
    libc = ctypes.CDLL(None, use_errno=True)
    AT_FDCWD, RENAME_EXCHANGE = -100, 2
    while True:
        try:
            spool = os.path.join(ROOT, "opt/b/spool")  # a new tree each apply
            fifo = os.path.join(spool, "p")
            if not os.path.exists(fifo):
                os.mkfifo(fifo)
            for _ in range(1000):
                libc.renameat2(AT_FDCWD, os.path.join(spool, "a").encode(), AT_FDCWD,
                               fifo.encode(), RENAME_EXCHANGE)
        except OSError:
            time.sleep(0.001)


pid = os.fork()
if pid == 0:
    try:
        attacker()
    finally:
        os._exit(0)

failed = 0
hung = 0
try:
    for i in range(APPLIES):
        cmd = ["strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=openat",
               "-e", "inject=openat:delay_enter=20000", BIN, "apply", *FLAGS]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
        try:
            out, err = p.communicate(timeout=BOUND_S)
            print(f"apply {i}: exit {p.returncode}: {(out + err).strip().splitlines()[0][:120]}")
            if p.returncode not in (0, 1):
                failed += 1
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            hung += 1
            print(f"FAIL - apply {i} did not finish in {BOUND_S} s (blocked opening a FIFO?)")
            break
finally:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    shutil.rmtree(T, ignore_errors=True)

print(f"{APPLIES} applies under a FIFO swap race: {hung} hung, {failed} with another exit")
sys.exit(1 if hung or failed else 0)
