# jitterctl end to end against the real daemon: every command as a case of command line,
# expected exit status and a pattern its output (stdout and stderr) must match.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/cset.sh"
need_cpu1
# The shield (compare, below) goes first, then lib.sh's cleanup, whatever failed.
trap cset_exit EXIT

cat > "$T/jitterd.conf" <<CONF
[probe]
threshold = 10us
preheat = 300ms
CONF

failures=0

# case RCS PATTERN ARGS...: runs jitterctl on the private socket; RCS is a regular expression
# for the exit status ("0", "0|1"), PATTERN an extended regular expression for the output.
case_() {
    local want=$1 pattern=$2 out rc=0
    shift 2
    out=$("$JITTERCTL" --socket "$SOCK" "$@" 2>&1) || rc=$?
    if [[ ! $rc =~ ^($want)$ ]] || ! grep -Eq -- "$pattern" <<< "$out"; then
        echo "FAIL: jitterctl $* exited $rc (want $want), output /$pattern/:" >&2
        head -30 <<< "$out" >&2
        failures=$((failures + 1))
    else
        echo "ok: jitterctl $*"
    fi
}

start_daemon
# A few intervals, so that windows, timelines and Monitor have something to say.
sleep 2
# READY=1 came after the preheat, so the probe runs. "stalled" (no acknowledged interval for
# two intervals) is what other tasks on CPU 1 can make of it for a moment: the state must be
# "running" within a bounded wait, and the text must then say so.
wait_until 10 eval '[[ $(jctl --json status | jq -r ".probes[0].state") == running ]]' \
    || fail "the probe of CPU 1 is not running 10 s after READY=1: $(jctl --json status | jq -c .probes)"

# Dispatch, usage and help.
case_ 2 'Usage: jitterctl .*COMMAND'
case_ 2 'unknown command "frobnicate"' frobnicate
case_ 0 'Commands:' --help
case_ 0 'Usage: jitterctl stats .*--diffdiff' help stats
case_ 0 '--window W' stats --help
case_ 2 "unrecognized option '--bogus'" stats --bogus
case_ 2 'unexpected argument' status extra
case_ 1 "cannot connect to $T/nowhere: No such file or directory — is jitterd running\\?" \
    --socket "$T/nowhere" status

# status
case_ 0 '^jitterd [0-9.]+, up ' status
case_ 0 'counter: +(tsc|cntvct|clock) at' status
case_ 0 '^ +1  running ' status
case_ 0 '"uptime_ns"' --json status
case_ 0 '"probes"' status --json

# stats
case_ 0 'CPU +Avg +Min +Max +Samples +p99 +p99\.99 +Int/s +Lost %' stats
case_ 0 '^ +1 +[0-9.]+ [nµu]?s ' stats --cpu 1 --window all
case_ 0 'difference of consecutive gaps' stats --diffdiff -w all
case_ 0 '"cpu_available_pct"' --json stats
case_ 1 'invalid window "2x"' stats --window 2x
case_ 1 'no probe on CPU 7' stats --cpu 7
case_ 2 'invalid CPU list' stats --cpu x

# hist
case_ 0 'p50' hist 1
case_ 0 'CPU 1, window all, difference of consecutive gaps' hist 1 --diffdiff --window all
case_ 0 '"buckets"' --json hist 1
case_ 2 'expected one CPU number' hist
case_ 1 'no probe on CPU 7' hist 7

# events: three thefts of 3 ms by a thief make three events of at least that long, so that
# events lists them, and no gap of 10 s or more was ever seen (the worst gap since the start,
# by GetStats, says so), so that --min 10s matches none.
"$THIEF" --cpu 1 --delay 50ms --period 100ms --durations 3ms --count 3 > "$T/thefts" \
    || fail "jitter-thief could not run on CPU 1"
wait_until 10 eval '(( $(jctl --json events --cpu 1 --min 3ms | jq length) >= 3 ))' \
    || fail "the three thefts of 3 ms are not among the events within 10 s"
