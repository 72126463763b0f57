# jitterctl works the causes and periods out itself, where the daemon no longer does: a small
# Varlink server in this test plays jitterd with a window whose ground truth the test makes (each
# occurrence of irq:X costs 4 us, softirq:Y nothing; an interruption every 10 ms, and others at
# random), probes on CPU 1 (isolation "none" in one run, "boot" in the other). When jitterctl
# asks for GetWindow, the server notes where the caller may run (/proc/PID/status) and its nice
# value (/proc/PID/stat): never on a probed or isolated CPU, at nice 19 where a probe shares the
# scheduler ("none") and at least 10 otherwise. jitterctl stats must then show irq:X at 4 us,
# and the 10 ms period; and it must have asked GetStats for no analyses. With the trace off
# (GetCauses says so), jitterctl explain shows that estimate in full, saying it is statistical.
source "$(dirname "$0")/lib.sh"
command -v python3 > /dev/null || fail "needs python3 (tools/dev/deps test)"

cat > "$T/fake-jitterd.py" <<'EOF'
import json, random, socket, struct, sys

path, log, isolation = sys.argv[1], open(sys.argv[2], "a", buffering=1), sys.argv[3]
rng = random.Random(7)
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(8)
srv.settimeout(60)  # bounded: the test is over long before


def window():
    sources, dur, lost, counts = ["irq:X", "softirq:Y"], [], [], []
    for i in range(100):
        x, y = 100 + (i * 37) % 50, 20 + (i * 11) % 7
        dur.append(1000000000)
        lost.append(x * 4000)
        counts.append([0, x, 1, y])
    starts = sorted([10**9 + k * 10**7 for k in range(3000)]
                    + [10**9 + rng.randrange(3 * 10**10) for _ in range(300)])
    deltas = [starts[0]] + [b - a for a, b in zip(starts, starts[1:])]
    return {"cpu": 1, "window": "1m", "from_ns": 0, "to_ns": 10**11, "duration_ns": 10**11,
            "interruptions": len(starts), "sources": sources, "durations_ns": dur,
            "lost_ns": lost, "counts": counts, "intervals_dropped": 0, "intervals_stalled": 0,
            "event_starts_ns": deltas, "events_complete_from_ns": 0}


def peer_pid(conn):
    return struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[0]


while True:
    try:
        conn, _ = srv.accept()
    except socket.timeout:
        sys.exit(1)
    conn.settimeout(10)
    buf = b""
    try:
        while True:
            data = conn.recv(65536)
            if not data:
                break
            buf += data
            while b"\0" in buf:
                msg, buf = buf.split(b"\0", 1)
                call = json.loads(msg)
                method, params = call.get("method", ""), call.get("parameters") or {}
                log.write("call %s %s\n" % (method, json.dumps(params, sort_keys=True)))
                if method == "io.jitterd.GetStatus":
                    reply = {"parameters": {"probes": [{"cpu": 1, "state": "running",
                                                        "isolation": isolation}]}}
                elif method == "io.jitterd.GetStats":
                    reply = {"parameters": {"cpus": [{"cpu": 1, "window": "1m",
                                                      "interrupts": {"X": 12345},
                                                      "softirqs": {"Y": 2222}, "ctxsw": {}}]}}
                elif method == "io.jitterd.GetCauses":
                    reply = {"parameters": {"trace": "off", "cpus": [{"cpu": 1, "window": "1m"}]}}
                elif method == "io.jitterd.GetWindow":
                    pid = peer_pid(conn)
                    with open("/proc/%d/status" % pid) as f:
                        allowed = [l.split()[1] for l in f if l.startswith("Cpus_allowed_list:")]
                    with open("/proc/%d/stat" % pid) as f:
                        nice = f.read().rsplit(")", 1)[1].split()[16]
                    log.write("caller allowed %s nice %s\n" % (allowed[0], nice))
                    reply = {"parameters": window()}
                else:
                    reply = {"error": "org.varlink.service.MethodNotFound",
                             "parameters": {"method": method}}
                conn.sendall(json.dumps(reply).encode() + b"\0")
    except (socket.timeout, ConnectionError, ValueError):
        pass
    conn.close()
EOF

# Where jitterctl may run, worked out here: where this test may, but CPU 1 (probed) and the
# isolated and nohz_full CPUs.
allowed_here=$(awk '/^Cpus_allowed_list:/ { print $2 }' /proc/self/status)
want=$(python3 - "$allowed_here" <<'EOF'
import sys
def parse(text):
    cpus = set()
    for part in filter(None, text.strip().split(",")):
        a, _, b = part.partition("-")
        cpus |= set(range(int(a), int(b or a) + 1))
    return cpus
s = parse(sys.argv[1]) - {1}
for path in ("/sys/devices/system/cpu/isolated", "/sys/devices/system/cpu/nohz_full"):
    try:
        s -= parse(open(path).read())
    except OSError:
        pass
print(",".join(map(str, sorted(s))))
EOF
)
[[ -n $want ]] || skip "no CPU to run on besides CPU 1 and the isolated ones"
cpus_of() {
    python3 -c '
import sys
s = set()
for part in filter(None, sys.argv[1].split(",")):
    a, _, b = part.partition("-")
    s |= set(range(int(a), int(b or a) + 1))
print(",".join(map(str, sorted(s))))' "$1"
}

