#!/usr/bin/env python3
"""docs/declaration.schema.json (issue 20), checked against the host itself.

Every declaration the project shows (the example the demo applies, the
SPEC's, those of docs/declaration.md) validates; every structural refusal
of a list of bad declarations — the hostile corpus's kind — is refused by
the schema *and* by `mesh-host plan` (exit 2), so the two cannot drift
apart unnoticed. Uses Debian's python3-jsonschema.
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

import jsonschema

ROOT = os.getcwd()
if not os.path.exists(os.path.join(ROOT, "docs/declaration.schema.json")):
    ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = next(p for p in (os.path.join(ROOT, "host/mesh-host"), os.path.join(ROOT, "bazel-bin/host/mesh-host"))
           if os.path.exists(p))
schema = json.load(open(os.path.join(ROOT, "docs/declaration.schema.json")))
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)
fails = 0


def check(name, ok):
    global fails
    print(("ok   - " if ok else "FAIL - ") + name)
    fails += 0 if ok else 1


SHA = "0" * 64
good = []
example = open(os.path.join(ROOT, "examples/declaration.json.in")).read()
good.append(("examples/declaration.json.in", json.loads(
    example.replace("@MACHINE@", "m").replace("@ROOT@", "/r").replace("@SHA256@", SHA))))
# examples/*/declaration.json, as they are applied.
for path in sorted(glob.glob(os.path.join(ROOT, "examples/*/declaration.json"))):
    good.append((os.path.relpath(path, ROOT), json.load(open(path))))
check("the examples are found (this test reads them)",
      sum(1 for name, _ in good if name.startswith("examples/") and name.endswith(".json")) >= 4)
# The JSON blocks of docs/declaration.md that are whole declarations or
# single resources.
doc = open(os.path.join(ROOT, "docs/declaration.md")).read()
for k, block in enumerate(re.findall(r"```json\n(.*?)```", doc, re.S)):
    text = block.replace("<hex of the source file>", SHA)
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = json.loads("[" + text + "]")  # resources listed one per line
    if isinstance(value, dict) and "resources" in value:
        good.append((f"docs/declaration.md block {k + 1}", value))
    else:
        items = value if isinstance(value, list) else [value]
        good.append((f"docs/declaration.md block {k + 1}",
                     {"machine": "m", "generation": 1, "resources": items}))
for name, decl in good:
    errors = [e.message for e in validator.iter_errors(decl)]
    check(f"{name} validates", not errors)
    if errors:
        print("       " + "; ".join(errors[:3]))


def res(**fields):
    return {"machine": "m", "generation": 1, "resources": [fields]}


bad = [
    ("unknown kind", res(id="a", kind="cronjob", path="/a")),
    ("unknown field", res(id="a", kind="file", path="/a", content="x", colour="red")),
    ("missing path", res(id="a", kind="file", content="x")),
    ("content and content_base64", res(id="a", kind="file", path="/a", content="x", content_base64="eA==")),
    ("relative path", res(id="a", kind="file", path="etc/a", content="x")),
    ("path with ..", res(id="a", kind="file", path="/etc/../a", content="x")),
    ("path named as a temporary", res(id="a", kind="file", path="/etc/.a.mesh-host-tmp.9.0", content="x")),
    ("unit named as a temporary", res(id="a", kind="service", unit=".a.mesh-host-tmp.9.0.service", state="running")),
    ("bad id", res(id="A b", kind="file", path="/a", content="x")),
    ("bad mode", res(id="a", kind="file", path="/a", content="x", mode="999")),
    ("bad sha256", res(id="a", kind="archive", path="/a", source="s.tgz", sha256="abc")),
    ("source with /", res(id="a", kind="archive", path="/a", source="../s.tgz", sha256=SHA)),
    ("unit without suffix", res(id="a", kind="service", unit="nginx", state="running")),
    ("template without instance", res(id="a", kind="service", unit="foo@.service", state="running")),
    ("bad state", res(id="a", kind="service", unit="a.service", state="up")),
    ("enabled not a boolean", res(id="a", kind="service", unit="a.service", state="running", enabled="yes")),
    ("drop-in name with /", res(id="a", kind="service", unit="a.service", state="running", drop_ins={"x/y.conf": ""})),
    ("drop-in name with ..", res(id="a", kind="service", unit="a.service", state="running", drop_ins={"a..b.conf": ""})),
    ("drop-in not .conf", res(id="a", kind="service", unit="a.service", state="running", drop_ins={"override": ""})),
    ("symlink without target", res(id="a", kind="symlink", path="/a")),
    ("directory with content", res(id="a", kind="directory", path="/a", content="x")),
    ("process on a socket", res(id="a", kind="process", path="/a", source="s", sha256=SHA, unit="a.socket", unit_text="")),
    ("process with state", res(id="a", kind="process", path="/a", source="s", sha256=SHA, unit="a.service", unit_text="", state="running")),
    ("no resources", {"machine": "m", "generation": 1}),
    ("unknown top-level field", {"machine": "m", "generation": 1, "resources": [], "extra": 1}),
    ("negative generation", {"machine": "m", "generation": -1, "resources": []}),
]
with tempfile.TemporaryDirectory(prefix="mesh-host-schema.") as t:
    for name, decl in bad:
        schema_says = not validator.is_valid(decl)
        path = os.path.join(t, "d.json")
        json.dump(decl, open(path, "w"))
        host = subprocess.run([BIN, "plan", "--declaration", path, "--root", t, "--state-dir", f"{t}/st",
                               "--unit-dir", f"{t}/u", "--artifacts", f"{t}/a", "--machine", "m"],
                              capture_output=True, text=True)
        check(f"{name}: refused by the schema and by the host (exit {host.returncode})",
              schema_says and host.returncode == 2)
print(f"{fails} failed")
sys.exit(1 if fails else 0)
