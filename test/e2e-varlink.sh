# The Varlink interface as any client sees it: the description in config/io.jitterd.varlink
# parses with an independent IDL parser (varlink-go's generator), the daemon serves exactly that
# text through org.varlink.service, and GetInfo lists the interfaces.
source "$(dirname "$0")/lib.sh"
need_cpu1
IDL=$SOURCE_DIR/config/io.jitterd.varlink
GEN=$(command -v varlink-go-interface-generator) || fail "varlink-go-interface-generator missing (Debian varlink-go; tools/deps test)"

mkdir -p "$T/idl" && cp "$IDL" "$T/idl/" && (cd "$T/idl" && "$GEN" io.jitterd.varlink) \
    || fail "config/io.jitterd.varlink does not parse with varlink-go"
grep -q 'func (c \*VarlinkCall) ReplyGetStats' "$T/idl"/*.go || fail "the parser saw no GetStats method"
# The parser must be able to say no, or the check above proves nothing.
mkdir -p "$T/bad" && sed 's/^method GetStats(/method GetStats((/' "$IDL" > "$T/bad/io.jitterd.varlink"
if (cd "$T/bad" && "$GEN" io.jitterd.varlink) >/dev/null 2>&1; then
    fail "the IDL parser accepted a syntax error"
fi
pass "config/io.jitterd.varlink parses with an independent Varlink IDL parser"

printf '[probe]\npreheat = 200ms\n' > "$T/jitterd.conf"
start_daemon
jctl --json call org.varlink.service.GetInfo > "$T/info.json"
jq -e '.vendor == "jitterd" and .product == "jitterd" and (.version | length > 0)
       and (.interfaces | index("io.jitterd") != null)
       and (.interfaces | index("org.varlink.service") != null)' "$T/info.json" >/dev/null \
    || fail "GetInfo: $(cat "$T/info.json")"
jctl --json call org.varlink.service.GetInterfaceDescription '{"interface": "io.jitterd"}' \
    | jq -j .description > "$T/served.varlink"
cmp -s <(cat "$IDL") "$T/served.varlink" || fail "the served description differs from $IDL"
pass "GetInfo and GetInterfaceDescription serve config/io.jitterd.varlink"

# Errors as the protocol names them.
out=$(jctl call io.jitterd.GetStats '{"bogus": 1}' 2>&1 || true)
grep -q 'org.varlink.service.InvalidParameter' <<<"$out" || fail "unknown field: $out"
out=$(jctl call io.jitterd.Frobnicate 2>&1 || true)
grep -q 'org.varlink.service.MethodNotFound' <<<"$out" || fail "unknown method: $out"
out=$(jctl call io.jitterd.GetHistogram '{"cpu": 0}' 2>&1 || true)
grep -q 'io.jitterd.NoSuchCpu' <<<"$out" || fail "unprobed CPU: $out"
out=$(jctl call io.jitterd.GetStats '{"window": "7y"}' 2>&1 || true)
grep -q 'io.jitterd.InvalidWindow' <<<"$out" || fail "bad window: $out"
out=$(jctl call io.jitterd.Monitor 2>&1 || true)
grep -q 'org.varlink.service.ExpectedMore' <<<"$out" || fail "Monitor without more: $out"
pass "InvalidParameter, MethodNotFound, NoSuchCpu, InvalidWindow, ExpectedMore"
stop_daemon || fail "exit status"
