# Every wait of jitterd has a bound. READY=1 waits for every probe to run on its CPU: it is
# never sent while one is migrated, comes once the probe is back, and past the preheat and 5 s
# the daemon names each CPU's state and exits 1. A probe thread that cannot see the request to
# stop (here stopped with ptrace, as a starved one would be) is logged and left behind: SIGTERM
# and a reload that restarts the probes end the process within the 2 s stop bound rather than
# hanging.
source "$(dirname "$0")/lib.sh"
need_cpu1
cat > "$T/jitterd.conf" <<CONF
[probe]
preheat = 3s
CONF
PREHEAT_S=3
GRACE_S=5 # READY_GRACE_USEC
STOP_S=2  # PROBE_STOP_TIMEOUT_NS
probe_tid() { ls /proc/"$DAEMON_PID"/task | grep -vx "$DAEMON_PID" | head -1; }
probe_state() { jctl --timeout 2s --json status 2>/dev/null | jq -r '.probes[0].state // empty'; }

EXERCISED=0 # the parts that ran
cpuset_make
bounds_exit() {
    local rc=$?
    set +e
    cpuset_remove
    (exit $rc)
    cleanup
}
trap bounds_exit EXIT

# launch_preheating: starts the daemon in the cpuset and waits until its probe preheats.
launch_preheating() {
    : > "$T/daemon.log"
    launch_daemon
    T_LAUNCH=$(now_ns)
    echo "$DAEMON_PID" > "$CG/cgroup.procs" || fail "cannot move jitterd into $CG"
    wait_until 5 probe_is preheating || fail "the probe was not seen preheating within 5 s"
}
probe_is() { [[ $(probe_state) == "$1" ]]; }

if [[ -z $CG ]]; then
    skip_part "READY=1 and a migrated probe" "no writable cpuset cgroup here"
else
    EXERCISED=$((EXERCISED + 1))
    # Migrated during preheat, then back: READY=1 waits for it and comes once it runs.
    launch_preheating
    echo 0 > "$CG/cpuset.cpus"
    wait_until 3 probe_is migrated \
        || fail "the probe did not report migrated with CPU 1 out of its cpuset"
    sleep 1
    grep -qx 'READY=1' "$T/notify.log" && fail "READY=1 was sent while the probe was migrated"
    echo 0-1 > "$CG/cpuset.cpus"
    t_back=$(now_ns)
    wait_notify READY=1 $((PREHEAT_S + GRACE_S)) || fail "no READY=1 after the probe came back"
    [[ $(probe_state) == running ]] || fail "READY=1 but the probe is $(probe_state)"
    pass "READY=1 withheld while migrated, sent $(( ($(now_ns) - t_back) / 1000000 )) ms after the probe came back"
    stop_daemon || fail "exit status not 0"

    # Migrated for good: no READY=1; past preheat and grace, each CPU's state and exit 1.
    launch_preheating
    echo 0 > "$CG/cpuset.cpus"
    bound=$((PREHEAT_S + GRACE_S))
    rc=0
    reap_daemon $((bound + 10)) || rc=$?
    took=$(( ($(now_ns) - T_LAUNCH) / 1000000 ))
    echo 0-1 > "$CG/cpuset.cpus"
    (( rc == 1 )) || fail "exit status $rc, not 1, when the probe stayed migrated"
    grep -qx 'READY=1' "$T/notify.log" && fail "READY=1 was sent although the probe never ran"
    (( took >= bound * 1000 - 500 )) || fail "gave up after $took ms, before preheat + grace"
    (( took <= (bound + STOP_S + 4) * 1000 )) || fail "gave up only after $took ms"
    grep -q "cannot get ready: the probes are not all running" "$T/daemon.log" \
        || fail "the log does not say why it is not ready"
    grep -q "CPU 1: migrated, its probe found itself on CPU 0" "$T/daemon.log" \
        || fail "the log does not name CPU 1's state"
    pass "a probe migrated for good: no READY=1, exit 1 after $took ms naming CPU 1's state"
fi

# --- A probe thread that cannot stop. ----------------------------------------------------------
# ptrace stops the one thread (the others go on), as a higher-priority task starving it would.
case $(uname -m) in
    x86_64) SYS_ptrace=101 ;;
    aarch64) SYS_ptrace=117 ;;
    *) SYS_ptrace= ;;
esac
# freeze_probe: stops the probe thread until the daemon exits. The tracer waits for the thread's
# end and reaps it (until then the process could not be reaped), then goes too.
freeze_probe() {
    local tid
    tid=$(probe_tid)
    # The thread's stop, then its end, until waitpid() (__WALL) has nothing left to report.
    perl -e '
        my ($nr, $tid) = map { $_ + 0 } @ARGV;
        syscall($nr, 0x4206, $tid, 0, 0) == 0 or die "PTRACE_SEIZE $tid: $!\n";
        syscall($nr, 0x4207, $tid, 0, 0) == 0 or die "PTRACE_INTERRUPT $tid: $!\n";
        1 while waitpid($tid, 0x40000000) > 0;' "$SYS_ptrace" "$tid" &
    CLEANUP_PIDS+=($!)
    wait_until 5 thread_traced "$tid" || fail "could not stop the probe thread $tid with ptrace"
}
thread_traced() { [[ $(awk '{print $3}' /proc/"$DAEMON_PID"/task/"$1"/stat 2>/dev/null) == t ]]; }

if [[ -z $SYS_ptrace ]] || ! command -v perl >/dev/null; then
    skip_part "a probe that cannot stop" "no ptrace syscall number for $(uname -m) or no perl"
else
    EXERCISED=$((EXERCISED + 1))
    printf '[probe]\npreheat = 200ms\n' > "$T/jitterd.conf"
    : > "$T/daemon.log"
    start_daemon
    freeze_probe
    t0=$(now_ns)
    kill -TERM "$DAEMON_PID"
    rc=0
    reap_daemon $((STOP_S + 8)) || rc=$?
    took=$(( ($(now_ns) - t0) / 1000000 ))
    (( rc == 1 )) || fail "exit status $rc, not 1, with a probe that did not stop"
    (( took >= STOP_S * 1000 - 200 && took <= (STOP_S + 4) * 1000 )) \
        || fail "SIGTERM took $took ms with a probe that does not stop (bound $STOP_S s)"
    grep -q "the probe on CPU 1 did not stop within $STOP_S s" "$T/daemon.log" \
        || fail "the probe left behind is not logged"
    pass "SIGTERM with a probe that cannot stop: logged, exit 1 after $took ms"

    # A reload that must restart the probes cannot while one still runs: it exits.
    : > "$T/daemon.log"
    start_daemon
    freeze_probe
    printf '[probe]\npreheat = 200ms\nthreshold = 20us\n' > "$T/jitterd.conf"
    t0=$(now_ns)
    kill -HUP "$DAEMON_PID"
    rc=0
    reap_daemon $((STOP_S + 8)) || rc=$?
    took=$(( ($(now_ns) - t0) / 1000000 ))
    (( rc == 1 )) || fail "exit status $rc, not 1, after a reload with a probe that did not stop"
    (( took <= (STOP_S + 4) * 1000 )) || fail "the reload took $took ms to give up"
    grep -q "cannot restart the probes while one is still running" "$T/daemon.log" \
        || fail "the failed restart is not logged"
    pass "reload with a probe that cannot stop: logged, exit 1 after $took ms"
fi

# A run that checked nothing is a skip, not a pass.
if (( EXERCISED == 0 )); then
    list=$(printf '%s; ' "${SKIPPED_PARTS[@]}")
    skip "no part could run here (${list%; })"
fi
