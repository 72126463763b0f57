# jitterd under hostile clients: after start-up no thread keeps a capability it does not use;
# answering queries sends no TLB shootdown to the probe's CPU; then parallel jitter-hostile
# instances on CPU 0 throw thousands of random, truncated, mutated, deeply nested, oversized
# and pipelined messages from many connections, hold connections that never read and that stay
# silent, and disconnect mid-message. Meanwhile and afterwards the daemon answers, the probe on
# CPU 1 keeps its sample rate, and the daemon's memory stays within the bound its limits set.
source "$(dirname "$0")/lib.sh"
need_cpu1
command -v taskset >/dev/null || skip "needs taskset (util-linux)"

WORKERS=6          # parallel jitter-hostile loops
HOLD=2             # silent + never-reading connections each keeps open
# The default, well above WORKERS * (HOLD + 2): a legitimate client refused for the limit
# would fail the test.
MAX_CLIENTS=64
ATTACK_SECONDS=8

cat > "$T/jitterd.conf" <<CONF
[probe]
preheat = 300ms
[history]
checkpoint = 0
[server]
max_clients = $MAX_CLIENTS
CONF

# The capability sets of every thread of the daemon, "TID CapPrm CapEff" per line.
thread_caps() {
    local task prm eff
    for task in /proc/"$DAEMON_PID"/task/*; do
        prm=$(awk '/^CapPrm:/ {print $2}' "$task/status" 2>/dev/null) || continue
        eff=$(awk '/^CapEff:/ {print $2}' "$task/status" 2>/dev/null) || continue
        printf '%s %s %s\n' "${task##*/}" "$prm" "$eff"
    done
}

# Capabilities (numbers from linux/capability.h).
CAP_IPC_LOCK=$((1 << 14))
CAP_SYS_NICE=$((1 << 23))

