# jitterctl against ground truth: a SCHED_FIFO thief takes known durations from CPU 1 at known
# times, and every command must show them: stats (JSON and text, in the right unit), events
# (each theft at its time, CPU and at least its duration, text and JSON), hist (a row holding
# each theft's gap), report, check, status. Also: --help for every command without a daemon,
# each command and option in the manual page and the bash completion, usage on an unknown
# command, and the daemon's NoSuchCpu for a CPU that exists but is not probed.
# Each event is bounded from both sides by the thief's record (THEFT_JQ in lib.sh).
source "$(dirname "$0")/lib.sh"
need_cpu1
command -v jq > /dev/null || fail "needs jq (tools/dev/deps test)"

cat > "$T/jitterd.conf" <<CONF
[probe]
threshold = 10us
preheat = 300ms
CONF

MAN=$SOURCE_DIR/tools/jitterctl/jitterctl.1
COMPLETION=$SOURCE_DIR/tools/jitterctl/jitterctl.bash-completion
failures=0
bad() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# to_ns "12.3 ms": a time as jitterctl prints it, in ns ("us" is the ASCII spelling of "µs").
to_ns() {
    awk -v v="$1" -v u="$2" 'BEGIN {
        s["ns"] = 1; s["us"] = 1e3; s["µs"] = 1e3; s["ms"] = 1e6; s["s"] = 1e9
        if (!(u in s) || v !~ /^-?[0-9]+(\.[0-9]+)?$/) { print "NaN"; exit 1 }
        printf "%.0f\n", v * s[u] }'
}
# ge A B / le A B: A >= B (A <= B) within the rounding of three significant digits (0.6 %).
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "NaN" && a * 1.006 >= b) }'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "NaN" && a <= b * 1.006) }'; }

