# jitterd end to end, noise attribution: the interrupts, softirqs and context switches that
# GetStats reports for a window are what /proc says moved on CPU 1 over the same time, while a
# timer-heavy task runs there; over 60 intervals and more the fit gives each source that moved
# a cost per occurrence and the share of the time lost it explains, and `jitterctl stats`
# prints them; thefts across an interval's end leave each interval its own counts.
#
# Lining the windows up: Reset, then window "all", makes the daemon's window run from its last
# harvest before the Reset to its last harvest before the query, and GetStats says where that
# window starts and ends (from_ns, to_ns: the daemon reads /proc at the tick that ends an
# interval, at or after its end). The test reads /proc right after the Reset and right before
# the query, on the same clock, so the daemon's counts and /proc's differ by what the source did
# in [from_ns, first read] and between the last read and to_ns (the window ends at the last
# harvest before the query: before or after that read), at most. (Read after the query, the
# last edge would hold jitterctl's own work, on CPU 0: a busy CPU 0 makes the scheduler softirq
# of CPU 1 run more often, to pull its tasks.) Both edges are kept quiet (the
# task runs well inside the window, which the thief's own record shows), so the bound is the
# source's quiet rate, measured in the seconds before and after, over the longer edge, measured,
# with three standard deviations of its count.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/cset.sh"
need_cpu1

INTERVAL_MS=100
THEFTS=3500      # one every 1 ms: a timer interrupt and a preemption each
THEFT_US=100

cat > "$T/jitterd.conf" <<CONF
[probe]
threshold = 10us
preheat = 300ms
priority = 10
CONF

start_daemon --interval ${INTERVAL_MS}ms
[[ $(jctl --json status | jq '.config.interval_ns') == $((INTERVAL_MS * 1000000)) ]] \
    || fail "the daemon does not run with a ${INTERVAL_MS} ms interval"

# A quiet CPU 1: on a shared machine others' programs land on CPU 1 (their switches and timers,
# the load balancing that moves them) and spoil what this test compares. CPU 1 is shielded
# while the test runs (cset_shield: every task but this test's own, its daemon and thieves
# among them, and its ancestors, to CPU 0; new tasks inherit their parent's set; the kernel's
# per-CPU threads cannot move), and given back at its end; where cset cannot, the test runs as
# it is, and what it compares is judged all the same.
trap cset_exit EXIT
cset_shield_if_usable 1

# The probe thread is the daemon's thread allowed on CPU 1 only (the manager moved off it).
PROBE_TID=
for _ in $(seq 50); do
    for t in /proc/"$DAEMON_PID"/task/*; do
        if [[ $(awk '/^Cpus_allowed_list:/ { print $2 }' "$t/status" 2>/dev/null) == 1 ]]; then
            PROBE_TID=${t##*/}
        fi
    done
    [[ -n $PROBE_TID ]] && break
    sleep 0.1
done
[[ -n $PROBE_TID ]] || fail "cannot find the probe thread of the daemon"

sleep_ms() { sleep "$(awk -v ms="$1" 'BEGIN { printf "%.3f", ms / 1000 }')"; }

# snapshot FILE: "SOURCE COUNT" lines for CPU 1, named as the daemon names them, and the time
# (CLOCK_MONOTONIC ns, as the daemon's window) once they are read.
snapshot() {
    {
        awk 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "CPU1") col = i + 1; next }
             { name = $1; sub(/:$/, "", name) }
             name != "ERR" && name != "MIS" && $col ~ /^[0-9]+$/ { print "irq:" name, $col }' \
            /proc/interrupts
        awk 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "CPU1") col = i + 1; next }
             { name = $1; sub(/:$/, "", name) }
             $col ~ /^[0-9]+$/ { print "softirq:" name, $col }' /proc/softirqs
        awk '/^voluntary_ctxt_switches:/ { print "ctxsw:voluntary", $2 }
             /^nonvoluntary_ctxt_switches:/ { print "ctxsw:involuntary", $2 }' \
            "/proc/$DAEMON_PID/task/$PROBE_TID/status"
        echo "time $("$THIEF" --now)"
    } > "$1"
    grep -q '^irq:LOC ' "$1" || fail "no LOC row for CPU 1 in /proc/interrupts (CPU 1 offline?)"
}

