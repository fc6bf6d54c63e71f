#!/usr/bin/env python3
"""docs/figures.tsv and the tables of the docs made from it.

docs/figures.tsv is the one place the measured figures are kept: one row
per figure (run, figure, value, measured against, ratio), written by the
tool that measured it. A row belongs to the tool whose prefix its name
starts with (OWNERS), and each tool's rows make one table, between its
markers, on one page. A run of a tool replaces every row of that tool
but those it was not asked to measure (KEEP: tools/bench's `--large`
rows, in a run without it), which keep their own run's date: a figure a
run could not measure (a peer not installed, a test that failed) or
names otherwise is not left standing from an earlier run. Other tools'
rows are left as they are.

  figures.py write TOOL NEW.tsv docs/figures.tsv "RUN" [KEEP]
      merges NEW (TOOL's rows, without a run column) in, keeping TOOL's
      old rows whose figure matches the regular expression KEEP, and
      writes TOOL's table on its page again
  figures.py check docs/figures.tsv
      exit 1 (saying where) when a page's table is not what figures.tsv
      makes

The targets (issues 18 and 44) are judged here, from the figures: a target
is a ceiling on a row's ratio or on its value.
"""
import re
import sys

# tool: (the prefix of its rows' names, the page of its table). tools/bench's
# rows are those of no other tool's prefix.
OWNERS = {
    "tools/bench": ("", "docs/performance.md"),
    "tools/fleet-sim": ("fleet: ", "docs/fleet.md"),
    "tools/crash": ("crash: ", "docs/reliability.md"),
    "tools/fuzz": ("fuzz: ", "docs/reliability.md"),
}
BEGIN = "<!-- figures begin: {tool} writes this table from docs/figures.tsv -->"
END = "<!-- figures end -->"
COLUMNS = ["figure", "value", "measured against", "ratio", "target", "run"]
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


def owner(name):
    for tool, (prefix, _) in OWNERS.items():
        if prefix and name.startswith(prefix):
            return tool
    return "tools/bench"


def render(tool, rows):
    """TOOL's rows as its page's table, less the columns none of them fills."""
    prefix = OWNERS[tool][0]
    table = []
    for run, name, value, against, ratio in rows:
        if owner(name) != tool:
            continue
        shown = name[len(prefix):]
        # A row under another (its name indented) is shown as such.
        shown = "↳ " + shown.strip() if shown.startswith("  ") else shown
        table.append([shown, value, against, ratio, target(name, value, ratio), run])
    used = [k for k in range(len(COLUMNS)) if k < 2 or any(r[k] for r in table)]
    out = [BEGIN.format(tool=tool), "| " + " | ".join(COLUMNS[k] for k in used) + " |",
           "|" + "---|" * len(used)]
    for r in table:
        out.append("| " + " | ".join(cell(r[k]) for k in used) + " |")
    out.append(END)
    return "\n".join(out)


def table_of(tool):
    doc_path = OWNERS[tool][1]
    text = open(doc_path, encoding="utf-8").read()
    begin = BEGIN.format(tool=tool)
    if text.count(begin) != 1:
        sys.exit(f"{doc_path}: the markers of {tool}'s table are not there once")
    start = text.index(begin)
    end = text.index(END, start) + len(END)
    return doc_path, text, start, end


def write(tool, new_path, tsv_path, run, keep=None):
    if tool not in OWNERS:
        sys.exit(f"{tool}: not one of {', '.join(OWNERS)}")
    new = [[run] + r[1:] for r in read(new_path, with_run=False)]
    names = [r[1] for r in new]
    if len(set(names)) != len(names):
        sys.exit(f"{new_path}: a figure named twice: " +
                 ", ".join(sorted({n for n in names if names.count(n) > 1})))
    if any(owner(n) != tool for n in names):
        sys.exit(f"{new_path}: a figure not {tool}'s: " +
                 ", ".join(n for n in names if owner(n) != tool))
    try:
        old = read(tsv_path)
    except FileNotFoundError:
        old = []
    doc_path, text, start, end = table_of(tool)  # the markers are there before either is written
    merged = new + [r for r in old if r[1] not in names and
                    (owner(r[1]) != tool or (keep and re.search(keep, r[1])))]
    with open(tsv_path, "w", encoding="utf-8") as f:
        f.write("# run\tfigure\tvalue\tmeasured against\tratio — written by " +
                ", ".join(OWNERS) + "\n")
        for r in merged:
            f.write("\t".join(r) + "\n")
    with open(doc_path, "w", encoding="utf-8") as f:
        f.write(text[:start] + render(tool, merged) + text[end:])


def check(tsv_path):
    rows = read(tsv_path)
    if not rows:
        sys.exit(f"{tsv_path}: no figures")
    for tool in OWNERS:
        doc_path, text, start, end = table_of(tool)
        want = render(tool, rows).splitlines()
        got = text[start:end].splitlines()
        for n, (w, g) in enumerate(zip(want, got)):
            if w != g:
                sys.exit(f"{doc_path}: {tool}'s table, line {n + 1}, is\n  {g}\n"
                         f"but {tsv_path} makes\n  {w}\n(run {tool} again)")
        if len(want) != len(got):
            sys.exit(f"{doc_path}: {tool}'s table has {len(got) - 4} rows; "
                     f"{tsv_path} makes {len(want) - 4}")
        print(f"ok - {doc_path}'s table is {tsv_path}'s {len(want) - 4} figures of {tool}")


if __name__ == "__main__":
    if len(sys.argv) in (6, 7) and sys.argv[1] == "write":
        write(*sys.argv[2:])
    elif len(sys.argv) == 3 and sys.argv[1] == "check":
        check(sys.argv[2])
    else:
        sys.exit(__doc__)
