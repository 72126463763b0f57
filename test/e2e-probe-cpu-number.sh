# jitter-probe and jitterd on hosts this machine is not: their test builds
# (jitter-probe-test-hooks and jitterd-test-hooks, the same programs reading
# JITTER_PROBE_TEST_HOOKS and JITTERD_TEST_HOOKS, see probe/test-hooks.h) stand in for a TSC_AUX
# nobody wrote (as under a hypervisor whose CPUID lacks rdtscp), a CPU without rdtscp, a TSC_AUX
# that lies once the probe runs, and a probe thread starved for good at each of jitter-probe's
# waits. Each run measures, or ends with exit status 1 and the reason, naming the CPU, on time;
# jitterd with a lying CPU number never sends READY=1 for a failed probe, and jitterctl status
# shows the probe's reason.
source "$(dirname "$0")/lib.sh"
need_cpu1
PROBE=$BUILD_DIR/probe/jitter-probe-test-hooks
[[ -x $PROBE ]] || skip "$PROBE was not built"
command -v jq > /dev/null || skip "needs jq"

PREHEAT_MS=200
# probe HOOKS ARGS...: runs the test build on CPU 1 with HOOKS; sets rc and took_ms, keeps its
# output in $T/out and $T/err. A hang fails the test rather than the suite.
probe() {
    local hooks=$1 t0
    shift
    t0=$(date +%s%N)
    rc=0
    JITTER_PROBE_TEST_HOOKS=$hooks timeout 60 "$PROBE" --cpus 1 --preheat "${PREHEAT_MS}ms" \
        --quiet "$@" > "$T/out" 2> "$T/err" || rc=$?
    took_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    (( rc != 124 )) || fail "jitter-probe with '$hooks' still ran after 60 s"
}

# measures HOOKS SECONDS: the run ends well, reads its CPU number from sched_getcpu(), never
# left its CPU, and recorded the whole time asked for (short by at most its worst gap).
measures() {
    local hooks=$1 seconds=$2 want_ns
    probe "$hooks" --duration "${seconds}s" --json
    (( rc == 0 )) || { cat "$T/err"; fail "'$hooks': exit status $rc"; }
    want_ns=$(( seconds * 1000000000 ))
    jq -e --argjson want "$want_ns" '.cpus[0] |
        .cpu == 1 and .cpu_number_source == "getcpu" and .migrations == 0 and .samples > 0 and
        .duration_ns + .gap.max_ns >= $want' "$T/out" > /dev/null ||
        { jq -c '.cpus[0] | {cpu_number_source, migrations, samples, duration_ns, max: .gap.max_ns}' \
            "$T/out"; fail "'$hooks': did not record ${seconds} s on CPU 1 with sched_getcpu()"; }
    pass "'$hooks': $(jq '.cpus[0].samples' "$T/out") samples in" \
        "$(jq '.cpus[0].duration_ns / 1e9' "$T/out") s, CPU number from sched_getcpu()"
}

# The baseline, and the time calibration and preheat take here.
probe "" --duration 1s --json
(( rc == 0 )) || { cat "$T/err"; fail "jitter-probe without hooks: exit status $rc"; }
base_ms=$took_ms
echo "baseline: $(jq -r '.cpus[0].cpu_number_source' "$T/out") as the CPU number, ${base_ms} ms"

# A TSC_AUX nobody wrote (0x85 on CPU 1 on the host of the report): not trusted, and the probe
# measures with sched_getcpu() instead of thinking it migrated at every check.
measures "rdtscp=1,tsc-aux=0x85" 2
# A CPU without rdtscp: nothing reads TSC_AUX (the instruction would be SIGILL).
measures "rdtscp=0" 2
probe "rdtscp=0" --duration 1s
(( rc == 0 )) && grep -q "^note: CPU 1: sched_getcpu(); the CPU has no rdtscp" "$T/out" ||
    { cat "$T/out" "$T/err"; fail "the text report does not say where the CPU number comes from"; }
pass "the text report says the CPU has no rdtscp"

