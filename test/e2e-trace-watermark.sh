# The trace's reads between harvests are woken by the kernel when a probed CPU's buffer is a
# quarter full (tracefs buffer_percent, polled on trace_pipe_raw): a quiet CPU then costs one
# read an interval, and a busy one loses nothing. jitterd records CPU 1 with 1 s intervals.
# - Quiet: over 5 s it reads the trace at most twice a second (timed reads were ten a second).
# - Busy: stress-ng switches tasks on CPU 1 20 000 times a second for 3 s. The test first checks
#   from the records counted that the burst wrote more than twice the kernel buffer per
#   interval, so that reads at the harvests alone would have lost records. The daemon then
#   reads more often than once an interval and loses none. The rate is fixed, not as fast as
#   the CPU can switch: a reader keeps up with so much and no more (on a 2-vCPU AMD EPYC VM,
#   about 3 records per switch, none lost at 30 000 switches a second, some at 50 000), and a
#   faster host would write more for it to keep up with.
# On a kernel that does not take the watermark, GetStatus says "timer" and the test skips.
source "$(dirname "$0")/lib.sh"
need_cpu1
command -v jq > /dev/null || fail "needs jq (tools/dev/deps test)"
command -v stress-ng > /dev/null || fail "needs stress-ng (tools/dev/deps test)"
command -v taskset > /dev/null || fail "needs taskset (util-linux)"
need_tracefs

printf '[probe]\npreheat = 300ms\n[trace]\nenabled = yes\n' > "$T/jitterd.conf"
start_daemon --interval 1s
taskset -cp 0 $$ > /dev/null || fail "cannot keep the test on CPU 0"
trace() { jctl --json status | jq -r ".trace.$1"; }
[[ $(trace state) == recording ]] || fail "the trace does not record: $(trace reason)"
trigger=$(trace read_trigger)
[[ $trigger == watermark ]] || skip "this kernel does not wake the reader at the trace" \
    "buffer's watermark (read_trigger $trigger): the reads are timed"
pass "the trace records, its reads woken by the watermark"

# Quiet: what the host makes on CPU 1 by itself.
sleep 2
r0=$(trace reads) t0=$(now_ns)
sleep 5
r1=$(trace reads) t1=$(now_ns)
quiet=$(awk -v r=$((r1 - r0)) -v ns=$((t1 - t0)) 'BEGIN { printf "%.2f", r / (ns / 1e9) }')
awk -v q="$quiet" 'BEGIN { exit !(q <= 2) }' \
    || fail "quiet: $quiet reads a second, more than twice an interval"
pass "quiet: $((r1 - r0)) reads in $(( (t1 - t0) / 1000000 )) ms ($quiet a second)"

# Busy: the records a second the burst writes, against the kernel buffer of CPU 1.
kernel=$(trace kernel_bytes)
rec0=$(trace records) l0=$(trace losses) r2=$(trace reads) t2=$(now_ns)
taskset -c 1 stress-ng --switch 1 --switch-freq 20000 --timeout 3 --quiet \
    || fail "stress-ng --switch failed"
sleep 1.2
rec1=$(trace records) l1=$(trace losses) r3=$(trace reads) t3=$(now_ns)
secs=$(awk -v ns=$((t3 - t2)) 'BEGIN { printf "%.1f", ns / 1e9 }')
# A record is at least 16 bytes in the kernel buffer (8 of header, 8 of the smallest event).
per_s=$(awk -v n=$((rec1 - rec0)) -v s="$secs" 'BEGIN { printf "%.0f", n * 16 / s }')
(( per_s > 2 * kernel )) || fail "the burst wrote at least $per_s bytes a second, not more than" \
    "twice the kernel buffer ($kernel bytes): it proves nothing about the reads"
(( l1 == l0 )) || fail "busy: $((l1 - l0)) losses while the watermark should wake the reader"
(( r3 - r2 > 2 * ${secs%.*} )) \
    || fail "busy: $((r3 - r2)) reads in $secs s, no more than the harvests'"
pass "busy: $((rec1 - rec0)) records (at least $((per_s / 1024)) KiB a second against a" \
    "$((kernel / 1024)) KiB buffer) in $((r3 - r2)) reads over $secs s, no loss"

stop_daemon || fail "jitterd did not exit cleanly"
pass "jitterd stopped"