# The daemon's counts in GetStats JSON, as "SOURCE COUNT" lines.
daemon_counts() {
    jq -r '.cpus[0] | (.interrupts | to_entries[] | "irq:\(.key) \(.value)"),
                      (.softirqs | to_entries[] | "softirq:\(.key) \(.value)"),
                      (.ctxsw | to_entries[] | "ctxsw:\(.key) \(.value)")' "$1"
}

# measure: the quiet second before, the thefts between two reads of /proc and the daemon's
# counts, the quiet second after; compares them in $T/compare, and returns 1 when a source is
# off by more than its bound.
measure() {
    # A quiet second before, for the rate of every source while nothing of ours runs.
    sleep 0.5
    snapshot "$T/q0"
    sleep 1
    jctl call Reset '{"cpus": [1]}' > /dev/null || fail "Reset failed"
    snapshot "$T/a"

    "$THIEF" --cpu 1 --delay $((2 * INTERVAL_MS))ms --period 1ms --durations ${THEFT_US}us \
        --count $THEFTS > "$T/thefts" || fail "jitter-thief failed (CPU 1 busy or offline?)"
    sleep_ms $((3 * INTERVAL_MS))
    snapshot "$T/b"
    jctl --json call GetStats '{"without_analyses": true, "cpus": [1], "window": "all"}' > "$T/stats-b.json" \
        || fail "GetStats failed"
    snapshot "$T/b2"   # the quiet second after starts once the call is answered
    sleep 1
    snapshot "$T/q1"
    # What a GetStats call costs CPU 1 by itself, allowed for at the edges besides the quiet rate:
    # the daemon's memory going back to the kernel is a TLB shootdown (a call-function IPI) to every
    # CPU its threads run on, the probe's among them (many, with a sanitizer's allocator).
    jctl --json call GetStats '{"without_analyses": true, "cpus": [1], "window": "all"}' > /dev/null || fail "GetStats failed"
    snapshot "$T/q2"

    jq -e '.cpus[0] | (.interrupts | type) == "object" and (.softirqs | type) == "object"
                      and (.ctxsw | type) == "object" and .interrupts.LOC > 0' \
        "$T/stats-b.json" > /dev/null \
        || fail "GetStats lacks interrupts/softirqs/ctxsw: $(cat "$T/stats-b.json")"
    pass "GetStats carries interrupts, softirqs and ctxsw counts"

    # The window's edges, and the thefts well inside it: otherwise the edges are not quiet (a
    # daemon that harvests intervals late, or a thief that started before the first read).
    read -r from_ns to_ns < <(jq -r '.cpus[0] | "\(.from_ns) \(.to_ns)"' "$T/stats-b.json")
    t_a=$(awk '$1 == "time" { print $2 }' "$T/a")
    t_b=$(awk '$1 == "time" { print $2 }' "$T/b")
    read -r first_theft last_theft < <(awk 'NR == 1 { f = $1 } { l = $2 } END { print f, l }' "$T/thefts")
    (( from_ns <= t_a && first_theft > t_a )) \
        || fail "the window starts at $from_ns, the first read at $t_a, the first theft at $first_theft"
    (( last_theft < to_ns && last_theft < t_b )) \
        || fail "the last theft ends at $last_theft, the window at $to_ns, the last read at $t_b"
    edge_b=$(( t_b > to_ns ? t_b - to_ns : to_ns - t_b ))
    edge_ns=$(( t_a - from_ns > edge_b ? t_a - from_ns : edge_b ))
    echo "edges: $(( (t_a - from_ns) / 1000000 )) ms before the first read," \
         "$(( edge_b / 1000000 )) ms from the last; thefts from" \
         "$(( (first_theft - t_a) / 1000000 )) ms after the first read to" \
         "$(( (to_ns - last_theft) / 1000000 )) ms before the window's end"

    # Per source: the daemon's count D, /proc's P = b - a, and the bound: its quiet rate (the larger
    # of the second before and the second after) over the longer edge, with three standard
    # deviations of a count at that rate, plus 2 for the reads' rounding, plus what one GetStats
    # call made (q2 - q1). A daemon that loses an
    # interval's counts, counts one twice, reads another CPU's column or confuses two sources is
    # off by far more.
    daemon_counts "$T/stats-b.json" > "$T/d"
    # A sanitizer build's allocator hands memory back on its own terms, tens of shootdowns of the
    # probe's CPU per call at times: the edges then hold more of them than one measured call shows.
    uncompared=
    if [[ $(ldd "$JITTERD") == *libasan* ]]; then
        uncompared="irq:TLB irq:CAL"
        skip_part "TLB and call-function counts" \
            "sanitizer build: its allocator's shootdowns of CPU 1 at the window's edges vary per call"
    fi
    awk -v edge_ns="$edge_ns" -v locfile="$T/loc" -v uncompared="$uncompared" '
        FNR == 1 { file++ }
        { v[file, $1] = $2; names[$1] = 1 }
        END {
            bad = 0
            for (n in names) {
                if (n == "time" || !((2, n) in v) || !((3, n) in v) || index(" " uncompared " ", " " n " ")) {
                    continue        # absent from a read: a source that came or went meanwhile
                }
                r0 = (v[2, n] - v[1, n]) / (v[2, "time"] - v[1, "time"]) * 1e9
                r1 = ((4, n) in v) && ((7, n) in v) ? (v[4, n] - v[7, n]) / (v[4, "time"] - v[7, "time"]) * 1e9 : 0
                rate = r0 > r1 ? r0 : r1
                mean = rate * edge_ns / 1e9
                call = ((6, n) in v) && v[6, n] > v[4, n] ? v[6, n] - v[4, n] : 0
                bound = int(mean + 3 * sqrt(mean) + 0.999) + 2 + call
                p = v[3, n] - v[2, n]
                d = ((5, n) in v) ? v[5, n] : 0
                diff = d > p ? d - p : p - d
                if (p > 0 || d > 0) {
                    printf "%-22s daemon %7d  /proc %7d  bound +-%d (quiet %.0f/s over %d ms)%s\n",
                           n, d, p, bound, rate, edge_ns / 1e6, (diff > bound ? "  <-- FAIL" : "")
                }
                if (diff > bound) {
                    bad++
                }
                if (n == "irq:LOC") {
                    print d, p, bound > locfile   # the line for the checks below
                }
            }
            exit bad > 0
        }' "$T/q0" "$T/a" "$T/b" "$T/q1" "$T/d" "$T/q2" "$T/b2" > "$T/compare"
}
# Preemptions and softirqs come in bursts at times (what wakes one kthread wakes others), beyond
# a Poisson count at the quiet rate: a window whose edges caught one is measured again, three
# times at most, and then the test fails.
for attempt in 1 2 3; do
    measure && break
    cat "$T/compare"
    (( attempt < 3 )) ||
        fail "the daemon's counts differ from /proc's by more than the window's edges explain (3 windows)"
    echo "window $attempt: a count off by more than its bound (above); measured again"
