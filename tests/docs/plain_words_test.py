#!/usr/bin/env python3
"""The pages an operator reads say things in plain words (issue 40): no
inner terms of the project's own ("owed", "the want", a design record's or
an issue's number, the SPEC it is built to). Code — fenced blocks and
`inline spans`, where a file's field may be named `owed` — is not prose and
is not looked at. docs/architecture.md, performance.md and reliability.md
are for the engineers who build mesh-host, and are not held to this.
"""
import re
import sys

PAGES = ["README.md", "examples/README.md", "docs/quickstart.md", "docs/declaration.md",
         "docs/record.md", "docs/two-looks.md", "docs/metrics.md", "docs/alerts.md",
         "docs/fleet.md", "docs/troubleshooting.md", "packaging/mesh-host.1"]
INNER = {
    r"\bADR\b": "a design record's number: say what it decided",
    r"\b(owed|owes|owe)\b": "'owed': say pending, or what is still to do",
    r"\bthe want\b": "'the want': say what is declared",
    r"\bwant digests?\b": "'want digest': say the declared digest",
    r"\bSPEC\b": "the SPEC is the builders' contract, not the operator's",
    r"\b[Ii]ssues? \d+": "an issue's number: say what happened",
}
fails = 0


def prose(text):
    """The text with fenced blocks and inline code taken out, lines kept."""
    out, fenced = [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
            out.append("")
            continue
        out.append("" if fenced else re.sub(r"`[^`]*`", "``", line))
    return out


for page in PAGES:
    lines = prose(open(page).read())
    for n, line in enumerate(lines, 1):
        for pattern, why in INNER.items():
            for m in re.finditer(pattern, line):
                print(f"FAIL - {page}:{n}: {m.group(0)!r} ({why}): {line.strip()[:120]}")
                fails += 1
print(f"plain words: {len(PAGES)} pages read, {fails} inner term(s)")
sys.exit(1 if fails else 0)
