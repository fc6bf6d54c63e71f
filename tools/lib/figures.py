#!/usr/bin/env python3
"""docs/figures.tsv and the table of docs/performance.md made from it.

docs/figures.tsv is the one place the performance figures are kept: one row
per figure, as tools/bench measured it (run, figure, value, measured
against, ratio). Each run replaces every row but those it was not asked
to measure (`--large`'s, in a run without it), which keep their own run's
date: a figure a run could not measure (a peer not installed, a test that
failed) or names otherwise (a no-op not proven from the record) is not
left standing from an earlier run.

  figures.py write NEW.tsv docs/figures.tsv docs/performance.md "RUN" [KEEP]
      merges NEW (tools/bench's rows, without a run column) in, keeping
      the old rows whose figure matches the regular expression KEEP, and
      writes the table between the markers of performance.md again
  figures.py check docs/figures.tsv docs/performance.md
      exit 1 (saying where) when the table is not what figures.tsv makes

The targets (issues 18 and 44) are judged here, from the figures: a target
is a ceiling on a row's ratio or on its value.
"""
import re
import sys

BEGIN = "<!-- figures begin: tools/bench writes this table from docs/figures.tsv -->"
END = "<!-- figures end -->"
HEADER = ("| figure | value | measured against | ratio | target | run |\n"
          "|---|---|---|---|---|---|")
# (pattern on the figure's name, "ratio" or "value", ceiling, how it is said)
TARGETS = [
    (r"^no-op apply, daemon \(in process\) \(10000 files\)$", "ratio", 1.3, "≤ 1.3×"),
    (r"^mesh-host apply, no-op, 10(0)?,000 files \(a process\)$", "ratio", 1.3, "≤ 1.3×"),
    (r"^first apply, 10(0)?,000 files", "ratio", 2.0, "≤ 2×"),
    (r"^  its peak RSS \(100,000 files\)$", "value", 64, "≤ 64 MiB"),
    (r"^no-op apply, daemon, full pass \(10000 files\)$", "ratio", 2.0, "≤ 2×"),
    (r"^bundle of 239 files, first unpack$", "ratio", 2.0, "≤ 2×"),
    (r"^  mesh-host's ratio over that floor$", "value", 1.03, "≤ 1.03"),
    (r"^  its private memory \(clean \+ dirty\)$", "value", 6.0, "≤ 6 MiB"),
    (r"^mesh-host --version \(process start\)$", "value", 3.0, "≤ 3 ms"),
]


def number(text):
    m = re.search(r"-?[0-9]+(\.[0-9]+)?", text.replace(",", ""))
    return float(m.group(0)) if m else None


def target(name, value, ratio):
    for pattern, what, ceiling, said in TARGETS:
        if re.search(pattern, name):
            got = number(ratio if what == "ratio" else value)
            if got is None:
                return said + " — not measured"
            return said + (" — met" if got <= ceiling else " — **not met**")
    return ""


def read(path, with_run=True):
    rows = []
    for n, line in enumerate(open(path, encoding="utf-8").read().splitlines(), 1):
        if not line or line.startswith("#"):
            continue
        cells = line.split("\t")
        want = 5 if with_run else 4
        # Empty last cells, should an editor strip the tabs before them.
        cells += [""] * (want - len(cells)) if 2 <= len(cells) < want else []
        if len(cells) != want:
            sys.exit(f"{path}:{n}: {len(cells)} columns, not {want}")
        rows.append(cells if with_run else [""] + cells)
    return rows


def cell(text):
    return text.replace("|", "\\|")


def render(rows):
    out = [BEGIN, HEADER]
    for run, name, value, against, ratio in rows:
        # A row under another (its name indented) is shown as such.
        shown = "↳ " + name.strip() if name.startswith("  ") else name
        out.append("| " + " | ".join(cell(c) for c in (
            shown, value, against, ratio, target(name, value, ratio), run)) + " |")
    out.append(END)
    return "\n".join(out)


def table_of(doc_path):
    text = open(doc_path, encoding="utf-8").read()
    if text.count(BEGIN) != 1 or text.count(END) != 1:
        sys.exit(f"{doc_path}: the markers of the figures' table are not there once each")
    start = text.index(BEGIN)
    end = text.index(END) + len(END)
    return text, start, end


def write(new_path, tsv_path, doc_path, run, keep=None):
    new = [[run] + r[1:] for r in read(new_path, with_run=False)]
    names = [r[1] for r in new]
    if len(set(names)) != len(names):
        sys.exit(f"{new_path}: a figure named twice: " +
                 ", ".join(sorted({n for n in names if names.count(n) > 1})))
    try:
        old = read(tsv_path)
    except FileNotFoundError:
        old = []
    text, start, end = table_of(doc_path)  # the markers are there before either is written
    merged = new + [r for r in old if r[1] not in names and keep and re.search(keep, r[1])]
    with open(tsv_path, "w", encoding="utf-8") as f:
        f.write("# run\tfigure\tvalue\tmeasured against\tratio — written by tools/bench\n")
        for r in merged:
            f.write("\t".join(r) + "\n")
    with open(doc_path, "w", encoding="utf-8") as f:
        f.write(text[:start] + render(merged) + text[end:])


def check(tsv_path, doc_path):
    rows = read(tsv_path)
    if not rows:
        sys.exit(f"{tsv_path}: no figures")
    text, start, end = table_of(doc_path)
    want = render(rows).splitlines()
    got = text[start:end].splitlines()
    for n, (w, g) in enumerate(zip(want, got)):
        if w != g:
            sys.exit(f"{doc_path}: the figures' table, line {n + 1}, is\n  {g}\n"
                     f"but {tsv_path} makes\n  {w}\n(tools/lib/figures.py write it again)")
    if len(want) != len(got):
        sys.exit(f"{doc_path}: the figures' table has {len(got) - 2} lines; "
                 f"{tsv_path} makes {len(want) - 2}")
    print(f"ok - {doc_path}'s table is {tsv_path}'s {len(rows)} figures")


if __name__ == "__main__":
    if len(sys.argv) in (6, 7) and sys.argv[1] == "write":
        write(*sys.argv[2:])
    elif len(sys.argv) == 4 and sys.argv[1] == "check":
        check(*sys.argv[2:])
    else:
        sys.exit(__doc__)
