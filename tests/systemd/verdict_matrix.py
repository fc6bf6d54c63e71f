#!/usr/bin/env python3
"""The verdict matrix (issue 14, docs/two-looks.md): units people run, each
under its own `mesh-host run` against the sandboxed systemd, over three
consecutive applies (the daemon's start, then a changed declaration or
SIGHUP, or the host itself restarted) and a fourth, one-shot `mesh-host
apply`. After every apply it asserts the resource's outcome word, the
apply's result (the daemon's "apply ok"/"apply failed" line, the one-shot's
exit code), /healthz, mesh_host_unit_active, /status's outcome and
mesh_host_resource_failed; through a restart of the
host, that every /metrics answered before its first apply ended already
says what the record says (no absent series, no false 1); and of a case
whose unit is up after every apply, that the live watch never logged the
host's own restart as a death "between applies".

usage: verdict_matrix.py MESH_HOST SDBOX_SH [CASE ...]
Prints one line per check and "N passed, N failed" (cases).
"""
import concurrent.futures
import hashlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request

SETTLE = "1s"

# What each apply must show: (outcome word, result, /healthz, unit_active).
OK, FAILED = "ok", "failed"


def service(unit_text, on=None):
    return {"unit_text": unit_text, "on": on}


def refuses(ms, stop=""):
    """Refuses any config but 'good', dying MS after start; with `stop`, also
    drains that long on SIGTERM."""
    trap = (f'd() {{ trap "" TERM; sleep {stop}; exit 0; }}; trap d TERM; '
            if stop else "")
    return ("[Service]\nExecStart=/bin/sh -c '" + trap +
            f"grep -q good CONF || {{ sleep {ms / 1000}; exit 1; }}; "
            "while :; do sleep 0.1; done'\n")


def drains(seconds):
    return ("[Service]\nExecStart=/bin/sh -c 'd() { trap \"\" TERM; sleep " +
            str(seconds) + "; exit 0; }; trap d TERM; while :; do sleep 0.1; done'\n")


def crash_loop(restart_sec):
    return ("[Unit]\nStartLimitIntervalSec=0\n[Service]\nRestart=always\n"
            f"RestartSec={restart_sec}\nExecStart=/bin/sh -c 'sleep 0.1; exit 1'\n")


def oneshot(remain, code):
    return (f"[Service]\nType=oneshot\nRemainAfterExit={'yes' if remain else 'no'}\n"
            f"ExecStart=/bin/sh -c 'echo >> RUNS; exit {code}'\n")


HEALTHY = "[Service]\nExecStart=/bin/sleep infinity\n"
# Each case: the unit, then the steps. A step: (what is done before the
# apply, expected outcome, result, /healthz, unit_active). "start" starts
# the daemon on generation 1 (config "good"); "good"/"bad" declare a new
# generation with that config (restart_on it); "hup" re-applies as it is;
# "lose" deletes the record first; "wait" lets 5 s pass first; "rehost"
# stops the daemon (SIGTERM) and starts another on the same state.
GOOD_CYCLE = [("start", "created", OK, 200, 1), ("bad2", "restarted", OK, 200, 1),
              ("hup", "unchanged", OK, 200, 1)]
REFUSED = [("start", "created", OK, 200, 1), ("bad", "failed", FAILED, 503, 0),
           ("hup", "failed", FAILED, 503, 0)]
LOOPING = [("start", "failed", FAILED, 503, 0), ("hup", "failed", FAILED, 503, 0),
           ("hup", "failed", FAILED, 503, 0)]
ONESHOT_OK = [("start", "created", OK, 200, 1), ("hup", "unchanged", OK, 200, 1),
              ("hup", "unchanged", OK, 200, 1)]
LOST = [("start", "created", OK, 200, 1), ("lose", "unchanged", OK, 200, 1),
        ("hup", "unchanged", OK, 200, 1)]
DIES_STARTING = [("start", "created", OK, 200, 1), ("wait", "failed", FAILED, 503, 0),
                 ("hup", "failed", FAILED, 503, 0)]
# A failed reload leaves the daemon running on its old config: the unit is
# active, the resource failed.
RELOAD_REFUSED = [("start", "created", OK, 200, 1), ("bad", "failed", FAILED, 503, 1),
                  ("hup", "failed", FAILED, 503, 1)]
