# jitterd probe states and privileges: stalled under a SCHED_FIFO hog, offline while its CPU is
# unplugged and running again after, WATCHDOG=1 from the event loop, Monitor streaming,
# Reset refused to a non-admin peer, clear errors for missing privileges, and the scheduling of
# each thread (a SCHED_FIFO loop, the probe SCHED_OTHER) as chrt reads it.
source "$(dirname "$0")/lib.sh"
need_cpu1
# The event loop runs SCHED_FIFO ([server] loop_priority), the probe SCHED_OTHER ([probe] priority
# 0).
printf '[probe]\npreheat = 200ms\n[server]\nloop_priority = 2\n' > "$T/jitterd.conf"

# Missing privileges: as an unprivileged user, each missing one is named with its remedy.
if command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
    chmod 755 "$T"
    printf '[probe]\npreheat = 200ms\n' > "$T/plain.conf"
    out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all \
          "$JITTERD" --config "$T/plain.conf" --cpus 1 --socket "$T/nobody.sock" \
          --state-dir "$T/nobody-state" 2>&1 || true)
    grep -q 'CAP_IPC_LOCK' <<<"$out" && grep -q 'LimitMEMLOCK=infinity' <<<"$out" \
        || fail "mlock refusal does not name CAP_IPC_LOCK and the fix: $out"
    printf '[probe]\npriority = 10\n' > "$T/fifo.conf"
    out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all \
          "$JITTERD" --config "$T/fifo.conf" --cpus 1 --socket "$T/nobody.sock" \
          --state-dir "$T/nobody-state" 2>&1 || true)
    grep -q 'CAP_SYS_NICE' <<<"$out" && grep -q 'RLIMIT_RTPRIO' <<<"$out" \
        || fail "SCHED_FIFO refusal does not name CAP_SYS_NICE/RLIMIT_RTPRIO: $out"
    printf '[server]\nloop_priority = 3\n' > "$T/loop.conf"
    out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all \
          "$JITTERD" --config "$T/loop.conf" --cpus 1 --socket "$T/nobody.sock" \
          --state-dir "$T/nobody-state" 2>&1 || true)
    grep -q 'for the event loop needs CAP_SYS_NICE or RLIMIT_RTPRIO >= 3' <<<"$out" &&
        grep -q 'loop_priority = 0 in \[server\]' <<<"$out" \
        || fail "the event loop's SCHED_FIFO refusal does not name CAP_SYS_NICE and [server]: $out"
    pass "missing privileges are named with how to grant them"
else
    skip_part "missing privileges named" "no setpriv or no user nobody here"
fi

# Impossible CPU lists are refused with a reason.
out=$("$JITTERD" --config "$T/jitterd.conf" --cpus 4000 --socket "$T/x.sock" 2>&1 || true)
grep -q '"4000".*above' <<<"$out" || fail "no reason given for CPU 4000: $out"
out=$("$JITTERD" --config "$T/jitterd.conf" --cpus 7 --socket "$T/x.sock" 2>&1 || true)
grep -q 'CPU 7: it is offline or does not exist' <<<"$out" || fail "no clear error for CPU 7: $out"
out=$("$JITTERD" --config "$T/jitterd.conf" --cpus 1-0 --socket "$T/x.sock" 2>&1 || true)
grep -q 'cpus' <<<"$out" || fail "no clear error for a malformed CPU list: $out"
pass "impossible CPU lists are refused"

WATCHDOG_USEC=400000 start_daemon
wait_notify WATCHDOG=1 5 || fail "no WATCHDOG=1 with WATCHDOG_USEC set"
pass "WATCHDOG=1 from the event loop"

# The scheduling of each thread, as chrt reads it: the loop (the main thread) SCHED_FIFO 2, the
# probe (the thread allowed on CPU 1 alone), which the loop started once SCHED_FIFO,
# SCHED_OTHER.
loop_sched=$(chrt -p "$DAEMON_PID" | tr '\n' ' ')
[[ $loop_sched == *"policy: SCHED_FIFO "*"priority: 2 " ]] \
    || fail "the event loop is not SCHED_FIFO 2 with [server] loop_priority = 2: $loop_sched"
