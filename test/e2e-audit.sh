# The tuning audit end to end: `jitterctl audit` run here against the fixture trees (the tuned
# base host and one broken setting at a time: exit 0 when nothing is above info, 1 otherwise,
# the finding that says so, the JSON shape), then Audit() on the daemon for its probed CPU, by
# jitterctl and by a raw Varlink call, agreeing with the same audit run here.
source "$(dirname "$0")/lib.sh"

FIXTURES=$SOURCE_DIR/test/audit
PER_CPU="isolcpus nohz_full rcu_nocbs irq_affinity workqueue kthreads smt_sibling governor cstates"
GLOBAL="rt_throttling clocksource timer_migration"

# check_shape FILE CPU: the report in FILE is {"findings": [...]} with one finding of each check
# for CPU and each global one (cpu null), every finding with exactly the documented fields.
check_shape() {
    jq -e --argjson cpu "$2" --arg per "$PER_CPU" --arg glob "$GLOBAL" '
        (keys == ["findings"]) and (.findings | type == "array")
        and all(.findings[]; (keys | sort) == (["check", "cpu", "fix", "seen", "severity", "why"])
                and (.check | type == "string") and (.seen | type == "string")
                and (.why | type == "string") and (.fix | type == "string")
                and (.severity | IN("ok", "info", "warning", "error"))
                and ((.severity | IN("warning", "error") | not) or (.fix | length > 0)))
        and ([.findings[] | select(.cpu == $cpu) | .check] == ($per | split(" ")))
        and ([.findings[] | select(.cpu == null) | .check] == ($glob | split(" ")))
        and (.findings | length == ($per | split(" ") | length) + ($glob | split(" ") | length))' \
        "$1" > /dev/null
}

# audit_rc EXPECTED ARGS...: runs jitterctl audit ARGS, keeps the output in $T/out, and checks
# the exit status.
audit_rc() {
    local want=$1 rc=0
    shift
    "$JITTERCTL" audit "$@" > "$T/out" 2>&1 || rc=$?
    [[ $rc == "$want" ]] || { cat "$T/out"; fail "jitterctl audit $* exited $rc, not $want"; }
}

# Local mode, the tuned base host: every check ok, exit 0, in text and JSON.
audit_rc 0 --root "$FIXTURES/base" --cpus 2
head -1 "$T/out" | grep -Eq '^SEVERITY +CHECK +CPU +SEEN' || fail "no table header: $(cat "$T/out")"
for c in $PER_CPU; do
    grep -Eq "^ok +$c +2 " "$T/out" || fail "no ok $c line for CPU 2: $(cat "$T/out")"
done
for c in $GLOBAL; do
    grep -Eq "^ok +$c +- " "$T/out" || fail "no ok $c line for the machine: $(cat "$T/out")"
done
audit_rc 0 --json --root "$FIXTURES/base" --cpus 2
cp "$T/out" "$T/base.json"
check_shape "$T/base.json" 2 || fail "bad JSON shape: $(cat "$T/base.json")"
jq -e 'all(.findings[]; .severity == "ok")' "$T/base.json" > /dev/null || fail "base is not all ok"
pass "base fixture: all $(jq '.findings | length' "$T/base.json") checks ok, exit 0, text and JSON"

# Two CPUs: each per-CPU check once per CPU, the global ones once.
audit_rc 0 --json --root "$FIXTURES/base" --cpus 2-3
jq -e --arg per "$PER_CPU" '[.findings[] | select(.cpu == 3) | .check] == ($per | split(" "))
        and (.findings | length == 21)' "$T/out" > /dev/null || fail "--cpus 2-3: $(cat "$T/out")"
pass "--cpus 2-3: the per-CPU checks for each CPU, the global ones once"

# One broken setting at a time: the base tree with the overlay on top. That check, and only
# that one, is not ok (rcu_nocbs-bad drops nohz_full= as well, since nohz_full= implies
# rcu_nocbs=); a warning or an error comes with a fix and makes the exit status 1, an info
# (timer_migration) leaves it 0.
for dir in "$FIXTURES"/*-bad; do
    name=${dir##*/}
    check=${name%-bad}
    root=$T/root-$check
    cp -r "$FIXTURES/base" "$root"
    cp -r "$dir"/. "$root"/
    want="[\"$check\"]"
    [[ $check == rcu_nocbs ]] && want='["nohz_full", "rcu_nocbs"]'
    rc=0
    "$JITTERCTL" --json audit --root "$root" --cpus 2 > "$T/out" || rc=$?
    check_shape "$T/out" 2 || fail "$name: bad JSON shape: $(cat "$T/out")"
    jq -e --argjson want "$want" '[.findings[] | select(.severity != "ok") | .check] == $want' \
        "$T/out" > /dev/null \
        || fail "$name: not exactly $want flagged:" \
                "$(jq -c '[.findings[] | select(.severity != "ok")]' "$T/out")"
    severity=$(jq -r --arg c "$check" '.findings[] | select(.check == $c) | .severity' "$T/out")
    case $severity in
    warning | error) expect_rc=1 ;;
    info) expect_rc=0 ;;
    *) fail "$name: $check is $severity" ;;
    esac
    [[ $rc == "$expect_rc" ]] || fail "$name: --json exited $rc with a worst finding $severity"
    audit_rc "$expect_rc" --root "$root" --cpus 2
    grep -Eq "^$severity +$check +(2|-) " "$T/out" || fail "$name: no $check line: $(cat "$T/out")"
    grep -Eq '^ +why: .+' "$T/out" || fail "$name: no why printed"
    if (( expect_rc == 1 )); then
        grep -Eq '^ +fix: .+' "$T/out" || fail "$name: no fix printed"
    fi
    echo "  $name: $severity, exit $rc"
