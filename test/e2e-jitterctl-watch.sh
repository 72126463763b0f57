# jitterctl on a terminal (tmux): watch draws in place on the alternate screen, refreshes every
# interval, stays within the window when it is resized, and q, Ctrl-C or the daemon going away
# leave it with the terminal restored (main screen, cursor, canonical mode and echo). Colour only
# on a terminal, never through a pipe, with NO_COLOR set or with --no-color.
source "$(dirname "$0")/lib.sh"
need_cpu1
command -v tmux > /dev/null || fail "needs tmux (tools/dev/deps test)"

cat > "$T/jitterd.conf" <<CONF
[probe]
threshold = 10us
preheat = 300ms
CONF

# A private tmux server, killed with the test.
TMUX_SOCK=$T/tmux.sock
tm() { tmux -S "$TMUX_SOCK" -f /dev/null "$@"; }
cleanup_tmux() {
    local rc=$?
    set +e
    tmux -S "$TMUX_SOCK" kill-server 2> /dev/null
    (exit $rc)
    cleanup # lib.sh's: it takes the exit status from $?
}
trap cleanup_tmux EXIT
unset TMUX

J="$JITTERCTL --socket $SOCK"
# pane NAME COMMAND: runs COMMAND (sh) in a new 120x30 terminal; the terminal stays open after.
pane() { tm new-session -d -s "$1" -x 120 -y 30 "$2; exec sleep 600"; }
screen() { tm capture-pane -p -t "$1" "${@:2}"; }
# wait_screen NAME ERE SECONDS: until the screen shows a line matching ERE.
wait_screen() {
    local i
    for ((i = 0; i < $3 * 10; i++)); do
        screen "$1" | grep -Eq -- "$2" && return 0
        sleep 0.1
    done
    return 1
}
flag() { tm display-message -p -t "$1" "#{$2}"; }
intervals() { screen "$1" | sed -nE 's/^([0-9]+) intervals$/\1/p'; }

# check_frame NAME: the frame is in place: the header on the top row, once, the column heads on
# the third and CPU 1 on the fourth.
check_frame() {
    local s
    s=$(screen "$1")
    [[ $(sed -n 1p <<< "$s") == "jitterctl watch  $SOCK  "* ]] \
        && [[ $(sed -n 3p <<< "$s") == " CPU  STATE"* ]] \
        && [[ $(sed -n 4p <<< "$s") =~ ^\ +1\ \ [a-z]+\  ]] \
        && (( $(grep -c 'jitterctl watch' <<< "$s") == 1 )) \
        || { echo "$s" >&2; fail "$2: the frame is not in place"; }
}

# check_restored NAME STATUS: jitterctl exited with STATUS and left the terminal as it was.
check_restored() {
    wait_screen "$1" '^exit=[0-9]+$' 5 || { screen "$1" >&2; fail "$1: jitterctl did not exit"; }
    # stty -a prints after the exit line: wait for its modes before reading them.
    wait_screen "$1" '(^| )-?icanon( |$)' 5 || { screen "$1" >&2; fail "$1: stty -a printed nothing"; }
    local s
    s=$(screen "$1")
    grep -qx "exit=$2" <<< "$s" || { echo "$s" >&2; fail "$1: exit status is not $2"; }
    [[ $(flag "$1" alternate_on) == 0 ]] || fail "$1: still on the alternate screen"
    [[ $(flag "$1" cursor_flag) == 1 ]] || fail "$1: the cursor is still hidden"
    grep -Eq '(^| )icanon( |$)' <<< "$s" && grep -Eq '(^| )echo( |$)' <<< "$s" \
        || { echo "$s" >&2; fail "$1: canonical mode or echo not restored"; }
}