done
cat "$T/compare"
read -r loc_d loc_p loc_bound < "$T/loc"
# The comparison means something only if the task moved LOC far beyond the bound. A theft
# whose previous one ended half a period or more before its time slept until then, and only a
# timer interrupt on CPU 1 woke it, one for each (1 ms apart, two never share one); a theft
# held back (RT throttling stops both the probe and the thief for 50 ms a second) runs late,
# and those after it find their time past and need none.
woken=$(wc -l < "$T/thefts")
(( woken == THEFTS )) || fail "the thief recorded $woken thefts, not $THEFTS"
timed=$(awk -v p=1000000 '
    { s[NR - 1] = $1; e[NR - 1] = $2; o = $1 - (NR - 1) * p; if (NR == 1 || o < a) a = o }
    END { for (k = 0; k < NR; k++) if (k == 0 || e[k - 1] < a + k * p - p / 2) n++; print n }' \
    "$T/thefts")
(( loc_p >= timed )) \
    || fail "the timer-heavy task did not show in CPU 1's LOC ($loc_p for $timed timed wake-ups)"
(( loc_bound * 5 < loc_p )) || fail "bound $loc_bound too wide against $loc_p to tell anything"
pass "LOC on CPU 1: daemon $loc_d, /proc $loc_p ($timed timed wake-ups), within +-$loc_bound;" \
     "every source within its bound"

# The causes as jitterctl works them out (GetStats carries none), taken before the intervals are
# counted: the window they were worked out on held no more intervals than that count.
jctl --json stats --cpu 1 --window all > "$T/causes-b.json" || fail "jitterctl stats failed"
jq -e '.cpus[0] | has("causes") and has("periods")' "$T/causes-b.json" > /dev/null \
    || fail "jitterctl stats has no causes or periods: $(cat "$T/causes-b.json")"
intervals=$(jctl --json call GetTimeline '{"cpu": 1, "window": "all"}' | jq '.points | length')
if (( intervals < 60 )); then
    jq -e '.cpus[0].causes | length > 0 and all(.[]; has("cost_ns") | not)' \
        "$T/causes-b.json" > /dev/null || fail "a fit over only $intervals intervals"
    pass "no fit over $intervals intervals (fewer than 60), only counts and rates"
fi

# The fit: the same window once it holds 70 intervals, 35 of them with the thefts.
for _ in $(seq 100); do
    intervals=$(jctl --json call GetTimeline '{"cpu": 1, "window": "all"}' | jq '.points | length')
    (( intervals >= 70 )) && break
    sleep 0.1
done
(( intervals >= 70 )) || fail "only $intervals intervals after 10 s"
jctl --json stats --cpu 1 --window all > "$T/stats.json" || fail "jitterctl stats failed"
jq -c '.cpus[0].causes[]' "$T/stats.json"
jq -e '.cpus[0].causes | map(select(has("cost_ns"))) | length > 0' "$T/stats.json" > /dev/null \
    || fail "no cause with a cost over $intervals intervals"
jq -e '.cpus[0].causes | all(.[]; (has("cost_ns") == has("explains"))
        and ((has("cost_ns") | not) or (.cost_ns >= 0 and .explains >= 0 and .explains <= 1))
        and .count > 0 and .per_second > 0)' "$T/stats.json" > /dev/null \
    || fail "a cause with an invalid cost or share"