# Issue 38 (9): the host itself restarted, between two applies.
# "rehost-bad2": the declaration changes while the host is down, so its
# first apply restarts the unit and waits a settle: there is time to look.
REHOSTED = [("start", "created", OK, 200, 1), ("rehost-bad2", "restarted", OK, 200, 1),
            ("hup", "unchanged", OK, 200, 1)]
LOOPING_REHOSTED = [("start", "failed", FAILED, 503, 0), ("rehost", "failed", FAILED, 503, 0),
                    ("hup", "failed", FAILED, 503, 0)]
CASES = {
    # case: (unit text, a bundle or None for a missing unit; the steps; the
    # one-shot apply's outcome and exit code)
    "healthy restart": (HEALTHY, GOOD_CYCLE, "unchanged", 0),
    "refused config, dies at 50 ms": (refuses(50), REFUSED, "failed", 1),
    "refused config, dies at 221 ms": (refuses(221), REFUSED, "failed", 1),
    "refused config, dies at 800 ms": (refuses(800), REFUSED, "failed", 1),
    "slow stop 1.5 s": (drains(1.5), GOOD_CYCLE, "unchanged", 0),
    "slow stop 3 s": (drains(3), GOOD_CYCLE, "unchanged", 0),
    # Issue 38 (9): the live watch has looked at the unit (5 s) before the
    # host restarts it; the 1.5 s drain it sees is the host's own restart.
    "slow stop 1.5 s, followed by the watch": (
        drains(1.5), [("start", "created", OK, 200, 1), ("wait", "unchanged", OK, 200, 1),
                      ("bad2", "restarted", OK, 200, 1)], "unchanged", 0),
    "slow stop 1.5 s, refused config": (refuses(221, "1.5"), REFUSED, "failed", 1),
    "crash loop, RestartSec=100ms": (crash_loop("100ms"), LOOPING, "failed", 1),
    "crash loop, RestartSec=1s": (crash_loop("1s"), LOOPING, "failed", 1),
    "crash loop, RestartSec=3s": (crash_loop("3s"), LOOPING, "failed", 1),
    "oneshot, succeeds": (oneshot(False, 0), ONESHOT_OK, "unchanged", 0),
    "oneshot, RemainAfterExit, succeeds": (oneshot(True, 0), ONESHOT_OK, "unchanged", 0),
    "oneshot, fails": (oneshot(False, 1), LOOPING, "failed", 1),
    "oneshot, RemainAfterExit, fails": (oneshot(True, 1), LOOPING, "failed", 1),
    "Type=notify, not ready for 5 s": (
        "[Service]\nType=notify\nNotifyAccess=all\n"
        "ExecStart=/bin/sh -c 'sleep 5; systemd-notify --ready; exec sleep infinity'\n",
        [("start", "created", OK, 200, 1), ("hup", "unchanged", OK, 200, 1),
         ("wait", "unchanged", OK, 200, 1)], "unchanged", 0),
    "start job fails (ExecStartPre=/bin/false)": (
        "[Service]\nExecStartPre=/bin/false\nExecStart=/bin/sleep infinity\n", LOOPING, "failed",
        1),
    "missing unit": (None, LOOPING, "failed", 1),
    # Issue 38 (3): a start accepted as still starting that dies after the
    # settle fails every later apply; its start stays owed.
    "Type=notify, never ready (TimeoutStartSec=3)": (
        "[Service]\nType=notify\nTimeoutStartSec=3\nExecStart=/bin/sleep infinity\n",
        DIES_STARTING, "failed", 1),
    "ExecStartPre fails after 3 s": (
        "[Service]\nExecStartPre=/bin/sh -c 'sleep 3; exit 1'\nExecStart=/bin/sleep infinity\n",
        DIES_STARTING, "failed", 1),
    "oneshot, fails after 3 s": (
        "[Service]\nType=oneshot\nExecStart=/bin/sh -c 'sleep 3; exit 1'\n", DIES_STARTING,
        "failed", 1),
    # Issue 38 (10): systemd skipped the start on a false condition; a
    # skipped oneshot read "finished (Result=success)" though it never ran.
    "condition false": (
        "[Unit]\nConditionPathExists=/nonexistent-mesh-host\n[Service]\nExecStart=/bin/sleep infinity\n",
        LOOPING, "failed", 1),
    "oneshot, condition false": (
        "[Unit]\nConditionPathExists=/nonexistent-mesh-host\n[Service]\nType=oneshot\n"
        "ExecStart=/bin/sh -c 'echo >> RUNS'\n", LOOPING, "failed", 1),
    # Issue 38 (1): a reload is judged by its own job.
    "reload_on, ExecReload fails after 2 s": (
        "[Service]\nExecStart=/bin/sleep infinity\nExecReload=/bin/sh -c 'sleep 2; exit 1'\n",
        RELOAD_REFUSED, "failed", 1, "reload_on"),
    "reload_on, ExecReload takes 2 s": (
        "[Service]\nExecStart=/bin/sleep infinity\nExecReload=/bin/sleep 2\n",
        [("start", "created", OK, 200, 1), ("bad2", "reloaded", OK, 200, 1),
         ("hup", "unchanged", OK, 200, 1)], "unchanged", 0, "reload_on"),
    # Issue 38 (5): ExecStop= hangs to TimeoutStopSec=, then SIGTERM is
    # ignored to the second timeout: systemd brings the new config up after
    # both, and the verdict waits for it.
    "ExecStop hangs, SIGTERM ignored (TimeoutStopSec=2)": (
        "[Service]\nTimeoutStopSec=2\nExecStart=/bin/sh -c 'trap \"\" TERM; while :; do sleep 0.1; done'\n"
        "ExecStop=/bin/sleep 60\n", GOOD_CYCLE, "unchanged", 0),
    # Each ExecStop= command gets TimeoutStopSec= of its own: three that
    # each take most of it make one stop phase of 4.8 s, and the new config
    # comes up after it.
    "three ExecStop= of 1.6 s each (TimeoutStopSec=2)": (
        "[Service]\nTimeoutStopSec=2\nExecStart=/bin/sleep infinity\n"
        + "ExecStop=/bin/sleep 1.6\n" * 3, GOOD_CYCLE, "unchanged", 0),
    # Issue 38 (9): through a restart of the host, a crash loop is never up
    # and a healthy daemon never absent.
    "crash loop through a restart of the host": (crash_loop("100ms"), LOOPING_REHOSTED, "failed",
                                                 1),
    "healthy through a restart of the host": (HEALTHY, REHOSTED, "unchanged", 0),
    "bundle with directory entries, record lost": ("bundle+dirs", LOST, "unchanged", 0),
    "bundle without directory entries, record lost": ("bundle", LOST, "unchanged", 0),
}


