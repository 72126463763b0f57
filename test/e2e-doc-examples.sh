# The documentation's examples, run: every command shown in README.md, docs/*.md and the
# EXAMPLES of the manual pages (found by test/doc-examples.py; the convention is in
# docs/testing.md). A command is run against the programs of this build, jitterctl against a
# jitterd this test starts on CPU 1, and its exit status and the shape of its output are checked
# with the table below; where the documentation shows the output, the same shape must hold for
# what it shows. Blocks marked no-run are checked by bash -n and by each program's own argument
# parsing. Every manual page must render under groff -man -ww without a warning and be installed.
source "$(dirname "$0")/lib.sh"
need_cpu1
command -v groff > /dev/null || fail "needs groff (tools/dev/deps test)"
command -v python3 > /dev/null || fail "needs python3"

failures=0
n_run=0
n_syntax=0
n_dry=0
n_config=0
bad() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

# --- The manual pages: installed, ASCII, and no groff warning. ---------------------------------
mapfile -t pages < <(cd "$SOURCE_DIR" && ls systemd/man/*.[1-8] tools/jitterctl/*.[1-8])
((${#pages[@]} >= 4)) || fail "found only ${#pages[@]} manual pages"
DESTDIR=$T/inst cmake --install "$BUILD_DIR" --prefix /usr > "$T/install.log" 2>&1 \
    || { cat "$T/install.log" >&2; fail "cmake --install failed"; }
for page in "${pages[@]}"; do
    name=${page##*/}
    installed=$T/inst/usr/share/man/man${name##*.}/$name
    if [[ ! -s $installed ]]; then
        bad "$page is not installed as ${installed#"$T"/inst}"
        continue
    fi
    if LC_ALL=C grep -n '[^[:print:][:space:]]' "$installed" > "$T/nonascii"; then
        bad "$page has characters outside ASCII (use roff escapes such as \\(mc):" \
            "$(head -3 "$T/nonascii")"
    fi
    groff -man -ww -Tutf8 "$installed" > "$T/page.txt" 2> "$T/groff.err"
    if [[ -s $T/groff.err ]]; then
        bad "groff -man -ww warns about $page: $(head -5 "$T/groff.err")"
    elif [[ $(wc -l < "$T/page.txt") -lt 20 ]]; then
        bad "$page renders to fewer than 20 lines"
    else
        pass "$page renders without a warning"
    fi
done
for doc in README.md "$SOURCE_DIR"/docs/*.md; do
    [[ -s $T/inst/usr/share/doc/jitterd/${doc##*/} ]] \
        || bad "${doc#"$SOURCE_DIR"/} is not installed in /usr/share/doc/jitterd"
done
# What the manual pages send their readers to must be there.
for ref in $(cd "$SOURCE_DIR" && grep -ohE '/usr/share/([a-z/_.-]|\\-)*[a-z]' "${pages[@]}" \
    | sed 's/\\-/-/g' | sort -u); do
    [[ -e $T/inst$ref ]] || bad "a manual page refers to $ref, which the package does not install"
done

# --- The links between the documents. ---------------------------------------------------------
if python3 "$SOURCE_DIR/test/doc-examples.py" --links "$SOURCE_DIR" > "$T/links"; then
    pass "every relative link of README.md and docs/ leads to a file and heading"
else
    bad "links that lead nowhere: $(cat "$T/links")"
fi

# --- What each command must do. ---------------------------------------------------------------
# expect GLOB STATUS CHECK ARG [CHECK ARG]...: a command that matches GLOB (its text without a
# trailing comment, after "sudo") must exit with a status matching the ERE STATUS, and its
# standard output pass every check:
#   re ERE       a line matches ERE (also the output the documentation shows, if any)
#   lines ERE    every line matches ERE (an empty output too)
#   jq EXPR      the output is JSON and EXPR is true (also the output shown, where it parses)
#   jqs EXPR     the output is JSON values, one per line, and EXPR is true of their array
#   file FILE ERE   FILE (in the scratch directory) has a line that matches ERE
#   tofile EXPR  the output went to the file after the last ">", which is JSON and EXPR is true
# The first rule that matches a command is used; a command no rule matches fails the test.
declare -a RULES=()
expect() {
    local IFS=$'\x1f'
    RULES+=("$*")
}
num='[0-9][0-9.]*'
expect 'export PATH=*' 0 lines '^$'
expect 'jitter-probe * --json*| jq *' 0 re '"max_ns": *[0-9]+'
expect 'jitter-probe *' 0 re '^counter: (tsc|cntvct|clock), ' re '^CPU 1: '"$num"' s, [0-9]+ samples' \
    re '^ +CPU AVAILABLE: '"$num"' %'
