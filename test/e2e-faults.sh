# jitterd under faults: kill -9 and restart (history back from the last checkpoint), a
# truncated and a corrupt state file (set aside, start anyway), a read-only and a full state
# directory (one error per episode, measuring goes on, recovery logged), and the probe's CPU
# taken out of the daemon's cpuset (a clear "migrated" state, no spinning where it landed) or
# out of the probe thread's affinity by hand (it pins itself back).
source "$(dirname "$0")/lib.sh"
need_cpu1

cat > "$T/jitterd.conf" <<CONF
[probe]
preheat = 300ms
[history]
checkpoint = 5s
CONF

UNMOUNT=
# On exit: unmount what is mounted over the state directory and put the daemon back in its
# cgroup before the usual clean-up, whatever failed.
faults_exit() {
    local rc=$?
    set +e
    if [[ -n $UNMOUNT ]]; then
        umount "$STATE" 2>/dev/null
        umount "$STATE" 2>/dev/null
    fi
    cpuset_remove
    (exit $rc)
    cleanup
}
trap faults_exit EXIT
log_mark() { wc -l < "$T/daemon.log"; }
# log_since MARK: the daemon's log after line MARK.
log_since() { tail -n +$(($1 + 1)) "$T/daemon.log"; }
all_samples() { jctl --json call io.jitterd.GetStats '{"without_analyses": true, "window": "all"}' | jq '.cpus[0].samples'; }
run_samples() { jctl --json status | jq '.probes[0].samples'; } # since this start
state_ino() { stat -c %i "$STATE/history.state" 2>/dev/null || echo none; }
probe_tid() { ls /proc/"$DAEMON_PID"/task | grep -vx "$DAEMON_PID" | head -1; }
cpu_ns() { cut -d' ' -f1 /proc/"$DAEMON_PID"/task/"$1"/schedstat; }

# --- kill -9 and restart ---------------------------------------------------------------------
start_daemon
# Wait for a checkpoint, keeping the last sample count read while none had been written since:
# the checkpoint holds at least that many. The kill comes 2 s after it, before the next one
# (or just after it, which restores more: the bounds below hold for either).
# Checkpoints keep their cadence from the start, so one the loop ran late (a loaded CPU 0) may
# be followed by the next sooner than 5 s: then the wait starts again from that one, three
# times at most.
for attempt in 1 2 3; do
    ino=$(state_ino)
    before=
    for _ in $(seq 150); do
        a=$(state_ino)
        [[ $a != "$ino" && -n $before ]] && break
        s=$(all_samples)
        [[ $(state_ino) == "$a" && $a == "$ino" ]] && before=$s && t_before=$(now_ns)
        sleep 0.1
    done
    ckpt_ino=$(state_ino)
    [[ $ckpt_ino != "$ino" && -n $before ]] || fail "no checkpoint within 15 s with checkpoint = 5s"
    sleep 2
    # Looked at before the samples are read: a call to the sanitizer build takes a second.
    if [[ $(state_ino) == "$ckpt_ino" ]]; then
        at_kill=$(all_samples)
        t_kill=$(now_ns)
        break
    fi
    (( attempt < 3 )) || fail "another checkpoint came within 2 s of the last one, three times"
    echo "another checkpoint came within 2 s of the last one (the loop was late with it); again"
done
kill -KILL "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null || true
DAEMON_PID=

mark=$(log_mark)
start_daemon
log_since "$mark" | grep -q "history restored from $STATE/history.state" \
    || fail "no 'history restored' after kill -9"
since_start=$(run_samples)
total=$(all_samples)
restored=$((total - since_start))
(( restored >= before )) \
    || fail "restored $restored samples, but the last checkpoint held at least $before"
# Lost: what was measured between that checkpoint and the kill, 2 s here, at most the 5 s
# checkpoint period (plus one interval for the timing of these calls).
rate=$(( (at_kill - before) * 1000 / ((t_kill - t_before) / 1000000) )) # samples per second
lost=$((at_kill - restored))
echo "kill -9: $before samples before the checkpoint, $at_kill at the kill, $restored restored" \
     "($lost lost, $(( lost * 1000 / rate )) ms at $rate/s)"