# "explains" is cost x count over the time lost (when no interval was stalled, the fit's time
# lost is the window's).
jq -e '.cpus[0] | .stalls > 0 or all(.causes[] | select(has("cost_ns"));
        ((.cost_ns * .count / $lost) as $e | ($e > 1 and .explains > 0.999)
         or (.explains - $e | if . < 0 then -. else . end) <= 0.005 + 0.02 * $e))' \
    --argjson lost "$(jq '.cpus[0].lost_ns' "$T/stats.json")" "$T/stats.json" > /dev/null \
    || fail "explains is not cost x count / time lost"
# Whether the fit puts the thefts' time where it belongs is e2e-explain's to check: it makes the
# conditions a precise fit needs (110 thefts over 80 intervals, at random, on a shielded CPU 1),
# compares the fit with the trace's exact shares, fails where the fit does not know the thief's
# share to a bound fixed beforehand (its verdict must be "agree"), and takes a window spoilt by
# other work again, three at most. This window (35 intervals of thefts among the host's noise)
# is too small for that: here the fit is checked for its form (above).
pass "over $intervals intervals every cause has a cost and a share, and explains is cost x" \
     "count / time lost"

jctl stats --cpu 1 --window all > "$T/stats.txt" || fail "jitterctl stats failed"
cat "$T/stats.txt"
grep -Eq '^CPU 1 causes \(time lost .+\):$' "$T/stats.txt" || fail "jitterctl stats shows no causes"
top=$(jq -r '.cpus[0].causes | max_by(.explains // -1) | .source' "$T/stats.json")
grep -Eq "^  $top +[0-9.]+[kMG]?/s +~[0-9.]+ (n|µ|m)?s each +explains [0-9.]+ %$" "$T/stats.txt" \
    || fail "jitterctl stats does not show the top cause $top with its cost and share"
pass "jitterctl stats prints the top causes (the first: $top)"