done
pass "each of the $(find "$FIXTURES" -maxdepth 1 -name '*-bad' | wc -l) broken fixtures:" \
     "its check flagged with why and fix; exit 1 above info, 0 for info"

# RT throttling stalls SCHED_FIFO probes: an error for them, a warning for SCHED_OTHER ones.
audit_rc 1 --json --root "$T/root-rt_throttling" --cpus 2
jq -e '.findings[] | select(.check == "rt_throttling") | .severity == "warning"' \
    "$T/out" > /dev/null \
    || fail "rt_throttling for SCHED_OTHER probes is not a warning"
audit_rc 1 --json --root "$T/root-rt_throttling" --cpus 2 --priority 10
jq -e '.findings[] | select(.check == "rt_throttling") | .severity == "error"' \
    "$T/out" > /dev/null \
    || fail "rt_throttling for SCHED_FIFO probes is not an error"
pass "RT throttling: a warning for SCHED_OTHER probes, an error with --priority 10"

audit_rc 2 --root "$FIXTURES/base" --cpus bogus
grep -q 'invalid CPU list "bogus"' "$T/out" || fail "no message for a bad CPU list: $(cat "$T/out")"
audit_rc 2 --priority 100 --cpus 2
audit_rc 2 --priority 10
grep -q -- '--priority is for a local audit' "$T/out" || fail "--priority alone: $(cat "$T/out")"
pass "usage errors exit 2 (a bad CPU list or priority; --priority without a local audit)"

# The daemon: Audit() for its probed CPU, with its priority, on this machine.
need_cpu1
cat > "$T/jitterd.conf" <<CONF
[probe]
threshold = 10us
preheat = 300ms
priority = 10
CONF
start_daemon

rc=0
jctl --json audit > "$T/daemon.json" || rc=$?
check_shape "$T/daemon.json" 1 || fail "daemon Audit: bad JSON shape: $(cat "$T/daemon.json")"
worst=$(jq -r '[.findings[].severity] | if any(IN("warning", "error")) then 1 else 0 end' \
    "$T/daemon.json")
[[ $rc == "$worst" ]] || fail "jitterctl audit exited $rc, the findings say $worst"
pass "Audit() on the daemon: every check for CPU 1 and the machine;" \
     "jitterctl audit exits $rc accordingly"

jctl call Audit '{}' > "$T/raw.json" || fail "raw Audit call failed"
check_shape "$T/raw.json" 1 || fail "raw Audit: bad JSON shape"
rc=0
jctl call Audit '{"cpus": [1]}' > "$T/out" 2>&1 || rc=$?
if (( rc != 1 )) || ! grep -q 'InvalidParameter' "$T/out"; then
    fail "Audit with a parameter: exit $rc, $(cat "$T/out")"
fi
pass "raw Varlink Audit(): the same shape; unknown parameters refused"

# The daemon audits what this machine shows, for its CPU and at its priority: the same
# checks and severities as jitterctl's own audit of CPU 1 here.
rc=0
"$JITTERCTL" --json audit --cpus 1 --priority 10 > "$T/local.json" || rc=$?
sev() { jq -c '[.findings[] | [.check, .cpu, .severity]]' "$1"; }
[[ $(sev "$T/daemon.json") == "$(sev "$T/local.json")" ]] \
    || fail "the daemon's audit $(sev "$T/daemon.json") differs from the local one" \
            "$(sev "$T/local.json")"
jq -e '.findings[] | select(.check == "rt_throttling") | .severity != "warning"' \
    "$T/daemon.json" > /dev/null \
    || fail "the daemon's audit does not know its probes run SCHED_FIFO"
pass "the daemon's audit matches jitterctl audit --cpus 1 --priority 10 run here"

jctl audit > "$T/out" || true
grep -Eq '^(ok|info|warning|error) +isolcpus +1 ' "$T/out" \
    || fail "text: no isolcpus line for CPU 1"
grep -Eq '^(ok|info|warning|error) +rt_throttling +- ' "$T/out" \
    || fail "text: no rt_throttling line"
pass "jitterctl audit (daemon) prints the table"

stop_daemon || fail "exit status not 0"
pass "clean stop"
