#!/usr/bin/env bash
# Each page's table of figures (performance.md's from tools/bench, fleet.md's
# from tools/fleet-sim, reliability.md's two from tools/crash and tools/fuzz) is what
# docs/figures.tsv makes. (Whether another page restates one of its figures
# is not looked for: a number of a run matched unrelated numbers of other
# pages; those pages point to the tables instead.) Figures measured
# elsewhere are checked where they are measured: the series tables and
# fleet.md's arithmetic by series_figures_test.sh, the unit's security
# score by tests/systemd/packaging_test.sh.
set -euo pipefail
fails=0
check() { if eval "$2"; then echo "ok   - $1"; else echo "FAIL - $1"; fails=$((fails+1)); fi; }
check "every table is docs/figures.tsv's" 'python3 tools/lib/figures.py check docs/figures.tsv'
# A tool's run replaces its own rows only: the others' stay, and every table
# still holds (on a copy of the pages).
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
mkdir -p "$T/docs" && cp docs/figures.tsv docs/performance.md docs/fleet.md docs/reliability.md "$T/docs/"
printf 'crash: a campaign: kills survived\t3 of 3 (seed 1)\t\t\n' > "$T/new.tsv"
others() { grep -v $'\tcrash: ' "$1" | grep -v '^#'; }
crash_rows() { grep -c $'\tcrash: ' "$1"; }
check "a tool's run leaves the other tools' rows" \
  '(cd "$T" && python3 "$OLDPWD/tools/lib/figures.py" write tools/crash new.tsv docs/figures.tsv "RUN" >/dev/null) &&
   [ "$(others "$T/docs/figures.tsv")" = "$(others docs/figures.tsv)" ] &&
   [ "$(crash_rows "$T/docs/figures.tsv")" = 1 ] &&
   (cd "$T" && python3 "$OLDPWD/tools/lib/figures.py" check docs/figures.tsv >/dev/null) &&
   grep -q "| a campaign: kills survived | 3 of 3 (seed 1) | RUN |" "$T/docs/reliability.md"'
# The counts of cases the docs state are those the tests hold the host to
# (each test fails unless every case passes).
count_check() {  # SCRIPT NAME DOC PATTERN: every group of PATTERN in DOC is len(NAME)
  python3 - "$@" <<'PY'
import ast, re, sys
script, name, doc_path, pattern = sys.argv[1:5]
tree = ast.parse(open(script).read())
values = [n.value for n in tree.body if isinstance(n, ast.Assign)
          and any(getattr(t, "id", None) == name for t in n.targets)]
v = values[0]
n = len(v.keys) if isinstance(v, ast.Dict) else len(v.elts) if isinstance(v, ast.List) else v.value
stated = re.search(pattern, open(doc_path).read())
if not stated or any(int(g) != n for g in stated.groups()):
    sys.exit(f"{doc_path} says {stated[0] if stated else 'nothing'}; {script} holds {n}")
PY
}
check "the hostile declarations counted as hostile_test.py holds them" \
  'count_check tests/hostile/hostile_test.py CASES docs/reliability.md "hostile declarations refused whole[^|]*\| \*\*(\d+) of (\d+)\*\*"'
check "the FIFO race's applies counted as fifo_race_test.py runs them" \
  'count_check tests/hostile/fifo_race_test.py APPLIES docs/reliability.md "\*\*(\d+) of (\d+) applies finish\*\*"'
check "the verdict matrix counted as verdict_matrix.py holds it" \
  'count_check tests/systemd/verdict_matrix.py CASES README.md "the verdict matrix of (\d+) units"'
# Two tools' tables on one page: a run of one leaves the other's table.
printf 'fuzz: a target\t5 executions in 1 s, no finding\t\t\n' > "$T/fuzz.tsv"
check "a tool's run leaves another tool's table on the same page" \
  '(cd "$T" && python3 "$OLDPWD/tools/lib/figures.py" write tools/fuzz fuzz.tsv docs/figures.tsv "RUN2" >/dev/null) &&
   (cd "$T" && python3 "$OLDPWD/tools/lib/figures.py" check docs/figures.tsv >/dev/null) &&
   grep -q "| a campaign: kills survived | 3 of 3 (seed 1) | RUN |" "$T/docs/reliability.md" &&
   grep -q "| a target | 5 executions in 1 s, no finding | RUN2 |" "$T/docs/reliability.md"'
echo "$fails failed"
[ "$fails" = 0 ]