# Each interval's counts are its own, also when its probe was taken away as it ended: thefts of
# 8 ms from 2 ms before every other interval's end (the daemon ticks on a lattice, up to 1 ms
# late) hold the probe off its acknowledgement past the harvest, which then takes that interval
# with the next. Monitor's replies give the lattice and each interval's counts:
# - each theft preempts the probe once (ctxsw:involuntary), and the interval that holds its time
#   (the probe sees the gap before it sees the new interval) must hold that preemption;
# - the tick makes each interval's LOC: as many as in the quiet intervals before the thefts,
#   within three of their standard deviations (and 2), plus the theft's own wake-up; fewer by
#   the time the CPU was gone besides the theft (the host stops a vCPU, and its ticks, for
#   milliseconds at times: the interval's worst gap beyond the 8 ms tells).
# A daemon that reads the counters when it harvests gives an interval taken late the counts of
# the next one too, and the next one none.
# edge_thefts: EDGES thefts at the intervals' ends, checked in $T/edge-check; its status is
# the check's: 0, 1 (counts not the interval's own), 2 (the thefts held no interval open),
# 3 (other tasks took CPU 1 in more than a quarter of the intervals checked).
edge_thefts() {
    # (Monitor is stopped below once the thefts are over; its own bound is for a test that fails
    # before, and leaves room for a slow start on a loaded host.)
    # jitterctl itself in the background (not jctl's subshell), so that the kill below ends
    # it; each attempt's replies in a file of its own.
    mon=$T/monitor.$attempt
    "$JITTERCTL" --socket "$SOCK" --timeout 30s call --more Monitor '{"cpus": [1]}' > "$mon" \
        2> /dev/null &
    monitor=$!
    CLEANUP_PIDS+=("$monitor")
    wait_until 5 bash -c "(( \$(wc -l < '$mon') >= 8 ))" || fail "fewer than 8 Monitor replies in 5 s"
    # The lattice: the earliest phase of the intervals' starts. The tick fires at its time or
    # later, never before, and the probe acknowledges it at once or later: a start is late by
    # milliseconds when the daemon's CPU 0 is busy, or RT throttling holds a SCHED_FIFO probe
    # off (50 ms a second), and more than half of them may be (a median was seen 3 ms late).
    # A phase is taken within half an interval of the first start's, on either side, so that a
    # first start that came late does not put the earliest ones a whole interval away.
    interval_ns=$((INTERVAL_MS * 1000000))
    # (Whole lines only: jitterctl is still writing.)
    lattice_ns=$(head -n "$(wc -l < "$mon")" "$mon" | jq -s --argjson p "$interval_ns" '
        map(select(.start_ns != null)) | .[0].start_ns as $s0
        | [.[].start_ns | (. - $s0) % $p | if . * 2 > $p then . - $p else . end]
        | min + $s0')
    [[ -n $lattice_ns ]] || fail "no lattice from Monitor's replies: $(head -3 "$mon")"
    EDGES=12
    now=$("$THIEF" --now)
    first=$(( lattice_ns + ((now - lattice_ns) / (INTERVAL_MS * 1000000) + 3) * INTERVAL_MS * 1000000
              - 2000000 ))
    "$THIEF" --cpu 1 --at "$first" --period $((2 * INTERVAL_MS))ms --durations 8ms --count $EDGES \
        > "$T/edge-thefts" || fail "jitter-thief failed"
    sleep_ms $((3 * INTERVAL_MS))
    kill "$monitor" 2> /dev/null
    wait "$monitor" 2> /dev/null || true
    last=$(awk 'END { print $2 }' "$T/edge-thefts")
    jq -r 'select(.start_ns != null) | [.start_ns, .duration_ns, (.cpus[0].ctxsw.involuntary // 0), (.cpus[0].interrupts.LOC // 0),
            .cpus[0].max_gap_ns] | @tsv' "$mon" | sort -n > "$T/intervals"
    awk -v intervals="$T/intervals" -v first="$first" -v last="$last" \
        -v period=$((2 * INTERVAL_MS * 1000000)) '
        BEGIN {
            while ((getline line < intervals) > 0) {
                split(line, f, "\t")
                s[++n] = f[1]; d[n] = f[2]; c[n] = f[3]; loc[n] = f[4]; gap[n] = f[5]
                # quiet: whole intervals before the first theft (the first reply may be partial)
                if (n > 1 && s[n] + d[n] < first) {
                    q++; qs += loc[n] / d[n]; qss += (loc[n] / d[n]) ^ 2
                    if (c[n] > cmax) cmax = c[n]
                }
            }
            # (exit in BEGIN still runs END, whose own exit would replace the status)
            if (q < 3) { print "fewer than 3 quiet intervals"; noquiet = 1; exit }
            rate = qs / q; sd = sqrt(qss / q - rate * rate)
        }
        # A theft held its interval open when the interval that holds it ends as it ends (the
        # probe acknowledged the next one once back): it and the next interval are checked.
        # A theft that began a millisecond or more after its time (2 ms before the tick) may
        # have begun after the daemon ticked, read the counters and advanced the epoch: the
        # probe, taken before it acknowledged, still ends the interval with the theft, whose
        # preemption the counters of the next epoch hold. It tests nothing.
        {
            late = $1 - (first + (NR - 1) * period)
            if (late >= 1000000) {
                printf "theft at %s: %.1f ms late, maybe after the tick\n", $1, late / 1e6
                next
            }
            k = 0
            for (i = 1; i <= n; i++) if (s[i] < $2) k = i
            if (k == 0 || k == n || s[k + 1] < $2 - 100000 || s[k + 1] > $2 + 1000000) {
                printf "theft at %s: did not end an interval (the daemon ticked outside it)\n", $1
                next
            }
            held++
            check[k] = 1; check[k + 1] = 1
            printf "theft at %s: interval at %s, %d preemptions%s\n", $1, s[k], c[k], (c[k] < 1 ? "  <-- none" : "")
            if (c[k] < 1) bad++
        }
        END {
            if (noquiet) exit 2
            if (held * 2 < NR) { printf "only %d of %d thefts held an interval open\n", held, NR; exit 2 }
            for (i = 1; i <= n; i++) {
                if (!check[i]) continue
                checked++
                want = rate * d[i]; bound = 3 * sd * d[i] + 2
                gone = gap[i] > 8000000 ? gap[i] - 8000000 : 0
                low = rate * (d[i] - gone) - bound
                off = loc[i] > want + bound + 1 || loc[i] < low
                # Off, with more preemptions than the theft and one of the kernel (0 or 1 in
                # an interval of this test otherwise): other tasks took CPU 1 then, and their
                # timers are LOC too.
                crowd = off && c[i] > 2
                printf "interval at %s: LOC %d, want %.1f +- %.1f (+1; %.1f ms gone besides), %d" \
                       " preemptions%s\n", s[i], loc[i], want, bound, gone / 1e6, c[i],
                       (crowd ? "  <-- others ran" : off ? "  <-- off" : "")
                if (crowd) spoilt++
                else if (off) bad++
            }
            if (bad) exit 1
            # Those cannot be judged; the others are, while they are three in four at least.
            if (spoilt * 4 > checked) {
                printf "%d of %d intervals shared with other tasks (quiet ones: %d preemptions" \
                       " at most)\n", spoilt, checked, cmax
                exit 3
            }
            if (spoilt) printf "%d of %d intervals shared with other tasks, not judged\n", spoilt, checked
            exit 0
        }' "$T/edge-thefts" > "$T/edge-check"
}
# Other tasks on CPU 1 in more than a quarter of the intervals checked spoil the thefts (their
# timers are LOC too; where fewer, those intervals are not judged, the others are), and thefts
# that missed the intervals' ends (the lattice, read from the replies before them, no longer
# where the daemon ticked: seen twice in full runs beside the builds of the other passes, never
# alone) test nothing: the thefts are made again, from a lattice read anew, three times at most.
# interval_phases: each interval's start (the thefts' intervals in $T/intervals) less the
# lattice, in ms within half an interval, to tell which.
interval_phases() {
    awk -v l="$lattice_ns" -v p=$((INTERVAL_MS * 1000000)) '{
        d = ($1 - l) % p; if (d < 0) d += p; if (d * 2 > p) d -= p
        printf "%s%.1f", (NR > 1 ? " " : ""), d / 1e6 }' "$T/intervals"
}
for attempt in 1 2 3; do
    rc=0
    edge_thefts || rc=$?
    (( (rc == 3 || rc == 2) && attempt < 3 )) || break
    cat "$T/edge-check"
    if (( rc == 3 )); then
        echo "edge thefts, attempt $attempt: spoilt by other tasks on CPU 1 (above); made again"
    else
        echo "edge thefts, attempt $attempt: they missed the intervals' ends (the intervals'" \
             "starts from the lattice, ms: $(interval_phases)); made again"
    fi
done
(( rc == 0 )) || {
    cat "$T/edge-check"
    (( rc == 3 )) && fail "other tasks took CPU 1 in the intervals checked, 3 times"
    (( rc == 2 )) && fail "the thefts did not hold intervals open, 3 times: the test could not do its" \
        "part (intervals from $(head -1 "$T/intervals" | cut -f1) to $(tail -1 "$T/intervals" |
        cut -f1) ns, $(wc -l < "$T/intervals") of them; lattice $lattice_ns ns; thefts from" \
        "$first to $last ns; their starts from the lattice, ms: $(interval_phases))"
    fail "an interval that ended during a theft, or the next, does not hold its own counts"
}
unjudged=$(grep 'not judged' "$T/edge-check" || true)
pass "$(grep -c '^theft.*interval at' "$T/edge-check") of $EDGES thefts held an interval open:" \
     "each counted in the interval that holds it, and every such interval's and the next one's" \
     "LOC its own${unjudged:+ ($unjudged)}"

stop_daemon || fail "exit status not 0"
pass "clean stop"
