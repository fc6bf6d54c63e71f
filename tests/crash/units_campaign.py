#!/usr/bin/env python3
"""Kills `mesh-host apply` while it changes configs and unit texts of real
systemd services, then judges the next apply by what each daemon itself
loaded — not by what the host says.

Under the project's sandboxed systemd (tests/systemd/sdbox.sh), two daemons
run: `web` (restart_on its config; its unit text changes every generation)
and `cache` (reload_on its config; ExecReload sends SIGHUP). Each writes
what it read — its config and its unit's version — when it starts and when
it reloads. Every generation changes all three. After each kill:

  - the next apply must exit 0 and leave every daemon running the declared
    config and unit text (0 daemons left on an old config);
  - it must not say `unchanged` for a daemon that ran an old config before
    it (0 false unchanged);
  - the apply after that must find nothing to do.

--points kills at every renameat, sendmsg, fsync and syncfs of the apply in turn
(strace's syscall injection: deterministic, each one once); --kills N kills
at N random moments. Prints "N passed, N failed" (kills survived).

usage: units_campaign.py MESH_HOST SDBOX_SH [--points] [--kills N] [--seed S]
"""
import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SETTLE = "300ms"


class Campaign:
    def __init__(self, binary, sdbox, tmp):
        self.binary, self.sdbox, self.t = binary, sdbox, tmp
        self.root = os.path.join(tmp, "root")
        self.loaded = os.path.join(tmp, "loaded")
        self.decl = os.path.join(tmp, "decl.json")
        self.units = os.path.join(os.environ["SDBOX_DIR"], "units")
        os.makedirs(os.path.join(self.root, "etc"))
        os.makedirs(self.loaded)
        self.flags = ["--declaration", self.decl, "--root", self.root,
                      "--state-dir", os.path.join(tmp, "state"),
                      "--artifacts", os.path.join(tmp, "art"), "--unit-dir", self.units,
                      "--machine", "box", "--settle", SETTLE]
        self.generation = 0
        self.want = {}

    def daemon(self, name, version):
        """A daemon that records, on start and on SIGHUP, the config it read
        and the version its unit text gave it."""
        conf = os.path.join(self.root, "etc", name + ".conf")
        out = os.path.join(self.loaded, name)
        # $V is the unit's Environment= (systemd substitutes it); no "%":
        # systemd would read a specifier.
        load = f'echo "$(cat {conf}) $V" > {out}.new && mv {out}.new {out}'
        return (f"[Service]\nEnvironment=V={version}\nExecReload=/bin/kill -HUP $MAINPID\n"
                f"ExecStart=/bin/sh -c 'load() {{ {load}; }}; trap load HUP; load; "
                f"while :; do sleep 1 & wait $!; done'\n")

    def declare(self, v):
        self.generation += 1
        g = self.generation
        res = []
        for name, on, version in (("web", "restart_on", f"{v}{g}"), ("cache", "reload_on", "1")):
            content = f"{name}-{v}-{g}"
            res.append({"id": f"{name}.conf", "kind": "file",
                        "path": f"/etc/{name}.conf", "content": content})
            res.append({"id": name, "kind": "service", "unit": f"{name}.service",
                        "state": "running", "unit_text": self.daemon(name, version),
                        on: [f"{name}.conf"]})
            self.want[name] = f"{content} {version}"
        with open(self.decl + ".new", "w") as f:
            json.dump({"machine": "box", "generation": g, "resources": res}, f)
        os.rename(self.decl + ".new", self.decl)

    def apply(self, wrap=()):
        return subprocess.run([*wrap, self.binary, "apply", *self.flags],
                              capture_output=True, text=True, timeout=120)

    def running(self, name):
        try:
            with open(os.path.join(self.loaded, name)) as f:
                return f.read().rstrip("\n")
        except FileNotFoundError:
            return None

    def evidence(self, r):
        """What a failure is read by afterwards: the apply's own words, and
        systemd's account of each daemon (how its main process ended)."""
        seen = [f"apply said:\n{r.stdout}{r.stderr}"]
        for name in self.want:
            path = f"/org/freedesktop/systemd1/unit/{name}_2eservice"
            out = []
            for iface, names in (("Unit", ["ActiveState", "SubState", "InvocationID", "Job"]),
                                 ("Service", ["Result", "ExecMainCode", "ExecMainStatus",
                                              "NRestarts"])):
                for prop in names:
                    got = subprocess.run(["busctl", "get-property", "org.freedesktop.systemd1",
                                          path, f"org.freedesktop.systemd1.{iface}", prop],
                                         capture_output=True, text=True, timeout=10)
                    out.append(f"{prop}={got.stdout.strip() or got.stderr.strip()}")
            seen.append(f"systemd says of {name}: {' '.join(out)}; it loaded {self.running(name)!r}")
        try:
            with open(os.path.join(os.environ["SDBOX_DIR"], "console.log"), errors="replace") as f:
                seen.append("the box's console, last 30 lines:\n" + "".join(f.readlines()[-30:]))
        except OSError as e:
            seen.append(f"the box's console: {e}")
        return "\n".join(seen)

    def judge(self, label, failures):
        """The apply after a kill, and the one after that."""
        before = {n: self.running(n) for n in self.want}
        r = self.apply()
        if r.returncode != 0:
            failed = [l for l in r.stdout.splitlines() if l.startswith("failed ")]
            failures.append(f"{label}: next apply exit {r.returncode}: "
                            f"{' | '.join(failed) or (r.stdout + r.stderr).strip()[-400:]}\n"
                            f"{self.evidence(r)}")
            return
        for name, want in self.want.items():
            if before[name] != want and f"\nunchanged {name} (service)" in "\n" + r.stdout:
                failures.append(f"{label}: false unchanged: {name} ran {before[name]!r}, "
                                f"declared {want!r}")
            # A reload is asynchronous: the daemon reads on SIGHUP.
            end = time.monotonic() + 3
            while self.running(name) != want and time.monotonic() < end:
                time.sleep(0.05)
            if self.running(name) != want:
                failures.append(f"{label}: {name} left on an old config: runs "
                                f"{self.running(name)!r}, declared {want!r}")
        again = self.apply()
        lines = [l for l in again.stdout.splitlines() if l]
        if again.returncode != 0 or any(not l.startswith("unchanged ") for l in lines):
            failures.append(f"{label}: not converged: {lines[:3]} {again.stderr.strip()[-200:]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("sdbox")
    ap.add_argument("--points", action="store_true")
    ap.add_argument("--kills", type=int, default=0)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    a = ap.parse_args()
    rng = random.Random(a.seed)
    tmp = tempfile.mkdtemp(prefix="mesh-host-units-crash.")
    # Its box (and cgroup) named for tmp: two campaigns may run at once.
    os.environ["SDBOX_DIR"] = os.path.join(tmp, os.path.basename(tmp) + "-box")
    failures, survived, tried = [], 0, 0
    try:
        subprocess.run([a.sdbox, "up"], check=True)
        env = dict(line.split("=", 1) for line in
                   subprocess.run([a.sdbox, "env"], check=True, capture_output=True,
                                  text=True).stdout.split())
        os.environ["DBUS_SYSTEM_BUS_ADDRESS"] = env["DBUS_SYSTEM_BUS_ADDRESS"]
        c = Campaign(a.binary, a.sdbox, tmp)
        c.declare("a")
        first = c.apply()
        if first.returncode != 0:
            print(first.stdout, first.stderr)
            print("0 passed, 1 failed")
            return 1
        kills = []
        if a.points:
            for syscall in ("renameat", "sendmsg", "fsync", "syncfs"):
                kills += [("point", syscall, n) for n in range(1, 200)]
        kills += [("random", None, None)] * a.kills
        skip = None
        t0 = time.monotonic()
        c.declare("b")
        c.apply()
        full = time.monotonic() - t0
        for k, (how, syscall, n) in enumerate(kills):
            if how == "point" and syscall == skip:
                continue
            c.declare("a" if k % 2 else "b")
            label = f"kill {k}" + (f" at {syscall} #{n}" if how == "point" else "")
            if how == "point":
                r = c.apply(("strace", "-f", "-qq", "-o", "/dev/null", "-e", f"trace={syscall}",
                             "-e", f"inject={syscall}:signal=KILL:when={n}"))
                if r.returncode != -signal.SIGKILL and r.returncode != 128 + signal.SIGKILL:
                    skip = syscall  # the apply finished before its n-th: every one was tried
                    c.judge(label + " (not reached)", failures)
                    continue
            else:
                p = subprocess.Popen([c.binary, "apply", *c.flags], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
                time.sleep(rng.uniform(0, full * 1.1))
                p.send_signal(signal.SIGKILL)
                p.wait()
            tried += 1
            c.judge(label, failures)
            if failures:
                break
            survived += 1
    finally:
        subprocess.run([a.sdbox, "down"], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"seed {a.seed}: {tried} kills ({'every renameat, sendmsg, fsync and syncfs; ' if a.points else ''}"
          f"{a.kills} at random), settle {SETTLE}")
    for f in failures:
        print("FAIL:", f)
    print(f"kills survived: {survived} of {tried}")
    print(f"{survived} passed, {tried - survived} failed")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
