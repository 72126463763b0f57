# jitter-probe on hosts this machine is not: its test build (jitter-probe-test-hooks, the same
# program reading JITTER_PROBE_TEST_HOOKS, see probe/jitter-probe.c) stands in for a TSC_AUX
# nobody wrote (as under a hypervisor whose CPUID lacks rdtscp), a CPU without rdtscp, and a
# TSC_AUX that lies once the probe runs. Each run measures, or ends with exit status 1 and the
# reason, naming the CPU, on time.
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

# The variable is read only by the test build, and checked there.
probe "tsc-aux=banana" --duration 1s
(( rc == 2 )) && grep -q "bad number" "$T/err" || fail "a bad JITTER_PROBE_TEST_HOOKS was accepted"
if [[ -x $BUILD_DIR/probe/jitter-probe ]]; then
    JITTER_PROBE_TEST_HOOKS=rdtscp=1,tsc-aux=0,honest-reads=8 timeout 60 \
        "$BUILD_DIR/probe/jitter-probe" --cpus 1 --duration 1s --preheat 100ms --quiet \
        > /dev/null 2> "$T/err" || { cat "$T/err"; fail "the shipped jitter-probe read the test hooks"; }
    pass "the shipped jitter-probe ignores JITTER_PROBE_TEST_HOOKS"
fi