probe_tid=$(for t in /proc/"$DAEMON_PID"/task/*; do
    grep -q '^Cpus_allowed_list:[[:space:]]*1$' "$t/status" && basename "$t"; done | head -1)
[[ -n $probe_tid ]] || fail "no thread of jitterd on CPU 1 alone"
probe_sched=$(chrt -p "$probe_tid" | tr '\n' ' ')
[[ $probe_sched == *"policy: SCHED_OTHER"* ]] \
    || fail "the probe is not SCHED_OTHER with [probe] priority = 0: $probe_sched"
jctl --json status | jq -e '.config.loop_priority == 2' > /dev/null \
    || fail "GetStatus does not give loop_priority 2: $(jctl --json status | jq -c .config)"
jctl status | grep -q '^config: .*, event loop SCHED_FIFO 2$' \
    || fail "jitterctl status does not say the loop runs SCHED_FIFO 2: $(jctl status | grep config)"
pass "the event loop runs SCHED_FIFO 2, the probe SCHED_OTHER, as GetStatus and status say"

# Monitor: one reply per interval (non-TTY watch prints one line each), at least half of the
# intervals of 1.5 s (replies may come late on a busy CPU 0).
interval_ns=$(jctl --json status | jq '.config.interval_ns')
timeout 1.5 "$JITTERCTL" --socket "$SOCK" --json watch --cpu 1 > "$T/monitor" || true
n=$(grep -c '"cpu"' "$T/monitor" || true)
(( n >= 1500000000 / interval_ns / 2 )) \
    || fail "Monitor gave $n replies in 1.5 s at $((interval_ns / 1000000)) ms intervals"
pass "Monitor streams one reply per interval ($n in 1.5 s)"

# A SCHED_FIFO hog on CPU 1 for about a second: the probe makes no progress and is reported
# stalled. Meanwhile a Monitor client gets only intervals that the probe handed over: none
# while it stalls, then the one that holds the stall. The stall's gap is bounded from both sides by the
# hog's record (THEFT_JQ), with the clocks' slack and the noise of CPU 1 measured before it.
# RT throttling (sched_rt_runtime_us in every sched_rt_period_us, 950 ms of 1 s by default)
# would hand the probe the CPU in the middle of the hog and split its gap: the hog then stays
# 50 ms under the runtime, still over two intervals.
hog_ms=1200
rt_us=$(cat /proc/sys/kernel/sched_rt_runtime_us 2> /dev/null || echo -1)
(( rt_us < 0 || rt_us / 1000 - 50 >= hog_ms )) || hog_ms=$((rt_us / 1000 - 50))
(( hog_ms * 1000000 >= 3 * interval_ns )) \
    || fail "sched_rt_runtime_us is $rt_us: a SCHED_FIFO hog cannot hold CPU 1 for three intervals"
slack_ns=$(clock_slack_ns)
noise=$(noise_ns)
# What the hog keeps waiting runs before the probe once it sleeps again (kernel threads and
# timers of CPU 1, owed their share): at most the share of CPU 1 that others took before it,
# over the hog's length, which widens the bounds of the noise.
owed=$(jctl --json stats --cpu 1 --window 10s \
    | jq --argjson hog "$((hog_ms * 1000000))" '(100 - (.cpus[0].cpu_available_pct // 100)) / 100 * $hog | ceil')
noise=$((noise + owed))
WATCH_S=8
timeout $WATCH_S "$JITTERCTL" --socket "$SOCK" --json watch --cpu 1 > "$T/monitor-stall" &
watcher=$!
watch_from=$(date +%s%N)
sleep 0.5
"$THIEF" --cpu 1 --priority 60 --delay 100ms --durations "${hog_ms}ms" --due > "$T/hog" &
hog=$!
stalled=0
for _ in $(seq 20); do
    jctl --json status | jq -e '.probes[0].state == "stalled"' >/dev/null && { stalled=1; break; }
    sleep 0.1
done
wait $hog
(( stalled )) || fail "the probe was not reported stalled under a $hog_ms ms SCHED_FIFO hog"
back=0
for _ in $(seq 50); do
    jctl --json status | jq -e '.probes[0].state == "running"' >/dev/null && { back=1; break; }
    sleep 0.1
done
(( back )) || fail "the probe did not come back to running within 5 s after the hog"
# Stalled means two ticks in a row without progress. The stall is an event that is the hog's
# theft, bounded from both sides, and the window's worst gap; its length as the hog recorded
# it, at most what the hog's wake-up, the switch back, the clocks and the noise (with what the
# hog kept waiting) add (STALL_JQ: the bounds of THEFT_JQ on a gap).
read -r hog_s hog_e hog_due < "$T/hog"
STALL_JQ="$THEFT_JQ"' def stall_gap($g): $g >= $e - $s - 2 * $slack
                                    and $g <= $e - $due + ($s - $due) + 60000 + 2 * $slack + 2 * $noise;'
stall_args=(--argjson s "$hog_s" --argjson e "$hog_e" --argjson due "$hog_due"
            --argjson slack "$slack_ns" --argjson noise "$noise")
jctl --json events --cpu 1 --since 1m --min 500ms > "$T/stall-events.json" || fail "events"
jq -e "${stall_args[@]}" "$THEFT_JQ"'any(.[]; is_theft($s; $e; $due; $slack; $noise))' \
    "$T/stall-events.json" > /dev/null \
    || fail "no event is the hog's $(( (hog_e - hog_s) / 1000 )) us from both sides (slack" \
            "$slack_ns ns, noise $noise ns, $owed ns of it owed): $(jq -c '[.[] | {start_ns, duration_ns}]' "$T/stall-events.json")"
jctl --json stats --cpu 1 --window 10s > "$T/st.json"
jq -e "${stall_args[@]}" "$STALL_JQ"'.cpus[0].stalls >= 1 and stall_gap(.cpus[0].gap.max_ns)' \
    "$T/st.json" > /dev/null \
    || fail "the stall is not in the stats as the hog's $(( (hog_e - hog_s) / 1000 )) us:" \
            "$(jq -c '.cpus[0] | {stalls, max: .gap.max_ns, samples}' "$T/st.json")"
pass "stalled under a SCHED_FIFO hog of $(( (hog_e - hog_s) / 1000 )) us, an event and the" \
     "worst gap bounded from both sides (slack $slack_ns ns, noise $noise ns with $owed ns owed)," \
     "running again after"

# The Monitor client: every reply an interval of CPU 1 with samples, each after the one before,
# one of them holding the stall's gap; and the stream goes on after it, an interval each
# interval the probe was not held (at least half of them: replies may come late on CPU 0).
sleep 1
kill "$watcher" 2>/dev/null || true
wait "$watcher" 2>/dev/null || true
# (The watcher ends at WATCH_S, whatever the checks above took.)
watched_ns=$(( $(date +%s%N) - watch_from ))
(( watched_ns <= WATCH_S * 1000000000 )) || watched_ns=$((WATCH_S * 1000000000))
jq -R -c 'fromjson? // empty' "$T/monitor-stall" > "$T/monitor-stall.json"
replies=$(wc -l < "$T/monitor-stall.json")
bad=$(jq -s -c '. as $r | [range(length) | select($r[.].start_ns <= 0 or $r[.].duration_ns <= 0
                 or ($r[.].cpus | length) != 1 or $r[.].cpus[0].cpu != 1
                 or $r[.].cpus[0].samples <= 0 or (. > 0 and $r[.].start_ns <= $r[. - 1].start_ns))
                 | $r[.]] | first // empty' "$T/monitor-stall.json") || bad="unreadable replies"
[[ -z $bad ]] || fail "Monitor sent a reply that names no interval of CPU 1, or an earlier one: $bad"
jq -s -e "${stall_args[@]}" "$STALL_JQ"'any(.[]; stall_gap(.cpus[0].max_gap_ns))' \
    "$T/monitor-stall.json" > /dev/null \
    || fail "no Monitor reply holds the stall (the hog's gap, bounded from both sides) in $replies"
held_ns=$(awk '{ print $2 - $1 }' "$T/hog")
want=$(( (watched_ns - held_ns) / interval_ns / 2 ))
(( replies >= want )) \
    || fail "Monitor gave $replies replies in $((watched_ns / 1000000)) ms, $want expected"
pass "Monitor during the stall: $replies replies, each an interval with samples, one the stall's"

# CPU hotplug: offline makes the probe offline, online makes it run again.
online=/sys/devices/system/cpu/cpu1/online
# CPU 1 comes back online whatever happens to the test: on its way out (the EXIT trap), and, if
# it is killed at its timeout with no trap run, from a guard outside its process tree (ctest
# kills the tree) that puts it back HOTPLUG_GUARD_S after the unplug.
HOTPLUG_GUARD_S=40
start_hotplug_guard() {
    ( setsid bash -c 'echo $$ > "$1"; sleep "$2"; echo 1 > "$3"' _ "$T/hotplug-guard" \
        "$HOTPLUG_GUARD_S" "$online" < /dev/null &> /dev/null & )
    for _ in $(seq 100); do [[ -s $T/hotplug-guard ]] && return 0; sleep 0.02; done
    fail "the guard that puts CPU 1 back online did not start"
}
stop_hotplug_guard() { kill "$(cat "$T/hotplug-guard" 2>/dev/null)" 2>/dev/null || true; }
unplug=refused
if [[ -w $online ]]; then
    start_hotplug_guard
    trap 'rc=$?; set +e; echo 1 > '"$online"' 2>/dev/null; stop_hotplug_guard; (exit $rc); cleanup' EXIT
    t0=$(date +%s%N)
    rc=0
    timeout -k 1 20 bash -c "echo 0 > $online" 2> "$T/unplug.err" || rc=$?
    (( rc != 124 && rc != 137 )) || fail "unplugging CPU 1 took over 20 s"
    (( rc != 0 )) || unplug=done
    echo "CPU 1 unplug: $unplug in $((($(date +%s%N) - t0) / 1000000)) ms $(cat "$T/unplug.err")"
fi
if [[ $unplug == done ]]; then
    sleep 0.8
    state=$(jctl --json status | jq -r '.probes[0].state')
    echo "probe state 0.8 s after the unplug: $state"
    # Meanwhile the probe thread sits on the CPU it was moved to: it must record nothing there
    # and not spin (it looks for its CPU every 100 ms). One second of its CPU time and samples.
    tid=$(ls /proc/"$DAEMON_PID"/task | grep -vx "$DAEMON_PID" | head -1)
    s0=$(jctl --json status | jq '.probes[0].samples')
    c0=$(cut -d' ' -f1 /proc/"$DAEMON_PID"/task/"$tid"/schedstat)
    w0=$(date +%s%N)
    sleep 1
    s1=$(jctl --json status | jq '.probes[0].samples')
    c1=$(cut -d' ' -f1 /proc/"$DAEMON_PID"/task/"$tid"/schedstat)
    w1=$(date +%s%N)
    t0=$(date +%s%N)
    timeout -k 1 20 bash -c "echo 1 > $online" || fail "CPU 1 did not come back online within 20 s"
    stop_hotplug_guard
    echo "CPU 1 plugged back in $((($(date +%s%N) - t0) / 1000000)) ms"
    [[ $state == offline ]] || fail "probe state '$state' while CPU 1 was offline"
    (( s1 == s0 )) || fail "the probe recorded $((s1 - s0)) samples while CPU 1 was offline"
    (( (c1 - c0) * 20 < w1 - w0 )) || fail "the probe thread used $(((c1 - c0) / 1000000)) ms" \
        "of CPU in $(((w1 - w0) / 1000000)) ms while CPU 1 was offline: it spins where it landed"
    echo "while offline: $((s1 - s0)) samples, $(((c1 - c0) / 1000)) us of CPU in 1 s"
    ok=0 seen=
    t0=$(date +%s%N)
    while (( $(date +%s%N) - t0 < 8000000000 )); do
        jctl --json status > "$T/resume.json"
        seen+=" $(jq -r '.probes[0].state' "$T/resume.json")"
        jq -e '.probes[0].state == "running"' "$T/resume.json" > /dev/null && { ok=1; break; }
        sleep 0.1
    done
    (( ok )) || fail "the probe did not resume within 8 s after CPU 1 came back; states seen:" \
                     "$seen; last: $(jq -c '.probes[0]' "$T/resume.json")"
    echo "running again $((($(date +%s%N) - t0) / 1000000)) ms after CPU 1 came back"
    pass "offline while CPU 1 is unplugged (recording nothing, not spinning), running after"
else
    stop_hotplug_guard
    skip_part "CPU hotplug" "$online cannot be written here"
fi

# Reset needs root or the admin group.
chmod 666 "$SOCK"; chmod 755 "$T"
if command -v setpriv >/dev/null; then
    out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups \
          "$JITTERCTL" --socket "$SOCK" call io.jitterd.Reset 2>&1 || true)
    grep -q PermissionDenied <<<"$out" || fail "Reset from nobody was not refused: $out"
else
    skip_part "Reset refused to a non-admin peer" "no setpriv here"
fi
# Reset forgets everything up to it: the "all" window then starts where the one before Reset
# ended, or later, and holds no more time than has passed since (plus the interval that was
# under way). Where an interval starts is mapped from the counter afresh at each harvest, so
# the same boundary may move by what the clocks' measured drift explains (clock_slack_ns).
slack_ns=$(clock_slack_ns)
jctl --json call io.jitterd.GetStats '{"without_analyses": true, "window":"all"}' > "$T/before.json"
t_reset=$(date +%s%N)
jctl call io.jitterd.Reset > /dev/null || fail "Reset as root failed"
for _ in $(seq 50); do
    jctl --json call io.jitterd.GetStats '{"without_analyses": true, "window":"all"}' > "$T/after.json"
    jq -e '.cpus[0].samples > 0' "$T/after.json" > /dev/null && break
    sleep 0.1
done
since_reset=$(( $(date +%s%N) - t_reset ))
jq -e --slurpfile b "$T/before.json" --argjson since "$since_reset" \
    --argjson interval "$interval_ns" --argjson slack "$slack_ns" '
        .cpus[0] as $a | $b[0].cpus[0] as $b
        | $a.samples > 0 and $a.from_ns + $slack >= $b.to_ns
          and $a.duration_ns <= $since + $interval
          and $a.samples < $b.samples' "$T/after.json" > /dev/null \
    || fail "Reset did not forget the history before it: before $(jq -c '.cpus[0] |
            {from_ns, to_ns, duration_ns, samples}' "$T/before.json"), after" \
            "$(jq -c '.cpus[0] | {from_ns, to_ns, duration_ns, samples}' "$T/after.json")," \
            "$((since_reset / 1000000)) ms since the Reset"
pass "Reset refused to nobody, done for root: the history starts after it"

stop_daemon || fail "exit status not 0"
