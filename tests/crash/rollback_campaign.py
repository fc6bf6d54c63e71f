#!/usr/bin/env python3
"""Kills `mesh-host apply` while it rolls a dying daemon back (issue 43),
then judges the next applies by what the daemon itself loaded.

Under the project's sandboxed systemd (tests/systemd/sdbox.sh), `jail`
runs declared `on_failure: rollback`, restart_on its config. It records the
config it read when it starts; given a config with "refused" in it, it
dies 0.1 s after starting, well inside the 300 ms settle (a run that
outlives the settle passes the two looks). Each round first applies a good
generation (confirmed: the last good), then a refused one, and kills that
apply — at its n-th renameat, fsync, syncfs or sendmsg (strace's syscall
injection), or at a random moment. After each kill:

  - the next two applies must exit 1 (never 0: the refused generation is
    not the machine), and say the unit is held or rolled back;
  - the daemon must be running on a config it was confirmed on (0 daemons
    on an unknown config): the good one, never the refused;
  - the second of them must restart nothing (held, not retried).

usage: rollback_campaign.py MESH_HOST SDBOX_SH [--points SYSCALLS] [--kills N] [--seed S]
Prints "N passed, N failed" (kills survived).
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
    def __init__(self, binary, tmp):
        self.binary, self.t = binary, tmp
        self.root = os.path.join(tmp, "root")
        self.loaded = os.path.join(tmp, "loaded")
        self.decl = os.path.join(tmp, "decl.json")
        self.units = os.path.join(os.environ["SDBOX_DIR"], "units")
        os.makedirs(os.path.join(self.root, "etc"))
        self.flags = ["--declaration", self.decl, "--root", self.root,
                      "--state-dir", os.path.join(tmp, "state"),
                      "--artifacts", os.path.join(tmp, "art"), "--unit-dir", self.units,
                      "--machine", "box", "--settle", SETTLE]
        self.generation = 0
        self.good = None

    def unit_text(self):
        conf = os.path.join(self.root, "etc", "jail.conf")
        out = self.loaded
        return ("[Unit]\nStartLimitIntervalSec=0\n[Service]\n"
                f"ExecStart=/bin/sh -c 'if grep -q refused {conf}; then sleep 0.1; exit 1; fi; "
                f"cat {conf} > {out}.new && mv {out}.new {out}; "
                "while :; do sleep 1 & wait $!; done'\n")

    def declare(self, refused):
        self.generation += 1
        g = self.generation
        content = f"jail {'refused' if refused else 'good'} {g}"
        if not refused:
            self.good = content
        res = [{"id": "jail.conf", "kind": "file", "path": "/etc/jail.conf", "content": content},
               {"id": "jail", "kind": "service", "unit": "jail.service", "state": "running",
                "unit_text": self.unit_text(), "restart_on": ["jail.conf"],
                "on_failure": "rollback"},
               {"id": "other.conf", "kind": "file", "path": "/etc/other.conf",
                "content": f"other {g}"}]
        fd = os.open(self.decl + ".new", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({"machine": "box", "generation": g, "resources": res}, f)
        os.rename(self.decl + ".new", self.decl)

    def apply(self, wrap=()):
        return subprocess.run([*wrap, self.binary, "apply", *self.flags],
                              capture_output=True, text=True, timeout=120)

    def running(self):
        try:
            with open(self.loaded) as f:
                return f.read()
        except FileNotFoundError:
            return None

    def invocation(self):
        r = subprocess.run(["busctl", "get-property", "org.freedesktop.systemd1",
                            "/org/freedesktop/systemd1/unit/jail_2eservice",
                            "org.freedesktop.systemd1.Unit", "InvocationID"],
                           capture_output=True, text=True)
        return r.stdout.strip()

    def active(self):
        r = subprocess.run(["busctl", "get-property", "org.freedesktop.systemd1",
                            "/org/freedesktop/systemd1/unit/jail_2eservice",
                            "org.freedesktop.systemd1.Unit", "ActiveState"],
                           capture_output=True, text=True)
        return r.stdout.strip() == 's "active"'

    def judge(self, label, failures):
        invocations = []
        for n in (1, 2):
            r = self.apply()
            jail = [l for l in r.stdout.splitlines() if l.startswith("failed jail (service)")]
            if r.returncode != 1:
                failures.append(f"{label}: apply {n} after the kill exit {r.returncode} "
                                f"(a false success): {r.stdout.strip()[-300:]}")
                return
            if not jail or not ("held at generation" in jail[0] or "rolled back to" in jail[0]):
                failures.append(f"{label}: apply {n}: not said held or rolled back: "
                                f"{(jail or [r.stdout.strip()[-300:]])[0]}")
                return
            # The daemon writes what it read once it has started.
            end = time.monotonic() + 3
            while not (self.active() and self.running() == self.good) and time.monotonic() < end:
                time.sleep(0.05)
            if not self.active() or self.running() != self.good:
                failures.append(f"{label}: apply {n}: the daemon runs {self.running()!r} "
                                f"(active: {self.active()}), confirmed on {self.good!r}")
                return
            invocations.append(self.invocation())
        if invocations[0] != invocations[1]:
            failures.append(f"{label}: held, yet restarted again ({invocations})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("sdbox")
    ap.add_argument("--points", default="", help="comma-separated syscalls to kill at, each in turn")
    ap.add_argument("--kills", type=int, default=0)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    a = ap.parse_args()
    rng = random.Random(a.seed)
    tmp = tempfile.mkdtemp(prefix="mesh-host-rollback-crash.")
    # Its box (and cgroup) named for tmp: two campaigns may run at once.
    os.environ["SDBOX_DIR"] = os.path.join(tmp, os.path.basename(tmp) + "-box")
    failures, survived, tried = [], 0, 0
    try:
        subprocess.run([a.sdbox, "up"], check=True)
        env = dict(line.split("=", 1) for line in
                   subprocess.run([a.sdbox, "env"], check=True, capture_output=True,
                                  text=True).stdout.split())
        os.environ["DBUS_SYSTEM_BUS_ADDRESS"] = env["DBUS_SYSTEM_BUS_ADDRESS"]
        c = Campaign(a.binary, tmp)
        kills = []
        for syscall in filter(None, a.points.split(",")):
            kills += [("point", syscall, n) for n in range(1, 400)]
        kills += [("random", None, None)] * a.kills
        skip, full = None, None
        for k, (how, syscall, n) in enumerate(kills):
            if how == "point" and syscall == skip:
                continue
            c.declare(refused=False)
            r = c.apply()
            if r.returncode != 0:
                failures.append(f"round {k}: the good generation did not apply: {r.stdout[-300:]}")
                break
            c.declare(refused=True)
            label = f"kill {k}" + (f" at {syscall} #{n}" if how == "point" else "")
            if how == "point":
                r = c.apply(("strace", "-f", "-qq", "-o", "/dev/null", "-e", f"trace={syscall}",
                             "-e", f"inject={syscall}:signal=KILL:when={n}"))
                if r.returncode != -signal.SIGKILL and r.returncode != 128 + signal.SIGKILL:
                    skip = syscall  # the apply finished before its n-th: every one was tried
                    c.judge(label + " (not reached)", failures)
                    continue
            else:
                if full is None:
                    t0 = time.monotonic()
                    c.apply()
                    full = time.monotonic() - t0
                    c.declare(refused=False)
                    c.apply()
                    c.declare(refused=True)
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
    print(f"seed {a.seed}: {tried} kills (at every {a.points or 'no syscall'}; "
          f"{a.kills} at random), settle {SETTLE}")
    for f in failures:
        print("FAIL:", f)
    print(f"kills survived: {survived} of {tried}")
    print(f"{survived} passed, {tried - survived} failed")
    return 0 if not failures and tried > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
