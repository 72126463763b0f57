# The Varlink interface as an independent client sees it: test/varlink-check, a Go program on
# the varlink-go client library (Debian's golang-github-varlink-go-dev), built here offline,
# calls every method of io.jitterd and org.varlink.service on the real daemon, Monitor as a
# stream with "more", and calls that are wrong in every way a client can be. Each reply is
# checked against the types of config/io.jitterd.varlink as varlink-go's IDL parser reads them
# (and org.varlink.service as the Varlink specification defines it): required fields present,
# types right, no field the description does not name, errors declared with their parameters.
source "$(dirname "$0")/lib.sh"
need_cpu1
GOSRC=/usr/share/gocode/src/github.com/varlink/go/varlink
command -v go > /dev/null || fail "needs go (golang-go; tools/dev/deps test)"
[[ -f $GOSRC/idl/idl.go ]] || fail "needs $GOSRC (golang-github-varlink-go-dev; tools/dev/deps test)"
command -v taskset > /dev/null || fail "needs taskset (util-linux; tools/dev/deps test)"

# GOPATH mode on Debian's packaged sources: nothing is fetched, the build cache is private.
(cd "$SOURCE_DIR/test/varlink-check" &&
    GO111MODULE=off GOPATH=/usr/share/gocode GOPROXY=off GOFLAGS= GOENV=off \
        GOCACHE="$T/go-cache" go build -o "$T/varlink-check" .) > "$T/go-build.log" 2>&1 \
    || fail "cannot build test/varlink-check: $(cat "$T/go-build.log")"
pass "test/varlink-check built against varlink-go $(dpkg-query -W -f='${Version}' \
    golang-github-varlink-go-dev 2>/dev/null || echo '(version unknown)')"

# The probed CPU in the file, where varlink-check's Reload adds one that does not exist.
printf '[probe]\ncpus = 1\npreheat = 200ms\n' > "$T/jitterd.conf"
CPUS_OPT=()
start_daemon
# A few intervals, so that windows, timelines and events have something in them.
sleep 1

# On CPU 0: the client's threads must not take the probe's CPU, or Monitor's intervals show it.
# Reload is checked with the daemon's own configuration file.
taskset -c 0 "$T/varlink-check" -socket "$SOCK" -idl "$SOURCE_DIR/config/io.jitterd.varlink" \
    -config "$T/jitterd.conf" -cpu 1 > "$T/check.log" 2>&1 \
    || { cat "$T/check.log"; fail "varlink-check found problems"; }
cat "$T/check.log"
pass "$(grep -c '^ok:' "$T/check.log") checks of varlink-check passed"

# A peer that is neither root nor in the admin group: Reset and Reload refused with the
# declared error.
if command -v setpriv > /dev/null && id nobody > /dev/null 2>&1; then
    chmod 755 "$T"
    chmod 666 "$SOCK"
    setpriv --reuid=nobody --regid=nogroup --clear-groups taskset -c 0 "$T/varlink-check" \
        -socket "$SOCK" -idl "$SOURCE_DIR/config/io.jitterd.varlink" -unprivileged \
        > "$T/nobody.log" 2>&1 || { cat "$T/nobody.log"; fail "varlink-check as nobody"; }
    cat "$T/nobody.log"
    pass "an unprivileged peer: Reset and Reload refused with org.varlink.service.PermissionDenied"
else
    skip_part "Reset and Reload from an unprivileged peer" "no setpriv or no user nobody here"
fi

stop_daemon || fail "exit status"
pass "jitterd stopped cleanly"
