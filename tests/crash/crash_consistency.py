#!/usr/bin/env python3
"""Kills `mesh-host apply` with SIGKILL at random moments while it rewrites
many large files, a credential and bundles, many times over; after each kill
checks that every file is whole (entirely the old or the new content, with the
right mode), that the record parses, and that the next apply converges (exit
0) and the one after reports every resource unchanged with no temporary file
left behind.

usage: crash_consistency.py MESH_HOST_BINARY [--kills N] [--files N] [--size BYTES] [--seed S]
Prints "kills survived: N" and, for the test runner, "N passed, N failed".
"""
import argparse, atexit, base64, shutil, hashlib, io, json, os, random, signal, subprocess, sys, tarfile, tempfile, time


def bundle(version, files=20):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for i in range(files):
            # Every other file is the same in every version: a replace links
            # those from the tree it replaces rather than writing them.
            data = (f"bundle {'common' if i % 2 else version} file {i}\n" * 2000).encode()
            info = tarfile.TarInfo(f"lib/part{i}.txt")
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--kills", type=int, default=25)
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--size", type=int, default=64 * 1024)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    a = ap.parse_args()
    rng = random.Random(a.seed)
    t = tempfile.mkdtemp(prefix="mesh-host-crash.")
    atexit.register(shutil.rmtree, t, True)  # also when a check raises
    root, art, state, units = (os.path.join(t, d) for d in ("root", "art", "state", "units"))
    for d in (root, art):
        os.makedirs(d)
    versions = {}
    for v in ("a", "b"):
        data = bundle(v)
        with open(os.path.join(art, f"tools-{v}.tar.gz"), "wb") as f:
            f.write(data)
        versions[v] = hashlib.sha256(data).hexdigest()

    def content(v, i):
        return (f"{v}:{i}:" + v * (a.size - 16))[: a.size]

    def declaration(v, gen):
        res = [{"id": f"f{i}", "kind": "file", "path": f"/etc/many/f{i:04d}.conf",
                "content": content(v, i), "mode": "0644" if v == "a" else "0600"}
               for i in range(a.files)]
        res.append({"id": "tok", "kind": "credential", "path": "/etc/tok",
                    "content_base64": base64.b64encode(f"secret-{v}".encode()).decode()})
        res.append({"id": "tools", "kind": "archive", "path": "/opt/tools",
                    "source": f"tools-{v}.tar.gz", "sha256": versions[v]})
        return {"machine": "crash", "generation": gen, "resources": res}

    decl_path = os.path.join(t, "decl.json")
    flags = ["--declaration", decl_path, "--root", root, "--state-dir", state, "--artifacts", art,
             "--unit-dir", units, "--machine", "crash"]

    def write_decl(v, gen):
        # It holds a credential: only its owner may read it.
        fd = os.open(decl_path + ".new", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(declaration(v, gen), f)
        os.rename(decl_path + ".new", decl_path)

    def apply():
        return subprocess.run([a.binary, "apply", *flags], capture_output=True, text=True)

    failures = []

    def check_whole(label):
        for i in range(a.files):
            p = os.path.join(root, f"etc/many/f{i:04d}.conf")
            if not os.path.exists(p):
                continue  # not yet created on the first pass
            with open(p) as f:
                got = f.read()
            mode = os.stat(p).st_mode & 0o777
            # Content and mode travel together: the mode is set on the
            # temporary file before the rename.
            if got == content("a", i):
                ok = mode == 0o644
            elif got == content("b", i):
                ok = mode == 0o600
            else:
                ok = False
            if not ok:
                failures.append(f"{label}: f{i} torn ({len(got)} bytes, mode {oct(mode)})")
                return
        sp = os.path.join(state, "state.json")
        if os.path.exists(sp):
            try:
                # JSON Lines: the head counts the entries that follow.
                lines = open(sp).read().splitlines()
                head, entries = json.loads(lines[0]), [json.loads(l) for l in lines[1:]]
                if len(entries) != head["entries"]:
                    failures.append(f"{label}: record has {len(entries)} of {head['entries']} entries")
            except Exception as e:  # noqa: BLE001
                failures.append(f"{label}: record does not parse: {e}")
        tools = os.path.join(root, "opt/tools/lib")
        if os.path.isdir(tools):
            texts = {n: open(os.path.join(tools, n)).read() for n in os.listdir(tools)}
            seen = {(t.split(" ") + ["", ""])[1] for t in texts.values()} - {"common"}
            if len(seen) > 1:
                failures.append(f"{label}: bundle tree mixes versions {seen}")
            for n, t in texts.items():
                i = int(n[len("part"):-len(".txt")])
                if t != f"bundle {(t.split(' ') + ['', ''])[1]} file {i}\n" * 2000:
                    failures.append(f"{label}: bundle file {n} torn ({len(t)} bytes)")

    write_decl("a", 1)
    r = apply()
    if r.returncode != 0:
        print(r.stdout, r.stderr)
        print("0 passed, 1 failed")
        return 1
    # Time one full rewrite, to spread the kills over it.
    write_decl("b", 2)
    t0 = time.monotonic()
    apply()
    full = time.monotonic() - t0
    survived = 0
    gen = 3
    for k in range(a.kills):
        v = "a" if k % 2 == 0 else "b"
        write_decl(v, gen)
        gen += 1
        p = subprocess.Popen([a.binary, "apply", *flags], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0, full * 1.1))
        p.send_signal(signal.SIGKILL)
        p.wait()
        check_whole(f"kill {k}")
        r = apply()
        if r.returncode != 0:
            failures.append(f"kill {k}: recovery apply exit {r.returncode}: {r.stderr.strip()[-300:]}")
        r2 = apply()
        lines = [l for l in r2.stdout.splitlines() if l]
        if r2.returncode != 0 or any(not l.startswith("unchanged ") for l in lines):
            bad = [l for l in lines if not l.startswith("unchanged ")][:3]
            failures.append(f"kill {k}: not converged: {bad}")
        left = [os.path.join(d, n) for d, dirs, files in os.walk(t) for n in files + dirs if ".mesh-host-tmp." in n]
        if left:
            failures.append(f"kill {k}: temporary files left: {left[:3]}")
        if failures:
            break
        survived += 1
    subprocess.run(["rm", "-rf", t])
    print(f"seed {a.seed}: {a.files} files of {a.size} bytes, a credential and a bundle; "
          f"one full rewrite takes {full:.2f} s")
    print(f"kills survived: {survived} of {a.kills}")
    for f in failures:
        print("FAIL:", f)
    print(f"{survived} passed, {a.kills - survived} failed")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
