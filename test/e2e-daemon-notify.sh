# jitterd and a notification socket whose reader stops reading: the event loop never blocks on
# it. The daemon keeps measuring and answering, WATCHDOG=1 and STATUS= are dropped rather than
# waited for, one warning says so, SIGTERM still stops it in time; READY=1 and RELOADING=1 that
# could not be sent are kept and arrive in order once the reader reads again. Also an abstract
# socket address ("@NAME") and a socket nobody listens on.
source "$(dirname "$0")/lib.sh"
need_cpu1
printf '[probe]\npreheat = 200ms\n' > "$T/jitterd.conf"
# The gaps CPU 1 has measured: GetHistogram's total, which needs no analysis (GetStats runs the
# periodicity and fit analyses of the window, seconds of CPU in a sanitizer build on a noisy
# host, which is not what this test is about).
all_samples() {
    jctl --timeout 2s --json call io.jitterd.GetHistogram '{"cpu": 1, "window": "all"}' \
        | jq -e '.total'
}
qlen=$(cat /proc/sys/net/unix/max_dgram_qlen)

# --- A reader (abstract address) that stops reading after READY=1, with the watchdog on. ------
# At a 200 ms interval its queue of $qlen datagrams is full after a few seconds; a daemon that
# blocked on it would stop measuring and answering from then on.
NOTIFY_ADDR=@jitterd-e2e-notify-$$ NOTIFY_LISTEN_OPTS="--stop-after READY=1" \
    WATCHDOG_USEC=400000 start_daemon
grep -q -- '-- paused' "$T/notify.log" || fail "the listener did not stop reading after READY=1"
# Watched second by second until the queue has been full for 5 s (the daemon says when it
# found it full), 30 s at most.
t0=$(now_ns)
prev=$(all_samples)
first=$prev
full_for=0
for i in $(seq 30); do
    sleep 1
    s=$(all_samples) || fail "no answer from jitterd $i s after the reader stopped reading"
    (( s > prev )) || fail "no new samples between $((i - 1)) s and $i s after the reader stopped"
    prev=$s
    if grep -q 'queue is full' "$T/daemon.log"; then
        (( full_for++ == 0 )) && full_at=$i
    fi
    (( full_for > 5 )) && break
done
elapsed=$(( ($(now_ns) - t0) / 1000000 ))
(( full_for > 5 )) || fail "in ${elapsed} ms the daemon found the queue full" \
    "${full_at:+after $full_at s, }for only $full_for s, not 5"
jctl --timeout 2s status > /dev/null || fail "jitterctl status got no answer"
n=$(grep -c "cannot send to the service manager's notification socket" "$T/daemon.log" || true)
(( n == 1 )) || fail "the full queue was logged $n times, not once"
grep -q 'queue is full' "$T/daemon.log" || fail "the warning does not say the queue is full"
pass "reader stopped: measuring went on for $elapsed ms ($((prev - first)) samples), 5 s of" \
     "them with the queue full; answers, one warning"

# SIGTERM: the loop is free to see it; STOPPING=1 waits at most 1 s, a probe stop at most 2 s.
t0=$(now_ns)
kill -TERM "$DAEMON_PID"
rc=0
reap_daemon 10 || rc=$?
took=$(( ($(now_ns) - t0) / 1000000 ))
(( rc == 0 )) || fail "exit status $rc after SIGTERM (124: still running after 10 s)"
(( took < 6000 )) || fail "stopping took $took ms"
grep -q 'did not read STOPPING=1' "$T/daemon.log" || fail "the undelivered STOPPING=1 is not logged"
pass "SIGTERM with the reader stuck: exit 0 in $took ms"
stop_listener
unset NOTIFY_ADDR

# --- A reader that pauses: what could not be sent is kept and comes in order. ----------------
: > "$T/daemon.log"
NOTIFY_LISTEN_OPTS="--stop-after READY=1 --pause 5" start_daemon
wait_until 5 grep -q 'queue is full' "$T/daemon.log" \
    || fail "the queue of the pausing reader did not fill within 5 s"
kill -HUP "$DAEMON_PID"
wait_notify 'reading again' 10 || fail "the listener did not read again"
# since_resume: what the reader printed once it read again.
since_resume() { sed -n '/-- reading again/,$p' "$T/notify.log"; }
ready_after_resume() { since_resume | grep -qx 'READY=1'; }
wait_until 3 ready_after_resume \
    || fail "READY=1 after the reload never arrived: $(since_resume | tr '\n' ' ')"
after=$(since_resume)
rl=$(grep -nx 'RELOADING=1' <<<"$after" | head -1 | cut -d: -f1)
rd=$(grep -nx 'READY=1' <<<"$after" | head -1 | cut -d: -f1)
[[ -n $rl && -n $rd ]] && (( rl < rd )) \
    || fail "RELOADING=1 and READY=1 not in order: $(tr '\n' ' ' <<<"$after")"
grep -q '^MONOTONIC_USEC=[0-9]' <<<"$after" || fail "RELOADING=1 came without MONOTONIC_USEC="
# What the reader had queued comes first, then the kept state changes: no status update that was
# dropped meanwhile (the queue held at most $qlen + 1) and nothing in between.
queued=$(awk '/^--$/ {n++} /^RELOADING=1$/ {print n; exit}' <<<"$after")
(( queued <= qlen + 1 )) || fail "$queued messages before RELOADING=1: dropped status updates were sent"
status_after_ready() { since_resume | sed -n '/^READY=1$/,$p' | grep -q '^STATUS=CPU 1 running'; }
wait_until 3 status_after_ready || fail "no status update after READY=1 once the reader came back"
grep -q 'notifications reach .* again' "$T/daemon.log" || fail "the recovery is not logged"
stop_daemon || fail "exit status not 0"
pass "reader paused 5 s across a reload: RELOADING=1 then READY=1 delivered after" \
     "$queued queued messages"
stop_listener

# --- Nobody listens on NOTIFY_SOCKET: one warning, measuring as usual. -----------------------
: > "$T/daemon.log"
NOTIFY_SOCKET=$T/nobody "$JITTERD" --config "$T/jitterd.conf" --cpus 1 --socket "$SOCK" \
    --state-dir "$STATE" --interval 200ms >> "$T/daemon.log" 2>&1 &
DAEMON_PID=$!
wait_until 10 grep -q '^<6>ready:' "$T/daemon.log" \
    || fail "not ready within 10 s with nobody on NOTIFY_SOCKET"
sleep 1
s=$(all_samples)
(( s > 0 )) || fail "no samples with nobody on NOTIFY_SOCKET"
n=$(grep -c "cannot send to the service manager's notification socket $T/nobody" \
     "$T/daemon.log" || true)
(( n == 1 )) || fail "the missing reader was logged $n times, not once"
stop_daemon || fail "exit status not 0"
pass "nobody on NOTIFY_SOCKET: one warning, measuring as usual"