(( lost <= rate * 5200 / 1000 )) || fail "lost $lost samples, more than 5 s worth ($rate/s)"
pass "kill -9: history restored from the last checkpoint, $(( lost * 1000 / rate )) ms lost"

# --- truncated and corrupt state files -------------------------------------------------------
# set_aside_check WHAT: the daemon started on a damaged file: warned, moved it aside, started
# with an empty history.
set_aside_check() {
    local n
    log_since "$mark" | grep -qF "checkpoint $STATE/history.state is corrupt or truncated;" \
        || fail "no warning about the $1 state file"
    log_since "$mark" | grep -qF "moved it to $STATE/history.state.corrupt-" \
        || fail "the log does not say where the $1 state file went"
    log_since "$mark" | grep -q '^<4>' || fail "the $1 state file is not logged as a warning"
    n=$(ls "$STATE" | grep -c '^history\.state\.corrupt-' || true)
    (( n >= $2 )) || fail "the $1 state file was not set aside ($n files)"
    [[ ! -e $STATE/history.state ]] || [[ $(state_ino) != "$3" ]] \
        || fail "the $1 state file is still in place"
    (( $(all_samples) < at_stop )) || fail "the history of the $1 file was used"
}

at_stop=$(all_samples)
stop_daemon || fail "exit status not 0"
size=$(stat -c %s "$STATE/history.state")
truncate -s $((size / 2)) "$STATE/history.state"
old=$(state_ino)
mark=$(log_mark)
start_daemon
set_aside_check truncated 1 "$old"
pass "a truncated state file ($size → $((size / 2)) bytes) is set aside with a warning"

sleep 2 # more history than the next start will have when it is checked
at_stop=$(all_samples)
stop_daemon || fail "exit status not 0"
size=$(stat -c %s "$STATE/history.state")
printf '\xde\xad\xbe\xef\xde\xad\xbe\xef' |
    dd of="$STATE/history.state" bs=1 seek=$((size / 2)) conv=notrunc status=none
old=$(state_ino)
sleep 1 # the set-aside name has a seconds timestamp: keep the two apart
mark=$(log_mark)
start_daemon
set_aside_check corrupt 2 "$old"
pass "a corrupt state file (8 bytes overwritten) is set aside with a warning"
stop_daemon || fail "exit status not 0"

# --- read-only and full state directory ------------------------------------------------------
cat > "$T/jitterd.conf" <<CONF
[probe]
preheat = 300ms
[history]
checkpoint = 1s
CONF
mkdir -p "$T/mnt-test"
if ! mount -t tmpfs -o size=64k tmpfs "$T/mnt-test" 2>/dev/null; then
    skip_part "read-only and full state directory" "mounts are not permitted here"
else
    umount "$T/mnt-test"
    UNMOUNT=1
    mark=$(log_mark)
    start_daemon
    sleep 1.5

    # wait_log PATTERN COUNT SECONDS: until the log since $mark has COUNT lines matching.
    wait_log() {
        local i
        for ((i = 0; i < $3 * 10; i++)); do
            (( $(log_since "$mark" | grep -c -- "$1" || true) >= $2 )) && return 0
            sleep 0.1
        done
        return 1
    }
    # episode NAME ERROR N: the Nth failure episode, whose checkpoints fail with ERROR.
    episode() {
        local s0 s1 n
        s0=$(run_samples)
        wait_log "cannot write the checkpoint $STATE/history.state: $2" 1 3 \
            || fail "$1: no error logged: $(log_since "$mark" | tail -3)"
        sleep 3 # three more checkpoints fail meanwhile
        n=$(log_since "$mark" | grep -c 'cannot write the checkpoint' || true)
        (( n == $3 )) || fail "$1: $n errors logged in $3 episodes: once per episode expected"
        s1=$(run_samples)
        (( s1 > s0 )) || fail "$1: measuring stopped ($s0 → $s1 samples)"
        kill -0 "$DAEMON_PID" || fail "$1: the daemon died"
    }
    # unmount DIR: retried, in case a checkpoint holds the directory open right then.
    unmount() {
        for _ in $(seq 20); do umount "$1" 2>/dev/null && return 0; sleep 0.1; done
        umount "$1"
    }
    recovered() {
        wait_log "checkpoint written again to $STATE/history.state" "$2" 3 \
            || fail "$1: no recovery logged once writable again"
    }

    mount --bind "$STATE" "$STATE"
    mount -o remount,bind,ro "$STATE"
    episode "read-only state directory" "Read-only file system" 1
    unmount "$STATE"
    recovered "read-only state directory" 1
    pass "read-only state directory: one error, measuring goes on, recovery logged"

    mount -t tmpfs -o size=64k tmpfs "$STATE"
    dd if=/dev/zero of="$STATE/fill" bs=4k status=none 2>/dev/null || true
    episode "full state directory" "No space left on device" 2
    unmount "$STATE"
    recovered "full state directory" 2
    pass "full state directory: one error, measuring goes on, recovery logged"
    stop_daemon || fail "exit status not 0"
