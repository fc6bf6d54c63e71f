#!/usr/bin/env bash
# packaging/mesh-host.1 against the binary: every verb and flag `mesh-host
# --help` lists is in the manual, and groff renders it without a warning.
set -euo pipefail
BIN=$PWD/host/mesh-host
MAN=$PWD/packaging/mesh-host.1
fails=0
check() { if eval "$2"; then echo "ok   - $1"; else echo "FAIL - $1"; fails=$((fails+1)); fi; }
check "groff renders it without a warning" '[ -z "$(LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -z "$MAN" 2>&1)" ]'
text=$(LC_ALL=C.UTF-8 groff -man -Tascii -P-cbou -rHY=0 -rLL=300n "$MAN" 2>/dev/null)
help=$("$BIN" --help)
flags=$(grep -oE '(^|[ ,])--?[a-z][a-z-]*' <<<"$help" | tr -d ' ,' | sort -u)
check "--help lists flags (this test reads it)" '[ "$(wc -l <<<"$flags")" -ge 20 ]'
for f in $flags; do
  check "the manual has $f" 'grep -qE -- "(^|[ ,])$f([ ,]|$)" <<<"$text"'
done
for v in run apply plan validate status; do
  check "the manual has the verb $v" 'grep -qE "^ +$v( |$)" <<<"$text"'
done
check "its version is the binary's" \
  'grep -q "^\.TH MESH-HOST 1 .*\"mesh-host $("$BIN" --version | cut -d" " -f2)\"" "$MAN"'
echo "manpage: $fails failed"
[ "$fails" = 0 ]
