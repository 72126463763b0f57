# Run-time isolation with Debian's cset (package cpuset) on the cgroup v1 cpuset hierarchy, for
# the end-to-end tests: a housekeeping set and an exclusive set for the probed CPU, the root and
# that set without load balancing, as `cset shield` leaves a machine. Sourced after lib.sh.
#
#   cset_usable            0 when cset and a writable v1 cpuset hierarchy are here, else 1 with
#                          the reason in $CSET_WHY; first clears what killed runs left
#                          (cset_clean_stale)
#   cset_isolate HK CPU    makes $CSET_HK (CPUs HK) and $CSET_ISO (CPU, exclusive)
#   cset_move PID...       moves those processes, with all their threads, into $CSET_HK
#   cset_remove            kills nothing, moves what is left in the sets back to the root,
#                          removes them and restores the root's load balancing; idempotent
#   cset_dirs              the cpusets below the root, one per line (to compare before/after)
#   cset_clean_stale       removes the sets of runs that ended without their cleanup (SIGKILL,
#                          as at a CTest timeout), says so, and balances the root again
#   cset_shield CPU        makes CPU quiet for the test (below); cset_unshield gives it back
#   cset_shield_if_usable CPU
#                          cset_shield where cset can, and says whether CPU is shielded
#   cset_exit              the EXIT trap of a test that shields: cset_unshield, then lib.sh's
#                          cleanup, whatever failed

CSET_ROOT=${CSET_ROOT:-/sys/fs/cgroup/cpuset}
CSET_HK=jitterd-hk-$$
CSET_ISO=jitterd-iso-$$
CSET_WHY=
CSET_MADE=
CSET_ROOT_LB=

cset_usable() {
    command -v cset > /dev/null || { CSET_WHY="no cset (apt-get install cpuset)"; return 1; }
    grep -qE '^[^ ]+ /sys/fs/cgroup/cpuset cgroup [^ ]*cpuset' /proc/mounts \
        || { CSET_WHY="no cgroup v1 cpuset hierarchy at $CSET_ROOT"; return 1; }
    [[ -w $CSET_ROOT/cpuset.sched_load_balance ]] \
        || { CSET_WHY="$CSET_ROOT is not writable"; return 1; }
    cset_clean_stale
    return 0
}

# cset_destroy DIR: moves what is left in the cpuset DIR back to the root, and removes it.
cset_destroy() {
    local dir=$1 pid
    while read -r pid; do
        echo "$pid" > "$CSET_ROOT/tasks" 2> /dev/null || true
    done < "$dir/tasks"
    cset set --destroy --set="${dir#"$CSET_ROOT"/}" > /dev/null 2>&1 || rmdir "$dir" 2> /dev/null \
        || { echo "cannot remove the cpuset $dir" >&2; return 1; }
}

