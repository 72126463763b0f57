# Reloads (SIGHUP) that change [probe] and [export], each checked from outside the daemon:
#   - threshold: a thief's thefts below the new threshold are no longer events, those above are,
#     and no event shorter than the threshold is recorded after the reload;
#   - a bad value: the running configuration stays (the same thefts judged as before);
#   - priority: the kernel's scheduling policy of the new probe thread (chrt), from a start with
#     a priority (a daemon started with priority 0 has dropped CAP_SYS_NICE);
#   - counter: kept until the next start (the history counts in its ticks), said so; then the
#     clock counter measures a theft at its length;
#   - priority the daemon cannot get (no CAP_SYS_NICE, RLIMIT_RTPRIO 0): the new probes cannot
#     start, the previous ones run again (SCHED_OTHER, measuring);
#   - the Prometheus textfile path: the new file written every interval, the old one no more;
#   - a reload during the preheat starts the preheat anew; SIGTERM during the preheat stops at
#     once, without READY=1;
#   - jitterctl reload (systemd's ExecReload=): it returns once the reload is over (the new
#     probe preheated and running, READY=1 sent), and fails by file and line on a bad value.
source "$(dirname "$0")/lib.sh"
need_cpu1
for tool in jq chrt setpriv prlimit; do
    command -v "$tool" > /dev/null || fail "needs $tool (tools/dev/deps test)"
done

