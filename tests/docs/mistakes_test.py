#!/usr/bin/env python3
"""The mistakes table of issue 40: an operator's usual mistakes, each run
through `mesh-host validate` (or the flag parser), and each message must say
where the mistake is and how to fix it, exit 2, and touch nothing.

usage: mistakes_test.py MESH_HOST_BINARY
"""
import json, os, shutil, subprocess, sys, tempfile

BIN = sys.argv[1]
T = tempfile.mkdtemp(prefix="mesh-host-mistakes.")
failures = []

GOOD = {"id": "app.conf", "kind": "file", "path": "/etc/app.conf", "content": "x\n"}


def decl(*resources, **top):
    d = {"machine": "m", "generation": 1, "resources": list(resources)}
    d.update(top)
    return json.dumps(d)


# (mistake, declaration text or None for a flag, extra args, [where...], [how...])
CASES = [
    ("a typo in a field", decl({k: v for k, v in {**GOOD, "contnet": "x"}.items()
                                if k != "content"}),
     [], ["resource app.conf", "field contnet"], ['did you mean "content"?']),
    ("a kind misspelt", decl({**GOOD, "kind": "fiel"}), [],
     ["resource app.conf", "field kind"], ['did you mean "file"?', "expected file, credential"]),
    ("a wrong type", decl(GOOD, generation="1"), [],
     ["declaration", "field generation"], ["must be a non-negative integer"]),
    ("a relative path", decl({**GOOD, "path": "etc/app.conf"}), [],
     ["resource app.conf", "field path"], ['a path starts with "/"', '"/etc/app.conf"']),
    ("a missing artifact",
     decl({"id": "tools", "kind": "archive", "path": "/opt/tools", "source": "tools.tar.gz",
           "sha256": "a" * 64}), [],
     ["resource tools", "field source", "tools.tar.gz", "--artifacts"],
     ["put the file there under that name", 'correct "source"']),
    ("a duplicate id", decl(GOOD, {**GOOD, "path": "/etc/other.conf"}), [],
     ["resource app.conf", "field id", "resource #0"], ["ids are unique", "rename one"]),
    ("a unit name without its suffix",
     decl({"id": "web", "kind": "service", "unit": "nginx", "state": "running"}), [],
     ["resource web", "field unit"], ['such as "nginx.service"']),
    ("bad JSON", decl(GOOD)[:-2] + ",]}", [],
     ["line 1, column", "resources[1]"], ["unexpected ']'", "remove the comma"]),
    ("an unknown flag", None, ["--declration"], ['"--declration"'],
     ['did you mean "--declaration"?']),
]

try:
    for n, (mistake, text, extra, where, how) in enumerate(CASES):
        path = os.path.join(T, f"d{n}.json")
        if text is not None:
            with open(path, "w") as f:
                f.write(text)
            os.chmod(path, 0o600)
            args = [BIN, "validate", "--declaration", path, "--artifacts", os.path.join(T, "art")]
        else:
            args = [BIN, "validate", *extra, path]
        os.makedirs(os.path.join(T, "art"), exist_ok=True)
        before = sorted(os.listdir(T))
        p = subprocess.run(args, capture_output=True, text=True, timeout=30)
        said = p.stdout + p.stderr
        missing = [w for w in where + how if w not in said]
        ok = p.returncode == 2 and not missing and sorted(os.listdir(T)) == before
        lines = said.strip().splitlines() or ["(nothing said)"]
        first = next((l for l in lines if "refused:" in l or "unknown flag" in l), lines[0])
        print(("ok   - " if ok else "FAIL - ") + f"{mistake}: exit {p.returncode}: {first}")
        if missing:
            print(f"       says neither of: {missing}")
        if not ok:
            failures.append(mistake)
finally:
    shutil.rmtree(T, ignore_errors=True)

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
