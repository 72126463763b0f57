# jitterctl against a daemon that lacks the methods it calls, as an older jitterd would: a small
# Varlink server in this test answers org.varlink.service.GetInfo and, to every other call,
# org.varlink.service.MethodNotFound with the method's name, and logs each method it was asked
# for. Every command that calls the daemon must then exit 1 with one clear line naming the
# method the server saw ("method M not found (is jitterd older than jitterctl?)"), and no
# command may hang or crash on it. "jitterctl call", the raw client, shows the error as the
# daemon sent it: its name and the method. GetStats it has, as an older jitterd has it: one
# that refuses "without_analyses" (InvalidParameter), which jitterctl must name the same way.
source "$(dirname "$0")/lib.sh"
command -v python3 > /dev/null || fail "needs python3 (tools/dev/deps test)"

cat > "$T/old-jitterd.py" <<'EOF'
import json, os, socket, sys

path, log = sys.argv[1], open(sys.argv[2], "a", buffering=1)
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(8)
srv.settimeout(120)  # bounded: the test is over long before
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
                method = call.get("method", "")
                log.write(method + "\n")
                params = call.get("parameters") or {}
                if method == "org.varlink.service.GetInfo":
                    reply = {"parameters": {"vendor": "jitterd", "product": "jitterd",
                                            "version": "0.0.1", "url": "",
                                            "interfaces": ["org.varlink.service", "io.jitterd"]}}
                elif method == "io.jitterd.GetStats" and "without_analyses" in params:
                    # what an older jitterd answers a parameter it does not know
                    reply = {"error": "org.varlink.service.InvalidParameter",
                             "parameters": {"parameter": "without_analyses"}}
                else:
                    reply = {"error": "org.varlink.service.MethodNotFound",
                             "parameters": {"method": method}}
                if not call.get("oneway"):
                    conn.sendall(json.dumps(reply).encode() + b"\0")
    except (socket.timeout, ConnectionError, ValueError):
        pass
    conn.close()
EOF
python3 "$T/old-jitterd.py" "$SOCK" "$T/methods.log" &
CLEANUP_PIDS+=($!)
wait_until 5 test -S "$SOCK" || fail "the stand-in daemon did not listen within 5 s"

failures=0
for args in "status" "stats" "stats --cpu 1" "hist 1" "events" "check --max 1ms" "report" \
    "watch --count 1" "snapshot" "export" "plot --svg $T/p.svg" "call GetStatus" \
    "call io.jitterd.GetStats {}"; do
    : > "$T/methods.log"
    rc=0
    # shellcheck disable=SC2086 # the arguments are words
    out=$(timeout 20 "$JITTERCTL" --socket "$SOCK" $args 2>&1) || rc=$?
    # The first method the server was asked for that it lacks: what jitterctl must name.
    method=$(grep -vx 'org.varlink.service.GetInfo' "$T/methods.log" | head -1)
    want="jitterctl: method $method not found (is jitterd older than jitterctl?)"
    # An older jitterd has GetStats, without the parameter that says no analyses are expected.
    [[ $method != io.jitterd.GetStats ]] \
        || want="jitterctl: GetStats does not take without_analyses (is jitterd older than jitterctl?)"
    [[ $args != call* ]] \
        || want="jitterctl: $method: org.varlink.service.MethodNotFound {\"method\":\"$method\"}"
    if [[ -z $method ]]; then
        echo "FAIL: jitterctl $args called no method of io.jitterd (exit $rc): $out" >&2
        failures=$((failures + 1))
    elif (( rc != 1 )) || [[ $out != "$want" ]]; then
        echo "FAIL: jitterctl $args exited $rc (want 1), printed: $out" >&2
        echo "      want: $want" >&2
        failures=$((failures + 1))
    else
        echo "ok: jitterctl $args: $out"
    fi
done
[[ ! -e $T/p.svg ]] || { echo "FAIL: plot left a file behind" >&2; failures=$((failures + 1)); }
(( failures == 0 )) || fail "$failures commands do not say clearly which method is missing"
pass "every command names the missing method and exits 1"
