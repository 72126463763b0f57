# The trace kept around long interruptions end to end: jitterd with [trace] keep_above = 1ms on
# CPU 1 and a SCHED_FIFO jitter-thief taking 3 ms and 300 us there, 200 ms apart.
# 1. Every theft of 3 ms has exactly one capture (GetCaptures) whose window covers its
#    interruption from 10 ms before to 10 ms after, all of the capture's records lie in that
#    window, and among them is the switch to the thief (sched_switch jitter-thief:PID) inside
#    the interruption. No theft of 300 us whose interruption is 1 ms or shorter is in a
#    capture. Captures of interruptions the test did not make are allowed only where GetEvents
#    has that interruption, longer than 1 ms: this VM is noisy.
# 2. `jitterctl events --records` prints the timeline of a theft: its heading and the thief's
#    switch near +0.
# 3. Bounds: with keep_per_minute = 3, six thefts of 3 ms within a second leave exactly 3
#    captures written and the others counted as skipped (GetStatus trace.captures), one file
#    each; captures found at start beyond keep_max_size are removed oldest first.
source "$(dirname "$0")/lib.sh"
need_cpu1
command -v jq > /dev/null || fail "needs jq (tools/dev/deps test)"
command -v taskset > /dev/null || fail "needs taskset (util-linux)"

need_tracefs

MS=1000000
KEEP_ABOVE=$((1 * MS))
MARGIN=$((10 * MS))

# write_conf PER_MINUTE [MAX_SIZE]
write_conf() {
    cat > "$T/jitterd.conf" <<CONF
[probe]
threshold = 10us
preheat = 300ms
[trace]
enabled = yes
keep_above = 1ms
keep_per_minute = $1
keep_max_size = ${2:-64MiB}
CONF
}

write_conf 60
start_daemon
[[ $(jctl --json status | jq -r .trace.state) == recording ]] || skip "the trace does not record here"
[[ $(jctl --json status | jq .trace.captures.keep_above_ns) == "$KEEP_ABOVE" ]] \
    || fail "GetStatus trace.captures.keep_above_ns is not 1 ms"

# The test and what it starts stay on CPU 0; the thief pins its own thread.
ALLOWED=$(taskset -cp $$ | sed 's/.*: //')
taskset -cp 0 $$ > /dev/null || fail "cannot keep the test on CPU 0"

# steal DURATIONS COUNT PERIOD: thefts on CPU 1 from 300 ms on, recorded in $T/thefts
# ("START END DUE", CLOCK_MONOTONIC ns); the thief's pid in $thief.
steal() {
    "$THIEF" --cpu 1 --delay 300ms --period "$3" --durations "$1" --count "$2" --due \
        > "$T/thefts" &
    thief=$!
    CLEANUP_PIDS+=("$thief")
    wait "$thief" || fail "jitter-thief failed"
    (( $(wc -l < "$T/thefts") == $2 )) || fail "jitter-thief reported $(wc -l < "$T/thefts") thefts"
}

# in_events START END: GetEvents has an interruption over [START, END], to the clocks' slack.
in_events() {
    jctl --json events --limit 10000 | jq -e --argjson s "$1" --argjson e "$2" --argjson k "$slack_ns" '
        any(.[]; .start_ns <= $s + $k and .start_ns + .duration_ns + $k >= $e)' > /dev/null
}

# captured START END: GetCaptures has a capture with an interruption over [START, END], to the
# clocks' slack.
captured() {
    jctl --json call GetCaptures '{"limit": 100}' > "$T/captures.json" 2> /dev/null || return 1
    jq -e --argjson s "$1" --argjson e "$2" --argjson k "$slack_ns" '
        any(.captures[].interruptions[]; .start_ns <= $s + $k
            and .start_ns + .duration_ns + $k >= $e)' "$T/captures.json" > /dev/null
}