case_ 0 '^TIME +CPU +DURATION' events --limit 5
case_ 0 '^[0-9-]+ [0-9:.]+ +1 +[0-9.]+ ms' events --min 3ms
n_rows=$(jctl events --min 3ms --limit 2 | grep -cE '^[0-9-]+ [0-9:.]+ +1 ' || true)
(( n_rows == 2 )) || { echo "FAIL: events --limit 2 printed $n_rows rows" >&2; failures=$((failures + 1)); }
jctl --json events --cpu 1 --since 1m > "$T/events.json" \
    && jq -e 'all(.[]; .cpu == 1) and ([.[] | select(.duration_ns >= 3000000)] | length) >= 3' \
        "$T/events.json" > /dev/null \
    || { echo "FAIL: --json events --cpu 1 lacks the thefts" >&2; failures=$((failures + 1)); }
worst_ns=$(jctl --json stats --cpu 1 --window all | jq '.cpus[0].gap.max_ns')
if (( worst_ns < 10000000000 )); then
    case_ 0 '^\(no interruptions recorded that match\)$' events --min 10s
else
    fail "a gap of $worst_ns ns since the start: CPU 1 was taken away for over 10 s"
fi
case_ 2 'invalid duration "1x"' events --min 1x
case_ 2 'invalid limit' events --limit 0

# watch: one line per interval when not on a terminal; JSON lines with --json.
case_ 0 '^[0-9:]+ cpu1 [a-z]+ max .* p99 .* int [0-9]+ lost ' watch --count 2
case_ 0 '^\{"start_ns":' --json watch -n 1
case_ 1 'no probe on CPU 7' watch --cpu 7 --count 1

# report
case_ 0 'DIFF SAMPLE COUNT: [0-9]+' report
case_ 0 'DIFFDIFF STDDEV \(usec\)' report --cpu 1
case_ 0 'COUNTER ROLLOVER SANITY CHECK' report
case_ 0 'GOOD CONFIDENCE' report --window all

# check
case_ 0 '^OK: max gap within 10\.0 s on every CPU' check --max 10s
case_ 1 '^FAIL: CPU 1: max gap .* > 1 ns' check --max 1ns
case_ 0 '^OK: p99\.99 gap within' check --max 10s --percentile 99.99
case_ 1 '^FAIL: CPU 1: p50 gap' check --max 1ns -p p50
case_ 1 '"ok": false' --json check --max 1ns
case_ 2 '--max is required' check
case_ 2 'invalid percentile "101"' check --max 1s -p 101

# snapshot and compare (compare needs no daemon: it runs on files)
# snapshot --output says nothing and writes the file: made now, of this daemon, each part over
# the whole history ("all"), and each histogram complete (its buckets add up to its total).
t0=$(date -u +%s)
out=$("$JITTERCTL" --socket "$SOCK" snapshot --output "$T/a.json" 2>&1) \
    || { echo "FAIL: snapshot --output: $out" >&2; failures=$((failures + 1)); }
t1=$(date -u +%s)
[[ -z $out ]] || { echo "FAIL: snapshot --output printed: $out" >&2; failures=$((failures + 1)); }
jq -e --arg sock "$SOCK" --argjson t0 "$t0" --argjson t1 "$t1" '
       .format == "jitterd-snapshot" and .version == 1 and .socket == $sock
       and (.created | sub("\\.[0-9]+Z$"; "Z") | fromdate | . >= $t0 and . <= $t1)
       and (.cpus | length) == 1 and .cpus[0].cpu == 1
       and (.cpus[0].timeline.points | length) > 0 and (.cpus[0].histogram.buckets | length) > 0
       and .cpus[0].diffdiff_histogram.kind == "diffdiff"
       and all(.cpus[0] | .stats, .histogram, .diffdiff_histogram, .timeline; .window == "all")
       and all(.cpus[0] | .histogram, .diffdiff_histogram;
               .total > 0 and .total == ([.buckets[].count] | add))' "$T/a.json" > /dev/null \
    || { echo "FAIL: snapshot lacks its parts: $(jq -c '{created, socket, cpus: [.cpus[] |
             {cpu, total: .histogram.total, windows: [.[].window?]}]}' "$T/a.json")" >&2
         failures=$((failures + 1)); }