# conf LINES...: the configuration file, [probe] first.
conf() { printf '%s\n' "$@" > "$T/jitterd.conf"; }
n_ready() { grep -cx 'READY=1' "$T/notify.log" || true; }
# reload: SIGHUP, then READY=1 after RELOADING=1 within 20 s.
reload() {
    local before_hup
    before_hup=$(n_ready)
    kill -HUP "$DAEMON_PID"
    wait_until 20 eval '(( $(n_ready) > before_hup ))' || fail "no READY=1 within 20 s of the reload"
    grep -qx 'RELOADING=1' "$T/notify.log" || fail "no RELOADING=1 before READY=1"
}
mono_ns() { "$THIEF" --now; }
# probe_tid: the daemon's one thread allowed on CPU 1 alone.
probe_tid() {
    local t tids=()
    for t in /proc/"$DAEMON_PID"/task/*; do
        [[ $(awk '$1 == "Cpus_allowed_list:" { print $2 }' "$t/status" 2>/dev/null) == 1 ]] \
            && tids+=("${t##*/}")
    done
    (( ${#tids[@]} == 1 )) || fail "${#tids[@]} threads of jitterd pinned to CPU 1, not one"
    echo "${tids[0]}"
}
# policy TID: "SCHED_OTHER 0" or "SCHED_FIFO 10", as the kernel has it.
policy() {
    chrt -p "$1" | awk -F': ' '/policy/ { p = $2 } /priority/ { print p, $2 }'
}
# events_since MONO_NS: the events of CPU 1 that started after that CLOCK_MONOTONIC time.
events_since() {
    jctl --json events --cpu 1 --since 1m --limit 10000 | jq -c --argjson t "$1" '[.[] | select(.start_ns >= $t)]'
}
# thefts DURATION COUNT: COUNT thefts of DURATION, 100 ms apart; their record in $T/thefts,
# the worst gap of the 10 s before them in $noise.
thefts() {
    noise=$(noise_ns)
    "$THIEF" --cpu 1 --delay 20ms --period 100ms --durations "$1" --count "$2" --due > "$T/thefts" \
        || fail "jitter-thief could not run on CPU 1"
}
# seen_thefts [MIN]: how many thefts of $T/thefts an event matches from both sides (THEFT_JQ),
# once the last theft is harvested. Only events of MIN or more (default 100us) are asked for, so
# that this host's own short events do not crowd the thefts out of the reply.
seen_thefts() {
    sleep 0.6 # three intervals: the last theft harvested
    jctl --json events --cpu 1 --since 1m --min "${1:-100us}" --limit 10000 \
        | jq --argjson th "$(thefts_json "$T/thefts")" --argjson slack "$slack" \
            --argjson noise "$noise" "$THEFT_JQ"'
            . as $ev | [$th[] | . as [$s, $e, $due]
                        | select(any($ev[]; is_theft($s; $e; $due; $slack; $noise)))] | length'
}
# thefts_seen DURATION COUNT: thefts of DURATION until COUNT of them are seen as events; a
# round in which other tasks on CPU 1 merged a theft with their own time is run again, three
# rounds at most.
thefts_seen() {
    local round seen
    for round in 1 2 3; do
        thefts "$1" "$2"
        seen=$(seen_thefts)
        (( seen == $2 )) && return 0
        echo "round $round: $seen of $2 thefts of $1 seen as events of their length"
    done
    return 1
}

# ---- One daemon through reloads of [probe] threshold, a bad value, priority and counter.
conf '[probe]' 'threshold = 10us' 'preheat = 300ms' 'priority = 0' 'counter = tsc'
start_daemon
slack=$(clock_slack_ns)
[[ $(policy "$(probe_tid)") == "SCHED_OTHER 0" ]] || fail "the probe is not SCHED_OTHER at start"
thefts_seen 300us 3 || fail "3 thefts of 300 us are not all events at a threshold of 10 us"

conf '[probe]' 'threshold = 1ms' 'preheat = 300ms' 'priority = 0' 'counter = tsc'
reload
t_reload=$(mono_ns)
[[ $(jctl --json status | jq .config.threshold_ns) == 1000000 ]] \
    || fail "GetStatus does not say the threshold of 1 ms after the reload"
thefts 300us 3
noise=0 # no event of exactly a theft's shape: with no room for noise merged into it
if (( $(seen_thefts) != 0 )); then
    cat "$T/thefts" >&2
    jctl --json events --cpu 1 --since 1m --min 100us | jq -c '.[-10:][]' >&2
    fail "thefts of 300 us are still events at a threshold of 1 ms"
fi
thefts_seen 2ms 3 || fail "3 thefts of 2 ms are not all events at a threshold of 1 ms"
short=$(events_since "$t_reload" | jq '[.[] | select(.duration_ns < 1000000)] | length')
(( short == 0 )) || fail "$short events shorter than the threshold of 1 ms after the reload"
pass "reload of threshold 10 us -> 1 ms: 300 us thefts no longer events, 2 ms ones are"

conf '[probe]' 'threshold = bogus' 'preheat = 300ms'
: > "$T/daemon.log"
reload
grep -q 'keeping the running configuration' "$T/daemon.log" \
    || fail "a bad threshold is not refused: $(cat "$T/daemon.log")"
grep -q 'jitterd.conf:2' "$T/daemon.log" || fail "the error does not name jitterd.conf:2"
thefts 300us 3
noise=0
(( $(seen_thefts) == 0 )) || fail "after a bad reload, 300 us thefts are events again"
thefts_seen 2ms 2 || fail "after a bad reload, 2 ms thefts are not events"
pass "reload with a bad threshold: refused by file and line, the threshold of 1 ms kept"

stop_daemon || fail "jitterd did not exit 0 after the reloads of threshold"

# ---- Priority and counter. The daemon keeps CAP_SYS_NICE only when it starts with a
# priority (privileges_drop), so this one starts with SCHED_FIFO 10.
conf '[probe]' 'threshold = 10us' 'preheat = 300ms' 'priority = 10' 'counter = tsc'
start_daemon
[[ $(policy "$(probe_tid)") == "SCHED_FIFO 10" ]] \
    || fail "the probe is $(policy "$(probe_tid)") at a start with priority 10"
conf '[probe]' 'threshold = 10us' 'preheat = 300ms' 'priority = 20' 'counter = tsc'
reload
[[ $(policy "$(probe_tid)") == "SCHED_FIFO 20" ]] \
    || fail "the probe is $(policy "$(probe_tid)") after a reload to priority 20"
jctl --json status | jq -e '.probes[0] | .policy == "SCHED_FIFO" and .priority == 20
                            and .state == "running"' > /dev/null \
    || fail "GetStatus after the reload to priority 20: $(jctl --json status | jq -c .probes)"
pass "reload of priority 10 -> 20: the probe thread is SCHED_FIFO 20 (chrt)"

conf '[probe]' 'threshold = 10us' 'preheat = 300ms' 'priority = 0' 'counter = clock'
: > "$T/daemon.log"
reload
[[ $(policy "$(probe_tid)") == "SCHED_OTHER 0" ]] \
    || fail "the probe is $(policy "$(probe_tid)") after a reload to priority 0"
# The history counts in the running counter's ticks: another counter waits for the next start,
# and says so.
grep -q 'counter = clock takes effect at the next start; still tsc' "$T/daemon.log" \
    || fail "a reload to counter = clock is not refused by name: $(cat "$T/daemon.log")"
jctl --json status | jq -e '.counter.source == "tsc"' > /dev/null \
    || fail "the counter changed on a reload: $(jctl --json status | jq -c .counter)"
thefts_seen 1ms 3 || fail "thefts of 1 ms not measured at their length after the reload"
pass "reload of priority 20 -> 0: SCHED_OTHER (chrt); counter tsc -> clock: kept until the" \
     "next start, said so, thefts still measured at their length"
stop_daemon || fail "jitterd did not exit 0 after the reloads of priority and counter"

# ---- The clock counter at the next start: each theft measured at its length, both ways.
start_daemon
jctl --json status | jq -e '.counter.source == "clock"' > /dev/null \
    || fail "the counter is not clock at a start with counter = clock"
slack=$(clock_slack_ns)
thefts_seen 1ms 3 || fail "thefts of 1 ms are not measured at their length with the clock counter"
stop_daemon || fail "jitterd did not exit 0 with the clock counter"
pass "counter = clock at the next start: 1 ms thefts measured at their length"

# ---- The new probes cannot start: SCHED_FIFO without CAP_SYS_NICE (dropped after a start
# with priority 0, and kept out of the bounding set here) and with RLIMIT_RTPRIO 0.
conf '[probe]' 'threshold = 10us' 'preheat = 300ms' 'priority = 0'
: > "$T/notify.log"
: > "$T/daemon.log"
[[ -n $LISTEN_PID ]] || start_listener
NOTIFY_SOCKET=$NOTIFY_ADDR prlimit --rtprio=0 setpriv --bounding-set=-sys_nice \
    --inh-caps=-sys_nice "$JITTERD" --config "$T/jitterd.conf" --cpus 1 --socket "$SOCK" \
    --state-dir "$STATE" --interval 200ms >> "$T/daemon.log" 2>&1 &
DAEMON_PID=$!
wait_notify READY=1 20 || fail "no READY=1 within 20 s without CAP_SYS_NICE"
conf '[probe]' 'threshold = 10us' 'preheat = 300ms' 'priority = 10'
reload
grep -q 'cannot start the probes with the new configuration; back to the previous one' \
    "$T/daemon.log" || fail "no roll-back logged: $(tail -5 "$T/daemon.log")"
[[ $(policy "$(probe_tid)") == "SCHED_OTHER 0" ]] \
    || fail "after the roll-back the probe is $(policy "$(probe_tid)")"
s0=$(jctl --json stats --cpu 1 --window all | jq .cpus[0].samples)
sleep 0.6
jctl --json status | jq -e '.probes[0] | .state == "running" and .priority == 0' > /dev/null \
    || fail "after the roll-back: $(jctl --json status | jq -c .probes)"
(( $(jctl --json stats --cpu 1 --window all | jq .cpus[0].samples) > s0 )) \
    || fail "after the roll-back the probe does not measure"
# The same through jitterctl reload: it fails, and says so.
if out=$(jctl reload 2>&1); then
    fail "jitterctl reload to a priority the probes cannot get succeeded: $out"
fi
grep -q 'could not start' <<< "$out" || fail "jitterctl reload does not say why it failed: $out"
[[ $(policy "$(probe_tid)") == "SCHED_OTHER 0" ]] \
    || fail "after jitterctl reload's roll-back the probe is $(policy "$(probe_tid)")"
stop_daemon || fail "jitterd did not exit 0 after a roll-back"
pass "reload to a priority the probes cannot get: the previous probes run again (SCHED_OTHER);" \
     "jitterctl reload fails: $out"

# ---- The textfile path changes on reload.
mkdir -p "$T/a" "$T/b"
conf '[probe]' 'preheat = 300ms' '[export]' "prometheus_textfile = $T/a/jitterd.prom" \
    'prometheus_textfile_interval = 200ms'
start_daemon
wait_until 5 test -f "$T/a/jitterd.prom" || fail "no textfile $T/a/jitterd.prom"
conf '[probe]' 'preheat = 300ms' '[export]' "prometheus_textfile = $T/b/jitterd.prom" \
    'prometheus_textfile_interval = 200ms'
reload
wait_until 5 test -f "$T/b/jitterd.prom" || fail "no textfile at the new path within 5 s"
sleep 0.5
a1=$(stat -c %y "$T/a/jitterd.prom" 2>/dev/null || echo gone)
b1=$(stat -c %y "$T/b/jitterd.prom")
sleep 1.2
[[ $(stat -c %y "$T/b/jitterd.prom") != "$b1" ]] || fail "the new textfile is not rewritten"
[[ $(stat -c %y "$T/a/jitterd.prom" 2>/dev/null || echo gone) == "$a1" ]] \
    || fail "the old textfile is still written after the reload"
grep -qE '^jitter_probe_up\{cpu="1"\} 1$' "$T/b/jitterd.prom" || fail "the new textfile lacks the probe"
stop_daemon || fail "jitterd did not exit 0"
pass "reload of [export] prometheus_textfile: the new file every interval, the old one no more"

# ---- A reload during the preheat: the new probes preheat anew, READY=1 only after that.
conf '[probe]' 'threshold = 10us' 'preheat = 3s'
launch_daemon
wait_until 10 eval '[[ $(jctl --json status 2>/dev/null | jq -r ".probes[0].state") == preheating ]]' \
    || fail "the probe is not preheating"
conf '[probe]' 'threshold = 20us' 'preheat = 3s'
t_hup=$(now_ns)
kill -HUP "$DAEMON_PID"
wait_notify READY=1 20 || fail "no READY=1 within 20 s of a reload during the preheat"
took=$(( ($(now_ns) - t_hup) / 1000000 ))
(( $(n_ready) == 1 )) || fail "$(n_ready) READY=1 for one start and one reload during it"
(( took >= 2900 )) || fail "READY=1 $took ms after the reload: the new probes did not preheat 3 s"
jctl --json status | jq -e '.probes[0].state == "running" and .config.threshold_ns == 20000' \
    > /dev/null || fail "after the reload during the preheat: $(jctl --json status | jq -c .)"
stop_daemon || fail "jitterd did not exit 0"
pass "reload during the preheat: READY=1 $took ms later (a new preheat of 3 s), threshold 20 us"

# ---- jitterctl reload: over when it returns. A new threshold restarts the probe, which
# preheats 2 s: when jitterctl returns, the probe runs with the new threshold.
conf '[probe]' 'threshold = 10us' 'preheat = 300ms'
start_daemon
ready_before=$(n_ready)
conf '[probe]' 'threshold = 30us' 'preheat = 2s'
t0=$(now_ns)
out=$(jctl reload 2>&1) || fail "jitterctl reload: $out"
took=$(( ($(now_ns) - t0) / 1000000 ))
jctl --json status | jq -e '.probes[0].state == "running" and .config.threshold_ns == 30000' \
    > /dev/null || fail "as jitterctl reload returned ($took ms): $(jctl --json status | jq -c .)"
(( took >= 1900 )) || fail "jitterctl reload returned in $took ms, before the 2 s preheat"
wait_until 5 eval '(( $(n_ready) == ready_before + 1 ))' \
    || fail "$(( $(n_ready) - ready_before )) READY=1 for one reload"
pass "jitterctl reload returned after $took ms, the new probe running at 30 us: $out"
conf '[probe]' 'threshold = bogus' 'preheat = 2s'
if out=$(jctl reload 2>&1); then
    fail "jitterctl reload of a bad threshold succeeded: $out"
fi
grep -q 'jitterd.conf:2: threshold' <<< "$out" || fail "jitterctl reload does not name jitterd.conf:2: $out"
jctl --json status | jq -e '.config.threshold_ns == 30000' > /dev/null \
    || fail "after a bad reload: $(jctl --json status | jq -c .config)"
pass "jitterctl reload of a bad threshold: exit 1, $(tail -n 1 <<< "$out" | sed 's/^ *//'); 30 us kept"
stop_daemon || fail "jitterd did not exit 0 after jitterctl reload"

# ---- SIGTERM during the preheat: out at once, exit 0, STOPPING=1 and no READY=1.
conf '[probe]' 'preheat = 10s'
launch_daemon
wait_until 10 eval '[[ $(jctl --json status 2>/dev/null | jq -r ".probes[0].state") == preheating ]]' \
    || fail "the probe is not preheating"
t0=$(now_ns)
kill -TERM "$DAEMON_PID"
rc=0
reap_daemon 10 || rc=$?
took=$(( ($(now_ns) - t0) / 1000000 ))
(( rc == 0 )) || fail "exit status $rc after SIGTERM during the preheat"
(( took < 3000 )) || fail "SIGTERM during a preheat of 10 s took $took ms"
grep -qx 'STOPPING=1' "$T/notify.log" || fail "no STOPPING=1"
(( $(n_ready) == 0 )) || fail "READY=1 sent though stopped during the preheat"
pass "SIGTERM during the preheat: exit 0 in $took ms, STOPPING=1, no READY=1"