# A TSC_AUX right at start that lies afterwards, from the first check of the loop on and from
# well into the recording on: the probe fails, and jitter-probe says why, instead of re-pinning
# and preheating for ever. The bound is the baseline (calibration, preheat, 1 s) plus what the
# false migrations cost (each a preheat) plus jitter-probe's own wait of 5 s beyond preheat.
bound_ms=$(( base_ms + 3 * PREHEAT_MS + 5000 + PREHEAT_MS ))
for honest in 8 30000; do
    probe "rdtscp=1,tsc-aux=0,honest-reads=$honest" --duration 5s
    (( rc == 1 )) || { cat "$T/err"; fail "a lying TSC_AUX ($honest honest reads): exit status $rc"; }
    grep -q "^jitter-probe: CPU 1: TSC_AUX (rdtscp) said CPU 0 while sched_getcpu() said 1, 3 times" \
        "$T/err" || { cat "$T/err"; fail "no reason given for the lying TSC_AUX"; }
    (( took_ms <= bound_ms )) || fail "a lying TSC_AUX took ${took_ms} ms to fail (bound ${bound_ms} ms)"
    pass "TSC_AUX lying after $honest reads: exit 1 after ${took_ms} ms: $(cat "$T/err")"
done

# --- jitter-probe's own bounds: a probe thread starved for good at each of its waits. ----------
# Each ends with exit status 1 and a message naming CPU 1 and where the probe was stuck: no
# sooner than the preheat, the wait's bound and the 2 s jitter-probe then gives the thread to
# stop before it leaves it behind, and no later than that, the baseline run (calibration,
# preheat, 1 s of recording, the report) and a calibration of up to its 2 s bound.
STOP_MS=2000        # PROBE_STOP_TIMEOUT_NS
CALIBRATION_MS=2000 # counter_info_init's bound in jitter-probe and jitterd
# gives_up HOOKS WAIT_MS MESSAGE: a 1 s run with HOOKS gives up after waiting WAIT_MS beyond
# its preheat (and the stop), saying MESSAGE.
gives_up() {
    local hooks=$1 wait_ms=$2 want=$3 low high
    probe "$hooks" --duration 1s
    low=$(( PREHEAT_MS + wait_ms + STOP_MS ))
    high=$(( base_ms + CALIBRATION_MS + wait_ms + STOP_MS ))
    (( rc == 1 )) || { cat "$T/err"; fail "'$hooks': exit status $rc, not 1"; }
    grep -q "^jitter-probe: $want" "$T/err" || { cat "$T/err"; fail "'$hooks': no '$want'"; }
    (( took_ms >= low && took_ms <= high )) ||
        fail "'$hooks': gave up after ${took_ms} ms, not within ${low}..${high} ms"
    pass "'$hooks': exit 1 after ${took_ms} ms (${low}..${high}): $(cat "$T/err")"
}
# Preheat: its bound is the preheat and 5 s (START_SLACK_NS).
gives_up stall-preheat=1 5000 "the probe on CPU 1 is still preheating after .* (starved"
# The first interval of the recording: the probe must take it within 1 s (ACK_TIMEOUT_NS).
gives_up stall-running-ms=0 1000 \
    "the probe on CPU 1 did not take a new interval within 1.0 s (it is running; starved"
# The stop at the end of the recording (1 s): starved from 0.5 s into it.
gives_up stall-running-ms=500 1000 "the probe on CPU 1 did not stop within 2 s (it is running"

# The variable is read only by the test build, and checked there.
probe "tsc-aux=banana" --duration 1s
(( rc == 2 )) && grep -q "bad number" "$T/err" || fail "a bad JITTER_PROBE_TEST_HOOKS was accepted"
if [[ -x $BUILD_DIR/probe/jitter-probe ]]; then
    JITTER_PROBE_TEST_HOOKS=rdtscp=1,tsc-aux=0,honest-reads=8 timeout 60 \
        "$BUILD_DIR/probe/jitter-probe" --cpus 1 --duration 1s --preheat 100ms --quiet \
        > /dev/null 2> "$T/err" || { cat "$T/err"; fail "the shipped jitter-probe read the test hooks"; }
    pass "the shipped jitter-probe ignores JITTER_PROBE_TEST_HOOKS"
fi

# --- jitterd with a CPU number that lies. -----------------------------------------------------
JITTERD_HOOKS=$BUILD_DIR/daemon/jitterd-test-hooks
if [[ ! -x $JITTERD_HOOKS || ! -x $JITTERD ]]; then
    skip_part "jitterd with a lying CPU number" "$JITTERD_HOOKS or $JITTERD was not built"
    exit 0
fi
printf '[probe]\npreheat = %dms\n' "$PREHEAT_MS" > "$T/jitterd.conf"
READY_GRACE_MS=5000 # READY_GRACE_USEC
LIES="3 times in [0-9]* ms although the probe never left"

