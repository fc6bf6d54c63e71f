#!/usr/bin/env bash
# packaging/mesh-host.bash-completion, loaded in bash as bash-completion
# would: every flag of `mesh-host --help` is offered for some verb, each
# verb is offered only flags the binary accepts with it, and values complete.
set -euo pipefail
BIN=$PWD/host/mesh-host
COMPLETION=$PWD/packaging/mesh-host.bash-completion
T=$(mktemp -d "${TEST_TMPDIR:-/tmp}/completion.XXXXXX")
trap 'rm -rf "$T"' EXIT
fails=0
check() { if eval "$2"; then echo "ok   - $1"; else echo "FAIL - $1"; fails=$((fails+1)); fi; }
# complete WORD...: what TAB offers after the words (the last is completed).
complete_words() {
  (cd "$T" && bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _mesh_host; printf "%s\n" "${COMPREPLY[@]}"' - "$COMPLETION" mesh-host "$@")
}
check "verbs" '[ "$(complete_words "" | tr "\n" " ")" = "run apply plan validate status --help --version " ]'
check "a verb from its start" '[ "$(complete_words pl)" = plan ]'
check "plan --d: --declaration, --diff" '[ "$(complete_words plan --d | sort | tr "\n" " ")" = "--declaration --diff " ]'
check "apply is not offered --diff" '! complete_words apply --d | grep -qx -- --diff'
check "--output values" '[ "$(complete_words apply --output "" | tr "\n" " ")" = "text json " ]'
check "--metrics-resources values" '[ "$(complete_words run --metrics-resources f)" = failing ]'
touch "$T/decl.json"; mkdir "$T/statedir"
check "--declaration completes files" 'complete_words plan --declaration de | grep -qx decl.json'
check "--state-dir completes directories only" '[ "$(complete_words run --state-dir s)" = statedir ] && [ -z "$(complete_words run --state-dir de)" ]'
check "status is offered --targets, not --root" \
  'complete_words status --t | grep -x -- --targets >/dev/null && ! complete_words status --r | grep -q .'
check "--output=: values after =" '[ "$(complete_words apply --output = "" | tr "\n" " ")" = "text json " ]'
check "--output=j: json" '[ "$(complete_words apply --output = j)" = json ]'
check "--metrics-resources=: values" '[ "$(complete_words run --metrics-resources = | tr "\n" " ")" = "all failing " ]'
help_flags=$("$BIN" --help | grep -oE '(^|[ ,])--?[a-z][a-z-]*' | tr -d ' ,' | sort -u)
offered=$(for v in run apply plan validate status; do complete_words "$v" -; done | sort -u)
# Each verb is offered exactly what its own --help lists (-h, -v aside).
for v in run apply plan validate status; do
  own=$("$BIN" "$v" --help | grep -oE '(^|[ ,])--[a-z][a-z-]*' | tr -d ' ,' | sort -u | tr "\n" " ")
  got=$(complete_words "$v" - | grep -- '^--' | sort -u | tr "\n" " ")
  check "$v: completion = $v --help ($own)" '[ "$own" = "$got" ]'
done
for f in $help_flags; do
  case $f in --version) continue ;; esac  # a verb of its own, offered first
  check "$f is offered for some verb" 'grep -qx -- "$f" <<<"$offered"'
done
# Each verb's flags parse with that verb (a value where one is needed).
for v in run apply plan validate status; do
  for f in $(complete_words "$v" -); do
    case $f in
      --help | -h | --verbose | -v | --diff) args=("$f") ;;
      --output) args=("$f" json) ;;
      --metrics-resources) args=("$f" failing) ;;
      --interval | --settle | --timeout) args=("$f" 1s) ;;
      --root | --state-dir | --artifacts | --unit-dir) args=("$f" /tmp) ;;
      --cert | --key) args=(--cert c --key k) ;;
      *) args=("$f" x) ;;
    esac
    # --help as the last word: the flags are parsed, nothing is done.
    check "mesh-host $v ${args[*]} parses" '"$BIN" "$v" "${args[@]}" --help >/dev/null 2>&1'
  done
done
echo "completion: $fails failed"
[ "$fails" = 0 ]