# ---- Without a daemon: help, manual page, completion, usage.
NOWHERE=$T/nowhere
mapfile -t commands < <("$JITTERCTL" --help | sed -n '/^Commands:/,/^$/p' | awk 'NF > 1 { print $1 }')
(( ${#commands[@]} >= 10 )) || fail "cannot read the commands from jitterctl --help"

# The completion, run as bash would: COMP_WORDS in, COMPREPLY out. The stubs stand in for the
# bash-completion package; they set _jitterctl's locals.
# shellcheck disable=SC2034
_init_completion() {
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
    cur=${words[cword]}
    prev=${words[cword - 1]}
}
_filedir() { COMPREPLY=(); }
complete() { :; }
# shellcheck source=/dev/null
source "$COMPLETION"
complete_words() {
    COMP_WORDS=("$@")
    COMP_CWORD=$(($# - 1))
    COMPREPLY=()
    _jitterctl
    printf '%s\n' "${COMPREPLY[@]}"
}
top_level=$(complete_words jitterctl "")

for cmd in "${commands[@]}"; do
    rc=0
    out=$("$JITTERCTL" --socket "$NOWHERE" "$cmd" --help 2>&1) || rc=$?
    if (( rc != 0 )) || ! grep -q "^Usage: jitterctl $cmd" <<< "$out"; then
        bad "jitterctl $cmd --help exited $rc without needing a daemon: $(head -3 <<< "$out")"
        continue
    fi
    rc=0
    "$JITTERCTL" help "$cmd" > /dev/null 2>&1 || rc=$?
    (( rc == 0 )) || bad "jitterctl help $cmd exited $rc"
    grep -qx -- "$cmd" <<< "$top_level" || bad "the bash completion does not offer \"$cmd\""
    # The command's section of the manual page: from its .SS line to the next .SS or .SH.
    section=$(awk -v c="$cmd" '/^\.SH COMMANDS/ { in_cmds = 1; next }
                               on && /^\.(SS|SH)/ { exit }
                               in_cmds && $1 == ".SS" && $2 == c { on = 1 }
                               on' "$MAN")
    [[ -n $section ]] || bad "the manual page does not describe \"$cmd\""
    offered=$(complete_words jitterctl "$cmd" "--")
    for opt in $offered; do
        grep -qE -- "(^| )$opt( |,|$)" <<< "$out" \
            || bad "the bash completion offers $cmd $opt, which $cmd --help does not list"
    done
    for opt in $(grep -oE -- '--[a-z][a-z-]*' <<< "$out" | sort -u); do
        grep -qx -- "$opt" <<< "$offered" || bad "the bash completion does not offer $cmd $opt"
        case $opt in
            --socket | --json | --no-color | --timeout | --help) continue ;;
        esac
        grep -qF -- "${opt//-/\\-}" <<< "$section" \
            || bad "the manual page does not describe $cmd $opt"
    done
done
pass "--help for every command (${commands[*]}) without a daemon; manual page and completion"

rc=0
out=$("$JITTERCTL" --socket "$NOWHERE" frobnicate 2>&1) || rc=$?
(( rc == 2 )) && grep -q '^Usage: jitterctl ' <<< "$out" && grep -q '^Commands:' <<< "$out" \
    || bad "an unknown command exited $rc without the usage: $(head -3 <<< "$out")"
pass "unknown command: exit 2 with the usage"

# ---- The daemon and the thefts.
start_daemon
sleep 1

N=9
# An event placed at the wrong time by more than the clocks' measured drift explains (a wrong
# frequency, a stale mapping) no longer matches its theft.
slack_ns=$(clock_slack_ns)
echo "events must match their thefts within $slack_ns ns and what the thief measured"

# Each theft and the event that is it (THEFT_JQ: bounded from both sides): "LENGTH REALTIME
# DURATION_NS", or "missing START LENGTH".
covered() {
    jq -r --argjson th "$thefts_json" --argjson slack "$slack_ns" --argjson noise "$noise" \
        "$THEFT_JQ"'
        . as $ev | $th[] | . as [$s, $e, $due]
        | ([$ev[] | select(.cpu == 1 and is_theft($s; $e; $due; $slack; $noise))] | first) as $m
        | if $m == null then "missing \($s) \($e - $s)"
          else "\($e - $s) \($m.realtime) \($m.duration_ns)" end' "$1"
}
# A round of thefts, and the events once every theft has been harvested (an interval or two;
# longer when CPU 1 is busy). A theft that other tasks on CPU 1 merged with their own time is
# no longer bounded by the thief's record: that round is run again, three rounds at most.
for round in 1 2 3; do
    noise=$(noise_ns)
    "$THIEF" --cpu 1 --delay 300ms --period 150ms --durations 300us,700us,1200us --count $N \
        --due > "$T/thefts" || fail "jitter-thief failed"
    (( $(wc -l < "$T/thefts") == N )) || fail "jitter-thief reported $(wc -l < "$T/thefts") thefts"
    maxlen=$(awk '{ l = $2 - $1; if (l > m) m = l } END { print m }' "$T/thefts")
    thefts_json=$(thefts_json "$T/thefts")
    for _ in $(seq 20); do
        sleep 0.3
        jctl --json events --cpu 1 --since 1m --min 250us --limit 10000 > "$T/events.json" \
            || fail "events --json"
        covered "$T/events.json" > "$T/covered"
        grep -q '^missing' "$T/covered" || break
    done
    grep -q '^missing' "$T/covered" || break
    echo "round $round: $(grep -c '^missing' "$T/covered") of $N thefts without an event that is" \
         "them (noise $noise ns before them)"
done
if grep -q '^missing' "$T/covered"; then
    while read -r _ s len; do
        echo "theft at $s ($len ns): events around it:" >&2
        jq -c --argjson s "$s" '.[] | select(.start_ns > $s - 2000000000 and .start_ns < $s + 2000000000)' \
            "$T/events.json" >&2
    done < <(grep '^missing' "$T/covered")
    jctl --json status | jq -c '.probes' >&2
    fail "thefts not among the events, bounded from both sides, in three rounds"
fi
pass "events --json: each of the $N thefts an event, bounded from both sides"

# stats --json: the max gap and the count of interruptions.
jctl --json stats --cpu 1 > "$T/stats.json" || fail "stats --json"
jq -e --argjson max "$maxlen" --argjson n $N \
    '.cpus[0].cpu == 1 and .cpus[0].gap.max_ns >= $max and .cpus[0].interruptions.count >= $n' \
    "$T/stats.json" > /dev/null \
    || bad "stats --json does not show the thefts: $(jq -c '.cpus[0] | {cpu, gap, interruptions}' "$T/stats.json")"
pass "stats --json: max >= $maxlen ns, interruptions >= $N"

# stats in text: the max the JSON says, in the right unit with three significant digits. Window
# all only grows, so the text lies between two JSON calls around it.
before=$(jctl --json stats --cpu 1 --window all | jq '.cpus[0].gap.max_ns')
jctl stats --cpu 1 --window all > "$T/stats.txt" || fail "stats"
after=$(jctl --json stats --cpu 1 --window all | jq '.cpus[0].gap.max_ns')
read -r value unit < <(awk '$1 == "1" && NF >= 8 { print $6, $7; exit }' "$T/stats.txt") || true
max_text=$(to_ns "${value:-x}" "${unit:-x}") || true
if ! [[ $unit =~ ^(ms|s)$ ]] || ! ge "$max_text" "$before" || ! le "$max_text" "$after" \
    || ! [[ $value =~ ^([1-9][0-9][0-9]|[1-9][0-9]\.[0-9]|[1-9]\.[0-9][0-9])$ ]]; then
    bad "stats shows max \"$value $unit\", JSON says $before .. $after ns:"
    cat "$T/stats.txt" >&2
fi
pass "stats: max \"$value $unit\" (JSON $before .. $after ns)"

# events in text: each covering event at its local time, on CPU 1, with its duration. Asked
# since the daemon started: the checks above may take more than a minute where the analyses of
# stats get little of a busy CPU 0.
jctl events --cpu 1 --since 1h --min 250us > "$T/events.txt" || fail "events"
while read -r len realtime dur; do
    when=$(date -d "$realtime" '+%Y-%m-%d %H:%M:%S.%6N')
    row=$(grep -F -- "$when" "$T/events.txt" || true)
    read -r _ _ cpu v u <<< "$row"
    ns=$(to_ns "${v:-x}" "${u:-x}") || true
    if [[ $cpu != 1 ]] || ! ge "$ns" "$dur" || ! le "$ns" "$dur" || ! ge "$ns" "$len"; then
        bad "events: the theft of $len ns is not shown as $when, CPU 1, $dur ns: \"$row\""
    fi
done < "$T/covered"
pass "events: each theft at its local time, CPU 1 and at least its duration"

# hist: each theft's gap falls in a row (low .. high) that counts it.
jctl hist 1 --window all > "$T/hist.txt" || fail "hist 1"
before=$failures
while read -r len _ dur; do
    found=0
    while read -r line; do
        if [[ $line =~ ^\ *([0-9.]+)\ ([^ ]+)\ \.\.\ +([0-9.]+)\ ([^ ]+)\ +([0-9]+)\  ]]; then
            lo=$(to_ns "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}") || continue
            hi=$(to_ns "${BASH_REMATCH[3]}" "${BASH_REMATCH[4]}") || continue
            if ge "$dur" "$lo" && le "$dur" "$hi" && (( BASH_REMATCH[5] >= 1 )); then
                found=1
                break
            fi
        fi
    done < "$T/hist.txt"
    (( found )) || bad "hist 1: no row holds the gap of $dur ns (theft of $len ns)"
done < "$T/covered"
(( failures == before )) || cat "$T/hist.txt" >&2
pass "hist 1: a row for the gap of each theft"

# report: DIFF MAX and the interruptions.
jctl report --cpu 1 > "$T/report.txt" || fail "report"
diff_max=$(awk '$1 == "DIFF" && $2 == "MAX" { print $4 }' "$T/report.txt")
count=$(awk '/^INTERRUPTIONS/ { on = 1 } on && $1 == "COUNT:" { print $2; exit }' "$T/report.txt")
if ! awk -v v="${diff_max:-0}" -v m="$maxlen" 'BEGIN { exit !(v * 1000 >= m) }' \
    || (( ${count:-0} < N )); then
    bad "report: DIFF MAX (usec) \"$diff_max\", COUNT \"$count\", want >= $maxlen ns and $N"
fi
pass "report: DIFF MAX $diff_max us, $count interruptions"

# check: above 500 us (naming CPU 1 and a max of at least the longest theft), within 10 s.
rc=0
out=$(jctl check --max 500us) || rc=$?
read -r v u < <(sed -nE 's/^FAIL: CPU 1: max gap ([0-9.]+) ([^ ]+) > 500 (µs|us)$/\1 \2/p' <<< "$out") || true
if (( rc != 1 )) || ! ge "$(to_ns "${v:-x}" "${u:-x}" || true)" "$maxlen"; then
    bad "check --max 500us exited $rc: $out"
fi
rc=0
out=$(jctl check --max 10s) || rc=$?
(( rc == 0 )) && grep -q '^OK: max gap within 10.0 s on every CPU (worst .* on CPU 1, ' <<< "$out" \
    || bad "check --max 10s exited $rc: $out"
pass "check: exit 1 naming CPU 1 above 500 us, exit 0 within 10 s"

# status: the worst gap of the last minute.
jctl status > "$T/status.txt" || fail "status"
read -r v u < <(sed -E "s/ +(none|isolcpus=|v1 shield .*|v2 partition .*)\$//" "$T/status.txt" \
    | awk '$1 == "1" && NF >= 7 { print $(NF - 1), $NF; exit }') || true
ge "$(to_ns "${v:-x}" "${u:-x}" || true)" "$maxlen" \
    || bad "status: worst gap of the last minute \"$v $u\" < $maxlen ns: $(cat "$T/status.txt")"
jctl --json status | jq -e --argjson m "$maxlen" '.probes[0].worst_gap_1m_ns >= $m' > /dev/null \
    || bad "status --json: worst_gap_1m_ns below $maxlen"
pass "status: worst gap of the last minute $v $u"

# A CPU that exists but is not probed: the daemon's NoSuchCpu, readable, exit 1, no file left.
for args in "stats --cpu 0" "hist 0" "events --cpu 0" "check --max 1s --cpu 0" \
    "report --cpu 0" "watch --cpu 0 --count 1" "plot --svg $T/cpu0.svg --cpu 0"; do
    rc=0
    # shellcheck disable=SC2086
    out=$(jctl $args 2>&1) || rc=$?
    (( rc == 1 )) && [[ $out == "jitterctl: no probe on CPU 0" ]] \
        || bad "jitterctl $args exited $rc: $out"
done
[[ ! -e $T/cpu0.svg ]] || bad "plot --cpu 0 left a file behind"
pass "a CPU that is not probed: \"no probe on CPU 0\", exit 1"

(( failures == 0 )) || fail "$failures checks failed"
stop_daemon || fail "the daemon did not exit 0"
pass "all"
