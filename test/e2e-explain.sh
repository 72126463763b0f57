# jitterctl explain and the Prometheus lost seconds per cause kind, against a SCHED_FIFO
# jitter-thief on CPU 1 that steals known durations: the exact share of task jitter-thief:PID
# is what the thief stole, within what the probe saw beyond the thief's own timing; the thief,
# woken by a thread on CPU 0, is let in by a reschedule IPI every time; the exact shares and
# the least-squares estimate agree on the thief's row and disagree nowhere, every verdict
# following the documented rule (a window spoilt by other work on CPU 1 is taken again, three
# at most); the exposition passes promtool and its task counter holds the theft.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/cset.sh"
need_cpu1
command -v jq > /dev/null || fail "needs jq (tools/dev/deps test)"
command -v promtool > /dev/null || fail "needs promtool (Debian: prometheus)"
command -v taskset > /dev/null || fail "needs taskset (Debian: util-linux)"

need_tracefs

# A SCHED_OTHER probe: a SCHED_FIFO one would be stopped by RT throttling for 50 ms a second
# while the thief runs too (sched_rt_runtime_us), and that idle time is no counter's.
cat > "$T/jitterd.conf" <<CONF
[probe]
threshold = 10us
preheat = 300ms
priority = 0
[trace]
enabled = yes
[history]
# This VM has about 1000 interruptions a second; the test's 12 s must all be kept.
events_per_cpu = 100000
[export]
prometheus_textfile = $T/jitterd.prom
prometheus_textfile_interval = 100ms
CONF

# 100 ms intervals: the least-squares fit needs 60 of them.
start_daemon --interval 100ms
[[ $(jctl --json status | jq -r .trace.state) == recording ]] || fail "the trace does not record"
# This script and what it starts (the thief's process, jq, jitterctl) stay on CPU 0: the probe
# shares CPU 1 with every SCHED_OTHER task that lands there. The thief pins its own thread.
taskset -cp 0 $$ > /dev/null || fail "cannot keep the test on CPU 0"

# A quiet CPU 1: on a shared machine others' programs land on CPU 1 (their switches and timers,
# the load balancing that moves them) and spoil what this test compares. CPU 1 is shielded
# while the test runs (cset_shield: every task but this test's own, its daemon and thieves
# among them, and its ancestors, to CPU 0; new tasks inherit their parent's set; the kernel's
# per-CPU threads cannot move), and given back at its end; where cset cannot, the test runs as
# it is, and what it compares is judged all the same.
trap cset_exit EXIT
cset_shield_if_usable 1
# Every interval's counts, kept with a failed run (JITTERD_TEST_KEEP) to work the fit out again.
jctl --timeout 60s call --more Monitor '{"cpus": [1]}' > "$T/monitor.jsonl" &
CLEANUP_PIDS+=($!)