expect 'jitterd * --dump-config' 0 re '^\[probe\]$' re '^cpus = 2-3$' re '^interval = 500ms$'
expect 'jitterctl status' 0 re '^jitterd '"$num"', up ' re '^counter: +(tsc|cntvct|clock) at ' \
    re '^ +CPU +STATE +POLICY +SAMPLES +FLOOR +WORST 1m' re '^ +1 +(running|preheating|stalled) '
expect 'jitterctl stats*' 0 re '^window [0-9a-z]+ \('"$num"' [a-zµ]+\), ' \
    re '^ CPU +Avg +Min +Max +Samples +p99 +p99\.99 +Int/s +Lost %' re '^ +1 +-?'"$num"' [nµm]?s '
expect 'jitterctl explain*' 0 re '^CPU 1, window [0-9a-z]+: time lost ' \
    re '^ +EXACT CAUSE +SHARE +TIME +COUNT'
expect 'jitterctl doctor*' '0|1' re '.'
expect 'jitterctl check *' '0|1' re '^(OK|FAIL): '
expect 'jitterctl audit * > /dev/null || echo "not tuned"' 0 lines '^(not tuned)?$'
expect 'jitterctl audit' '0|1' re '^SEVERITY +CHECK +CPU +SEEN' \
    re '^(ok|info|warning|error) +isolcpus +1 '
expect 'jitterctl call GetStats *' 0 jq '.cpus[0].cpu == 1 and .cpus[0].window == "10s"'
expect 'jitterctl call org.varlink.service.GetInfo' 0 jq '.interfaces | index("io.jitterd") != null'
expect 'jitterctl --json watch --count 3' 0 \
    jqs 'length == 3 and all(.[]; has("start_ns") and (.cpus | type == "array"))'
expect "jitterctl call Reset '{}'" 0 jq '. == {}'
expect 'jitterctl export --format prometheus | grep *' 0 re '^jitter_probe_up\{cpu="1"\} 1$'
expect 'jitterctl snapshot > *' 0 lines '^$' tofile '.format == "jitterd-snapshot" and (.cpus | length) == 1'
expect 'jitterctl compare *' 0 re '^before: ' re '^CPU 1 +before +after +change$' \
    re '^ +interruptions/s +'
expect 'jitterctl plot --svg after.svg *' 0 lines '^$' file after.svg '^<svg '
expect 'jitterctl --json events * | jq *' 0 \
    jq 'type == "array" and length <= 10 and all(.[]; has("duration_ns") and .cpu == 1)'
expect 'varlinkctl introspect *' 0 re '^interface io\.jitterd$'
expect 'varlinkctl call *' 0 jq '.cpus | type == "array"'
# jitterctl commands that the documentation names before this build has them: their examples
# are skipped parts until it does (any other unknown command fails).
FUTURE_SUBCOMMANDS=" doctor "
# jitterctl commands that need the trace recorder running.
TRACE_SUBCOMMANDS=" explain "

# check_output KIND ARG FILE: one check of the table on FILE; prints what is wrong, if anything.
check_output() {
    local kind=$1 arg=$2 f=$3
    case $kind in
        re) grep -Eq -- "$arg" "$f" || echo "no line matches /$arg/" ;;
        lines) ! grep -Evq -- "$arg" "$f" || echo "a line does not match /$arg/" ;;
        jq) jq -e "$arg" "$f" > /dev/null 2>&1 || echo "the JSON is not: $arg" ;;
        jqs) jq -se "$arg" "$f" > /dev/null 2>&1 || echo "the JSON lines are not: $arg" ;;
        *) echo "unknown check $kind" ;;
    esac
}

