# jitterctl explain and the Prometheus lost seconds per cause kind, against a SCHED_FIFO
# jitter-thief on CPU 1 that steals known durations: the exact share of task jitter-thief:PID
# is what the thief stole, within what the probe saw beyond the thief's own timing; the
# comparison with the least-squares estimate follows the documented rule (its figures are
# printed, and a disagreement is said by name); the exposition passes promtool and its task
# counter holds the theft.
source "$(dirname "$0")/lib.sh"
need_cpu1
command -v jq > /dev/null || fail "needs jq (tools/dev/deps test)"
command -v promtool > /dev/null || fail "needs promtool (Debian: prometheus)"

need_tracefs

cat > "$T/jitterd.conf" <<CONF
[probe]
threshold = 10us
preheat = 300ms
priority = 10
[trace]
enabled = yes
[export]
prometheus_textfile = $T/jitterd.prom
CONF

# 100 ms intervals: the least-squares fit needs 60 of them.
start_daemon --interval 100ms
[[ $(jctl --json status | jq -r .trace.state) == recording ]] || fail "the trace does not record"

# 36 thefts of 1, 2 and 3 ms, 150 ms apart: 72 ms stolen over 5.4 s.
THEFTS=36
"$THIEF" --cpu 1 --delay 300ms --period 150ms --durations 1000us,2000us,3000us --count $THEFTS \
    --cpu-time > "$T/thefts" &
thief=$!
CLEANUP_PIDS+=("$thief")
wait "$thief" || fail "jitter-thief failed"
(( $(awk 'NF == 3' "$T/thefts" | wc -l) == THEFTS )) || fail "jitter-thief reported $(wc -l < "$T/thefts") thefts"
enough_intervals() {
    (( $(jctl --json call GetTimeline '{"cpu": 1, "window": "all"}' | jq '.points | length') >= 70 ))
}
wait_until 20 enough_intervals || fail "fewer than 70 intervals after 20 s"
sleep 0.3 # the last interval harvested and explained

jctl --json explain --window all --cpu 1 > "$T/explain.json" || fail "jitterctl explain --json"
jctl explain --window all --cpu 1 > "$T/explain.txt" || fail "jitterctl explain"
jctl --json events --min 500us --limit 10000 > "$T/events.json"
cat "$T/explain.txt"

# Ground truth: what the thief stole, its own CPU time while it spun (RT throttling can stop
# it for part of a theft, and other tasks then run), and the interruptions the probe saw over
# each theft. The task's time lies between them: it runs from the switch to it, before the
# thief's first clock read, to the switch back, after its last one, so it exceeds the thief's
# own CPU time by its way out of and back into clock_nanosleep, and falls short of it by the
# interrupts it took itself; both are inside the interruption and outside the theft.
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

# The comparison: both apply (a fit, the trace covers the window), and every verdict is the
# documented rule: agree when within 5 points of the time lost or a quarter of the larger.
jq -e '.cpus[0].fit' "$T/explain.json" > /dev/null ||
    fail "no least-squares fit: $(jq -c '.cpus[0] | {fit, coverage}' "$T/explain.json")"