# --- 1. captures exactly for the interruptions above keep_above ---
steal 3ms,300us 10 200ms
# How far the daemon's times (of its events and of the trace's records, each mapped from the
# counter in its interval) may lie from the thief's CLOCK_MONOTONIC, and from each other.
slack_ns=$(clock_slack_ns)
read -r start end _ < <(awk '($2 - $1) > 1000000' "$T/thefts" | tail -1)
# The capture of the last long theft is written once a trace read reaches 10 ms past its end:
# at the next harvest (200 ms) at the latest.
wait_until 10 captured "$start" "$end" || fail "the last theft of 3 ms has no capture in 10 s"
read -r start end _ < <(tail -1 "$T/thefts")
wait_until 10 in_events "$start" "$end" || fail "the last theft is not in GetEvents in 10 s"
# The captures taken and the events seen up to the end of the thefts, at the same time.
jctl --json call GetCaptures '{"limit": 100}' > "$T/captures.json"
jctl --json events --limit 10000 > "$T/events.json"
jq -e '.truncated == false' "$T/captures.json" > /dev/null || fail "GetCaptures truncated"
long=0 short=0
while read -r start end due; do
    # The interruption of GetEvents over the theft, and the captures that name it.
    ev=$(jq -c --argjson s "$start" --argjson e "$end" --argjson k "$slack_ns" '
        [.[] | select(.cpu == 1 and .start_ns <= $s + $k
                      and .start_ns + .duration_ns + $k >= $e)] | first' "$T/events.json")
    [[ $ev != null ]] || fail "the theft [$start, $end] has no interruption in GetEvents"
    evs=$(jq .start_ns <<< "$ev")
    evd=$(jq .duration_ns <<< "$ev")
    n=$(jq --argjson s "$evs" '[.captures[] | select(any(.interruptions[]; .cpu == 1
                                                          and .start_ns == $s))] | length' \
        "$T/captures.json")
    if (( end - start > KEEP_ABOVE )); then
        long=$((long + 1))
        (( n == 1 )) || fail "the theft of $((end - start)) ns at $start is in $n captures"
        got=$(jq -r --argjson s "$evs" --argjson d "$evd" --argjson m "$MARGIN" \
            --argjson k "$slack_ns" --arg task "jitter-thief:$thief" '
            .captures[] | select(any(.interruptions[]; .start_ns == $s)) as $c
            | [(.from_ns <= $s - $m), (.to_ns >= $s + $d + $m),
               all(.records[]; .ns >= $c.from_ns and .ns < $c.to_ns),
               any(.records[]; .kind == "sched_switch" and .name == $task
                               and .ns >= $s - $k and .ns <= $s + $d + $k),
               .complete] | map(tostring) | join(" ")' "$T/captures.json")
        [[ $got == "true true true true true" ]] ||
            fail "the capture of the theft at $start (interruption $evs + $evd ns):" \
                "[from <= start - 10ms, to >= end + 10ms, records inside, thief's switch" \
                "inside (slack $slack_ns ns), complete] = [$got]; the thief's switches in it:" \
                "$(jq -c --argjson s "$evs" --arg task "jitter-thief:$thief" '[.captures[]
                    | select(any(.interruptions[]; .start_ns == $s)) | .records[]
                    | select(.kind == "sched_switch" and .name == $task) | .ns - $s]' \
                    "$T/captures.json")"
    else
        short=$((short + 1))
        # Noise that merged with the theft into an interruption above 1 ms is captured rightly.
        if (( evd <= KEEP_ABOVE )); then
            (( n == 0 )) || fail "the theft of $((end - start)) ns (interruption $evd ns) is captured"
        fi
    fi