# rule_for COMMAND: sets RULE to the fields of the first rule that matches, or returns 1.
rule_for() {
    local r glob
    for r in "${RULES[@]}"; do
        glob=${r%%$'\x1f'*}
        # shellcheck disable=SC2053 # a glob on purpose
        if [[ $1 == $glob ]]; then
            IFS=$'\x1f' read -r -a RULE <<< "$r"
            return 0
        fi
    done
    return 1
}

# Strips a trailing comment (a " #" outside quotes) and "sudo " in front.
normalize() {
    python3 -c '
import shlex, sys
s = sys.argv[1]
q = None
for i, c in enumerate(s):
    if q:
        q = None if c == q else q
    elif c in "\x27\"":
        q = c
    elif c == "#" and i > 0 and s[i - 1] in " \t":
        s = s[:i]
        break
s = " ".join(s.split())
print(s[5:] if s.startswith("sudo ") else s)' "$1"
}

# --- The scratch directory the examples run in, and the programs they find there. --------------
WORK=$T/work
BIN=$T/bin
mkdir -p "$WORK" "$BIN" "$WORK/build/probe" "$WORK/build/daemon" "$WORK/build/tools/jitterctl"
JITTER_PROBE=$BUILD_DIR/probe/jitter-probe
# jitterctl talks to the test's daemon, whatever socket an example names.
cat > "$BIN/jitterctl" <<EOF
#!/bin/bash
args=()
while ((\$#)); do
    case \$1 in
        --socket) shift 2 ;;
        --socket=*) shift ;;
        *) args+=("\$1"); shift ;;
    esac
done
exec "$JITTERCTL" --socket "$SOCK" "\${args[@]}"
EOF
# jitterd only says what it would do: an example that starts a daemon must be no-run=long.
cat > "$BIN/jitterd" <<EOF
#!/bin/bash
for a; do
    case \$a in --dump-config|--help|-h|--version|-V) exec "$JITTERD" "\$@" ;; esac
