# jitterctl gives up on a daemon that does not answer: every command ends with a clear error
# once the timeout has passed (10 s by default, --timeout DUR before or after the command),
# also when nothing accepts the connection; streams (watch, call --more) go on for as long as
# replies keep coming, each awaited for at most the timeout (watch: the interval and the
# timeout). Also how status shows a probe's failure. The daemons here are small fakes that
# accept and never answer, never accept, or answer at a known pace.
source "$(dirname "$0")/lib.sh"
command -v perl >/dev/null || fail "perl is missing (tools/dev/deps test)"

# fake MODE SOCKET: "silent" accepts and never answers; "backlog" listens with a queue of one
# and never accepts; "paced" answers GetStatus (interval 200 ms, one probe that failed) and
# streams COUNT Monitor replies every GAP ms (then a final one), or none when COUNT is 0.
cat > "$T/fake.pl" <<'PERL'
use strict;
use warnings;
use Socket;
use Time::HiRes qw(sleep);
my ($mode, $path, $count, $gap_ms) = @ARGV;
$| = 1;
socket(my $l, PF_UNIX, SOCK_STREAM, 0) or die "socket: $!";
unlink $path;
bind($l, pack_sockaddr_un($path)) or die "bind: $!";
listen($l, $mode eq 'backlog' ? 0 : 16) or die "listen: $!";
print "listening\n";
if ($mode eq 'backlog') { sleep 1000 while 1; }
my @keep;
my $interval = '{"config":{"interval_ns":200000000},"probes":[{"cpu":1,"state":"failed",'
             . '"policy":"SCHED_OTHER","priority":0,"samples":0,"floor_ns":0,'
             . '"worst_gap_1m_ns":0,"reason":"CPU 1: told by the test",'
             . '"failure":"CPU 1: told by the test"}]}';
my $point = '{"realtime":"2026-01-01T00:00:00.000000000Z","duration_ns":200000000,'
          . '"cpus":[{"cpu":1,"state":"running","samples":1000,"max_gap_ns":5000}]}';
while (accept(my $c, $l)) {
    if ($mode eq 'silent') { push @keep, $c; next; }
    local $/ = "\0";
    while (defined(my $msg = <$c>)) {
        if ($msg =~ /"method"\s*:\s*"io\.jitterd\.GetStatus"/) {
            syswrite($c, "{\"parameters\":$interval}\0");
        } elsif ($msg =~ /"method"\s*:\s*"io\.jitterd\.Monitor"/) {
            last if $count == 0;
            for my $i (1 .. $count) {
                sleep($gap_ms / 1000);
                syswrite($c, "{\"parameters\":$point,\"continues\":true}\0") or last;
            }
            syswrite($c, "{\"parameters\":$point}\0");
        }
    }
    push @keep, $c; # a stalled stream stays open
}
PERL
# start_fake MODE [COUNT GAP_MS]: runs the fake on $SOCK.
start_fake() {
    # Emptied here: the child truncates it only once it runs, and until then the wait below
    # would find the previous fake's "listening".
    : > "$T/fake.out"
    perl "$T/fake.pl" "$1" "$SOCK" "${2:-0}" "${3:-0}" > "$T/fake.out" 2>&1 &
    FAKE_PID=$!
    CLEANUP_PIDS+=("$FAKE_PID")
    wait_until 5 grep -q listening "$T/fake.out" \
        || fail "the fake daemon did not start: $(cat "$T/fake.out")"
}
stop_fake() { kill "$FAKE_PID" 2>/dev/null || true; wait "$FAKE_PID" 2>/dev/null || true; }
# timed EXPECTED_RC MIN_MS MAX_MS ARGS...: runs jitterctl and checks its exit status and time.
timed() {
    local want=$1 min=$2 max=$3 rc=0 t0 took
    shift 3
    t0=$(now_ns)
    "$JITTERCTL" --socket "$SOCK" "$@" > "$T/out" 2> "$T/err" || rc=$?
    took=$(( ($(now_ns) - t0) / 1000000 ))
    (( rc == want )) || fail "jitterctl $* exited $rc, not $want: $(cat "$T/err")"
    (( took >= min && took <= max )) || fail "jitterctl $* took $took ms, not $min..$max"
    TOOK=$took
}

