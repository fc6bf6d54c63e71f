#!/usr/bin/env python3
"""A fleet under one real Prometheus and one real Alertmanager (issue 21).

20 `mesh-host run` processes, each with its own root, state, declaration and
port, behind TLS and basic auth (--web-config); units in one sandboxed real
systemd. Prometheus (Debian's) scrapes them through file_sd over TLS with
basic auth and evaluates the shipped rules; its alerts go to Alertmanager
(Debian's) routed by the shipped alertmanager.yml, whose receivers are a
webhook server in this test. Three hosts go wrong:

  - h1 gets a config its daemon refuses: the unit dies after its restart;
  - h2 churns: something rewrites its file every half second;
  - h3's mesh-host is SIGKILLed;
  - h4 is pushed a declaration it refuses (a mode that is not one).

Exactly the matching alerts must reach the webhook, each naming its
instance (and resource or unit), and nothing for the healthy rest.

The rules and routing are the shipped ones with their waits shortened (a
`for:` of minutes becomes seconds, group waits of minutes become a second):
the expressions, labels and routes are what is tested; the durations are
proven by `promtool test rules`. Bounded: everything is torn down, every
wait has a deadline.
"""

import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HOSTS = 20
REFUSED, CHURN, KILLED, BAD_PUSH = 1, 2, 3, 4




sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "testing"))
from harness import find, free_port, listening_port, sdbox_up, wait_for  # noqa: E402
BIN = find("host/mesh-host")
SDBOX = find("tests/systemd/sdbox.sh")
RULES = find("metrics/alerts/mesh-host.rules.yml")
ROUTES = find("examples/fleet/alertmanager.yml")






