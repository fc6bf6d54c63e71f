#!/usr/bin/env python3
"""Exit codes are said once, by each verb's --help, and in the same words
wherever the manual, the README and docs/ state them (issue 40: `status`
said one thing in the manual and another in docs/fleet.md).

A verb's sentence is its --help's, from "exit 0" to the end of its entry.
The manual must carry each whole. A page that says "exit 0 all good",
"exit 0 valid" or "exit 0 healthy" (or "exits 0 …") must go on as that
verb's sentence does,
at least as far as its first clause ("… or bad usage"); a shorter or other
wording fails here.
"""
import glob
import os
import re
import subprocess
import sys

BIN = sys.argv[1]
fails = 0


def check(name, ok, why=""):
    global fails
    print(("ok   - " if ok else "FAIL - ") + name + ("" if ok or not why else f": {why}"))
    fails += 0 if ok else 1


def norm(text):
    return re.sub(r"\s+", " ", text.replace("`", "")).strip()


def sentence(verb):
    """The exit sentence of `mesh-host VERB --help`."""
    lines = subprocess.run([BIN, verb, "--help"], capture_output=True, text=True,
                           check=True).stdout.split("\n")
    for n, line in enumerate(lines):
        if line.strip().startswith("exit 0"):
            out = [line]
            for more in lines[n + 1:]:
                if not more.startswith(" " * 11) or more[11:12] == " ":
                    break
                out.append(more)
            return norm(" ".join(out))
    return ""


said = {verb: sentence(verb) for verb in ("apply", "validate", "status")}
for verb, s in said.items():
    check(f"{verb} --help says its exit codes ({s!r})", s.startswith("exit 0"))
said["plan"] = said["apply"]
check("plan --help says it has apply's",
      "same exit codes" in subprocess.run([BIN, "plan", "--help"], capture_output=True,
                                          text=True).stdout)

man = norm(subprocess.run(
    ["groff", "-man", "-Tascii", "-P-cbou", "-rHY=0", "-rLL=300n", "packaging/mesh-host.1"],
    capture_output=True, text=True, env={**os.environ, "LC_ALL": "C.UTF-8"}).stdout)
check("the manual renders (this test reads it)", "EXIT STATUS" in man)
for verb, s in said.items():
    check(f"the manual's EXIT STATUS has {verb}'s, word for word", s in man)

# Where a page states a verb's codes, it states them as its --help does.
openings = {"0 all good": said["apply"], "0 valid": said["validate"],
            "0 healthy": said["status"]}
pages = ["README.md"] + sorted(glob.glob("docs/*.md")) + ["examples/README.md"]
stated = 0
for page in pages:
    text = norm(open(page).read())
    for opening, whole in openings.items():
        # "exit 0 …" or "exits 0 …": the codes from the 0 on, at least as far
        # as the one-host clause.
        first = whole.split(";")[0][len("exit "):]
        for m in re.finditer(r"\bexits? " + re.escape(opening), text):
            stated += 1
            at = m.start() + m.group(0).index("0 ")
            check(f"{page}: {m.group(0)!r} goes on as --help says", text[at:].startswith(first),
                  f"says {text[at:at + len(first) + 10]!r}")
check("the pages state exit codes (this test reads them)", stated >= 3, str(stated))
print(f"exit codes: {fails} failed")
sys.exit(1 if fails else 0)