class Case:
    def __init__(self, name, spec, binary, tmp, index):
        self.name, self.binary = name, binary
        self.text, self.steps, self.last_outcome, self.last_exit = spec[:4]
        self.on = spec[4] if len(spec) > 4 else "restart_on"
        self.dir = os.path.join(tmp, f"case{index}")
        self.unit = f"m{index}.service"
        self.id = f"m{index}"
        self.units = os.path.join(os.environ["SDBOX_DIR"], "units")
        os.makedirs(os.path.join(self.dir, "root", "etc"))
        os.makedirs(os.path.join(self.dir, "art"))
        self.decl = os.path.join(self.dir, "decl.json")
        self.flags = ["--declaration", self.decl, "--root", os.path.join(self.dir, "root"),
                      "--state-dir", os.path.join(self.dir, "state"),
                      "--artifacts", os.path.join(self.dir, "art"), "--unit-dir", self.units,
                      "--machine", "box", "--settle", SETTLE]
        self.generation = 0
        self.lines = []

    def bundle(self, with_dirs):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            if with_dirs:
                info = tarfile.TarInfo("bin")
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            data = b"#!/bin/sh\nexec sleep infinity\n"
            info = tarfile.TarInfo("bin/serve")
            info.size, info.mode = len(data), 0o755
            tar.addfile(info, io.BytesIO(data))
        path = os.path.join(self.dir, "art", "rt.tar.gz")
        with open(path, "wb") as f:
            f.write(buf.getvalue())
        return hashlib.sha256(buf.getvalue()).hexdigest()

    def declare(self, config):
        self.generation += 1
        conf = {"id": "conf", "kind": "file", "path": "/etc/conf", "content": config + "\n"}
        if self.text in ("bundle", "bundle+dirs"):
            sha = self.bundle(self.text == "bundle+dirs")
            res = {"id": self.id, "kind": "process", "path": "/opt/rt", "source": "rt.tar.gz",
                   "sha256": sha, "unit": self.unit,
                   "unit_text": f"[Service]\nExecStart={self.dir}/root/opt/rt/bin/serve\n"}
        elif self.text is None:
            res = {"id": self.id, "kind": "service", "unit": f"no-such-{self.unit}",
                   "state": "running"}
        else:
            text = (self.text.replace("CONF", f"{self.dir}/root/etc/conf")
                    .replace("RUNS", f"{self.dir}/runs"))
            res = {"id": self.id, "kind": "service", "unit": self.unit, "state": "running",
                   "unit_text": text, self.on: ["conf"]}
        with open(self.decl + ".new", "w") as f:
            json.dump({"machine": "box", "generation": self.generation,
                       "resources": [conf, res]}, f)
        os.rename(self.decl + ".new", self.decl)

    def say(self, ok, what):
        self.lines.append(("ok   - " if ok else "FAIL - ") + f"{self.name}: {what}")
        return ok

    def get(self, path):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def applied(self, count, timeout=60):
        end = time.monotonic() + timeout
        while True:
            text = self.read_log()
            applies = re.findall(r"^apply (?:ok|failed|refused): .*$", text, re.M)
            if len(applies) >= count:
                return text, applies[count - 1]
            if time.monotonic() >= end:
                return text, None
            time.sleep(0.05)

    def start_daemon(self):
        # --verbose: each apply's outcome word is read from the log, unchanged too.
        return subprocess.Popen([self.binary, "run", "--verbose", *self.flags, "--interval", "1h",
                                 "--listen", "127.0.0.1:0"], stderr=open(self.log, "a"))

    def stop_daemon(self, daemon):
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()

    def unit_active(self, metrics):
        m = re.search(r'^mesh_host_unit_active\{unit="[^"]+"\} (\S+)$', metrics, re.M)
        return m and int(float(m.group(1)))

    def rehost(self, daemon, k, active, new_config):
        """Stops the daemon and starts another (on a new config if
        `new_config`); until its first apply ends, every /metrics it answers
        must say `active` already, and it must answer at least once."""
        self.stop_daemon(daemon)
        if new_config:
            self.declare("good, again")
        hosts = self.read_log().count("listening on")
        daemon = self.start_daemon()
        end = time.monotonic() + 30
        while time.monotonic() < end and self.read_log().count("listening on") == hosts:
            time.sleep(0.01)
        self.port = re.findall(r"listening on 127.0.0.1:(\d+)", self.read_log())[-1]
        seen = []
        while time.monotonic() < end and self.applied(k, timeout=0)[1] is None:
            try:
                seen.append(self.unit_active(self.get("/metrics")[1]))
            except OSError:
                pass
            time.sleep(0.02)
        wrong = [v for v in seen if v != active]
        # Both first applies restart the unit and wait a settle: time to look.
        looked = bool(seen)
        self.say(looked and not wrong,
                 f"before the restarted host's first apply ended: {len(seen)} answer(s), "
                 f"mesh_host_unit_active {sorted(set(seen), key=str)} (want {active} in each)")
        return daemon, looked and not wrong

    def read_log(self):
        with open(self.log) as f:
            return f.read()

    def run(self):
        ok = True
        self.log = os.path.join(self.dir, "run.log")
        open(self.log, "w").close()
        self.declare("good")
        daemon = self.start_daemon()
        try:
            for k, (before, outcome, result, health, active) in enumerate(self.steps, 1):
                if before in ("rehost", "rehost-bad2"):
                    daemon, rehosted = self.rehost(daemon, k, active, before == "rehost-bad2")
                    ok &= rehosted
                elif before in ("bad", "bad2"):
                    self.declare("bad" if before == "bad" else "good, again")
                elif before in ("hup", "lose", "wait"):
                    if before == "lose":
                        os.remove(os.path.join(self.dir, "state", "state.json"))
                    if before == "wait":
                        time.sleep(5)
                    daemon.send_signal(signal.SIGHUP)
                text, summary = self.applied(k)
                if k == 1:
                    self.port = re.search(r"listening on 127.0.0.1:(\d+)", text).group(1)
                got = re.findall(rf"^(\w+) {self.id} \(.*$", text, re.M)
                ok &= self.say(summary is not None and summary.startswith(f"apply {result}")
                               and len(got) >= k and got[k - 1] == outcome,
                               f"apply {k} ({before}): {got[k - 1] if len(got) >= k else None}"
                               f", {summary and summary.split(':')[0]}"
                               f" — want {outcome}, apply {result}")
                code, body = self.get("/healthz")
                ok &= self.say(code == health, f"apply {k}: /healthz {code} (want {health})"
                               + ("" if code == health else f": {body.strip()[:200]}"))
                _, metrics = self.get("/metrics")
                value = self.unit_active(metrics)
                ok &= self.say(value == active,
                               f"apply {k}: mesh_host_unit_active {value} (want {active})")
                # /status and mesh_host_resource_failed say what the log said.
                failed = re.search(rf'^mesh_host_resource_failed\{{[^}}]*resource="{self.id}"'
                                   rf'[^}}]*\}} 1$', metrics, re.M) is not None
                _, body = self.get("/status")
                shown = {r["id"]: r["outcome"] for r in json.loads(body)["resources"]}
                ok &= self.say(failed == (outcome == "failed") and shown.get(self.id) == outcome,
                               f"apply {k}: /status {shown.get(self.id)}, "
                               f"mesh_host_resource_failed {int(failed)} (want {outcome})")
        finally:
            self.stop_daemon(daemon)
        if all(step[4] == 1 for step in self.steps):
            # Up after every apply: whatever the watch saw go down was the
            # host's own restart, inside an apply, never a death between two.
            deaths = re.findall(r"^.*between applies.*$", self.read_log(), re.M)
            ok &= self.say(not deaths, f"no death between applies logged: {deaths[:1]}")
        r = subprocess.run([self.binary, "apply", *self.flags], capture_output=True, text=True,
                           timeout=120)
        got = re.findall(rf"^(\w+) {self.id} \(.*$", r.stdout, re.M)
        ok &= self.say(r.returncode == self.last_exit and got == [self.last_outcome],
                       f"one-shot apply: {got}, exit {r.returncode} "
                       f"(want {self.last_outcome}, exit {self.last_exit})")
        runs = os.path.join(self.dir, "runs")
        if "oneshot" in self.name and "succeeds" in self.name:
            count = sum(1 for _ in open(runs)) if os.path.exists(runs) else 0
            ok &= self.say(count == 1, f"ran {count} time(s) over four applies (want 1)")
        if not ok:
            self.lines.append(f"     {self.name}: log\n" + open(self.log).read()[-2000:] +
                              f"\n     one-shot: {r.stdout}{r.stderr}")
        return ok


def main():
    binary, sdbox = sys.argv[1], sys.argv[2]
    wanted = sys.argv[3:] or list(CASES)
    tmp = tempfile.mkdtemp(prefix="mesh-host-matrix.")
    os.environ["SDBOX_DIR"] = os.path.join(tmp, os.path.basename(tmp) + "-box")  # cgroup named for tmp
    passed = failed = 0
    try:
        subprocess.run([sdbox, "up"], check=True)
        env = dict(line.split("=", 1) for line in subprocess.run(
            [sdbox, "env"], check=True, capture_output=True, text=True).stdout.split())
        os.environ["DBUS_SYSTEM_BUS_ADDRESS"] = env["DBUS_SYSTEM_BUS_ADDRESS"]
        cases = [Case(n, CASES[n], binary, tmp, i) for i, n in enumerate(wanted)]
        # The applies mostly wait (stops, settles): four cases at a time.
        with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
            results = list(pool.map(Case.run, cases))
        for case, ok in zip(cases, results):
            print("\n".join(case.lines))
            passed += ok
            failed += not ok
    finally:
        subprocess.run([sdbox, "down"], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
