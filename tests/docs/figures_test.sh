#!/usr/bin/env bash
# docs/performance.md's table of figures is what docs/figures.tsv (written by
# tools/bench) makes, and no other page restates a figure of it.
set -euo pipefail
fails=0
check() { if eval "$2"; then echo "ok   - $1"; else echo "FAIL - $1"; fails=$((fails+1)); fi; }
check "the table is docs/figures.tsv's" 'python3 tools/lib/figures.py check docs/figures.tsv docs/performance.md'
# Each figure's value, as the table shows it (a number and its unit), is not
# written on another page: those point to performance.md instead. Only a
# value a design constant would not be is looked for (a decimal, or three
# digits not ending in 0): "every 50 ms" is a setting, "16.7 ms" a figure.
restated=$(python3 - <<'PY'
import glob, re
rows = [l.split("\t") for l in open("docs/figures.tsv").read().splitlines() if l and not l.startswith("#")]
values = {r[2] for r in rows if re.fullmatch(r"[0-9][0-9,.]* (ms|MiB)", r[2])
          and re.fullmatch(r"[0-9,]*\.[0-9]+ \w+|[0-9,]*[0-9]{2}[1-9] \w+", r[2])}
for page in ["README.md", "examples/README.md"] + sorted(glob.glob("docs/*.md")):
    if page == "docs/performance.md":
        continue
    text = open(page).read()
    for v in sorted(values):
        if re.search(r"(?<![0-9.,])" + re.escape(v) + r"\b", text):
            print(f"{page}: {v}")
PY
)
check "no other page restates a figure of the table${restated:+: $restated}" '[ -z "$restated" ]'
echo "$fails failed"
[ "$fails" = 0 ]
