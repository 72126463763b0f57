# jitterd end to end: readiness, ground-truth thefts in the events, stats, restart keeps the
# history, SIGHUP with a broken config keeps the old one, junk clients leave it answering.
source "$(dirname "$0")/lib.sh"
need_cpu1

cat > "$T/jitterd.conf" <<CONF
[probe]
threshold = 10us
preheat = 300ms
[history]
checkpoint = 1s
CONF

start_daemon
pass "READY=1 after preheat"
wait_notify 'STATUS=CPU 1 running' 5 || fail "no per-interval STATUS= line"
pass "STATUS= line per interval"

# Ground truth: a SCHED_FIFO thief on CPU 1 takes 300 and 700 us, 8 times. Each theft must be
# an event bounded from both sides by the thief's record (THEFT_JQ), within what the clocks'
# measured drift explains (an event at the wrong time, or a lost one, matches nothing); once the
# thefts are harvested, an interval or two, longer when CPU 1 is busy. A round in which other
# tasks on CPU 1 merged a theft with their own time is run again, three rounds at most.
slack_ns=$(clock_slack_ns)
missing() {
    # Only the long ones: on a noisy machine the newest 1000 of all events may not reach back.
    jctl --json events --cpu 1 --min 250us --limit 10000 > "$T/events.json"
    missing_theft=$(jq -r --argjson th "$(thefts_json "$T/thefts")" --argjson slack "$slack_ns" \
        --argjson noise "$noise" "$THEFT_JQ"' . as $ev | [$th[] | . as [$s, $e, $due]
            | select(any($ev[]; is_theft($s; $e; $due; $slack; $noise)) | not)
                                 | "\($s) (\($e - $s) ns)"] | first // empty' "$T/events.json")
    [[ -n $missing_theft ]]
}
for round in 1 2 3; do
    noise=$(noise_ns)
    "$THIEF" --cpu 1 --delay 300ms --period 150ms --durations 300us,700us --count 8 --due \
        > "$T/thefts" || fail "jitter-thief failed"
    for _ in $(seq 20); do
        sleep 0.3
        missing || break
    done
    [[ -z $missing_theft ]] && break
    echo "round $round: the theft at $missing_theft is no event of its length (noise?)"
done
[[ -z $missing_theft ]] \
    || fail "theft at $missing_theft not among the events, bounded from both sides (slack $slack_ns ns)"
pass "all $(wc -l < "$T/thefts") thefts found as events, bounded from both sides"