# A run killed by SIGKILL leaves its sets, with the load it moved, and the root without load
# balancing. Its sets are known by name and by a PID that no longer runs; the root balances
# again once no set is left that turns balancing off (a run makes its sets only on a root that
# balances load, so 1 is what it found).
cset_clean_stale() {
    local dir pid removed=
    for dir in "$CSET_ROOT"/jitterd-hk-* "$CSET_ROOT"/jitterd-iso-*; do
        [[ -d $dir ]] || continue
        pid=${dir##*-}
        [[ $pid =~ ^[0-9]+$ && ! -d /proc/$pid ]] || continue
        cset_destroy "$dir" || continue
        echo "removed the cpuset ${dir##*/} of an earlier run (PID $pid) that did not clean up"
        removed=1
    done
    # lib.sh's per-test sets (cpuset_make) hold only the daemon, which dies with its run.
    for dir in "$CSET_ROOT"/jitterd-e2e-*; do
        [[ -d $dir ]] || continue
        pid=${dir##*-}
        [[ $pid =~ ^[0-9]+$ && ! -d /proc/$pid && ! -s $dir/tasks ]] || continue
        rmdir "$dir" 2> /dev/null && echo "removed the empty cpuset ${dir##*/} of an earlier run"
    done
    [[ -n $removed && $(cat "$CSET_ROOT/cpuset.sched_load_balance") == 0 ]] || return 0
    if grep -qx 0 "$CSET_ROOT"/*/cpuset.sched_load_balance 2> /dev/null; then
        echo "the root cpuset stays without load balancing: other sets without it remain"
        return 0
    fi
    echo 1 > "$CSET_ROOT/cpuset.sched_load_balance"
    echo "the root cpuset balances load again"
}

cset_dirs() {
    find "$CSET_ROOT" -mindepth 1 -type d | sort
}

cset_isolate() {
    local hk=$1 cpu=$2
    CSET_ROOT_LB=$(cat "$CSET_ROOT/cpuset.sched_load_balance")
    CSET_MADE=1
    cset set --cpu="$hk" --set="$CSET_HK" > /dev/null || fail "cset set $CSET_HK"
    cset set --cpu="$cpu" --set="$CSET_ISO" --cpu_exclusive > /dev/null \
        || fail "cset set $CSET_ISO"
    # cset leaves load balancing on; a shield turns it off in the root and the isolated set,
    # so that no scheduling domain spans CPU $cpu.
    echo 0 > "$CSET_ROOT/$CSET_ISO/cpuset.sched_load_balance"
    echo 0 > "$CSET_ROOT/cpuset.sched_load_balance"
}

cset_move() {
    local pids
    pids=$(IFS=,; echo "$*")
    cset proc --move --threads --pid="$pids" --toset="$CSET_HK" > /dev/null \
        || fail "cset proc --move --pid=$pids --toset=$CSET_HK"
}

cset_remove() {
    [[ -n $CSET_MADE ]] || return 0
    local set
    for set in "$CSET_ISO" "$CSET_HK"; do
        # Only what this test put there can be inside; it goes back to the root.
        [[ ! -d $CSET_ROOT/$set ]] || cset_destroy "$CSET_ROOT/$set" || true
    done
    [[ -z $CSET_ROOT_LB ]] || echo "$CSET_ROOT_LB" > "$CSET_ROOT/cpuset.sched_load_balance"
    CSET_MADE=
}

# cset_shield CPU: makes CPU quiet for the test that needs it, as `cset shield` would: the
# sets of cset_isolate (the other CPUs housekeeping, CPU exclusive, no load balancing), and every
# task of the root set moved to the housekeeping set, except kernel threads (those that may
# move are given the housekeeping CPUs by their affinity instead), this test's own
# process tree (the daemon, and what it starts later, which may pin itself to CPU: the test's
# shell stays in the root set, kept off CPU by its affinity instead) and its ancestors. Moving a
# task into a v1 cpuset resets its affinity, and moving it back resets it again: each task's
# affinity is kept in $CSET_AFFINITY and given back by cset_unshield, which also removes the sets.
CSET_AFFINITY=
cset_shield() {
    local cpu=$1 hk tid tgid flags mine
    hk=$(python3 -c 'import sys
cpus = set()
for part in sys.stdin.read().strip().split(","):
    a, _, b = part.partition("-")
    cpus.update(range(int(a), int(b or a) + 1))
print(",".join(str(x) for x in sorted(cpus - {int(sys.argv[1])})))' "$cpu" \
        < /sys/devices/system/cpu/online)
    [[ -n $hk ]] || fail "no CPU but $cpu to keep the other tasks on"
    # This test's process tree: this shell and everything below it.
    mine=" $(ps -e -o pid=,ppid= | awk -v root=$$ '{ parent[$1] = $2 }
        END { for (p in parent) { q = p; while (q != "" && q != 1 && q != root) q = parent[q]
                                  if (q == root) printf "%s ", p }
              printf "%s ", root
              # and its ancestors (CTest, tools/check, whatever started them): they sleep
              # while the test runs, and a test killed before cset_unshield must not leave
              # the suite that started it confined to the housekeeping CPUs.
              for (q = parent[root]; q != "" && q > 1; q = parent[q]) printf "%s ", q }')"
    cset_isolate "$hk" "$cpu"
    taskset -pc "$hk" $$ > /dev/null
    CSET_AFFINITY=$T/cset-affinity
    : > "$CSET_AFFINITY"
    while read -r tid; do
        [[ -r /proc/$tid/stat ]] || continue
        # Kernel threads (PF_KTHREAD): those bound to their CPUs (PF_NO_SETAFFINITY: per-CPU
        # threads, workqueue workers) stay; the others (kdamond, khugepaged, RCU's, which took
        # a tenth of CPU 1 from a probe at times) are given the housekeeping CPUs by their
        # affinity, as `cset shield --kthread on` does.
        flags=$(awk '{ print $9 }' "/proc/$tid/stat" 2> /dev/null) || continue
        if (( (flags & 0x00200000) != 0 )); then
            (( (flags & 0x04000000) == 0 )) || continue
            echo "$tid $(taskset -p "$tid" 2> /dev/null | awk '{ print $NF }')" >> "$CSET_AFFINITY"
            taskset -pc "$hk" "$tid" > /dev/null 2>&1 || true
            continue
        fi
        tgid=$(awk '$1 == "Tgid:" { print $2 }' "/proc/$tid/status" 2> /dev/null) || continue
        [[ $mine == *" $tgid "* ]] && continue
        echo "$tid $(taskset -p "$tid" 2> /dev/null | awk '{ print $NF }')" >> "$CSET_AFFINITY"
        echo "$tid" > "$CSET_ROOT/$CSET_HK/tasks" 2> /dev/null || true
    done < "$CSET_ROOT/tasks"
}

# cset_unshield: the tasks back in the root set with their own affinity again, the sets
# removed, load balancing as it was; idempotent.
cset_unshield() {
    [[ -n $CSET_MADE ]] || return 0
    local tid mask
    cset_remove
    if [[ -n $CSET_AFFINITY && -f $CSET_AFFINITY ]]; then
        while read -r tid mask; do
            [[ -n $mask ]] && taskset -p "$mask" "$tid" > /dev/null 2>&1 || true
        done < "$CSET_AFFINITY"
    fi
    taskset -pc "$(cat /sys/devices/system/cpu/online)" $$ > /dev/null 2>&1 || true
}

# cset_shield_if_usable CPU: shields CPU where cset can; otherwise the test runs as it is.
cset_shield_if_usable() {
    if cset_usable; then
        cset_shield "$1"
        echo "CPU $1 shielded"
    else
        echo "CPU $1 is not shielded: $CSET_WHY"
    fi
}

# cset_exit: for `trap cset_exit EXIT`: the shield given back first, then lib.sh's cleanup,
# which takes the test's exit status from $?.
cset_exit() {
    local rc=$?
    set +e
    cset_unshield
    (exit $rc)
    cleanup
}