start_daemon
# This script and what it starts (tmux, its panes, jitterctl) stay on CPU 0: the SCHED_OTHER
# probe shares CPU 1 with every task that lands there, and the view's polling of the screen
# would add its own runs to the theft. The thief pins its own thread.
taskset -cp 0 $$ > /dev/null || fail "cannot keep the test on CPU 0"
# The noise of CPU 1 over 10 s, for the theft that the view must show as its worst gap: four
# times that noise's worst and at least 2 ms, bounded from both sides (THEFT_JQ's bounds).
sleep 10
slack_ns=$(clock_slack_ns)
noise=$(noise_ns)
theft_us=$((noise * 4 / 1000))
(( theft_us >= 2000 )) || theft_us=2000
(( theft_us <= 100000 )) || fail "CPU 1 too busy (its worst gap $((noise / 1000)) us) for a theft above it"
# worst_ns NAME: the worst gap of CPU 1 the view shows, in ns: the last duration of its row
# (MAX GAP, p99, then WORST SEEN; the interrupts that follow are names and counts).
worst_ns() {
    screen "$1" | awk '$1 == "1" {
        for (i = 2; i < NF; i++) {
            u = $(i + 1)
            m = u == "s" ? 1e9 : u == "ms" ? 1e6 : (u == "us" || u == "µs") ? 1e3 : u == "ns" ? 1 : 0
            if (m && $i ~ /^[0-9.]+$/) w = $i * m
        }
        if (w != "") printf "%d\n", w
        exit }'
}

# ---- watch, then q.
pane w "env -u NO_COLOR $J watch --cpu 1; echo exit=\$?; stty -a"
wait_screen w '^[0-9]+ intervals$' 10 || { screen w >&2; fail "no frame within 10 s"; }
[[ $(flag w alternate_on) == 1 ]] || fail "watch is not on the alternate screen"
check_frame w "first frame"
n1=$(intervals w)
for _ in $(seq 50); do
    sleep 0.1
    n2=$(intervals w)
    (( ${n2:-0} > n1 )) && break
done
(( ${n2:-0} > n1 )) || fail "the view did not change in 5 s ($n1 intervals, then ${n2:-none})"
check_frame w "a later frame"
screen w -e | grep -q $'\033\\[1mjitterctl watch' || fail "watch: no bold header on a terminal"
pass "watch: in place on the alternate screen, $n1 then $n2 intervals"

# A theft while the view runs: its worst gap seen becomes the theft's, to within the rounding
# of three digits, at most what the thief's wake-up, the switch back, the clocks and the noise
# add (the bounds of THEFT_JQ on a gap). Other work landing on the theft (the 10 s measured
# before may not hold its worst) spoils the upper bound: the view is quit, opened again
# (its worst seen starts over) and a new theft taken, three attempts at most.
theft_attempt() {
    "$THIEF" --cpu 1 --delay 100ms --durations "${theft_us}us" --due > "$T/theft" \
        || fail "jitter-thief failed"
    read -r th_s th_e th_due < "$T/theft"
    lo=$(( (th_e - th_s - 2 * slack_ns) * 995 / 1000 ))
    hi=$(( (th_e - th_due + th_s - th_due + 60000 + 2 * slack_ns + 2 * noise) * 1005 / 1000 ))
    seen_theft() { local w; w=$(worst_ns w); (( ${w:-0} >= lo )); }
    wait_until 5 seen_theft \
        || { screen w >&2; fail "watch: worst seen $(worst_ns w) ns, below the theft's $((th_e - th_s)) ns"; }
    worst=$(worst_ns w)
    (( worst <= hi ))
}
for attempt in 1 2 3; do
    theft_attempt && break
    msg="watch: worst seen $worst ns, beyond the theft's $((th_e - th_s)) ns and its bound $hi ns"
    msg+=" (slack $slack_ns ns, noise $noise ns)"
    (( attempt < 3 )) || { screen w >&2; fail "$msg, in 3 attempts"; }
    echo "attempt $attempt spoilt: $msg; the view opened again"
    tm send-keys -t w q
    check_restored w 0
    tm kill-session -t w
    pane w "env -u NO_COLOR $J watch --cpu 1; echo exit=\$?; stty -a"
    wait_screen w '^[0-9]+ intervals$' 10 || { screen w >&2; fail "no frame within 10 s"; }
done
pass "watch: worst seen $worst ns after a theft of $((th_e - th_s)) ns (within [$lo, $hi] ns)," \
    "attempt $attempt"

