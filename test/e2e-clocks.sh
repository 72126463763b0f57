# jitterctl clocks end to end: it measures here, without a daemon, what every way to read the
# time costs; the text table and the JSON name every clock, the numbers are consistent, and
# what must hold on any host does (a system call costs more than the vDSO on a tsc clocksource,
# a coarse clock ticks no finer than the tick, time() counts seconds).
source "$(dirname "$0")/lib.sh"

CLOCKS="CLOCK_REALTIME CLOCK_REALTIME_COARSE CLOCK_MONOTONIC CLOCK_MONOTONIC_COARSE
        CLOCK_MONOTONIC_RAW CLOCK_BOOTTIME CLOCK_TAI CLOCK_PROCESS_CPUTIME_ID
        CLOCK_THREAD_CPUTIME_ID gettimeofday time syscall(CLOCK_MONOTONIC)"
if [[ $(uname -m) == x86_64 ]]; then
    counters="rdtsc lfence+rdtsc"
    grep -qw rdtscp /proc/cpuinfo && counters="rdtsc rdtscp lfence+rdtsc"
    CLOCKS="$counters $CLOCKS"
fi
CLOCKS=$(tr -s ' \n' '  ' <<< "$CLOCKS" | sed 's/^ //; s/ $//')   # one line
current=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || true)

# Text, with the defaults; --socket is accepted and no daemon is asked (there is none here).
rc=0
"$JITTERCTL" --socket "$T/none" clocks > "$T/clocks.txt" 2>&1 || rc=$?
cat "$T/clocks.txt"
(( rc == 0 )) || fail "jitterctl clocks exited $rc"
grep -Eq '^Cost per call on CPU [0-9]+: [0-9]+ trials of [0-9]+ calls each, timed with ' \
    "$T/clocks.txt" || fail "no header line"
columns='^Clock +Min\[ns\] +Median\[ns\] +Mean\[ns\] +Max\[ns\] +StdDev\[ns\] +Res\[ns\]'
grep -Eq "$columns +Step\[ns\] +Samples$" "$T/clocks.txt" || fail "no column header"
for c in $CLOCKS; do
    name=$(sed 's/[()+]/\\&/g' <<< "$c")     # ( ) + escaped for the regular expression
    grep -Eq "^$name +([0-9.]+ +){5}[0-9.-]+ +[0-9.-]+ +[0-9]+$" "$T/clocks.txt" \
        || fail "no row for $c"
done
grep -q "^Clocksource: ${current:-unknown}$" "$T/clocks.txt" \
    || fail "clocksource line is not $current"
pass "text: a row for each of the $(wc -w <<< "$CLOCKS") clocks and the clocksource ($current)"

# JSON, with fewer trials.
"$JITTERCTL" clocks --json --samples 500 > "$T/clocks.json" || fail "jitterctl clocks --json failed"
jq -e --arg names "$CLOCKS" '
    (.clocksource == null or (.clocksource | type == "string"))
    and (.clocks | type == "array")
    and ([.clocks[].clock] as $have | all($names | split(" ")[]; IN($have[])))
    and all(.clocks[]; has("clock") and has("min_ns") and has("mean_ns") and has("max_ns")
                       and has("stddev_ns") and has("resolution_ns") and has("samples"))' \
    "$T/clocks.json" > /dev/null \
    || fail "bad JSON shape or a clock missing: $(jq -c '[.clocks[].clock]' "$T/clocks.json")"
pass "JSON: {clocksource, clocks: [{clock, min_ns, mean_ns, max_ns, stddev_ns, resolution_ns," \
     "samples}]} with every clock"

jq -e '.samples as $n | $n >= 1 and $n <= 500
       and all(.clocks[]; .samples == $n and .min_ns >= 0 and .min_ns <= .median_ns
                          and .median_ns <= .max_ns and .min_ns <= .mean_ns and .mean_ns <= .max_ns
                          and .stddev_ns >= 0 and (.resolution_ns == null or .resolution_ns > 0))' \
    "$T/clocks.json" > /dev/null || fail "inconsistent numbers: $(jq -c '.clocks' "$T/clocks.json")"
