# Sourced by the real-systemd shell suites: what each of them needs before
# its first check, written once.
#   . "$(dirname "$0")/box_suite.sh" NAME [TMPBASE]
# Sets BIN (the built mesh-host), SDBOX (the harness), T (a fresh directory
# under TMPBASE, default $TEST_TMPDIR or /tmp), SDBOX_DIR ($T/NAME-XXXXXX-box,
# the suffix T's own: the box's cgroup is named for it, so two suites of one
# NAME may run at once), with the box up and DBUS_SYSTEM_BUS_ADDRESS and
# SDBOX_PID exported, and UNITS (the box's unit directory). At exit: every
# pid in PIDS is killed, the box torn down, $T removed (kept when KEEP is
# set). box_apply and inside are below, and until_true (a bounded wait).
# check NAME EXPR reports one check; finish prints the count and fails the
# suite if any failed. Not run as root: a loud skip.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN=$PWD/host/mesh-host
[ -x "$BIN" ] || BIN=$(cd "$HERE/../.." && pwd)/host/mesh-host
SDBOX=$HERE/sdbox.sh
[ "$(id -u)" = 0 ] || { echo "SKIP (LOUD): needs root for namespaces; not run" >&2; exit 0; }
T=$(mktemp -d "${2:-${TEST_TMPDIR:-/tmp}}/mesh-host-$1.XXXXXX")
export SDBOX_DIR=$T/$1-${T##*.}-box
PIDS=()
box_suite_cleanup() {
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  "$SDBOX" down >/dev/null 2>&1 || true
  [ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap box_suite_cleanup EXIT
"$SDBOX" up
eval "$("$SDBOX" env)"
export DBUS_SYSTEM_BUS_ADDRESS SDBOX_PID
UNITS=$SDBOX_DIR/units
fails=0
# until_true SECONDS EXPR: EXPR evaluated every 0.05 s until it holds
# (status 0) or SECONDS pass (status 1).
until_true() { local end=$(( $(date +%s%N) + $1 * 1000000000 )); while [ "$(date +%s%N)" -lt "$end" ]; do eval "$2" && return 0; sleep 0.05; done; return 1; }
# box_apply [ROOT [STATE-DIR [DECLARATION]]]: `mesh-host apply` onto the box
# (--root $T/root, --state-dir $T/state and $T/decl.json unless given); sets
# OUT and RC and shows the output indented.
box_apply() {
  set +e
  OUT=$("$BIN" apply --declaration "${3:-$T/decl.json}" --root "${1:-$T/root}" \
        --state-dir "${2:-$T/state}" \
        --artifacts "$T/art" --unit-dir "$UNITS" --machine box --settle 300ms 2>&1)
  RC=$?
  set -e
  printf '%s\n(exit %s)\n' "$OUT" "$RC" | sed 's/^/    /'
}
# inside CMD...: CMD in the box's mount and pid namespaces (systemctl there).
inside() { nsenter -t "$SDBOX_PID" -m -p "$@"; }
# box_cow DIR...: in the box, each DIR (an absolute path) stays as the
# machine has it but writes land in a tmpfs that goes with the box — for
# suites that run commands as an operator would, with the default paths.
# /etc/systemd/system stays the box's own, and mesh-host's own places
# (/etc/mesh-host, /var/lib/mesh-host) start empty: a record of this
# machine's would otherwise be the box's, and its prune this machine's.
box_cow() {
  mkdir -p "$T/cow"
  inside sh -euc '
    cow=$1 config=$2; shift 2
    mount -t tmpfs -o mode=0700 cow "$cow"
    for d in "$@"; do
      n=$(printf %s "$d" | tr / _); mkdir -p "$cow/$n/up" "$cow/$n/work"
      mount -t overlay overlay -o "lowerdir=$d,upperdir=$cow/$n/up,workdir=$cow/$n/work" "$d"
    done
    for own in /etc/mesh-host /var/lib/mesh-host; do
      case " $* " in *" ${own%/*} "*) mkdir -p "$own"; mount -t tmpfs -o mode=0755 own "$own" ;; esac
    done
    mount --bind "$config" /etc/systemd/system' - "$T/cow" "$SDBOX_DIR/config" "$@"
}
check() { if eval "$2"; then echo "ok   - $1"; else echo "FAIL - $1"; fails=$((fails+1)); fi; }
finish() { echo "$fails failed"; [ "$fails" = 0 ]; }