# explain compares only where the trace explains 90 % of the time lost; a busy host (RT
# throttling idles the CPU inside some thefts) can leave less, and the comparison is then
# passed over by name.
if jq -e '.cpus[0].coverage >= 0.9' "$T/explain.json" > /dev/null; then
    jq -e 'all(.cpus[0].compare[] | select(.ls_share != null);
        (.exact_share - .ls_share | fabs) as $d | ([.exact_share, .ls_share] | max) as $m |
        ([0.05, 0.25 * $m] | max) as $band |
        .verdict == (if $d <= $band and .ls_stderr != null and 2 * .ls_stderr <= $band then "agree"
                     elif .ls_stderr != null and $d > $band + 2 * .ls_stderr then "disagree"
                     else "uncertain" end))' \
        "$T/explain.json" > /dev/null || fail "a verdict does not follow the rule"
    echo "shares (exact / least squares +- its standard error, of the time lost):"
    jq -r '.cpus[0].compare[] | "  \(.source): \(.exact_share * 1000 | round / 10) % / " +
        (if .ls_share == null then "-" else "\(.ls_share * 1000 | round / 10) %" end) +
        (if .ls_stderr == null then "" else " +- \(.ls_stderr * 1000 | round / 10)" end) +
        " \(.verdict)"' "$T/explain.json"
    # Where both apply they should agree: no counter's shares apart by more than the band and
    # twice the fit's standard error. On this VM they do not always: RT throttling idles the
    # SCHED_FIFO probe 50 ms a second (the idle task's time, on its involuntary switches), the
    # thief's wake-up moves its preemption, the local timer and the timer and scheduler
    # softirqs together, and the fit's standard error of one counter does not hold what it
    # cannot tell it from. A disagreement is said by name, with its figures: the estimate is
    # then wrong by more than it says, and only the exact share holds.
    if ! jq -e 'all(.cpus[0].compare[]; .verdict != "disagree")' "$T/explain.json" > /dev/null; then
        skip_part "agreement of the exact shares and the least-squares estimate" \
            "they disagree: $(jq -c '[.cpus[0].compare[] | select(.verdict == "disagree")
                | {source, exact_share, ls_share, ls_stderr}]' "$T/explain.json")"
    fi
    echo "  $(jq '[.cpus[0].compare[] | select(.verdict == "agree")] | length' "$T/explain.json")" \
         "counters agree, $(jq '[.cpus[0].compare[] | select(.verdict == "uncertain")] | length' \
         "$T/explain.json") the fit cannot tell"
    # The thief's time: the fit charges it to its context switches or to the local timer that
    # wakes it; their sum is printed next to the trace's, for the record.
    ls_thief=$(jq '[.cpus[0].compare[] | select(.source == "ctxsw:involuntary" or
        .source == "irq:LOC") | .ls_share // 0] | add' "$T/explain.json")
    ex_thief=$(jq '[.cpus[0].compare[] | select(.source == "ctxsw:involuntary" or
        .source == "irq:LOC") | .exact_share] | add' "$T/explain.json")
    echo "  involuntary switches and local timer together: exact $ex_thief, least squares $ls_thief"
    pass "explain compares $(jq '.cpus[0].compare | length' "$T/explain.json") counters by the rule" \
         "($(jq '[.cpus[0].compare[] | select(.verdict == "disagree")] | length' "$T/explain.json")" \
         "disagree)"
else
    skip_part "the comparison" "the trace explains $(jq '.cpus[0].coverage' "$T/explain.json") of the time lost, under 0.9"
fi

# Prometheus: the exposition and the textfile pass promtool; the task counter holds the
# theft besides the other tasks the trace saw.
jctl export > "$T/export.prom" || fail "jitterctl export"
for f in "$T/export.prom" "$T/jitterd.prom"; do
    out=$(promtool check metrics < "$f" 2>&1) || fail "promtool check metrics $f: $out"
    [[ -z $out ]] || fail "promtool check metrics has something to say about $f: $out"
done
# The daemon's textfile (written at each interval) and jitterctl export, both with every kind.
for f in "$T/export.prom" "$T/jitterd.prom"; do
    kinds=$(grep -c '^jitter_cause_lost_seconds_total{cpu="1",kind=' "$f" || true)
    (( kinds == 8 )) || fail "$kinds kinds of jitter_cause_lost_seconds_total in $f, not 8"
done
task_s=$(awk '/^jitter_cause_lost_seconds_total\{cpu="1",kind="task"\}/ {print $2}' "$T/export.prom")
others=$(jq --arg t "jitter-thief:$thief" '[.cpus[0].exact[] | select(.kind == "task" and
    .name != $t) | .ns] | add // 0' "$T/explain.json")
# Interruptions explained after the explain call can add to the other tasks: allow what the
# window's other tasks took per second over two seconds.
awk -v c="$task_s" -v t="$stolen" -v k="$slack" -v o="$others" 'BEGIN {
        thief = c * 1e9 - o; d = thief - t; if (d < 0) d = -d
        exit !(d <= k + o + 1000)
    }' || fail "jitter_cause_lost_seconds_total{kind=task} = $task_s s does not hold the $stolen ns" \
    "stolen (other tasks $others ns, slack $slack ns)"
pass "promtool: nothing to say; task lost $task_s s for $stolen ns stolen"
stop_daemon || fail "the daemon did not stop cleanly"