done
echo "an example that starts jitterd runs until stopped: mark its block no-run=long" >&2
exit 3
EOF
printf '#!/bin/sh\nexec "%s" "$@"\n' "$JITTER_PROBE" > "$BIN/jitter-probe"
# sudo: the test runs as root already.
printf '#!/bin/sh\nwhile [ "${1#-}" != "$1" ]; do shift; done\nexec "$@"\n' > "$BIN/sudo"
chmod +x "$BIN"/*
ln -s "$BIN/jitter-probe" "$WORK/build/probe/jitter-probe"
ln -s "$BIN/jitterd" "$WORK/build/daemon/jitterd"
ln -s "$BIN/jitterctl" "$WORK/build/tools/jitterctl/jitterctl"
# The environment the examples share: a command's exports and directory carry to the next.
(
    export PATH=$BIN:$PATH
    export -p
) > "$T/env.sh"
echo "$WORK" > "$T/cwd"

# run_example COMMAND: runs it as a user would type it, for at most 30 s; its standard output in
# $T/out, its standard error in $T/err.
run_example() {
    local cmd=${1//\/run\/jitterd\/io.jitterd/$SOCK}
    timeout -k 5 30 bash -c '
        source "$1"; cd "$(cat "$2")" || exit 99
        set +e +o pipefail
        eval "$3"
        rc=$?
        export -p > "$1"; pwd > "$2"
        exit $rc' _ "$T/env.sh" "$T/cwd" "$cmd" < /dev/null > "$T/out" 2> "$T/err"
}

# --- The examples. -----------------------------------------------------------------------------
# The calls doc-examples.py writes; which of them runs depends on the phase: "probe" runs the
# jitter-probe examples before the daemon starts, "daemon" all the others.
PHASE=

doc_run() {
    local file=$1 line=$2 needs=$3 progs=$4 subs=$5 cmd=$6 shown=$7 norm rc=0 i prog sub
    local probe=no
    [[ " $progs " == *" jitter-probe "* ]] && probe=yes
    if [[ $PHASE == probe ]]; then
        [[ $probe == yes ]] || return 0
    else
        [[ $probe == no ]] || return 0
    fi
    for prog in ${needs//,/ }; do
        if ! command -v "$prog" > /dev/null; then
            skip_part "$file:$line" "needs $prog, which is not installed: $cmd"
            return 0
        fi
    done
    for sub in $subs; do
        if [[ $FUTURE_SUBCOMMANDS == *" $sub "* ]] && ! grep -Eq "^  $sub " "$T/commands"; then
            skip_part "$file:$line" "this jitterctl has no command $sub yet: $cmd"
            return 0
        fi
        if [[ $TRACE_SUBCOMMANDS == *" $sub "* && $TRACE_STATE != recording ]]; then
            skip_part "$file:$line" "the daemon's trace is $TRACE_STATE: $cmd"
            return 0
        fi
    done
    norm=$(normalize "$cmd")
    if ! rule_for "$norm"; then
        bad "$file:$line: no rule in $(basename "$0") says what \"$norm\" must do"
        return 0
    fi
    n_run=$((n_run + 1))
    run_example "$cmd" || rc=$?
    local -a why=()
    [[ $rc =~ ^(${RULE[1]})$ ]] || why+=("exit status $rc, not ${RULE[1]}")
    printf '%s\n' "$shown" > "$T/shown"
    for ((i = 2; i + 1 < ${#RULE[@]}; i += 2)); do
        local kind=${RULE[i]} arg=${RULE[i + 1]} w
        case $kind in
            file)
                w=$(check_output re "${RULE[i + 2]}" "$WORK/$arg")
                [[ -z $w ]] || why+=("$arg: $w")
                i=$((i + 1))
                ;;
            tofile)
                w=$(check_output jq "$arg" "$WORK/${norm##*> }")
                [[ -z $w ]] || why+=("${norm##*> }: $w")
                ;;
            *)
                w=$(check_output "$kind" "$arg" "$T/out")
                [[ -z $w ]] || why+=("$w")
                if [[ -n $shown ]] && { [[ $kind == re ]] ||
                    { [[ $kind == jq ]] && jq -e . "$T/shown" > /dev/null 2>&1; }; }; then
                    w=$(check_output "$kind" "$arg" "$T/shown")
                    [[ -z $w ]] || why+=("the output shown: $w")
                fi
                ;;
        esac
    done
    if ((${#why[@]} > 0)); then
        bad "$file:$line: $cmd: $(printf '%s; ' "${why[@]}")"
        sed -n '1,20p' "$T/out" | sed 's/^/    | /' >&2
        sed -n '1,5p' "$T/err" | sed 's/^/    ! /' >&2
    else
        pass "$file:$line: $cmd"
    fi
}

doc_syntax() {
    local file=$1 line=$2 reason=$3 text=$4
    [[ $PHASE == daemon ]] || return 0
    n_syntax=$((n_syntax + 1))
    if bash -n <<< "$text" 2> "$T/syntax.err"; then
        pass "$file:$line: syntax (no-run=$reason)"
    else
        bad "$file:$line: bash -n: $(cat "$T/syntax.err")"
    fi
}

# doc_dry FILE LINE PROGRAM ARGS...: the program's own parsing of an example's arguments.
doc_dry() {
    local file=$1 line=$2 prog=$3 rc=0
    shift 3
    local given="$prog $*"
    [[ $PHASE == daemon ]] || return 0
    n_dry=$((n_dry + 1))
    local -a args=()
    case $prog in
        jitterd)
            # --config names a file the block would write: an empty one stands in for it.
            : > "$T/empty.conf"
            while (($#)); do
                case $1 in
                    -c|--config) args+=("$1" "$T/empty.conf"); shift 2 ;;
                    *) args+=("$1"); shift ;;
                esac
            done
            (cd "$WORK" && "$JITTERD" "${args[@]}" --dump-config) > "$T/out" 2>&1 || rc=$?
            [[ $rc == 0 ]] || { bad "$file:$line: jitterd $* --dump-config exited $rc: $(head -3 "$T/out")"; return 0; }
            ;;
        jitterctl)
            while (($#)); do
                case $1 in
                    --socket) shift 2 ;;
                    *) args+=("$1"); shift ;;
                esac
            done
            if [[ $FUTURE_SUBCOMMANDS == *" ${args[0]:-} "* ]] && ! grep -Eq "^  ${args[0]} " "$T/commands"; then
                skip_part "$file:$line" "this jitterctl has no command ${args[0]} yet"
                return 0
            fi
            (cd "$WORK" && "$JITTERCTL" --socket "$T/nowhere" --timeout 1s "${args[@]}") \
                > "$T/out" 2>&1 || rc=$?
            if [[ $rc == 2 ]] || grep -q '^Usage: ' "$T/out"; then
                bad "$file:$line: jitterctl ${args[*]}: a usage error: $(head -3 "$T/out")"
                return 0
            fi
            ;;
        jitter-probe | tools/run)
            "$JITTER_PROBE" "$@" --help > "$T/out" 2>&1 || rc=$?
            [[ $rc == 0 ]] || { bad "$file:$line: $prog $*: a usage error: $(head -3 "$T/out")"; return 0; }
            ;;
        tools/*)
            if [[ ! -x $SOURCE_DIR/$prog ]]; then
                bad "$file:$line: $prog is not an executable of the source tree"
                return 0
            fi
            bash -n "$SOURCE_DIR/$prog" || { bad "$file:$line: bash -n $prog"; return 0; }
            ;;
    esac
    pass "$file:$line: $given (parsed, not run)"
}

doc_config() {
    local file=$1 line=$2 text=$3 rc=0
    [[ $PHASE == daemon ]] || return 0
    n_config=$((n_config + 1))
    printf '%s' "$text" > "$T/example.conf"
    "$JITTERD" --config "$T/example.conf" --dump-config > "$T/out" 2> "$T/config.err" || rc=$?
    if [[ $rc != 0 || -s $T/config.err ]]; then
        bad "$file:$line: jitterd does not take this configuration as it is (exit $rc): $(head -3 "$T/config.err")"
    else
        pass "$file:$line: configuration loads"
    fi
}

python3 "$SOURCE_DIR/test/doc-examples.py" --bash "$SOURCE_DIR" > "$T/examples.sh" \
    || fail "test/doc-examples.py cannot read the documentation"
"$JITTERCTL" --help > "$T/commands"

# Phase 1: jitter-probe alone on CPU 1.
PHASE=probe
TRACE_STATE=off
source "$T/examples.sh"

# Phase 2: the daemon on CPU 1, with the trace where tracefs can be mounted.
trace=no
if [[ $(stat -f -c %T "$TRACEFS" 2> /dev/null) == tracefs ]]; then
    trace=yes
elif grep -qw tracefs /proc/filesystems && mount -t tracefs nodev "$TRACEFS" 2> /dev/null; then
    # shellcheck disable=SC2034 # lib.sh's cleanup unmounts it
    TRACEFS_MOUNTED=1
    trace=yes
fi
# Few events, so that the analyses of every window the examples ask for stay quick on a noisy CPU.
cat > "$T/jitterd.conf" << CONF
[probe]
preheat = 300ms
threshold = 20us
[history]
events_per_cpu = 1000
[trace]
enabled = $trace
CONF
start_daemon
# Some intervals, so that windows, timelines and Monitor have something to say.
sleep 2
TRACE_STATE=$(jctl --json status | jq -r .trace.state)
[[ $TRACE_STATE == recording ]] || echo "note: the trace is $TRACE_STATE: its examples are skipped parts"
PHASE=daemon
source "$T/examples.sh"
stop_daemon || fail "jitterd did not stop cleanly"

echo "examples: $n_run run, $n_syntax blocks checked by bash -n, $n_dry command lines parsed," \
    "$n_config configurations loaded"
((n_run >= 20 && n_syntax >= 5 && n_config >= 3)) || fail "fewer examples than the documentation has"
((failures == 0)) || fail "$failures of the documentation's examples do not hold"
pass "every example of the documentation holds"