# check_caps PRIORITY: the manager (main thread) holds, permitted and effective, CAP_SYS_NICE
# only with SCHED_FIFO probes (it may have to restart them on reload) and CAP_IPC_LOCK only if
# RLIMIT_MEMLOCK could not be lifted (without CAP_SYS_RESOURCE the hard limit stays, and
# allocations under mlockall(MCL_FUTURE) beyond it would fail); the probe threads hold nothing.
check_caps() {
    local want=0 tid prm eff n=0
    (( $1 > 0 )) && want=$((want | CAP_SYS_NICE))
    awk '/^Max locked memory/ {exit $4 == "unlimited" ? 0 : 1}' /proc/"$DAEMON_PID"/limits \
        || want=$((want | CAP_IPC_LOCK))
    while read -r tid prm eff; do
        if [[ $tid == "$DAEMON_PID" ]]; then
            (( 16#$prm == want && 16#$eff == want )) \
                || fail "manager thread has CapPrm=$prm CapEff=$eff, expected $(printf %x $want)"
        else
            (( 16#$prm == 0 && 16#$eff == 0 )) \
                || fail "probe thread $tid has CapPrm=$prm CapEff=$eff, expected none"
            n=$((n + 1))
        fi
    done < <(thread_caps)
    (( n >= 1 )) || fail "no probe thread found"
    caps=$(printf '%x' "$want")
}

start_daemon
check_caps 0
pass "priority 0: the manager keeps only {$caps} (CAP_IPC_LOCK only if RLIMIT_MEMLOCK is" \
     "not unlimited), the probe threads nothing"
stop_daemon || fail "exit status not 0"

cp "$T/jitterd.conf" "$T/jitterd.conf.keep"
printf '[probe]\npreheat = 200ms\npriority = 5\n[history]\ncheckpoint = 0\n' > "$T/jitterd.conf"
start_daemon
check_caps 5
stop_daemon || fail "exit status not 0"
cp "$T/jitterd.conf.keep" "$T/jitterd.conf"
pass "priority 5: the manager keeps only {$caps} (CAP_SYS_NICE added), the probe threads nothing"

# A sanitizer build's allocator keeps and hands back memory on its own terms.
SANITIZED=0
[[ $(ldd "$JITTERD") == *libasan* ]] && SANITIZED=1

start_daemon
sleep 2.5

# Answering leaves the probe's CPU alone. Memory a process hands back to the kernel makes it
# flush the TLB of every CPU that runs one of the process's threads, and the probe is one of
# them: jitterctl stats from CPU 0 for 5 s (about 25 intervals; GetStats, and GetWindow for the
# analyses jitterctl works out itself, some hundred calls each) must make the daemon send no more TLB shootdowns than 5 quiet seconds do.
# CPU 1's count of shootdowns received (/proc/interrupts) cannot tell: any other process that
# ran there (a build on this shared machine) sends its own. So the daemon's own are counted, by
# the kernel's tlb:tlb_flush tracepoint (reason 4: an IPI sent to other CPUs) in a private
# tracefs instance, filtered on the daemon's threads. A daemon that hands memory back sends
# one every few calls; allowed: three standard deviations of the quiet count, and one.
TRACEFS=
for d in /sys/kernel/tracing /sys/kernel/debug/tracing; do
    [[ -d $d/instances ]] && { TRACEFS=$d; break; }
done
TLB_TRACE=
tlb_trace_off() {
    local rc=$?
    set +e
    [[ -n $TLB_TRACE ]] && rmdir "$TLB_TRACE" 2>/dev/null
    (exit $rc)
    cleanup # lib.sh's: it takes the exit status from $?
}
trap tlb_trace_off EXIT
# tlb_sent: shootdowns the daemon's threads sent since the last call.
tlb_sent() {
    grep -c 'tlb_flush:' "$TLB_TRACE/trace" || true
    : > "$TLB_TRACE/trace"
}
if (( SANITIZED )); then
    skip_part "TLB shootdowns on the probe's CPU while answering" \
        "sanitizer build: its allocator hands memory back on its own terms"
elif [[ -n $TRACEFS && -d $TRACEFS/events/tlb/tlb_flush ]] \
    && mkdir "$TRACEFS/instances/jitterd-e2e-$$" 2>/dev/null; then
    TLB_TRACE=$TRACEFS/instances/jitterd-e2e-$$
    threads=$(ls /proc/"$DAEMON_PID"/task \
                  | awk '{ printf "%scommon_pid == %s", (NR > 1 ? " || " : ""), $1 }')
    echo "reason == 4 && ($threads)" > "$TLB_TRACE/events/tlb/tlb_flush/filter"
    echo 1 > "$TLB_TRACE/events/tlb/tlb_flush/enable"
    tlb_sent > /dev/null
    calls=0 end=$((SECONDS + 5))
    while (( SECONDS < end )); do
        taskset -c 0 "$JITTERCTL" --socket "$SOCK" --json stats --cpu 1 --window all > /dev/null \
            || fail "GetStats failed"
        calls=$((calls + 1))
        sleep 0.05
    done
    during=$(tlb_sent)
    sleep 5
    quiet=$(tlb_sent)
    echo 0 > "$TLB_TRACE/events/tlb/tlb_flush/enable"
    allowed=$(awk -v q="$quiet" 'BEGIN { printf "%d", q + 3 * sqrt(q + 1) + 1 }')
    echo "TLB shootdowns sent by the daemon: $during during $calls GetStats, $quiet while idle" \
         "($allowed allowed)"
    (( during <= allowed )) \
        || fail "answering clients interrupts the probe: the daemon sent $during TLB shootdowns"
    pass "$calls GetStats make the daemon send no TLB shootdown to the probe's CPU"
else
    skip_part "TLB shootdowns on the probe's CPU while answering" \
        "no tlb:tlb_flush tracepoint in a tracefs instance: the daemon's own shootdowns cannot" \
        "be told from other processes'"
fi

# rate_last N: samples per ns over the last N intervals of CPU 1 (timeline points).
rate_last() {
    jctl --json call io.jitterd.GetTimeline '{"cpu": 1, "window": "1m"}' |
        jq -r --argjson n "$1" '.points[-$n:] | "\(map(.samples) | add) \(map(.duration_ns) | add)"'
}
# rate_between FROM TO: samples per ns of the intervals of CPU 1 that lie within [FROM, TO]
# (CLOCK_MONOTONIC ns, as the timeline's start_ns).
rate_between() {
    jctl --json call io.jitterd.GetTimeline '{"cpu": 1, "window": "1m"}' |
        jq -r --argjson f "$1" --argjson t "$2" '[.points[]
            | select(.start_ns >= $f and .start_ns + .duration_ns <= $t)]
            | "\(map(.samples) | add) \(map(.duration_ns) | add)"'
}
mono_ns() { python3 -c 'import time; print(time.clock_gettime_ns(time.CLOCK_MONOTONIC))'; }
rate_pct() { # rate_pct "SAMPLES NS" "SAMPLES NS": the first rate in per cent of the second
    awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " ");
                                     printf "%d", (x[1] / x[2]) / (y[1] / y[2]) * 100 }'
}
vm() { awk -v k="$1:" '$1 == k {print $2}' /proc/"$DAEMON_PID"/status; } # kB

# 10 intervals of 200 ms: the last 2 s. How much the rate moves at rest, interval by interval:
# the lowest of the last 10 against their mean, in per cent. The check below needs the rest to
# be still enough that a halved rate stands out (60 % allowed at least); 2 s spoilt by other
# tasks on CPU 1 are measured again, three times at most, and then the test fails.
for try in 1 2 3; do
    before=$(rate_last 10)
    quiet_low=$(jctl --json call io.jitterd.GetTimeline '{"cpu": 1, "window": "1m"}' |
        jq '.points[-10:] | map(.samples / .duration_ns) | (add / length) as $m | min / $m * 100
            | floor')
    # (the sanitizer build's rate is not judged: below)
    (( SANITIZED || 100 - 2 * (100 - quiet_low) - 5 >= 60 )) && break
    (( try < 3 )) || fail "at rest the probe's rate fell to $quiet_low % of its mean in an" \
        "interval, in three tries of 2 s (other tasks on CPU 1): a halved rate could not be told"
    echo "at rest an interval fell to $quiet_low % of the mean (noise): measuring again"
    sleep 2
done
rss_base=$(vm VmRSS)
(( ${before%% *} > 0 )) || fail "no samples before the attack"

: > "$T/failures"
declare -a workers=()
for w in $(seq "$WORKERS"); do
    (
        round=0
        while [[ ! -e $T/stop ]]; do
            round=$((round + 1))
            taskset -c 0 "$HOSTILE" "$SOCK" 3 $((w * 1000 + round)) "$HOLD" \
                >> "$T/hostile.log" 2>&1 || echo "worker $w round $round" >> "$T/failures"
        done
    ) &
    workers+=($!)
    CLEANUP_PIDS+=($!)
done

sleep 1
taskset -c 0 "$JITTERCTL" --socket "$SOCK" --json status > "$T/status-during.json" \
    || fail "GetStatus failed during the attack"
t1=$(mono_ns)
sleep 2
t2=$(mono_ns)
sleep $((ATTACK_SECONDS - 5))
t3=$(mono_ns)
sleep 2
t4=$(mono_ns)
touch "$T/stop"
for p in "${workers[@]}"; do
    wait "$p" || true
done
kill -0 "$DAEMON_PID" 2>/dev/null || fail "the daemon died under the attack"
# The rates of two 2 s stretches of the attack, read once it is over: under it, the clients'
# CPU budget is the attackers' to spend, and the test's own calls may be refused as busy.
during=$(rate_between "$t1" "$t2")
during2=$(rate_between "$t3" "$t4")
[[ $during != *null* && $during2 != *null* ]] || fail "no interval of the attack in the timeline"

rounds=$(grep -c 'rounds, 0 checks failed' "$T/hostile.log" || true)
slowest=$(grep -o 'slowest answer [0-9]*' "$T/hostile.log" | awk '$3 > m {m = $3} END {print m + 0}')
if [[ -s $T/failures ]]; then
    grep -v "rounds, 0 checks failed" "$T/hostile.log" | tail -20 || true
    fail "the daemon did not answer properly under attack: $(wc -l < "$T/failures") failed runs"
fi
(( rounds >= WORKERS )) || fail "only $rounds hostile runs completed"
pass "$rounds runs of jitter-hostile ($WORKERS in parallel on CPU 0): answered throughout" \
     "(slowest GetStatus $slowest ms)"

# The probe on CPU 1 must not notice what happens on CPU 0. A manager sharing CPU 1 with it
# would halve its rate over 2 s; noise moves it by what one interval at rest fell below the
# mean (quiet_low), and a 2 s average by less. Allowed: twice that fall, and 5 % more (at least
# 60 %, by the measurement at rest above).
pct=$(rate_pct "$during" "$before")
pct2=$(rate_pct "$during2" "$before")
floor_pct=$((100 - 2 * (100 - quiet_low) - 5))
echo "probe sample rate during the attack: $pct % and $pct2 % of before" \
     "(at rest an interval fell to $quiet_low % of the mean; $floor_pct % allowed)"
if (( SANITIZED )); then
    skip_part "the probe's sample rate under the attack" \
        "sanitizer build: its instrumented probe loop's rate at rest varies by a third between" \
        "intervals, as much as a manager sharing its CPU would take"
else
    (( pct >= floor_pct && pct2 >= floor_pct )) \
        || fail "the probe's sample rate dropped under the attack: $pct % / $pct2 % of before"
    pass "the probe's sample rate held during the attack ($pct %, $pct2 %; $floor_pct % allowed)"
fi

sleep 0.5
jctl --json status | jq -e '.probes[0].state == "running"' >/dev/null \
    || fail "the probe is not running after the attack"
jctl --json stats --cpu 1 --window 10s | jq -e '.cpus[0].samples > 0' >/dev/null \
    || fail "GetStats fails after the attack"
n=$(jctl --json call org.varlink.service.GetInfo | jq -r .product)
[[ $n == jitterd ]] || fail "GetInfo fails after the attack"
pass "answers GetStatus, GetStats and GetInfo after the attack"

# Memory: every byte a client can make the daemon hold is bounded: per connection the output
# queue (4 MiB, then the client is dropped), one message (max_message, 64 KiB) and the reader's
# chunk (64 KiB); everything else is bounded by the history's retention, which 10 s do not
# fill. So the peak may not exceed the baseline by more than max_clients times that.
hwm=$(vm VmHWM)
rss=$(vm VmRSS)
if (( SANITIZED )); then
    skip_part "the daemon's peak memory under attack" \
        "sanitizer build: its allocator keeps freed memory in quarantine (leaks are caught" \
        "by LeakSanitizer when the daemon exits)"
else
    bound=$(( MAX_CLIENTS * (4096 + 64 + 64) ))
    grown=$(( hwm - rss_base ))
    echo "RSS: baseline $rss_base kB, peak $hwm kB (+$grown kB), now $rss kB; bound +$bound kB"
    (( grown <= bound )) || fail "the daemon's memory grew by $grown kB, beyond $bound kB"
    (( grown <= 65536 )) || fail "the daemon's memory grew by $grown kB, beyond 64 MiB"
    pass "peak memory +$((grown / 1024)) MiB over the baseline (bound: 64 MiB)"
fi

stop_daemon || fail "exit status not 0 (a sanitizer report?)"
pass "clean stop"
