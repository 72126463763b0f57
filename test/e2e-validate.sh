#!/bin/bash
# The main use, end to end with real tools: validate an isolation change. A SCHED_OTHER load
# (stress-ng) on every CPU and one more worker kept on CPU 1; jitterd on CPU 1 and a snapshot; then
# CPU 1 isolated at run time with cset (a housekeeping set of CPU 0, an exclusive set of CPU 1
# without load balancing) and the load, and only the load this test started, moved into the
# housekeeping set; a Reset and a second snapshot. jitterctl compare must call the change
# significant with after lower, the audit's isolation finding must improve and say what it saw, and
# jitterctl check --max must fail before and pass after, with a bound derived from what the test
# measured. Without a CPU list, jitterd and jitter-probe probe the shielded CPU; and with CPU 0
# shielded instead, CPU 0, which neither would take without it. The sets go, whatever happens, and
# the host is left as it was. A host already tuned has no "before": the test skips there.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/cset.sh"
need_cpu1
command -v stress-ng > /dev/null || skip "no stress-ng (apt-get install stress-ng)"
command -v jq > /dev/null || skip "no jq"
# This also clears what a killed run left (its sets, the root without load balancing), before
# the host is judged untuned.
cset_usable || skip "$CSET_WHY"
# already_isolated: why this host already isolates CPUs (the kernel command line, what the kernel
# says it isolates, a v1 shield, a v2 isolated partition), or nothing.
already_isolated() {
    local m
    grep -oE '(^| )(isolcpus|nohz_full)=[^ ]*' /proc/cmdline | sed 's/^ */the kernel has /'
    [[ -z $(cat /sys/devices/system/cpu/isolated 2> /dev/null) ]] \
        || echo "CPUs $(cat /sys/devices/system/cpu/isolated) isolated"
    [[ $(cat "$CSET_ROOT/cpuset.sched_load_balance") == 1 ]] \
        || echo "the root cpuset at $CSET_ROOT does not balance load (a shield)"
    while read -r m; do
        [[ -z $(cat "$m/cpuset.cpus.isolated" 2> /dev/null) ]] \
            || echo "cgroup v2 cpuset.cpus.isolated at $m: $(cat "$m/cpuset.cpus.isolated")"
        find "$m" -name cpuset.cpus.partition -exec grep -lx isolated {} + 2> /dev/null \
            | sed 's/^/an isolated partition: /'
    done < <(awk '$3 == "cgroup2" { print $2 }' /proc/mounts)
    return 0 # a grep that found nothing is not an error
}
TUNED=$(already_isolated)
[[ -z $TUNED ]] || skip "this host already isolates CPUs, there is no before: ${TUNED//$'\n'/; }"
# CPU 0 is housekeeping, CPU 1 probed; more CPUs stay loaded.

STRESS_PID=
STRESS_PINNED_PID=
stop_load() {
    local p
    for p in $STRESS_PID $STRESS_PINNED_PID; do
        kill -TERM "$p" 2> /dev/null || true
        wait "$p" 2> /dev/null || true
    done
    STRESS_PID= STRESS_PINNED_PID=
}
# The load and the sets go first, then lib.sh's cleanup (daemon, temporary files), whatever
# failed: without errexit, which would end the trap at the first false status.
validate_exit() {
    local rc=$?
    set +e
    stop_load
    cset_remove
    (exit $rc)
    cleanup
}
trap validate_exit EXIT

DIRS_BEFORE=$(cset_dirs)
LB_BEFORE=$(cat "$CSET_ROOT/cpuset.sched_load_balance")
: > "$T/jitterd.conf"
# Each snapshot covers this many seconds of 200 ms intervals.
SECONDS_EACH=${JITTERD_VALIDATE_SECONDS:-5}
# The gate: jitterctl check of this percentile of the gaps since the Reset.
PCT=99.9999

# With nothing isolated, jitterd without a CPU list has nothing to probe.
rc=0
"$JITTERD" --config "$T/jitterd.conf" --socket "$T/default.sock" --state-dir "$T/default" \
    > "$T/default.log" 2>&1 || rc=$?
(( rc == 1 )) && grep -q "no CPUs to probe" "$T/default.log" \
    || fail "jitterd without --cpus on a host without isolation exited $rc: $(cat "$T/default.log")"

# 1. A noisy load on every CPU, at SCHED_OTHER like the probe, and one more worker that stays on
# CPU 1: without it the workers wander between the CPUs, and the probe thread runs for 8 to 12 ms
# between two waits, so few that they are barely more than one in a million samples (the gate
# below). With a competitor always there the probe thread runs for about one base slice of the
# scheduler between waits, and its waits are each about as long as the others.
stress-ng --cpu "$(nproc)" --cpu-method loop --timeout 120s --quiet &
STRESS_PID=$!
stress-ng --cpu 1 --taskset 1 --cpu-method loop --timeout 120s --quiet &
STRESS_PINNED_PID=$!
wait_until 10 bash -c "(( \$(pgrep -P $STRESS_PID | wc -l) >= $(nproc) &&
    \$(pgrep -P $STRESS_PINNED_PID | wc -l) >= 1 ))" \
    || fail "stress-ng did not start $(nproc) + 1 workers"