sleep 1
"$JITTERCTL" --socket "$SOCK" snapshot > "$T/b.json" \
    || { echo "FAIL: snapshot to stdout" >&2; failures=$((failures + 1)); }
case_ 0 'not significant' compare "$T/a.json" "$T/a.json"
case_ 0 'Mann-Whitney U = [0-9.]+, z = -?[0-9.]+, p = ' compare "$T/a.json" "$T/b.json"
case_ 0 'n +[0-9]+ +[0-9]+' compare "$T/a.json" "$T/b.json"
case_ 0 '"significant": false' --json compare "$T/a.json" "$T/a.json"
# compare against a change the test makes: CPU 1 shielded with cset (other tasks off it for
# the while), the history Reset, a snapshot q of the quiet CPU, then a theft in every interval,
# twice as long as the worst gap of 80 % of q's intervals (at least 5 ms), and a snapshot c.
# The worst gap of each interval with a theft is then above those of 80 % of q's, so the
# Mann-Whitney test must find "after" higher, significantly. A q spoilt by noise all the same
# (a theft of over 60 ms would be needed) is taken again, three times at most, then it fails.
p80() {
    jq '[.cpus[0].timeline.points[] | select(.max_gap_ns > 0) | .max_gap_ns] | sort
        | .[(length * 0.8 | floor)]' "$1"
}
if cset_usable; then
    cset_shield 1
    jctl call Reset '{}' > /dev/null || fail "Reset"
    for try in 1 2 3; do
        sleep 4
        jctl snapshot --output "$T/q.json" || fail "snapshot --output"
        theft_ns=$(( $(p80 "$T/q.json") * 2 ))
        (( theft_ns >= 5000000 )) || theft_ns=5000000
        (( theft_ns > 60000000 )) || break
        (( try < 3 )) || fail "with CPU 1 shielded, 20 % of the intervals of three snapshots" \
            "had a gap above $(( theft_ns / 2000000 )) ms: too noisy to compare"
        echo "snapshot q spoilt by noise (p80 of its worst gaps $(p80 "$T/q.json") ns): again"
    done
    echo "thefts of $theft_ns ns against snapshot q"
    "$THIEF" --cpu 1 --delay 50ms --period 100ms --durations "$((theft_ns / 1000))us" \
        --count 60 > /dev/null || fail "jitter-thief could not run on CPU 1"
    sleep 0.5
    jctl snapshot > "$T/c.json" || fail "snapshot after the thefts"
    cset_unshield
    n_q=$(jq '.cpus[0].timeline.points | length' "$T/q.json")
    n_high=$(jq --argjson t "$theft_ns" \
        '[.cpus[0].timeline.points[] | select(.max_gap_ns >= $t)] | length' "$T/c.json")
    (( n_high >= 20 && n_q >= 15 )) \
        || fail "the timelines hold $n_q quiet intervals and $n_high with a theft: too few"
    "$JITTERCTL" --json compare "$T/q.json" "$T/c.json" > "$T/qc.json" || fail "compare --json"
    jq -e '.cpus[0].mann_whitney.significant == true and .cpus[0].mann_whitney.z < 0' \
        "$T/qc.json" > /dev/null \
        || { echo "FAIL: compare does not find the intervals with thefts higher," \
                  "significantly: $(jq -c '.cpus[0] | {mann_whitney, interval_worst_gaps}' \
                  "$T/qc.json")" >&2
             failures=$((failures + 1)); }
    case_ 0 'significant.*after is higher' compare "$T/q.json" "$T/c.json"
else
    skip_part "compare of a quiet CPU 1 with one under thefts" "$CSET_WHY"
fi
case_ 1 'cannot read' compare "$T/a.json" "$T/missing.json"
echo '{"cpus": []}' > "$T/other.json"
case_ 1 'not a jitterctl snapshot' compare "$T/a.json" "$T/other.json"
case_ 2 'expected two snapshot files' compare "$T/a.json"

