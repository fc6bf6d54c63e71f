#!/usr/bin/env bash
# Each page's table of figures (performance.md's from tools/bench, fleet.md's
# from tools/fleet-sim, reliability.md's from tools/crash) is what
# docs/figures.tsv makes. (Whether another page restates one of its figures
# is not looked for: a number of a run matched unrelated numbers of other
# pages; those pages point to the tables instead.)
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
echo "$fails failed"
[ "$fails" = 0 ]