mapfile -t LOAD_PIDS < <(echo "$STRESS_PID"; pgrep -P "$STRESS_PID"; echo "$STRESS_PINNED_PID"
                         pgrep -P "$STRESS_PINNED_PID")

# 2. jitterd on CPU 1. Its probe thread is the one allowed on CPU 1 only.
start_daemon
PROBE_TID=
for t in /proc/"$DAEMON_PID"/task/*; do
    [[ $(awk '/^Cpus_allowed_list:/ { print $2 }' "$t/status") == 1 ]] && PROBE_TID=${t##*/}
done
[[ -n $PROBE_TID ]] || fail "cannot find the probe thread of the daemon"
# schedstat: run ns, runqueue wait ns, timeslices (the kernel's own account of the thread).
schedstat() { cat "/proc/$DAEMON_PID/task/$PROBE_TID/schedstat"; }

# measure NAME: Reset, SECONDS_EACH of measuring, the probe thread's schedstat around it.
measure() {
    local s0 s1
    jctl call Reset '{}' > /dev/null || fail "Reset"
    s0=$(schedstat)
    sleep "$SECONDS_EACH"
    s1=$(schedstat)
    read -r _ WAIT0 SLICES0 <<< "$s0"
    read -r _ WAIT1 SLICES1 <<< "$s1"
    jctl snapshot --output "$T/$1.json" || fail "snapshot $1"
    jctl --json audit > "$T/audit-$1.json" || true
    jctl --json status > "$T/status-$1.json" || fail "status $1"
    echo "$1: $(jq -c '.cpus[0].stats | {samples, available_pct: .cpu_available_pct,
        interruptions: .interruptions.count, max_ns: .gap.max_ns, p: .gap.percentiles}' \
        "$T/$1.json"); probe thread waited $(((WAIT1 - WAIT0) / 1000000)) ms in" \
        "$((SLICES1 - SLICES0)) slices"
}

measure before
# The bound, from the kernel's account rather than the daemon's: while the load shares CPU 1,
# the probe thread waits for the CPU once per timeslice it gets back, on average WAIT ns each
# time. Half of that is a gap the loaded CPU exceeds at the percentile and the isolated one
# must not reach.
SLICES=$((SLICES1 - SLICES0))
(( SLICES > 0 )) || fail "the probe thread got no timeslice in $SECONDS_EACH s"
WAIT_NS=$(((WAIT1 - WAIT0) / SLICES))
BOUND_NS=$((WAIT_NS / 2))
# That percentile must lie within those waits: they must be more frequent among the samples
# than 1 - PCT, by a margin for waits shorter than the bound (some are). The probe thread waits
# once per slice it runs, a scheduler tick or a base slice (3 to 4 ms), in which it takes 300 to
# 600 thousand samples: 2 to 3 waits per million here. Barely more than one in a million (the
# workers wandering off CPU 1 let it run 8 to 12 ms) made the p99.9999 gap fall on a short wait.
SAMPLES=$(jq '.cpus[0].stats.samples' "$T/before.json")
MARGIN=1.5
awk -v s="$SLICES" -v n="$SAMPLES" -v p="$PCT" -v m="$MARGIN" \
    'BEGIN { exit !(s / n > m * (1 - p / 100)) }' \
    || fail "$SLICES waits in $SAMPLES samples: fewer than $MARGIN times 1 - p$PCT, too few for" \
            "the p$PCT gap to fall on them"
(( BOUND_NS >= 20000 )) \
    || fail "the load's timeslices average $WAIT_NS ns: too short to tell from this host's noise"
echo "bound: $BOUND_NS ns (half the probe thread's mean wait, $WAIT_NS ns, over $SLICES slices)"
BOUND=${BOUND_NS}ns
rc=0
jctl check --window all --percentile "$PCT" --max "$BOUND" || rc=$?
(( rc == 1 )) || fail "check --max $BOUND before isolation exited $rc, not 1"
pass "loaded: check --percentile $PCT --max $BOUND fails"
jq -e '.probes[0] | .isolation == "none" and (has("isolation_cpuset") | not)' \
    "$T/status-before.json" > /dev/null \
    || fail "status before: $(jq -c '.probes[0]' "$T/status-before.json")"
isolcpus_finding() {
    jq -c '.findings[] | select(.check == "isolcpus" and .cpu == 1)' "$T/audit-$1.json"
}
[[ $(isolcpus_finding before | jq -r .severity) == warning ]] \
    || fail "audit before: $(isolcpus_finding before)"