# The analyses of a window of some 10 000 interruptions (the fit, the periodicity search) are
# worked out by jitterctl explain from GetWindow, at nice 10 or 19 on CPU 0: seconds on a CPU 0
# shared with builds. The test waits up to 60 s for each reply.
# comparison_window FILE: 110 thefts of 2 ms at random times, 100 ms apart on average (a
# Poisson count per interval, one duration: see docs/analyses.md for why), each woken by a
# thread on CPU 0 through a futex, recorded in FILE; the comparison's window in compare.json.
# Returns 1, with why in $spoilt, when the reply came after the last theft began: the window
# may then hold the thief's exit and what follows it.
THEFTS=110
comparison_window() {
    "$THIEF" --cpu 1 --waker 0 --random 1 --delay 1500ms --period 100ms --durations 2000us \
        --count $THEFTS --cpu-time > "$1" &
    thief=$!
    CLEANUP_PIDS+=("$thief")
    # The window starts here, half a second before the first theft: the daemon's start-up and
    # the thief's (its threads made and moved, what their start leaves to RCU) are not part of it.
    sleep 1
    jctl call Reset '{"cpus": [1]}' > /dev/null || fail "Reset"
    # The comparison's window: from the Reset to 8 s later (80 intervals), while the thief still
    # steals (for about 11 s after its first theft), and without a query in between: what runs
    # on CPU 1 once the thief stops (its exit and the RCU work that follows) or while the test
    # polls (the processes it starts and ends) is no part of it.
    sleep 8
    jctl --timeout 60s --json explain --window all --cpu 1 > "$T/compare.json" || fail "jitterctl explain --json"
    local window_end last_theft
    window_end=$("$THIEF" --now) # CLOCK_MONOTONIC, as the thief's times: the window ended before
    jctl --timeout 60s explain --window all --cpu 1 > "$T/compare.txt" || fail "jitterctl explain"
    echo "--- the comparison's window (the text is a moment later than the JSON the test judges)"
    cat "$T/compare.txt"
    wait "$thief" || fail "jitter-thief failed"
    (( $(awk 'NF == 3' "$1" | wc -l) == THEFTS )) || fail "jitter-thief reported $(wc -l < "$1") thefts"
    last_theft=$(awk '$1 > m {m = $1} END {print m}' "$1")
    (( window_end < last_theft )) || {
        spoilt="the comparison's window ended after the last theft began ($window_end,"
        spoilt+=" $last_theft ns): the window is not the thief's"
        return 1
    }
}
window_ok=1
comparison_window "$T/thefts" || window_ok=0
sleep 0.3 # the last interval harvested and explained
jctl --json call GetCauses '{"cpus": [1], "window": "all"}' > "$T/causes.json" || fail "GetCauses"
jctl --timeout 60s --json stats --window all --cpu 1 > "$T/stats.json" || fail "jitterctl stats"
jctl --timeout 60s --json explain --window all --cpu 1 > "$T/explain.json" || fail "jitterctl explain --json"
jctl --timeout 60s explain --window all --cpu 1 > "$T/explain.txt" || fail "jitterctl explain"
jctl --json events --since 1m --min 500us --limit 10000 > "$T/events.json" ||
    fail "jitterctl events"
echo "--- the whole run"
cat "$T/explain.txt"

# Ground truth: what the thief stole, its own CPU time while it spun (a task of higher
# priority could take part of a theft), and the interruptions the probe saw over each theft.
# The task's time lies between them: it runs from the switch to it, before the thief's first
# clock read, to the switch back, after its last one, so it exceeds the thief's own CPU time
# by its way out of and back into its futex wait, and falls short of it by the interrupts it
# took itself; both are inside the interruption and outside the theft.
stolen=$(awk '{s += $3} END {print s}' "$T/thefts")
covered=$(jq -s --slurpfile ev "$T/events.json" '
    [.[] as $t | $ev[0] | map(select(.start_ns <= $t[0] + 2000 and
        .start_ns + .duration_ns + 2000 >= $t[1])) | first | .duration_ns // 0] | add' \
    <(awk '{print "[" $1 "," $2 "]"}' "$T/thefts"))
(( covered >= stolen )) || fail "the interruptions over the thefts ($covered ns) are shorter than the thefts ($stolen ns)"
slack=$((covered - stolen))
task=$(jq --arg t "jitter-thief:$thief" '[.cpus[0].exact[] | select(.kind == "task" and
    .name == $t) | .ns] | add // 0' "$T/explain.json")
lost=$(jq '.cpus[0].lost_ns' "$T/explain.json")
diff=$((task > stolen ? task - stolen : stolen - task))
(( diff <= slack )) || fail "task jitter-thief:$thief took $task ns, the thief stole $stolen ns:" \
    "more apart than the $slack ns the probe saw beyond the thefts"
share=$(jq --arg t "jitter-thief:$thief" '[.cpus[0].exact[] | select(.kind == "task" and
    .name == $t) | .share] | add' "$T/explain.json")
awk -v s="$share" -v t="$stolen" -v l="$lost" -v k="$slack" \
    'BEGIN {d = s - t / l; if (d < 0) d = -d; exit !(d <= k / l + 1e-9)}' ||
    fail "the exact share $share is not the stolen $stolen ns of the $lost ns lost"
pass "exact share of task jitter-thief:$thief: $share of $lost ns lost, $task ns for $stolen ns" \
    "stolen (within $slack ns, what the probe saw beyond the thefts)"
grep -q "task jitter-thief:$thief" "$T/explain.txt" || fail "the text does not name the thief"

