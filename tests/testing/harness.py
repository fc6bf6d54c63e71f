"""What the Python suites that run real daemons share: finding the built
binaries and data (in Bazel's runfiles or a checkout), a free loopback
port, a bounded wait, and the sandboxed real systemd's environment.

Imported by putting this directory first on sys.path (the suites do so
from their own path), so it needs no install.
"""

import os
import re
import socket
import subprocess
import sys
import time

# The checkout (or runfiles) root: tests/testing/ is two levels below it.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def find(path):
    """`path` relative to the working directory (Bazel's runfiles), else
    under the checkout, with the built binaries in bazel-bin/."""
    for c in (path, os.path.join(ROOT, path), os.path.join(ROOT, "bazel-bin", path)):
        if os.path.exists(c):
            return os.path.abspath(c)
    sys.exit(f"not found: {path}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, predicate, seconds):
    """predicate()'s first true value, asked every 0.25 s; an AssertionError
    naming `what` after `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"timed out after {seconds}s waiting for {what}")


def listening_port(log_path, what, seconds):
    """The port a `mesh-host run` logging to `log_path` bound ("listening on
    127.0.0.1:PORT (...)"), waited for as wait_for does. Hosts that bind port
    0 and say which: a port picked free and bound later could be handed to
    another host meanwhile."""
    def bound():
        with open(log_path) as f:
            return re.search(r"^listening on 127\.0\.0\.1:(\d+) ", f.read(), re.M)
    return int(wait_for(what, bound, seconds).group(1))


def sdbox_up(sdbox, env):
    """Starts the box of env["SDBOX_DIR"] and adds its bus address and pid
    to `env`. The caller takes it down (sdbox down) in its finally."""
    subprocess.run([sdbox, "up"], env=env, check=True)
    for line in subprocess.run([sdbox, "env"], env=env, check=True, capture_output=True,
                               text=True).stdout.split():
        key, _, value = line.partition("=")
        env[key] = value