class Webhook(http.server.BaseHTTPRequestHandler):
    received = []  # (path, alert) for every alert in every notification
    lock = threading.Lock()

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with Webhook.lock:
            for alert in body.get("alerts", []):
                Webhook.received.append((self.path, alert))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def main():
    if os.geteuid() != 0:
        print("SKIP (LOUD): needs root for the sandboxed systemd; not run", file=sys.stderr)
        return 0
    for tool in ("prometheus", "prometheus-alertmanager", "openssl", "curl"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is missing (tools/lib/packages.sh installs it)")
    t = tempfile.mkdtemp(prefix="mesh-host-fleet.")
    procs, fighter_stop = [], threading.Event()
    env = dict(os.environ, SDBOX_DIR=f"{t}/fleet-box")
    box_up = False
    try:
        sdbox_up(SDBOX, env)
        box_up = True

        # One CA, one certificate for 127.0.0.1, one bcrypt hash: every host.
        def sh(cmd):
            subprocess.run(cmd, shell=True, check=True, cwd=t, capture_output=True)
        sh("openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out ca.key")
        sh("openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out host.key")
        sh("openssl req -x509 -new -key ca.key -out ca.crt -subj /CN=fleet-ca -days 2")
        sh("openssl req -new -key host.key -out host.csr -subj /CN=127.0.0.1")
        with open(f"{t}/ext", "w") as f:
            f.write("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
        sh("openssl x509 -req -in host.csr -CA ca.crt -CAkey ca.key -CAcreateserial "
           "-out host.crt -days 2 -extfile ext")
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import crypt
            hashed = crypt.crypt("fleet-secret", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16))
        with open(f"{t}/web.yml", "w") as f:
            f.write(f"tls_server_config:\n  cert_file: host.crt\n  key_file: host.key\n"
                    f"basic_auth_users:\n  prometheus: '{hashed}'\n")
        with open(f"{t}/password", "w") as f:
            f.write("fleet-secret")

        # The hosts.
        hosts = []
        for i in range(HOSTS):
            h = f"{t}/h{i}"
            os.makedirs(f"{h}/root/etc")
            resources = [{"id": "conf", "kind": "file", "path": "/etc/app.conf",
                          "content": "bad\n" if i == REFUSED else f"host {i}\n"}]
            if i == 0:
                resources.append({"id": "web", "kind": "service", "unit": "fleet-h0.service",
                                  "state": "running", "restart_on": ["conf"],
                                  "unit_text": "[Service]\nExecStart=/bin/sleep infinity\n"})
            if i == REFUSED:
                # The daemon refuses its config: it reads it and dies.
                resources.append({"id": "daemon", "kind": "service", "unit": "fleet-h1.service",
                                  "state": "running", "restart_on": ["conf"],
                                  "unit_text": "[Service]\nExecStart=/bin/sh -c 'grep -qx good "
                                               f"{h}/root/etc/app.conf || exit 1; exec sleep infinity'\n"})
            with open(f"{h}/d.json", "w") as f:
                json.dump({"machine": f"h{i}", "generation": 1, "resources": resources}, f)
            log = open(f"{h}/log", "w")
            p = subprocess.Popen([BIN, "run", "--declaration", f"{h}/d.json", "--root", f"{h}/root",
                                  "--state-dir", f"{h}/state", "--artifacts", f"{h}/art",
                                  "--unit-dir", f"{t}/fleet-box/units", "--machine", f"h{i}",
                                  "--listen", "127.0.0.1:0", "--web-config", f"{t}/web.yml",
                                  # 2 s: MeshHostReconcileStale is 3 intervals,
                                  # which a loaded machine's scrape lag must
                                  # not reach for a host that applies on time.
                                  "--interval", "2s" if i == CHURN else "1h",
                                  "--settle", "300ms"],
                                 env=env, stderr=log, stdout=subprocess.DEVNULL)
            procs.append(p)
            hosts.append(p)
        # A bound against a hang, not a speed: twenty daemons start at once
        # (TLS, bcrypt, a first apply each), beside the sanitizers' run in
        # ./tools/test; 30 s ran out once there for the eighteenth.
        for i in range(HOSTS):
            wait_for(f"h{i}'s first apply",
                     lambda: re.search(r"^apply (ok|failed)", open(f"{t}/h{i}/log").read(), re.M), 90)
        ports = [listening_port(f"{t}/h{i}/log", f"h{i} listening", 10) for i in range(HOSTS)]
        print(f"ok   - {HOSTS} hosts applied (TLS + basic auth on each)")

        # Something fights h2: its file rewritten twice a second.
        def fight():
            while not fighter_stop.wait(0.5):
                try:
                    with open(f"{t}/h{CHURN}/root/etc/app.conf", "w") as f:
                        f.write("edited by hand\n")
                except OSError:
                    pass
        threading.Thread(target=fight, daemon=True).start()

        # Alertmanager, routing as shipped, its receivers this test's webhook.
        hook_port = free_port()
        hook = http.server.ThreadingHTTPServer(("127.0.0.1", hook_port), Webhook)
        threading.Thread(target=hook.serve_forever, daemon=True).start()
        routes = open(ROUTES).read()
        routes = re.sub(r"group_wait: \S+", "group_wait: 1s", routes)
        routes = re.sub(r"group_interval: \S+", "group_interval: 1s", routes)
        routes = routes.replace("http://127.0.0.1:5001/", f"http://127.0.0.1:{hook_port}/")
        with open(f"{t}/alertmanager.yml", "w") as f:
            f.write(routes)
        am_port = free_port()
        procs.append(subprocess.Popen(
            ["prometheus-alertmanager", f"--config.file={t}/alertmanager.yml",
             f"--storage.path={t}/am", f"--web.listen-address=127.0.0.1:{am_port}",
             "--cluster.listen-address=", "--log.level=warn"],
            stdout=subprocess.DEVNULL, stderr=open(f"{t}/alertmanager.log", "w")))

        # Prometheus: file_sd over TLS with basic auth, the shipped rules.
        rules = open(RULES).read()
        rules = re.sub(r"for: \d+m", "for: 3s", rules)
        with open(f"{t}/rules.yml", "w") as f:
            f.write(rules)
        with open(f"{t}/targets.json", "w") as f:
            json.dump([{"targets": [f"127.0.0.1:{p}" for p in ports], "labels": {"site": "test"}}], f)
        prom_port = free_port()
        with open(f"{t}/prometheus.yml", "w") as f:
            f.write(f"""global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: ["{t}/rules.yml"]
alerting:
  alertmanagers:
    - static_configs:
        - targets: ["127.0.0.1:{am_port}"]
scrape_configs:
  - job_name: mesh-host
    scheme: https
    tls_config:
      ca_file: {t}/ca.crt
    basic_auth:
      username: prometheus
      password_file: {t}/password
    file_sd_configs:
      - files: ["{t}/targets.json"]
""")
        prom = subprocess.Popen(
            ["prometheus", f"--config.file={t}/prometheus.yml", f"--storage.tsdb.path={t}/tsdb",
             f"--web.listen-address=127.0.0.1:{prom_port}", "--log.level=warn"],
            stdout=subprocess.DEVNULL, stderr=open(f"{t}/prometheus.log", "w"))
        procs.append(prom)
        api = f"http://127.0.0.1:{prom_port}/api/v1"

        def query(q):
            out = subprocess.run(["curl", "-sf", "--get", f"{api}/query", "--data-urlencode",
                                  f"query={q}"], capture_output=True, text=True)
            if out.returncode != 0:
                return []
            return json.loads(out.stdout)["data"]["result"]

        wait_for("every host scraped over TLS",
                 lambda: len([r for r in query("up == 1")]) == HOSTS, 40)
        print(f"ok   - prometheus scrapes all {HOSTS} hosts over TLS with basic auth")

        # h3's mesh-host dies; h4 is pushed a declaration it refuses.
        hosts[KILLED].send_signal(signal.SIGKILL)
        hosts[KILLED].wait()
        with open(f"{t}/h{BAD_PUSH}/d.json.new", "w") as f:
            json.dump({"machine": f"h{BAD_PUSH}", "generation": 2, "resources": [
                {"id": "conf", "kind": "file", "path": "/etc/app.conf", "content": "x\n",
                 "mode": "9"}]}, f)
        os.rename(f"{t}/h{BAD_PUSH}/d.json.new", f"{t}/h{BAD_PUSH}/d.json")

        inst = {i: f"127.0.0.1:{ports[i]}" for i in range(HOSTS)}
        expected = {
            ("MeshHostResourceFailed", inst[REFUSED], "daemon"),
            ("MeshHostDaemonDead", inst[REFUSED], "fleet-h1.service"),
            ("MeshHostResourceChurn", inst[CHURN], "conf"),
            ("MeshHostDown", inst[KILLED], ""),
            ("MeshHostDeclarationRefused", inst[BAD_PUSH], ""),
        }

        def got():
            with Webhook.lock:
                return {(a["labels"].get("alertname"), a["labels"].get("instance"),
                         a["labels"].get("resource") or a["labels"].get("unit") or "")
                        for _, a in Webhook.received if a.get("status") == "firing"}
        wait_for("the expected alerts at the webhook", lambda: expected <= got(), 90)
        time.sleep(5)  # anything extra would have come by now (group_interval 1s)
        received = got()
        missing, extra = expected - received, received - expected
        for a in sorted(received):
            print(f"       received {a}")
        if missing or extra:
            print(f"FAIL - missing {sorted(missing)}, extra {sorted(extra)}")
            return 1
        with Webhook.lock:
            paths = {(a["labels"]["alertname"], path) for path, a in Webhook.received}
        assert ("MeshHostDown", "/mesh-oncall") in paths, paths
        assert ("MeshHostResourceChurn", "/mesh-team") in paths, paths
        with Webhook.lock:
            reasons = {a["labels"].get("reason", "") for _, a in Webhook.received
                       if a["labels"]["alertname"] == "MeshHostDeclarationRefused"}
        assert any("field mode" in r for r in reasons), reasons
        print("ok   - exactly the five alerts reached the webhook, each naming its instance "
              "(critical to on-call, warnings to the team; the refusal named); nothing for "
              f"the healthy {HOSTS - 4}")

        # Figures for docs/fleet.md.
        series = query('count by (instance) ({job="mesh-host"})')
        per_host = sorted(int(r["value"][1]) for r in series)
        duration = query('max(scrape_duration_seconds{job="mesh-host"})')
        rss = int(open(f"/proc/{prom.pid}/status").read().split("VmRSS:")[1].split()[0])
        print(f"       series per host {per_host[0]}..{per_host[-1]}, "
              f"max scrape {float(duration[0]['value'][1]) * 1000:.1f} ms, "
              f"prometheus RSS {rss // 1024} MiB for {HOSTS} hosts")
        return 0
    finally:
        fighter_stop.set()
        for p in procs:
            if p.poll() is None:
                p.terminate()
        deadline = time.monotonic() + 5
        for p in procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if box_up:
            subprocess.run([SDBOX, "down"], env=env, capture_output=True)
        shutil.rmtree(t, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