# never_ready HOOKS: jitterd with HOOKS, whose probe fails before it could get ready: READY=1 is
# never sent, and jitterd exits 1 as soon as it sees the failure, naming CPU 1 and what TSC_AUX
# said: before its READY bound (a calibration, the preheat and 5 s), so well before the unit's
# TimeoutStartSec=.
never_ready() {
    local hooks=$1 t0 took_ms rc=0
    : > "$T/daemon.log"
    t0=$(now_ns)
    JITTERD=$JITTERD_HOOKS JITTERD_TEST_HOOKS=$hooks launch_daemon
    reap_daemon $(( (CALIBRATION_MS + PREHEAT_MS + READY_GRACE_MS + STOP_MS) / 1000 + 1 )) || rc=$?
    took_ms=$(( ($(now_ns) - t0) / 1000000 ))
    (( rc == 1 )) || fail "jitterd with '$hooks': exit status $rc, not 1"
    ! grep -qx 'READY=1' "$T/notify.log" || fail "jitterd with '$hooks': READY=1 for a failed probe"
    grep -q "CPU 1: TSC_AUX (rdtscp) said CPU 0 while sched_getcpu() said 1, $LIES" "$T/daemon.log" ||
        fail "jitterd with '$hooks': the log does not give the probe's reason, naming CPU 1"
    (( took_ms <= CALIBRATION_MS + PREHEAT_MS + READY_GRACE_MS )) ||
        fail "jitterd with '$hooks' took ${took_ms} ms to give up on a failed probe"
    pass "jitterd with '$hooks': no READY=1, exit 1 after ${took_ms} ms:" \
        "$(grep -m1 -o 'CPU 1: TSC_AUX.*' "$T/daemon.log")"
}
# From its first check on: the probe fails as it starts.
never_ready rdtscp=1,tsc-aux=0,honest-reads=8
# From halfway through its preheat on: READY=1 waited for it, and is not sent.
never_ready rdtscp=1,tsc-aux=0,lie-after-ms=$(( PREHEAT_MS / 2 ))
grep -q "cannot get ready: a probe failed" "$T/daemon.log" ||
    fail "the log does not say why jitterd is not ready"

# Lying from 3 s after the probe's start on, when jitterd has long been ready: the probe fails
# within its three false migrations (each a preheat), the daemon goes on, says so in its log,
# and jitterctl status shows the probe failed with its reason.
lie_ms=$(( PREHEAT_MS + 3000 ))
: > "$T/daemon.log"
JITTERD=$JITTERD_HOOKS JITTERD_TEST_HOOKS=rdtscp=1,tsc-aux=0,lie-after-ms=$lie_ms launch_daemon
wait_notify READY=1 $(( lie_ms / 1000 )) || fail "no READY=1 within $(( lie_ms / 1000 )) s, before the lies"
t_ready=$(now_ns)
probe_failed() { [[ $(jctl --timeout 2s --json status 2>/dev/null | jq -r '.probes[0].state') == failed ]]; }
wait_until $(( (lie_ms + 3 * PREHEAT_MS) / 1000 + 3 )) probe_failed ||
    fail "the probe with a TSC_AUX lying after READY=1 is not failed: $(jctl status 2>&1)"
took_ms=$(( ($(now_ns) - t_ready) / 1000000 ))
jctl status > "$T/status" 2>&1 || fail "jitterctl status: $(cat "$T/status")"
grep -q "failed: CPU 1: TSC_AUX (rdtscp) said CPU 0 while sched_getcpu() said 1, $LIES" \
    "$T/status" || { cat "$T/status"; fail "jitterctl status does not show the probe's reason"; }
# Logged at the next interval (200 ms).
wait_until 2 grep -q "probe failed: CPU 1: TSC_AUX" "$T/daemon.log" || fail "the failure is not in the log"
kill -0 "$DAEMON_PID" || fail "jitterd ended with its probe"
stop_daemon || fail "jitterd with a failed probe: exit status not 0 after SIGTERM"
pass "TSC_AUX lying after READY=1: failed ${took_ms} ms after it, shown by jitterctl status:" \
    "$(grep -m1 -o 'failed: .*' "$T/status")"

# The shipped jitterd reads no such variable: its probe runs and it gets ready.
: > "$T/daemon.log"
JITTERD_TEST_HOOKS=rdtscp=1,tsc-aux=0,honest-reads=8 start_daemon
stop_daemon || fail "jitterd: exit status not 0"
pass "the shipped jitterd ignores JITTERD_TEST_HOOKS"
