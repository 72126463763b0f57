# Shared helpers for the end-to-end tests: start the real daemon on a private socket with a
# notification socket the test listens on, call it with jitterctl, and clean up.
# Sourced by test/e2e-*.sh; BUILD_DIR and SOURCE_DIR come from CTest.

set -euo pipefail
BUILD_DIR=${BUILD_DIR:?run through ctest}
SOURCE_DIR=${SOURCE_DIR:?run through ctest}
JITTERD=$BUILD_DIR/daemon/jitterd
JITTERCTL=$BUILD_DIR/tools/jitterctl
THIEF=$BUILD_DIR/test/jitter-thief
NOTIFY_LISTEN=$BUILD_DIR/test/jitter-notify-listen
HOSTILE=$BUILD_DIR/test/jitter-hostile

T=$(mktemp -d /tmp/jitterd-e2e.XXXXXX)
SOCK=$T/io.jitterd
STATE=$T/state
DAEMON_PID=
LISTEN_PID=
declare -a CLEANUP_PIDS=()
declare -a SKIPPED_PARTS=()

cleanup() {
    local rc=$?
    [[ -n $DAEMON_PID ]] && kill "$DAEMON_PID" 2>/dev/null && wait "$DAEMON_PID" 2>/dev/null
    [[ -n $LISTEN_PID ]] && kill "$LISTEN_PID" 2>/dev/null
    for p in "${CLEANUP_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    if (( ${#SKIPPED_PARTS[@]} > 0 )); then
        local list
        list=$(printf '%s; ' "${SKIPPED_PARTS[@]}")
        echo "skipped parts (${#SKIPPED_PARTS[@]}): ${list%; }"
    fi
    if (( rc != 0 && rc != 77 )); then
        echo "--- daemon log"; cat "$T/daemon.log" 2>/dev/null | tail -40 || true
        echo "--- notifications"; tail -40 "$T/notify.log" 2>/dev/null || true
    fi
    rm -rf "$T"
    exit $rc
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }
skip() { echo "skipped: $*" >&2; exit 77; }
# skip_part PART WHY: one part of the test cannot run here. It is said by name when it is
# passed over and again when the test ends, so that a log shows what the test did not check.
skip_part() {
    local part=$1
    shift
    echo "skipped: $part: $*"
    SKIPPED_PARTS+=("$part")
}

need_cpu1() {
    [[ $(nproc) -ge 2 ]] || skip "needs CPU 1 (this machine has one CPU)"
    [[ $(id -u) -eq 0 ]] || skip "needs root (mlockall and pinning without limits)"
}

# start_daemon [ARGS...]: starts jitterd on CPU 1 with a 200 ms interval and waits for READY=1.
start_daemon() {
    : > "$T/notify.log"
    if [[ -z $LISTEN_PID ]]; then
        "$NOTIFY_LISTEN" "$T/notify" >> "$T/notify.log" &
        LISTEN_PID=$!
        for _ in $(seq 50); do [[ -S $T/notify ]] && break; sleep 0.05; done
    fi
    NOTIFY_SOCKET=$T/notify "$JITTERD" --config "$T/jitterd.conf" --cpus 1 --socket "$SOCK" \
        --state-dir "$STATE" --interval 200ms "$@" >> "$T/daemon.log" 2>&1 &
    DAEMON_PID=$!
    wait_notify READY=1 20 || fail "no READY=1 within 20 s"
}

# wait_notify PATTERN SECONDS: waits until a notification line matches.
wait_notify() {
    local i
    for ((i = 0; i < $2 * 10; i++)); do
        grep -q -- "$1" "$T/notify.log" && return 0
        kill -0 "$DAEMON_PID" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

stop_daemon() {
    kill -TERM "$DAEMON_PID"
    local rc=0
    wait "$DAEMON_PID" || rc=$?
    DAEMON_PID=
    return $rc
}

jctl() { "$JITTERCTL" --socket "$SOCK" "$@"; }
