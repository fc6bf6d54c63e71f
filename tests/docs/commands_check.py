#!/usr/bin/env python3
"""Every shell command the docs show is run by a test, and every mesh-host
command line they show parses.

A ```sh block in README.md, docs/*.md or examples/README.md is run whole by
the test of its page (quickstart.md, examples/README.md), or is marked
`<!-- tested: PATH -->` on the line before it, PATH being the test that
runs it: tests/docs/commands_test.sh (which runs every block so marked, on
whatever page) or tools/test (only ./tools/demo and ./tools/test, which
CI runs). Shell is fenced exactly ```sh (what the runners extract): a
```bash, ```shell, ```console, ```sh with anything after it, or a ~~~
fence is refused. Each `mesh-host ...` in a fenced block (continued lines
joined) or an inline code span is parsed by the built binary — its flags,
then --help so nothing is done (a flag named without its value is given
one) — so a renamed or removed flag fails here, not on an operator's first
day. A block fenced otherwise (```text) whose lines are commands is a shell
block in disguise, and is refused unless the line before it says why it is
not run: `<!-- not run: REASON -->`.
"""
import glob
import os
import re
import shlex
import subprocess
import sys

ROOT = os.getcwd()
BIN = os.path.join(ROOT, "host/mesh-host")
WHOLE = {"docs/quickstart.md": "tests/docs/quickstart_test.sh",
         "examples/README.md": "tests/docs/examples_test.sh"}
RUNNERS = {"tests/docs/commands_test.sh", "tools/test"}
# What CI itself runs: tools/test runs the demo, and is the CI command.
CI_COMMANDS = {"./tools/demo", "./tools/test"}
# Flags that take no value.
BOOLEAN = {"--diff", "--verbose", "-v", "--help", "-h"}
# The words a command line of the docs begins with (not an output's
# "mesh-host: apply of …").
COMMAND = re.compile(r"^(sudo|systemctl|rm|apt|apt-get|dpkg|mesh-host|echo|curl|install|cp|mv|"
                     r"sed|journalctl|minisign|bazel|tar|cat|mkdir|promtool|amtool|chmod|chown|"
                     r"ln|export|cd|busctl|python3|printf|\./tools/\S+|tools/\S+) ")
fails = 0


def check(name, ok, why=""):
    global fails
    print(("ok   - " if ok else "FAIL - ") + name + ("" if ok or not why else f": {why}"))
    fails += 0 if ok else 1


pages = ["README.md", "examples/README.md"] + sorted(
    os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs/*.md")))
check("the pages are found (this test reads them)", len(pages) >= 10, str(pages))
blocks = 0
command_lines = []
for page in pages:
    lines = open(os.path.join(ROOT, page)).read().split("\n")
    fence = None
    for n, line in enumerate(lines):
        if fence is None and line.lstrip().startswith("~~~"):
            check(f"{page}:{n + 1} fenced with ```", False, "a ~~~ fence is not extracted")
        if fence is None and line.startswith("```"):
            fence = (line[3:], n)
            if fence[0].strip() in ("bash", "shell", "console") or (
                    fence[0].strip() == "sh" and fence[0] != "sh"):
                check(f"{page}:{n + 1} fenced exactly ```sh", False, repr(line))
            if fence[0] == "sh":
                blocks += 1
                marker = re.fullmatch(r"<!-- tested: (\S+) -->", lines[n - 1] if n else "")
                where = f"{page}:{n + 1}"
                if page in WHOLE:
                    check(f"{where} is run by {WHOLE[page]}",
                          os.path.exists(os.path.join(ROOT, WHOLE[page])))
                elif marker is None:
                    check(f"{where} names the test that runs it", False,
                          "put <!-- tested: tests/docs/commands_test.sh --> before it")
                else:
                    check(f"{where} is run by {marker.group(1)}", marker.group(1) in RUNNERS,
                          f"runners: {sorted(RUNNERS)}")
                    if marker.group(1) == "tools/test":
                        end = lines.index("```", n + 1)
                        words = {l.split()[0] for l in lines[n + 1:end] if l.strip()}
                        check(f"{where}: tools/test runs {sorted(words)}",
                              words <= CI_COMMANDS and
                              "./tools/demo" in open(os.path.join(ROOT, "tools/test")).read())
            continue
        if fence is not None and line.startswith("```"):
            if fence[0] != "sh":
                body = [l for l in lines[fence[1] + 1:n] if l.strip() and not l.startswith("#")]
                said = re.fullmatch(r"<!-- not run: .+ -->",
                                    lines[fence[1] - 1] if fence[1] else "")
                if said is None and any(COMMAND.match(l.removeprefix("$ ")) for l in body):
                    check(f"{page}:{fence[1] + 1} commands fenced ```{fence[0]}", False,
                          "fence them ```sh so a test runs them, or say why not with "
                          "<!-- not run: REASON --> before it")
            fence = None
            continue
        if fence is not None and fence[0] in ("sh", "", "text"):
            # A line continued with a backslash is one command.
            k = n
            while line.endswith("\\") and k + 1 < len(lines):
                k += 1
                line = line[:-1] + " " + lines[k].strip()
            command_lines.append((f"{page}:{n + 1}", line.lstrip("$ ")))
        elif fence is None:
            for span in re.findall(r"`([^`]+)`", line):
                command_lines.append((f"{page}:{n + 1}", span))
check("the pages have shell blocks (this test reads them)", blocks >= 18, str(blocks))

parsed = 0
for where, text in command_lines:
    m = re.search(r"(?:^|[\s(/])(mesh-host (?:run|apply|plan|status)\b[^|&;>#]*)", text)
    if m is None:
        continue
    cmd = m.group(1).strip()
    # A template or placeholder is not a command line.
    if re.search(r"\{\{|\[|…|\.\.\.|<|\$\(", cmd):
        continue
    try:
        args = shlex.split(cmd)[1:]
    except ValueError:
        continue
    if args and args[-1].startswith("-") and args[-1] not in BOOLEAN:
        args.append("VALUE")  # prose naming a flag: the name is what is checked
    parsed += len(args) > 1
    r = subprocess.run([BIN] + args + ["--help"], capture_output=True, text=True, cwd="/",
                       env={"PATH": "/usr/bin:/bin"})
    check(f"{where}: {cmd}", r.returncode == 0, r.stderr.strip())
check("mesh-host lines with flags are found (this test reads them)", parsed >= 20, str(parsed))
print(f"{fails} failed")
sys.exit(1 if fails else 0)