# plot
case_ 0 '^$' plot --svg "$T/p.svg"
case_ 0 '^$' plot --svg "$T/q.svg" --snapshot "$T/a.json" --cpu 1
case_ 2 '--svg FILE is required' plot
for f in "$T/p.svg" "$T/q.svg"; do
    grep -q '</svg>' "$f" || { echo "FAIL: $f is not a whole SVG" >&2; failures=$((failures + 1)); }
    if grep -Eq '<script|href' "$f"; then
        echo "FAIL: $f is not self-contained" >&2
        failures=$((failures + 1))
    fi
    if command -v xmllint > /dev/null; then
        xmllint --noout "$f" \
            || { echo "FAIL: $f is not well-formed" >&2; failures=$((failures + 1)); }
    else
        skip_part "$f well-formed" "no xmllint (libxml2-utils) here"
    fi
done

# audit: from the daemon, and locally on the tuned fixture tree. Where nothing is isolated
# (this machine's cpuset, kernel command line and isolcpus list say so), the daemon's CPU 1
# is not isolated, a warning: exit 1.
if [[ -z $(cat /sys/devices/system/cpu/isolated 2>/dev/null) ]] \
    && ! grep -q 'isolcpus=' /proc/cmdline && [[ ! -s /sys/fs/cgroup/cpuset.cpus.isolated ]]
then
    case_ 1 '^warning +isolcpus +1 +no isolcpus=; isolated: none$' audit
else
    skip_part "jitterctl audit of an untuned CPU 1" "CPUs are isolated on this machine"
fi
case_ 0 'ok +isolcpus +2 ' audit --root "$SOURCE_DIR/test/audit/base" --cpus 2-3
case_ 0 '"findings"' --json audit --root "$SOURCE_DIR/test/audit/base" --cpus 2
case_ 2 'invalid CPU list' audit --cpus x

# call
case_ 0 '"version"' call GetStatus
case_ 0 '"interfaces"' call org.varlink.service.GetInfo
case_ 0 '"window": "10s"' call GetStats '{"without_analyses": true, "window": "10s"}'
case_ 1 'InvalidParameter' call GetStats '{"bogus": 1}'
case_ 2 'must be a JSON object' call GetStats '[1]'
# A method the real daemon lacks: its MethodNotFound names it (e2e-jitterctl-older has every
# command against a daemon that lacks what they call).
case_ 1 '^jitterctl: io\.jitterd\.Frobnicate: org\.varlink\.service\.MethodNotFound \{"method": ?"io\.jitterd\.Frobnicate"\}$' \
    call io.jitterd.Frobnicate

# explain: this daemon's trace is off ([trace] enabled defaults to no), so explain gives the
# least-squares estimate alone, in full, said to be statistical, with how to turn the trace on.
# The fit needs 60 intervals (of 200 ms here) after the Reset above: explain is asked again
# until it has them, 15 s at most.
explain_fit() {
    jctl explain --window all --cpu 1 > "$T/explain.txt" 2>&1 &&
        grep -Eq '^  COUNTER +LEAST SQUARES +\+-$' "$T/explain.txt"
}
deadline=$((SECONDS + 15))
until explain_fit; do
    if ((SECONDS >= deadline)); then
        echo "FAIL: jitterctl explain with the trace off has no least-squares table within 15 s:" >&2
        cat "$T/explain.txt" >&2
        failures=$((failures + 1))
        break
    fi
    sleep 0.5
done
cat "$T/explain.txt"
case_ 0 '^the trace is off: these are statistical estimates .*\[trace\] enabled = yes' \
    explain --window all --cpu 1
case_ 0 '^CPU 1, window all: time lost [^,]+, [^ ]+ interruptions$' explain --window all --cpu 1
case_ 0 '^  background +-?[0-9.]+ % +([0-9.]+ %|\?) +\(no counter moves with it\)$' \
    explain --window all --cpu 1
case_ 0 '"trace": "off"' --json explain
case_ 0 '"estimate": \[' --json explain --cpu 1

# No colour when the output is not a terminal.
if "$JITTERCTL" --socket "$SOCK" stats | grep -q $'\033'; then
    echo "FAIL: colour escapes in piped output" >&2
    failures=$((failures + 1))
fi

(( failures == 0 )) || fail "$failures jitterctl cases failed"
pass "all jitterctl cases"
