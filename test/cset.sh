# Run-time isolation with Debian's cset (package cpuset) on the cgroup v1 cpuset hierarchy, for
# the end-to-end tests: a housekeeping set and an exclusive set for the probed CPU, the root and
# that set without load balancing, as `cset shield` leaves a machine. Sourced after lib.sh.
#
#   cset_usable            0 when cset and a writable v1 cpuset hierarchy are here, else 1 with
#                          the reason in $CSET_WHY
#   cset_isolate HK CPU    makes $CSET_HK (CPUs HK) and $CSET_ISO (CPU, exclusive)
#   cset_move PID...       moves those processes, with all their threads, into $CSET_HK
#   cset_remove            kills nothing, moves what is left in the sets back to the root,
#                          removes them and restores the root's load balancing; idempotent
#   cset_dirs              the cpusets below the root, one per line (to compare before/after)

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
    return 0
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
    local set pid
    for set in "$CSET_ISO" "$CSET_HK"; do
        [[ -d $CSET_ROOT/$set ]] || continue
        # Only what this test put there can be inside; it goes back to the root.
        while read -r pid; do
            echo "$pid" > "$CSET_ROOT/tasks" 2> /dev/null || true
        done < "$CSET_ROOT/$set/tasks"
        cset set --destroy --set="$set" > /dev/null 2>&1 || rmdir "$CSET_ROOT/$set" 2> /dev/null \
            || echo "cannot remove the cpuset $CSET_ROOT/$set" >&2
    done
    [[ -z $CSET_ROOT_LB ]] || echo "$CSET_ROOT_LB" > "$CSET_ROOT/cpuset.sched_load_balance"
    CSET_MADE=
}
