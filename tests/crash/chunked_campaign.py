#!/usr/bin/env python3
"""Kills the first apply of a declaration large enough to be carried in
chunks (reconcile/chunked.h: more than two chunks of 4,096 files, and no
record yet) with SIGKILL at random moments, many times over. After each kill:
every file on disk is whole, with its mode; then an apply of the same
declaration less its first files exits 0, removes what the dead apply
created of those, leaves no temporary file, and the apply after it reports
every resource unchanged.

usage: chunked_campaign.py MESH_HOST_BINARY [--kills N] [--files N] [--seed S]
Prints "kills survived: N" and, for the test runner, "N passed, N failed".
"""
import argparse, atexit, json, os, random, shutil, signal, subprocess, sys, tempfile, time

DROPPED = 300  # the first files, left out of the declaration after the kill


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--kills", type=int, default=25)
    ap.add_argument("--files", type=int, default=9000)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    a = ap.parse_args()
    rng = random.Random(a.seed)
    t = tempfile.mkdtemp(prefix="mesh-host-chunked.")
    atexit.register(shutil.rmtree, t, True)
    root, art, state, units = (os.path.join(t, d) for d in ("root", "art", "state", "units"))

    def content(i):
        return f"# file {i}\n" + "setting = on\n" * 8

    def declaration(first, gen):
        res = [{"id": f"f{i}", "kind": "file", "path": f"/srv/d{i // 100:03d}/f{i:05d}.conf",
                "content": content(i), "mode": "0640"}
               for i in range(first, a.files)]
        return {"machine": "crash", "generation": gen, "resources": res}

    paths = {}
    for first, gen in ((0, 1), (DROPPED, 2)):
        paths[gen] = os.path.join(t, f"decl-{gen}.json")
        with open(paths[gen], "w") as f:
            json.dump(declaration(first, gen), f)

    def apply(gen, **kw):
        flags = ["--declaration", paths[gen], "--root", root, "--state-dir", state,
                 "--artifacts", art, "--unit-dir", units, "--machine", "crash"]
        return subprocess.run([a.binary, "apply", *flags], capture_output=True, text=True, **kw)

    def fresh():
        for d in (root, state, units):
            shutil.rmtree(d, ignore_errors=True)
        os.makedirs(root)
        os.makedirs(art, exist_ok=True)

    failures = []

    def check(label):
        for d, _, files in os.walk(root):
            for n in files:
                p = os.path.join(d, n)
                if ".mesh-host-tmp." in n:
                    continue  # the next apply sweeps these; checked after it
                i = int(n[1:6])
                got = open(p).read()
                mode = os.stat(p).st_mode & 0o777
                if got != content(i) or mode != 0o640:
                    failures.append(f"{label}: {p} torn ({len(got)} bytes, mode {oct(mode)})")
                    return

    # One whole first apply, timed, to spread the kills over it.
    fresh()
    t0 = time.monotonic()
    r = apply(1)
    full = time.monotonic() - t0
    if r.returncode != 0:
        print(r.stdout[-2000:], r.stderr[-2000:])
        print("0 passed, 1 failed")
        return 1
    survived = 0
    for k in range(a.kills):
        label = f"kill {k}"
        fresh()
        p = subprocess.Popen([a.binary, "apply", "--declaration", paths[1], "--root", root,
                              "--state-dir", state, "--artifacts", art, "--unit-dir", units,
                              "--machine", "crash"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0, full * 1.1))
        p.send_signal(signal.SIGKILL)
        p.wait()
        check(label)
        r = apply(2)
        if r.returncode != 0:
            failures.append(f"{label}: recovery apply exit {r.returncode}: {r.stderr.strip()[-300:]}")
        for i in range(DROPPED):
            if os.path.exists(os.path.join(root, f"srv/d{i // 100:03d}/f{i:05d}.conf")):
                failures.append(f"{label}: f{i}, created by the killed apply, was left")
                break
        for i in range(DROPPED, a.files):
            p = os.path.join(root, f"srv/d{i // 100:03d}/f{i:05d}.conf")
            if not os.path.exists(p) or open(p).read() != content(i):
                failures.append(f"{label}: f{i} not as declared after the recovery apply")
                break
        left = [os.path.join(d, n) for d, dirs, files in os.walk(t)
                for n in files + dirs if ".mesh-host-tmp." in n]
        if left:
            failures.append(f"{label}: temporary files left: {left[:3]}")
        r2 = apply(2)
        bad = [l for l in r2.stdout.splitlines() if l and not l.startswith("unchanged ")]
        if r2.returncode != 0 or bad:
            failures.append(f"{label}: not converged: {bad[:3]}")
        if failures:
            break
        survived += 1
    print(f"seed {a.seed}: a first apply of {a.files} files, {DROPPED} of them dropped after "
          f"the kill; one whole first apply takes {full:.2f} s")
    print(f"kills survived: {survived} of {a.kills}")
    for f in failures:
        print("FAIL:", f)
    print(f"{survived} passed, {a.kills - survived} failed")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
