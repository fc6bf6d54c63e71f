#!/usr/bin/env bash
# tools/package refuses what it does not understand (issue 40): a bare
# directory used to be ignored, and the package landed in the working
# directory. Each refusal exits 2 before anything is built or installed.
set -euo pipefail
PKG=$PWD/tools/package
fails=0
refused() {  # refused WORDS ARG...
  local words=$1; shift
  set +e; out=$("$PKG" "$@" 2>&1); rc=$?; set -e
  if [ "$rc" = 2 ] && grep -q -- "$words" <<<"$out"; then echo "ok   - tools/package $*: exit 2, \"$words\""
  else echo "FAIL - tools/package $*: exit $rc: $out"; fails=$((fails+1)); fi
}
refused 'unknown argument "/tmp"' /tmp
refused 'unknown argument "--bogus"' --bogus
refused "--out needs a directory" --out
refused "--out /nonexistent-mesh-host: not a directory" --out /nonexistent-mesh-host
refused 'unknown argument "extra"' --out /tmp extra
out=$("$PKG" --help)
grep -q "tools/package \[--out DIR\]" <<<"$out" && echo "ok   - --help says the usage" || { echo "FAIL - --help: $out"; fails=$((fails+1)); }
[ "$fails" = 0 ]