# Resized small: every row is cut to the width and the frame to the height, nothing wraps or
# scrolls.
tm resize-window -t w -x 50 -y 5
sleep 0.5
s=$(screen w)
[[ $(sed -n 1p <<< "$s") == "jitterctl watch  "* && -z $(sed -n 2p <<< "$s") ]] \
    && [[ $(sed -n 3p <<< "$s") == " CPU  STATE"* && $(sed -n 4p <<< "$s") =~ ^\ +1\  ]] \
    || { echo "$s" >&2; fail "watch at 50x5: the frame wraps or scrolls"; }
tm resize-window -t w -x 120 -y 30
sleep 0.5
check_frame w "after growing back"
pass "watch: resized to 50x5 and back, still in place"

tm send-keys -t w q
check_restored w 0
pass "watch: q quits at once and restores the terminal"

# ---- Ctrl-C (the shell keeps running: it has a handler, which jitterctl does not inherit).
pane c "trap true INT; $J watch --cpu 1; echo exit=\$?; stty -a"
wait_screen c '^[0-9]+ intervals$' 10 || { screen c >&2; fail "no frame within 10 s"; }
tm send-keys -t c C-c
check_restored c 0
pass "watch: Ctrl-C quits and restores the terminal"

# ---- Colour: on a terminal only, and never with NO_COLOR (non-empty) or --no-color.
colour_cmds="status; stats --cpu 1; hist 1; check --max 1ns"
run_all() {
    local prefix=$1 suffix=$2 out="" cmd
    IFS=';' read -ra list <<< "$colour_cmds"
    for cmd in "${list[@]}"; do
        out+="echo '== $cmd'; $prefix $J $cmd $suffix; "
    done
    echo "${out}echo '== end'"
}
# The five panes run their commands at once, and each `stats` works its analyses out at low
# priority on CPU 0, beside whatever else runs there: each pane is given 10 s plus five times
# what one `stats` took here just before, twice over.
t0=$(now_ns)
jctl stats --cpu 1 > /dev/null || fail "jitterctl stats --cpu 1"
stats_ms=$(( ($(now_ns) - t0) / 1000000 ))
colour_s=$(( 10 + 2 * 5 * stats_ms / 1000 ))
echo "one stats took $stats_ms ms: each pane has $colour_s s"
pane colour "$(run_all "env -u NO_COLOR" "")"
pane empty "$(run_all "env NO_COLOR=" "")"
pane nocolor "$(run_all "env NO_COLOR=1" "")"
pane option "$(run_all "env -u NO_COLOR" "--no-color")"
pane pipe "$(run_all "env -u NO_COLOR" "| cat")"
for p in colour empty nocolor option pipe; do
    wait_screen $p '^== end$' "$colour_s" \
        || { screen $p >&2; fail "$p: the commands did not finish within $colour_s s"; }
    tm capture-pane -p -e -S - -t $p > "$T/$p.txt"
done
for p in colour empty; do
    # Every command's output holds an escape.
    missing=$(awk '/^== / { if (name != "" && !esc) print name; name = $0; esc = 0; next }
                   /\033\[/ { esc = 1 }' "$T/$p.txt")
    [[ -z $missing ]] || { cat -v "$T/$p.txt" >&2; fail "$p: no colour on a terminal in: $missing"; }
done
for p in nocolor option pipe; do
    if grep -q $'\033' "$T/$p.txt"; then
        cat -v "$T/$p.txt" >&2
        fail "$p: escape codes where there must be no colour"
    fi
done
pass "colour on a terminal (also with NO_COLOR empty); none with NO_COLOR=1, --no-color, a pipe"

# ---- The daemon goes away under watch: a message, exit 1, the terminal restored.
pane gone "$J watch --cpu 1 2> $T/gone.err; echo exit=\$?; stty -a"
wait_screen gone '^[0-9]+ intervals$' 10 || { screen gone >&2; fail "no frame within 10 s"; }
stop_daemon || fail "the daemon did not exit 0"
check_restored gone 1
grep -Eq '^jitterctl: (jitterd ended the stream|the stream from jitterd ended)' "$T/gone.err" \
    || fail "no message when the daemon went away: $(cat "$T/gone.err")"
pass "watch: the daemon going away ends it with \"$(cat "$T/gone.err")\", terminal restored"
