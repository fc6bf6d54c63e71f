#!/usr/bin/env bash
# docs/performance.md's table of figures is what docs/figures.tsv (written by
# tools/bench) makes. (Whether another page restates one of its figures is
# not looked for: a number of a run matched unrelated numbers of other
# pages; those pages point to performance.md instead.)
set -euo pipefail
fails=0
check() { if eval "$2"; then echo "ok   - $1"; else echo "FAIL - $1"; fails=$((fails+1)); fi; }
check "the table is docs/figures.tsv's" 'python3 tools/lib/figures.py check docs/figures.tsv docs/performance.md'
echo "$fails failed"
[ "$fails" = 0 ]