# --- Accepts, never answers. -----------------------------------------------------------------
start_fake silent
timed 1 900 3000 --timeout 1s status
grep -q 'no reply from jitterd within 1.00 s (--timeout DUR waits longer)' "$T/err" \
    || fail "unclear error: $(cat "$T/err")"
timed 1 400 2500 status --timeout 500ms
pass "status against a silent daemon: a clear error after the timeout ($TOOK ms for 500ms)"
for cmd in "stats" "hist 1" "events" "report" "check --max 1ms" "snapshot" "export" "audit" \
           "call GetStatus" "call --more io.jitterd.Monitor" "watch"; do
    # shellcheck disable=SC2086 # the command's words
    timed 1 400 2500 --timeout 500ms $cmd
    grep -q 'no reply from jitterd' "$T/err" || fail "jitterctl $cmd: unclear error: $(cat "$T/err")"
done
pass "every command against a silent daemon ends within the timeout"
timed 1 9900 13000 status
grep -q 'no reply from jitterd within 10.00 s' "$T/err" || fail "default timeout: $(cat "$T/err")"
pass "the default timeout: an error after $TOOK ms"
timed 2 0 1000 --timeout 0 status
grep -q 'invalid timeout "0"' "$T/err" || fail "--timeout 0: $(cat "$T/err")"
timed 2 0 1000 status --timeout soon
grep -q 'invalid timeout "soon"' "$T/err" || fail "--timeout soon: $(cat "$T/err")"
pass "a bad --timeout is a usage error"
stop_fake

# --- Listens, never accepts: connecting waits for the timeout, no longer. ---------------------
start_fake backlog
# Fill the one-connection queue, then connect once more.
# The fake binds before it listens: until it listens, a connect is refused, so try for 5 s.
perl -MSocket -e 'socket(my $s, PF_UNIX, SOCK_STREAM, 0) or die;
    for (1 .. 50) { last if connect($s, pack_sockaddr_un($ARGV[0])); select(undef, undef, undef, 0.1) }
    getpeername($s) or die "connect: $!"; $| = 1; print "connected\n"; sleep 100' "$SOCK" \
    > "$T/filler.out" &
CLEANUP_PIDS+=($!)
wait_until 5 grep -q connected "$T/filler.out" || fail "could not fill the listen queue"
timed 1 900 3000 --timeout 1s status
grep -q 'nothing accepted the connection within 1.00 s' "$T/err" \
    || fail "unclear error for a connection never accepted: $(cat "$T/err")"
pass "a daemon that never accepts: a clear error after $TOOK ms"
stop_fake

# --- Streams: exempt while replies keep coming, each awaited for at most the timeout. --------
start_fake paced 8 300
timed 0 2000 8000 --timeout 1s --json watch --count 8
n=$(grep -c '"cpu"' "$T/out")
(( n == 8 )) || fail "watch printed $n replies, not 8"
timed 0 2000 8000 --timeout 1s call --more io.jitterd.Monitor
n=$(grep -c '"cpu"' "$T/out")
(( n == 9 )) || fail "call --more printed $n replies, not 9"
pass "streams of replies 300 ms apart go on past a 1 s timeout ($TOOK ms)"
stop_fake
start_fake paced 0 0
# A failed probe, as GetStatus describes it, in the table and in JSON.
timed 0 0 3000 status
grep -A1 -E '^ +1 +failed ' "$T/out" | grep -qx '      failed: CPU 1: told by the test' \
    || fail "status does not show the probe's failure: $(cat "$T/out")"
timed 0 0 3000 --json status
jq -e '.probes[0].failure == "CPU 1: told by the test"' "$T/out" >/dev/null \
    || fail "status --json lost the failure: $(cat "$T/out")"
pass "a failed probe's reason under its line in jitterctl status, and in --json"
# The interval (200 ms) and the timeout (1 s).
timed 1 1100 3500 --timeout 1s watch
grep -q 'no interval from jitterd for one interval and 1.00 s' "$T/err" \
    || fail "unclear error for a stalled stream: $(cat "$T/err")"
timed 1 900 3000 --timeout 1s call --more io.jitterd.Monitor
grep -q 'no reply from jitterd within 1.00 s' "$T/err" || fail "call --more: $(cat "$T/err")"
pass "a stream that stalls ends with an error after the interval and the timeout ($TOOK ms)"
stop_fake