# jitterctl starts at nice 0 where this test may lower its own nice value back (root).
start_nice=$(nice)
lower=(nice -n "-$start_nice")
"${lower[@]}" true 2> /dev/null && start_nice=0 || lower=()

for isolation in none boot; do
    rm -f "$SOCK"
    : > "$T/calls.log"
    python3 "$T/fake-jitterd.py" "$SOCK" "$T/calls.log" "$isolation" &
    CLEANUP_PIDS+=($!)
    wait_until 5 test -S "$SOCK" || fail "the stand-in daemon did not listen within 5 s"
    "${lower[@]}" "$JITTERCTL" --socket "$SOCK" --timeout 30s --json stats > "$T/stats.json" \
        || fail "jitterctl stats failed (isolation $isolation): $(cat "$T/calls.log")"
    grep -q '^call io.jitterd.GetStats .*"without_analyses": true' "$T/calls.log" \
        || fail "GetStats was not asked for no analyses: $(cat "$T/calls.log")"
    read -r _ _ allowed _ nice < <(grep '^caller allowed' "$T/calls.log") \
        || fail "jitterctl did not ask GetWindow: $(cat "$T/calls.log")"
    [[ $(cpus_of "$allowed") == "$want" ]] \
        || fail "jitterctl worked on CPUs $allowed, not on $want (isolation $isolation)"
    need=10
    [[ $isolation == none ]] && need=19
    (( start_nice > need )) && need=$start_nice
    (( nice == need )) || fail "jitterctl worked at nice $nice, not $need (isolation $isolation)"
    pass "isolation $isolation: jitterctl worked on CPUs $allowed at nice $nice"
done

# The ground truth of the window: irq:X costs 4 us, the count is the window's (GetStats'), and
# the interruptions repeat every 10 ms.
jq -e '.cpus[0] | (.causes[0] | .source == "irq:X" and .count == 12345
                   and (.cost_ns - 4000 | fabs) < 40)
       and (.background | type == "object")
       and any(.periods[]; (.period_ns - 10000000 | fabs) <= 10000)' "$T/stats.json" > /dev/null \
    || fail "jitterctl's causes or periods miss the window's truth: $(cat "$T/stats.json")"
pass "jitterctl stats: irq:X at 4 us each, the 10 ms period"

# jitterctl explain with the trace off: the least-squares estimate, every row with its share
# and standard error and the background, under a line that says the trace is off and how to
# turn it on; the JSON the same, per row.
"$JITTERCTL" --socket "$SOCK" --timeout 30s explain > "$T/explain.txt" \
    || fail "jitterctl explain failed with the trace off: $(cat "$T/explain.txt")"
cat "$T/explain.txt"
grep -Eq '^the trace is off: these are statistical estimates .*\[trace\] enabled = yes' \
    "$T/explain.txt" || fail "jitterctl explain does not say the trace is off"
grep -Eq '^  COUNTER +LEAST SQUARES +\+-$' "$T/explain.txt" \
    || fail "jitterctl explain has no least-squares table"
grep -Eq '^  ([a-z:A-Z]+ \+ )*irq:X( \+ [a-z:A-Z]+)* +[0-9.]+ % +([0-9.]+ %|\?)' "$T/explain.txt" \
    || fail "the least-squares table has no row of irq:X"
grep -Eq '^  background +-?[0-9.]+ % +([0-9.]+ %|\?) +\(no counter moves with it\)$' "$T/explain.txt" \
    || fail "the least-squares table has no background"
"$JITTERCTL" --socket "$SOCK" --timeout 30s --json explain > "$T/explain.json" \
    || fail "jitterctl --json explain failed with the trace off"
jq -e '.trace == "off" and (.cpus[0] | .fit == true and (.background | type == "object")
       and (.estimate | length) >= 1
       and all(.estimate[]; (.ls_share | type == "number")
               and (.ls_stderr | type == "number" or type == "null"))
       and any(.estimate[]; .source | split(" + ") | index("irq:X")))' "$T/explain.json" \
    > /dev/null || fail "jitterctl --json explain lacks the estimate: $(cat "$T/explain.json")"
pass "jitterctl explain with the trace off: the least-squares estimate in full"
