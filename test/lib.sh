# Shared helpers for the end-to-end tests: start the real daemon on a private socket with a
# notification socket the test listens on, call it with jitterctl, and clean up.
# Sourced by test/e2e-*.sh; BUILD_DIR and SOURCE_DIR come from CTest.

set -euo pipefail
BUILD_DIR=${BUILD_DIR:?run through ctest}
SOURCE_DIR=${SOURCE_DIR:?run through ctest}
JITTERD=$BUILD_DIR/daemon/jitterd
JITTERCTL=$BUILD_DIR/tools/jitterctl/jitterctl
THIEF=$BUILD_DIR/test/jitter-thief
NOTIFY_LISTEN=$BUILD_DIR/test/jitter-notify-listen
HOSTILE=$BUILD_DIR/test/jitter-hostile

T=$(mktemp -d /tmp/jitterd-e2e.XXXXXX)
SOCK=$T/io.jitterd
STATE=$T/state
DAEMON_PID=
LISTEN_PID=
# The probed CPU as an option of the daemon's; a test that reloads [probe] cpus from its file
# empties it (an option outlives a reload).
CPUS_OPT=(--cpus 1)
declare -a CLEANUP_PIDS=()
declare -a SKIPPED_PARTS=()

cleanup() {
    local rc=$?
    # Every step runs, whatever the one before did: none may end the script before the others.
    set +e
    [[ -n $DAEMON_PID ]] && kill "$DAEMON_PID" 2>/dev/null && { reap_daemon 10 || true; }
    [[ -n $LISTEN_PID ]] && kill "$LISTEN_PID" 2>/dev/null
    for p in "${CLEANUP_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    # tracefs, when need_tracefs mounted it: once nothing that reads it runs.
    [[ -n ${TRACEFS_MOUNTED:-} ]] && umount "$TRACEFS" 2> /dev/null
    if (( ${#SKIPPED_PARTS[@]} > 0 )); then
        local list
        list=$(printf '%s; ' "${SKIPPED_PARTS[@]}")
        echo "skipped parts (${#SKIPPED_PARTS[@]}): ${list%; }"
    fi
    if (( rc != 0 && rc != 77 )); then
        echo "--- daemon log"; cat "$T/daemon.log" 2>/dev/null | tail -40 || true
        echo "--- notifications"; tail -40 "$T/notify.log" 2>/dev/null || true
        # JITTERD_TEST_KEEP=DIR keeps what a failed test left, to look at afterwards.
        if [[ -n ${JITTERD_TEST_KEEP:-} ]] && mkdir -p "$JITTERD_TEST_KEEP" \
            && cp -a "$T" "$JITTERD_TEST_KEEP/"; then
            echo "--- kept in $JITTERD_TEST_KEEP/${T##*/}"
        fi
    fi
    rm -rf "$T"
    exit $rc
}
trap cleanup EXIT
# Killed by a signal without a trap, bash would exit without the EXIT trap, and leave the daemon
# spinning on CPU 1.
trap 'exit 143' TERM INT HUP
# A reader that goes away (ctest's output cut short by a pipe) must not kill the script without
# its cleanup either: writes then fail, and the failure ends the test through the EXIT trap.
trap '' PIPE

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

# need_tracefs: tracefs at $TRACEFS, mounted here for the test (and unmounted at its end) when
# it is not; skips when this kernel has none or it cannot be mounted.
TRACEFS=/sys/kernel/tracing
TRACEFS_MOUNTED=
need_tracefs() {
    if [[ $(stat -f -c %T "$TRACEFS" 2>/dev/null) != tracefs ]]; then
        grep -qw tracefs /proc/filesystems || skip "this kernel has no tracefs"
        mount -t tracefs nodev "$TRACEFS" 2>/dev/null || skip "cannot mount tracefs at $TRACEFS"
        TRACEFS_MOUNTED=1
    fi
}

# need_cpu1: skips on a machine with one CPU; fails where CPU 1 exists but is offline or kept
# from the test (a cpuset or affinity left narrowed), since a skip there would hide the cause.
need_cpu1() {
    local c1=/sys/devices/system/cpu/cpu1
    [[ -d $c1 ]] || skip "needs CPU 1 (this machine has one CPU)"
    [[ $(cat "$c1/online" 2>/dev/null || echo 1) == 1 ]] \
        || fail "CPU 1 is offline (left so by a test killed while it was unplugged?);" \
                "bring it back with: echo 1 > $c1/online"
    taskset -c 1 true 2>/dev/null \
        || fail "CPU 1 is outside this test's cpuset or affinity ($(taskset -pc $$ | sed 's/.*: //'))"
    [[ $(id -u) -eq 0 ]] || skip "needs root (mlockall and pinning without limits)"
}

# start_listener: the stand-in for systemd's notification socket, at $NOTIFY_ADDR (default
# $T/notify; "@NAME" for an abstract socket) with the options in $NOTIFY_LISTEN_OPTS (e.g.
# "--stop-after READY=1" for a reader that stops reading). It appends to $T/notify.log.
start_listener() {
    NOTIFY_ADDR=${NOTIFY_ADDR:-$T/notify}
    # On CPU 0, as the test's other tools: it wakes at every notification, and CPU 1 is the
    # probe's.
    # shellcheck disable=SC2086 # the options are words
    taskset -c 0 "$NOTIFY_LISTEN" ${NOTIFY_LISTEN_OPTS:-} "$NOTIFY_ADDR" >> "$T/notify.log" &
    LISTEN_PID=$!
    for _ in $(seq 50); do
        if [[ $NOTIFY_ADDR == @* ]]; then
            grep -q " ${NOTIFY_ADDR}\$" /proc/net/unix && break
        else
            [[ -S $NOTIFY_ADDR ]] && break
        fi
        sleep 0.05
    done
}

stop_listener() {
    [[ -n $LISTEN_PID ]] || return 0
    kill "$LISTEN_PID" 2>/dev/null || true
    wait "$LISTEN_PID" 2>/dev/null || true
    LISTEN_PID=
}

# launch_daemon [ARGS...]: starts jitterd on CPU 1 (CPUS_OPT) with a 200 ms interval, and does
# not wait.
launch_daemon() {
    : > "$T/notify.log"
    [[ -n $LISTEN_PID ]] || start_listener
    NOTIFY_SOCKET=$NOTIFY_ADDR "$JITTERD" --config "$T/jitterd.conf" "${CPUS_OPT[@]}" \
        --socket "$SOCK" --state-dir "$STATE" --interval 200ms "$@" >> "$T/daemon.log" 2>&1 &
    DAEMON_PID=$!
}

# start_daemon [ARGS...]: launch_daemon, then waits for READY=1.
start_daemon() {
    launch_daemon "$@"
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

# reap_daemon SECONDS: waits that long for the daemon to exit, then kills it with SIGKILL.
# Returns its exit status, 124 after a SIGKILL.
reap_daemon() {
    local i rc=0
    for ((i = 0; i < $1 * 10; i++)); do
        kill -0 "$DAEMON_PID" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$DAEMON_PID" 2>/dev/null; then
        echo "jitterd did not exit within $1 s: killed" >&2
        kill -KILL "$DAEMON_PID" 2>/dev/null
        wait "$DAEMON_PID" 2>/dev/null
        rc=124
    else
        wait "$DAEMON_PID" || rc=$?
    fi
    DAEMON_PID=
    return $rc
}

# stop_daemon: SIGTERM, and its exit status within 15 s (checkpoint, probes, notifications).
stop_daemon() {
    kill -TERM "$DAEMON_PID"
    reap_daemon 15
}

# jctl ARGS...: jitterctl on the test's daemon. It waits 30 s for a reply, not its default 10 s:
# a CPU 0 shared with builds holds the daemon's loop off for seconds at times. A test that sets
# its own --timeout gets it (the last one given counts); the default itself is
# e2e-jitterctl-timeout's.
jctl() { "$JITTERCTL" --socket "$SOCK" --timeout 30s "$@"; }

# now_ns: the time in ns (CLOCK_REALTIME, as date reads it), what a test times its waits with;
# $(( ($(now_ns) - t0) / 1000000 )) is a duration in ms.
now_ns() { date +%s%N; }

# wait_until SECONDS COMMAND...: runs COMMAND every 0.1 s until it succeeds (status 0) or
# SECONDS have passed (status 1).
wait_until() {
    local i n=$(($1 * 10))
    shift
    for ((i = 0; i < n; i++)); do
        "$@" && return 0
        sleep 0.1
    done
    return 1
}

# cpuset_make: a cpuset cgroup of CPUs 0-1 that the test can move the daemon into and then take
# CPU 1 away from it, in $CG (its parent in $CG_PARENT); CG is empty when this host has no
# writable cpuset. cpuset_remove moves the daemon back and removes the cgroup.
CG=''
CG_PARENT=''
cpuset_make() {
    CG=''
    CG_PARENT=
    if [[ -f /sys/fs/cgroup/cpuset/cpuset.cpus ]]; then
        CG_PARENT=/sys/fs/cgroup/cpuset # cgroup v1
    elif grep -qw cpuset /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
        CG_PARENT=/sys/fs/cgroup # cgroup v2
        grep -qw cpuset /sys/fs/cgroup/cgroup.subtree_control \
            || echo +cpuset > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || CG_PARENT=
    fi
    [[ -n $CG_PARENT ]] && mkdir "$CG_PARENT/jitterd-e2e-$$" 2>/dev/null || return 0
    CG=$CG_PARENT/jitterd-e2e-$$
    # v1 needs the memory nodes set before a task may join; v2 inherits them.
    if [[ -f $CG_PARENT/cpuset.mems ]]; then
        cat "$CG_PARENT/cpuset.mems" > "$CG/cpuset.mems" 2>/dev/null || true
    fi
    echo 0-1 > "$CG/cpuset.cpus" 2>/dev/null || { rmdir "$CG"; CG=; }
}

cpuset_remove() {
    [[ -n $CG ]] || return 0
    [[ -z $DAEMON_PID ]] || echo "$DAEMON_PID" > "$CG_PARENT/cgroup.procs" 2>/dev/null || true
    rmdir "$CG" 2>/dev/null || true
    CG=
}

# clock_slack_ns: how far the daemon's event times may lie from CLOCK_MONOTONIC as a thief reads
# it. The daemon maps its counter to CLOCK_MONOTONIC afresh every interval, so between two
# mappings the error grows by the drift it measures between the two clocks (GetStatus
# drift_ppm) over up to two intervals (one, and the harvest's lag), on top of 2 us for reading
# a pair of clocks on a VM.
clock_slack_ns() {
    jctl --json status | jq '2000 + (.counter.drift_ppm | fabs) * 1e-6 * 2 * .config.interval_ns
                             | ceil'
}

# Thefts as jitter-thief --due records them ("START END DUE", CLOCK_MONOTONIC ns), as JSON.
thefts_json() { jq -R -s -c 'split("\n") | map(select(length > 0) | split(" ") | map(tonumber))' "$1"; }
# THEFT_JQ: the jq definition of an event that is the theft [$s, $e, $due], bounded from both
# sides with the slack of the run: $slack for the clocks (clock_slack_ns), and $noise, the worst
# gap of the probe's CPU just before the thefts (noise_ns), for what other tasks there add to a
# theft they fall on. The probe loses the CPU when the thief's timer is due and gets it back
# once the thief sleeps again: the event starts between the due time and the thief's first read
# of the clock, and ends after its last read, by no more than the wake-up the thief measured
# (start - due: the interrupt, the wake-up and the switch) and 50 us, the switch back being the
# shorter path of the two. The start may also lie up to 10 us before the due time: the timer's
# interrupt comes that early (the clockevent device is programmed in its own ticks; 3-5 us
# measured on a KVM guest).
# shellcheck disable=SC2016 # jq's variables
THEFT_JQ='def is_theft($s; $e; $due; $slack; $noise):
    .start_ns >= $due - 10000 - $slack - $noise and .start_ns <= $s + $slack
    and .start_ns + .duration_ns >= $e - $slack
    and .start_ns + .duration_ns <= $e + ($s - $due) + 50000 + $slack + $noise;'
# noise_ns [CPU]: the worst gap of the probe of CPU (default 1) over the last 10 s, in ns.
noise_ns() {
    jctl --json stats --cpu "${1:-1}" --window 10s | jq '.cpus[0].gap.max_ns // 0 | floor'
}