fi

# --- the probe's CPU taken away --------------------------------------------------------------
mark=$(log_mark)
start_daemon
sleep 0.5
tid=$(probe_tid)

# By hand, on the thread alone: the probe finds itself on CPU 0 and pins itself back.
taskset -p -c 0 "$tid" > /dev/null
ok=0
for _ in $(seq 30); do
    sleep 0.1
    [[ $(awk '/^Cpus_allowed_list:/ {print $2}' /proc/"$DAEMON_PID"/task/"$tid"/status) == 1 ]] \
        && jctl --json status | jq -e '.probes[0].state == "running"' >/dev/null && { ok=1; break; }
done
(( ok )) || fail "the probe did not pin itself back to CPU 1 after taskset -c 0"
pass "affinity changed by hand: the probe pins itself back to CPU 1"

# By the cgroup: CPU 1 leaves the daemon's cpuset, which the probe cannot undo.
cpuset_make
if [[ -z $CG ]] || ! echo "$DAEMON_PID" > "$CG/cgroup.procs" 2>/dev/null; then
    skip_part "probe CPU taken out of the cpuset" "no writable cpuset cgroup here"
else
    mark=$(log_mark)
    echo 0 > "$CG/cpuset.cpus"
    ok=0
    for _ in $(seq 30); do
        sleep 0.1
        jctl --json status > "$T/status.json"
        jq -e '.probes[0] | .state == "migrated" and .migrated_to == 0 and (.reason | length > 0)' \
            "$T/status.json" >/dev/null && { ok=1; break; }
    done
    (( ok )) || fail "no 'migrated' state with a reason: $(jq -c '.probes[0]' "$T/status.json")"
    sleep 0.5
    s0=$(run_samples); c0=$(cpu_ns "$tid"); w0=$(now_ns)
    sleep 1
    s1=$(run_samples); c1=$(cpu_ns "$tid"); w1=$(now_ns)
    echo 0-1 > "$CG/cpuset.cpus"
    echo "out of its cpuset: $((s1 - s0)) samples, $(((c1 - c0) / 1000)) us of CPU in 1 s"
    (( s1 == s0 )) || fail "the probe recorded $((s1 - s0)) samples off its CPU"
    (( (c1 - c0) * 20 < w1 - w0 )) \
        || fail "the probe thread used $(((c1 - c0) / 1000000)) ms of CPU in 1 s off its CPU"
    log_since "$mark" | grep -q '^<4>the probe on CPU 1 was moved to CPU 0 and cannot go back' \
        || fail "no warning in the log about the probe moved off CPU 1"
    (( $(log_since "$mark" | grep -c 'was moved to CPU' || true) == 1 )) \
        || fail "the move was logged more than once"
    pass "CPU 1 out of the cpuset: 'migrated' with a reason, one warning, idle where it landed"

    ok=0
    for _ in $(seq 40); do
        sleep 0.1
        jctl --json status | jq -e '.probes[0].state == "running"' >/dev/null && { ok=1; break; }
    done
    (( ok )) || fail "the probe did not come back once CPU 1 was in the cpuset again"
    log_since "$mark" | grep -q 'the probe is back on CPU 1' || fail "the return is not logged"
    cpuset_remove
    pass "CPU 1 back in the cpuset: the probe runs there again, and says so"
fi

stop_daemon || fail "exit status not 0"