pass "JSON: at most the 500 trials asked for; min <= median, mean <= max for every clock"

cost() { jq --arg c "$1" ".clocks[] | select(.clock == \$c) | .$2" "$T/clocks.json"; }
jq -e '.clocks[] | select(.clock == "gettimeofday") | .resolution_ns == 1000' "$T/clocks.json" \
    > /dev/null || fail "gettimeofday() resolution is not 1 us"
jq -e '.clocks[] | select(.clock == "time") | .resolution_ns == 1000000000' "$T/clocks.json" \
    > /dev/null || fail "time() resolution is not 1 s"
jq -e '.clocks[] | select(.clock == "CLOCK_MONOTONIC_COARSE") | .resolution_ns >= 1000000' \
    "$T/clocks.json" > /dev/null \
    || fail "CLOCK_MONOTONIC_COARSE claims a resolution finer than a tick"
if [[ $(uname -m) == x86_64 ]]; then
    jq -e '(.clocks[] | select(.clock == "rdtsc") | .resolution_ns) as $r
           | .counter.hz as $hz | ($r * $hz / 1e9) > 0.99 and ($r * $hz / 1e9) < 1.01' \
        "$T/clocks.json" > /dev/null || fail "rdtsc resolution is not one counter tick"
    # A CPU-time clock always enters the kernel; the counter never does.
    awk -v a="$(cost rdtsc min_ns)" -v b="$(cost CLOCK_PROCESS_CPUTIME_ID min_ns)" \
        'BEGIN { exit !(a < b) }' || fail "rdtsc is not cheaper than a CPU-time clock"
else
    skip_part "rdtsc: one tick of resolution, cheaper than a CPU-time clock" \
        "no rdtsc on $(uname -m)"
fi
if [[ $current == tsc || $current == arch_sys_counter ]]; then
    jq -e 'has("warning") | not' "$T/clocks.json" > /dev/null \
        || fail "a warning with clocksource $current"
    awk -v a="$(cost CLOCK_MONOTONIC min_ns)" -v b="$(cost 'syscall(CLOCK_MONOTONIC)' min_ns)" \
        'BEGIN { exit !(a < b) }' \
        || fail "clock_gettime(CLOCK_MONOTONIC) is not cheaper than the system call" \
                "with clocksource $current"
    pass "vDSO clock_gettime($(cost CLOCK_MONOTONIC min_ns) ns) is cheaper than the system" \
         "call ($(cost 'syscall(CLOCK_MONOTONIC)' min_ns) ns); no warning"
elif [[ -n $current ]]; then
    jq -e '.warning | test("clocksource")' "$T/clocks.json" > /dev/null \
        || fail "no warning with clocksource $current"
    pass "clocksource $current: a warning"
else
    skip_part "the vDSO against the system call, and the clocksource warning" \
        "no clocksource readable here"
fi
pass "resolutions: gettimeofday 1 us, time 1 s, coarse clocks a tick, the counter one tick"

"$JITTERCTL" clocks --json --samples 200 --cpu 0 > "$T/cpu0.json" || fail "--cpu 0 failed"
jq -e '.cpu == 0 and .samples <= 200' "$T/cpu0.json" > /dev/null || fail "--cpu 0 not honoured"
rc=0
"$JITTERCTL" clocks --cpu 1023 > "$T/out" 2>&1 || rc=$?
if (( rc != 1 )) || ! grep -q 'cannot run on CPU 1023' "$T/out"; then
    fail "--cpu 1023: exit $rc, $(cat "$T/out")"
fi
rc=0
"$JITTERCTL" clocks --samples 0 > "$T/out" 2>&1 || rc=$?
(( rc == 2 )) || fail "--samples 0 exited $rc, not 2"
pass "--cpu 0 runs there; an absent CPU exits 1 with why; bad options exit 2"