# What let the thief in (GetCauses' woken_by): an IPI from the waker on CPU 0 every time (a
# reschedule; a call-function where the two CPUs share no cache), with the thief's time.
wake=$(jq -r '.cpus[0].woken_by | to_entries | max_by(.value.ns) | .key // "none"' \
    "$T/causes.json") || fail "no woken_by in GetCauses"
[[ $wake == irq:RES || $wake == irq:CAL ]] ||
    fail "tasks were let in mostly by $wake, not an IPI: $(jq -c '.cpus[0].woken_by' "$T/causes.json")"
wake_count=$(jq --arg w "$wake" '.cpus[0].woken_by[$w].count' "$T/causes.json")
wake_ns=$(jq --arg w "$wake" '.cpus[0].woken_by[$w].ns' "$T/causes.json")
(( wake_count * 100 >= THEFTS * 95 )) ||
    fail "$wake_count interruptions let tasks in with $wake, not the $THEFTS thefts:" \
        "$(jq -c '.cpus[0].woken_by' "$T/causes.json")"
(( wake_ns * 100 >= (stolen - slack) * 95 )) ||
    fail "$wake let tasks in for $wake_ns ns, less than the $stolen ns the thefts took" \
        "(slack $slack ns)"
pass "$wake_count interruptions let tasks in with $wake, for $wake_ns ns"

# The comparison: both apply (a fit, the trace covers the window), and every verdict is the
# documented rule: agree when within 5 points of the time lost or a quarter of the larger.
check_rule() {
    jq -e '.cpus[0].fit' "$T/compare.json" > /dev/null ||
        fail "no least-squares fit: $(jq -c '.cpus[0] | {fit, coverage}' "$T/compare.json")"
    # explain compares only where the trace explains 90 % of the time lost (coverage drops when
    # the history keeps fewer interruptions than the window counted, or their trace was lost).
    jq -e '.cpus[0].coverage >= 0.9' "$T/compare.json" > /dev/null ||
        fail "the trace explains $(jq '.cpus[0].coverage' "$T/compare.json") of the time lost, under 0.9"
    jq -e 'all(.cpus[0].compare[] | select(.ls_share != null);
        (.exact_share - .ls_share | fabs) as $d | ([.exact_share, .ls_share] | max) as $m |
        ([0.05, 0.25 * $m] | max) as $band |
        .verdict == (if $d <= $band and .ls_stderr != null and 2 * .ls_stderr <= $band then "agree"
                     elif .ls_stderr != null and $d > $band + 2 * .ls_stderr then "disagree"
                     else "uncertain" end))' \
        "$T/compare.json" > /dev/null || fail "a verdict does not follow the rule"
    echo "shares (exact / least squares +- its standard error, of the time lost):"
    jq -r '.cpus[0].compare[] | "  \(.source): \(.exact_share * 1000 | round / 10) % / " +
        (if .ls_share == null then "-" else "\(.ls_share * 1000 | round / 10) %" end) +
        (if .ls_stderr == null then "" else " +- \(.ls_stderr * 1000 | round / 10)" end) +
        " \(.verdict)"' "$T/compare.json"
}

# Prometheus: the exposition and the textfile pass promtool; the task counter holds the
# theft besides the other tasks the trace saw, counted just before and just after the export
# (tasks that land on CPU 1 meanwhile add to it).
other_tasks() {
    jctl --json call GetCauses '{"cpus": [1], "window": "all"}' | jq --arg t "jitter-thief:$thief" \
        '[.cpus[0].causes[] | select(.kind == "task" and .name != $t) | .ns] | add // 0'
}
others_before=$(other_tasks)
jctl export > "$T/export.prom" || fail "jitterctl export"
others_after=$(other_tasks)
for f in "$T/export.prom" "$T/jitterd.prom"; do
    out=$(promtool check metrics < "$f" 2>&1) || fail "promtool check metrics $f: $out"
    [[ -z $out ]] || fail "promtool check metrics has something to say about $f: $out"
done
# The daemon's textfile (written at each interval) and jitterctl export, both with every kind.
for f in "$T/export.prom" "$T/jitterd.prom"; do
    kinds=$(grep -c '^jitter_cause_lost_seconds_total{cpu="1",kind=' "$f" || true)
    (( kinds == 10 )) || fail "$kinds kinds of jitter_cause_lost_seconds_total in $f, not 10"