# GetWindow, the raw data jitterctl works the causes and periods out from: every theft starts an
# interruption among its event starts (delta-encoded: each the ns since the previous one), bounded
# as THEFT_JQ bounds an event's start, and its intervals' rows line up.
jctl --json call GetWindow '{"cpu": 1, "window": "1m"}' > "$T/window.json" || fail "GetWindow failed"
missing_start=$(jq -r --argjson th "$(thefts_json "$T/thefts")" --argjson slack "$slack_ns" \
    --argjson noise "$noise" '
    [foreach .event_starts_ns[] as $d (0; . + $d)] as $starts
    | [$th[] | . as [$s, $e, $due]
       | select(any($starts[]; . >= $due - 10000 - $slack - $noise and . <= $s + $slack) | not)
       | $s] | first // empty' "$T/window.json")
[[ -z $missing_start ]] || fail "theft at $missing_start is no event start in GetWindow"
jq -e '(.sources | length) as $n
    | (.counts | length) > 0 and (.durations_ns | length) == (.counts | length)
      and (.lost_ns | length) == (.counts | length) and all(.counts[][]; . >= 0)
      and all(.counts[] | to_entries[] | select(.key % 2 == 0); .value < $n)
      and .events_complete_from_ns >= .from_ns' "$T/window.json" > /dev/null \
    || fail "GetWindow's intervals do not line up: $(head -c 600 "$T/window.json")"
pass "GetWindow holds every theft as an event start, and one row of counts per interval"

# GetStats carries reads only: no causes, background or periods (jitterctl works them out), and
# a call that does not say it expects none (an older jitterctl's) is told they moved.
jctl --json call GetStats '{"without_analyses": true, "window": "1m"}' > "$T/plain.json" \
    || fail "GetStats failed"
jq -e '.cpus[0] | has("samples") and (has("causes") or has("background") or has("periods") | not)' \
    "$T/plain.json" > /dev/null || fail "GetStats carries a search result: $(cat "$T/plain.json")"
rc=0
out=$(jctl call GetStats '{"window": "1m"}' 2>&1) || rc=$?
(( rc == 1 )) && [[ $out == *io.jitterd.AnalysesMoved* && $out == *GetWindow* ]] \
    || fail "GetStats without without_analyses: exit $rc, $out"
jctl --json stats --cpu 1 --window 1m > "$T/stats-1m.json" || fail "jitterctl stats failed"
jq -e '.cpus[0] | has("causes") and has("periods")' "$T/stats-1m.json" > /dev/null \
    || fail "jitterctl stats works out no causes or periods: $(cat "$T/stats-1m.json")"
pass "GetStats carries no search result; an older client is told; jitterctl works them out"

# The window holds every theft as an interruption, a gap as long as the longest one the thief
# recorded, and a sample at least every threshold (10 us) outside the time the interruptions
# took (the window's span less lost_ns, both as the daemon's window states them).
jctl --json stats --cpu 1 --window 10s > "$T/stats.json"
longest=$(awk '{ l = $2 - $1; if (l > m) m = l } END { print m + 0 }' "$T/thefts")
jq -e --argjson n "$(wc -l < "$T/thefts")" --argjson longest "$longest" \
    '.cpus[0] | .cpu == 1 and .interruptions.count >= $n and .gap.max_ns >= $longest
     and .samples >= (.to_ns - .from_ns - .lost_ns) / 10000' "$T/stats.json" >/dev/null \
    || fail "stats do not show the thefts (longest $longest ns): $(cat "$T/stats.json")"
jq -e '.cpus[0].interrupts | length > 0' "$T/stats.json" >/dev/null \
    || fail "no interrupt counts in GetStats"
pass "GetStats shows the thefts, samples and interrupt counts"

# A standard window's GetStats entry is written at the harvest and copied by the calls until
# the next one: a call made after 0.6 s (three 200 ms harvests) reads a window that ends at
# least two intervals later than the one read before, for 10s, 1m and all alike.
to_ns() {
    jctl --json call GetStats "{\"without_analyses\": true, \"window\": \"$1\"}" \
        | jq '.cpus[0].to_ns'
}
for w in 10s 1m all; do
    t0=$(to_ns "$w")
    sleep 0.6
    t1=$(to_ns "$w")
    (( t1 - t0 >= 400000000 )) || fail "GetStats $w: the window ended at $t0, then $t1 ns 0.6 s later"
done
pass "GetStats of 10s, 1m and all follows the harvests"

# Restart keeps the history (checkpoint at stop, restore at start).
before=$(jctl --json call io.jitterd.GetStats '{"without_analyses": true, "window": "all"}' | jq '.cpus[0].samples')
stop_daemon || fail "SIGTERM did not exit 0"
grep -q STOPPING=1 "$T/notify.log" || fail "no STOPPING=1"
[[ -s $STATE/history.state ]] || fail "no checkpoint written at stop"
start_daemon
after=$(jctl --json call io.jitterd.GetStats '{"without_analyses": true, "window": "all"}' | jq '.cpus[0].samples')
(( after >= before )) || fail "history lost across restart: $before samples before, $after after"
jctl --json events --cpu 1 --min 250us --limit 10000 | jq -e "length >= 8" >/dev/null || fail "events lost across restart"
pass "restart keeps history ($before samples before, $after after) and events"

# SIGHUP with a broken config: FILE:LINE error, old config kept, still answering.
threshold=$(jctl --json status | jq '.config.threshold_ns')
printf '[probe]\nthreshold = 10xs\n' > "$T/jitterd.conf"
: > "$T/notify.log"
kill -HUP "$DAEMON_PID"
wait_notify RELOADING=1 5 || fail "no RELOADING=1"
wait_notify READY=1 5 || fail "no READY=1 after reload"
grep -q "$T/jitterd.conf:2:" "$T/daemon.log" || fail "reload error without FILE:LINE"
[[ $(jctl --json status | jq '.config.threshold_ns') == "$threshold" ]] \
    || fail "the broken config was applied"
pass "SIGHUP with a broken config logs FILE:LINE and keeps the running config"

# Junk and hostile clients.
"$HOSTILE" "$SOCK" 10 || fail "the daemon stopped answering properly under junk"
kill -0 "$DAEMON_PID" || fail "the daemon died"
jctl status > /dev/null || fail "status fails after junk"
pass "junk and hostile clients leave it answering"

stop_daemon || fail "exit status not 0"
pass "clean stop"