done < "$T/thefts"
(( long == 5 && short == 5 )) || fail "expected 5 long and 5 short thefts, got $long and $short"
# Every interruption of every capture is one GetEvents has, longer than keep_above.
bad=$(jq -n --slurpfile c "$T/captures.json" --slurpfile e "$T/events.json" --argjson k "$KEEP_ABOVE" '
    [$c[0].captures[].interruptions[] | . as $i
     | select(($e[0] | any(.[]; .cpu == $i.cpu and .start_ns == $i.start_ns
                                and .duration_ns == $i.duration_ns and .duration_ns > $k)) | not)]
    | length')
(( bad == 0 )) || fail "$bad captured interruptions are not interruptions above 1 ms in GetEvents"
extra=$(jq '[.captures[].interruptions[]] | length' "$T/captures.json")
pass "captures: each of 5 thefts of 3 ms in exactly one, ±10 ms, with the thief's switch;" \
    "no theft of 300 us; $((extra - 5)) other interruptions captured, each one of GetEvents"

# --- 2. the timeline ---
read -r start end _ < <(awk '($2 - $1) > 1000000' "$T/thefts" | tail -1)
jctl events --records --limit 100 > "$T/records.txt"
grep -Eq '^CPU 1 interrupted for 3\.[0-9]+ ms, capture ' "$T/records.txt" \
    || { cat "$T/records.txt"; fail "events --records has no heading of a 3 ms interruption"; }
grep -Eq "^ +\+[0-9.]+ (ns|us|µs) +1 +sched_switch +jitter-thief:$thief " "$T/records.txt" \
    || { cat "$T/records.txt"; fail "events --records does not show the thief's switch near +0"; }
grep -q 'OFFSET.*CPU.*KIND.*NAME.*DURATION' "$T/records.txt" || fail "events --records has no header"
pass "jitterctl events --records: $(grep -c '^CPU 1 interrupted' "$T/records.txt") timelines," \
    "the thief's switch in them"
stop_daemon || fail "the daemon did not stop cleanly"
taskset -cp "$ALLOWED" $$ > /dev/null || fail "cannot give the test its CPUs back"

# --- 3. the bounds ---
# Three captures of an earlier run of 600 KiB each, over keep_max_size = 1MiB: the two oldest
# go at start. Then 3 captures a minute, and six thefts in one second.
rm -f "$STATE"/captures/capture-*.json
for k in 1 2 3; do
    head -c 614400 /dev/zero > "$STATE/captures/capture-0000000000000000000$k.json"
done
write_conf 3 1MiB
start_daemon
[[ ! -e $STATE/captures/capture-00000000000000000001.json &&
   ! -e $STATE/captures/capture-00000000000000000002.json &&
   -e $STATE/captures/capture-00000000000000000003.json ]] ||
    { ls -l "$STATE/captures"; fail "the oldest captures beyond keep_max_size are not removed first"; }
taskset -cp 0 $$ > /dev/null || fail "cannot keep the test on CPU 0"
steal 3ms 6 150ms
read -r start end _ < <(tail -1 "$T/thefts")
# All six noted and done: the last one's window is past and written or skipped.
settled() {
    jctl --json status > "$T/status.json" || return 1
    jq -e '.trace.captures | .written + .skipped >= 6 and .written >= 3' "$T/status.json" \
        > /dev/null || return 1
    in_events "$start" "$end"
}
wait_until 10 settled || { cat "$T/status.json"; fail "the six thefts are not all taken in 10 s"; }
sleep 0.5
jctl --json status > "$T/status.json"
written=$(jq .trace.captures.written "$T/status.json")
skipped=$(jq .trace.captures.skipped "$T/status.json")
# The files: the one left of the earlier run, and those written.
files=$(find "$STATE/captures" -name 'capture-*.json' | wc -l)
(( written == 3 )) || fail "$written captures written within a minute, keep_per_minute = 3"
(( skipped >= 3 )) || fail "only $skipped captures skipped of six thefts and 3 written"
(( files == 4 )) || fail "$files capture files, 1 of the earlier run and 3 written"
[[ $(jq .trace.captures.kept "$T/status.json") == 4 ]] || fail "GetStatus kept is not 4"
jctl status | grep -Eq "^ +captures above 1(\.0+)? ms: 4 kept \([0-9]+ KiB\), 3 written and [0-9]+ skipped" \
    || { jctl status; fail "jitterctl status does not show the captures"; }
pass "bounds: 3 written in the minute, $skipped skipped, 3 files beside the 1 left of the earlier run, whose oldest 2 were removed at start"
stop_daemon || fail "the daemon did not stop cleanly"