done
task_s=$(awk '/^jitter_cause_lost_seconds_total\{cpu="1",kind="task"\}/ {print $2}' "$T/export.prom")
awk -v c="$task_s" -v t="$stolen" -v k="$slack" -v lo="$others_before" -v hi="$others_after" '
    BEGIN { exit !(c * 1e9 - hi - t <= k + 1000 && c * 1e9 - lo - t >= -k - 1000) }' ||
    fail "jitter_cause_lost_seconds_total{kind=task} = $task_s s does not hold the $stolen ns" \
        "stolen (other tasks $others_before to $others_after ns, slack $slack ns)"
pass "promtool: nothing to say; task lost $task_s s for $stolen ns stolen"

# The comparison's precondition: the thief is the only task that takes CPU 1 for long in the
# window. Every switch costs the same to the fit, so another program's runs (a shell, a
# compiler landing on CPU 1) pull the thief's price down by their number, not their time.
# judge_comparison: 0 when the thief's row agrees and no row disagrees; otherwise 1, with what
# spoilt the window in $spoilt: other tasks on CPU 1, or counters that moved with the thefts
# by chance (the RCU and scheduler softirqs that other work on CPU 1 raised while the thief
# ran) and took part of its time in the fit.
judge_comparison() {
    local foreign row
    check_rule
    foreign=$(jq -c --arg t "jitter-thief:$thief" '.cpus[0] | [.exact[] | select(.kind == "task"
        and .name != $t)] | {share: (map(.share) | add // 0), tasks: map(.name)[:5]}' \
        "$T/compare.json") || fail "cannot read the tasks of the comparison's window"
    if jq -e '.share >= 0.01' <<< "$foreign" > /dev/null; then
        spoilt="other tasks took CPU 1 in the window: $foreign"
        return 1
    fi
    # The thief's row: its preemptions (ctxsw:involuntary) with the IPI that lets it in, one row
    # since both counters move with every theft; the fit must know it and agree.
    row=$(jq -c '[.cpus[0].compare[] | select(.source | split(" + ")
        | index("ctxsw:involuntary"))] | first' "$T/compare.json") ||
        fail "no row of ctxsw:involuntary"
    jq -e --arg w "$wake" '.source | split(" + ") | index($w)' <<< "$row" > /dev/null ||
        fail "the involuntary switches are not compared with $wake: $row"
    if [[ $(jq -r .verdict <<< "$row") != agree ]]; then
        spoilt="the thief's row does not agree: $row"
        return 1
    fi
    # Nowhere do they disagree; where the fit cannot tell a counter from others (the local timer
    # from the interval's length, here), the row is uncertain, said as such.
    if ! jq -e 'all(.cpus[0].compare[]; .verdict != "disagree")' "$T/compare.json" > /dev/null; then
        spoilt="exact shares and least squares disagree: $(jq -c '[.cpus[0].compare[] |
            select(.verdict == "disagree") | {source, exact_share, ls_share, ls_stderr}]' \
            "$T/compare.json")"
        return 1
    fi
    pass "the thief's row agrees: $(jq -r '"\(.source): exact" +
        " \(.exact_share * 1000 | round / 10) %, least squares" +
        " \(.ls_share * 1000 | round / 10) % +- \(.ls_stderr * 1000 | round / 10)"' <<< "$row");" \
        "rows that agree: $(jq '[.cpus[0].compare[] | select(.verdict == "agree")] | length' \
        "$T/compare.json"), uncertain: $(jq '[.cpus[0].compare[] |
        select(.verdict == "uncertain")] | length' "$T/compare.json"), disagree: none"
}

# A spoilt window is taken again with a new thief, the same way, three windows at most.
for attempt in 1 2 3; do
    (( window_ok )) && judge_comparison && break
    (( attempt < 3 )) || fail "$spoilt (3 windows)"
    echo "window $attempt spoilt: $spoilt; taken again"
    window_ok=1
    comparison_window "$T/thefts.$((attempt + 1))" || window_ok=0
done
stop_daemon || fail "the daemon did not stop cleanly"