# 3. CPU 1 isolated with cset; the load, and only it, into the housekeeping set.
cset_isolate 0 1
cset_move "${LOAD_PIDS[@]}"
want=$(for p in "${LOAD_PIDS[@]}"; do ls "/proc/$p/task"; done | sort -n)
got=$(sort -n "$CSET_ROOT/$CSET_HK/tasks")
[[ $got == "$want" ]] || fail "the housekeeping set holds $(echo $got), not the load's $(echo $want)"
[[ -z $(cat "$CSET_ROOT/$CSET_ISO/tasks") ]] || fail "tasks in the isolated set"
for p in "${LOAD_PIDS[@]}"; do
    [[ $(awk '/^Cpus_allowed_list:/ { print $2 }' "/proc/$p/status") == 0 ]] \
        || fail "stress-ng $p may still run on $(grep Cpus_allowed_list "/proc/$p/status")"
done
pass "cset: $CSET_HK (CPU 0) holds the load's $(echo "$want" | wc -l) tasks and nothing" \
     "else, $CSET_ISO (CPU 1) is exclusive, no load balancing"

# 4. Reset and the second snapshot.
measure after
rc=0
jctl check --window all --percentile "$PCT" --max "$BOUND" || rc=$?
(( rc == 0 )) || fail "check --max $BOUND after isolation exited $rc, not 0"
pass "isolated: check --percentile $PCT --max $BOUND passes"

# 5. compare: significant, after lower.
rc=0
jctl compare "$T/before.json" "$T/after.json" > "$T/compare" || rc=$?
cat "$T/compare"
grep -q 'significant (p < 0.01), after is lower' "$T/compare" \
    || fail "compare does not call it significant and lower"
pass "compare: significant, after lower"

# The audit's isolation finding improves and says what it saw; status says it too.
after=$(isolcpus_finding after)
[[ $(jq -r .severity <<< "$after") == info ]] || fail "audit after: $after"
jq -e --arg s "cgroup v1 cpuset shield /$CSET_ISO (exclusive, no load balancing): 1" \
    '.seen | contains($s)' <<< "$after" > /dev/null || fail "audit after: $after"
pass "audit isolcpus CPU 1: warning -> info, $(jq -r .seen <<< "$after")"
jq -e --arg set "/$CSET_ISO" '.probes[0] | .isolation == "cpuset-v1" and
    .isolation_cpuset == $set' "$T/status-after.json" > /dev/null \
    || fail "status after: $(jq -c '.probes[0]' "$T/status-after.json")"
jctl status | grep -Eq "^ +1 .* v1 shield /$CSET_ISO\$" || fail "status: $(jctl status)"
pass "status: isolation none -> cpuset-v1 /$CSET_ISO"

# probe_defaults CPU: jitterd and jitter-probe without a CPU list both probe CPU, the shielded
# one, and jitterd says how it is isolated.
probe_defaults() {
    "$JITTERD" --config "$T/jitterd.conf" --socket "$T/default.sock" --state-dir "$T/default" \
        --interval 200ms > "$T/default.log" 2>&1 &
    DAEMON_PID=$!
    wait_until 20 test -S "$T/default.sock" || fail "jitterd without --cpus: $(cat "$T/default.log")"
    "$JITTERCTL" --socket "$T/default.sock" --json status > "$T/default.json" \
        || fail "status of jitterd without --cpus"
    jq -e --argjson cpu "$1" --arg set "/$CSET_ISO" '[.probes[] | {cpu, isolation,
        isolation_cpuset}] == [{cpu: $cpu, isolation: "cpuset-v1", isolation_cpuset: $set}]' \
        "$T/default.json" > /dev/null \
        || fail "jitterd without --cpus: $(jq -c .probes "$T/default.json")"
    stop_daemon || fail "jitterd without --cpus exited $? at SIGTERM"
    "$BUILD_DIR/probe/jitter-probe" --duration 200ms --preheat 100ms --json --quiet \
        > "$T/probe.json" || fail "jitter-probe without --cpus failed"
    jq -e --argjson cpu "$1" '[.cpus[].cpu] == [$cpu]' "$T/probe.json" > /dev/null \
        || fail "jitter-probe without --cpus probed $(jq -c '[.cpus[].cpu]' "$T/probe.json")"
}

# host_restored: the cpusets as they were before, the root balancing load as it did.
host_restored() {
    [[ $(cset_dirs) == "$DIRS_BEFORE" ]] || fail "cpusets left: $(cset_dirs)"
    [[ $(cat "$CSET_ROOT/cpuset.sched_load_balance") == "$LB_BEFORE" ]] \
        || fail "the root's load balancing is not restored"
}

# The shielded CPU is what jitterd (which refused before) and jitter-probe probe by default.
stop_daemon || fail "jitterd exited $? at SIGTERM"
probe_defaults 1
pass "without a CPU list, jitterd (which refused before) and jitter-probe probe CPU 1"

# 6. The host as it was.
stop_load
cset_remove
host_restored
pass "the sets are gone, the root balances load again"

# 7. Without isolation jitter-probe takes the last CPU, which CPU 1 is here: so CPU 0 shielded
# for a moment, with nothing moved, is what tells that both follow the run-time isolation.
cset_isolate "1-$(($(nproc) - 1))" 0
probe_defaults 0
cset_remove
host_restored
pass "with CPU 0 shielded instead, jitterd and jitter-probe probe CPU 0; the host is as it was"
