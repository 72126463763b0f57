# The tuning audit end to end: `jitterctl audit` run here against the fixture trees (the tuned
# base host and one broken setting at a time: exit 0 when nothing is above info, 1 otherwise,
# the finding that says so, the JSON shape), then Audit() on the daemon for its probed CPU on
# each tree, by jitterctl and by a raw Varlink call, against the findings written down for it
# in test/audit/expected/.
source "$(dirname "$0")/lib.sh"

FIXTURES=$SOURCE_DIR/test/audit
PER_CPU="isolcpus nohz_full rcu_nocbs irq_affinity workqueue kthreads smt_sibling governor cstates"
GLOBAL="rt_throttling clocksource timer_migration vmstat"

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
        and (.findings | length == 22)' "$T/out" > /dev/null || fail "--cpus 2-3: $(cat "$T/out")"
pass "--cpus 2-3: the per-CPU checks for each CPU, the global ones once"

# One broken setting at a time: the base tree with the overlay on top. That check, and only
# that one, is not ok (rcu_nocbs-bad drops nohz_full= as well, since nohz_full= implies
# rcu_nocbs=); a warning or an error comes with a fix and makes the exit status 1, an info
# (timer_migration, vmstat) leaves it 0.
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

# The daemon: Audit() of its probed CPU at its priority, on each fixture tree in turn (its
# audit root is a symbolic link the test points at one tree after the other), against what
# test/audit/expected/ says the tree must give, written by hand from the tree's files: the
# same checks, severities and "seen", the fix naming the right CPUs, IRQs and PIDs.
need_cpu1
ln -sfn "$FIXTURES/base" "$T/audit-root"
cat > "$T/jitterd.conf" <<CONF
[probe]
threshold = 10us
preheat = 300ms
priority = 10
[audit]
root = $T/audit-root
CONF
start_daemon

# The fixtures are an x86-64 host's, whose clocksource should be tsc; elsewhere the daemon
# expects another one.
drop_clocksource=cat
if [[ $(uname -m) != x86_64 ]]; then
    skip_part "clocksource on the fixture trees" "they are an x86-64 host's; this is $(uname -m)"
    drop_clocksource="grep -v ^clocksource"
fi

# expect_audit NAME JSON: the report in JSON has the rows of test/audit/expected/NAME.
expect_audit() {
    local want=$FIXTURES/expected/$1 missing
    check_shape "$2" 1 || fail "$1: bad JSON shape: $(cat "$2")"
    diff <(grep -v '^#' "$want" | cut -f1-4 | $drop_clocksource) \
         <(jq -r '.findings[] | [.check, (.cpu // "-" | tostring), .severity, .seen] | @tsv' "$2" \
           | $drop_clocksource) > "$T/audit.diff" \
        || fail "$1: Audit() differs from $want (< expected, > daemon):"$'\n' \
                "$(cat "$T/audit.diff")"
    # Every fix of the expected file (fifth column; "-" for none) in its finding, with a why.
    missing=$(jq -r -n --rawfile want "$want" --slurpfile got "$2" --arg cs "$drop_clocksource" '
        $want | split("\n")[] | select(length > 0 and (startswith("#") | not)) | split("\t")
        | select($cs == "cat" or .[0] != "clocksource")
        | .[0] as $c | .[1] as $cpu | (.[4] // "") as $f
        | select([$got[0].findings[] | select(.check == $c and (.cpu // "-" | tostring) == $cpu)
                  | if $f == "-" then .fix == "" else (.fix | contains($f)) and (.why != "") end]
                 | any | not)
        | "\($c) (CPU \($cpu)): no fix containing \"\($f)\" in " +
          ([$got[0].findings[] | select(.check == $c) | .fix] | tojson)' 2>&1) \
        || fail "$1: cannot check the fixes: $missing"
    [[ -z $missing ]] || fail "$1: fixes that do not hold what $want says:"$'\n'"$missing"
}

n=0
for want in "$FIXTURES"/expected/*; do
    name=${want##*/}
    if [[ $name == base ]]; then
        root=$FIXTURES/base
    else
        root=$T/root-${name%-bad}
    fi
    [[ -d $root ]] || fail "test/audit/expected/$name has no fixture tree"
    ln -sfn "$root" "$T/audit-root"
    rc=0
    jctl --json audit > "$T/daemon-$name.json" || rc=$?
    expect_audit "$name" "$T/daemon-$name.json"
    # Exit 1 since CPU 1 is a housekeeping CPU of every tree: warnings.
    (( rc == 1 )) || fail "$name: jitterctl audit (daemon) exited $rc, not 1"
    # jitterctl's own audit of the same tree says the same.
    rc=0
    "$JITTERCTL" --json audit --root "$root" --cpus 1 --priority 10 > "$T/local-$name.json" \
        || rc=$?
    expect_audit "$name" "$T/local-$name.json"
    n=$((n + 1))
done
(( n == $(find "$FIXTURES" -maxdepth 1 -name '*-bad' | wc -l) + 1 )) \
    || fail "$n expected findings files for $(find "$FIXTURES" -maxdepth 1 -name '*-bad' | wc -l)" \
            "broken fixtures and base"
pass "Audit() of the daemon (and jitterctl audit --root) on base and the $((n - 1)) broken" \
     "trees: the findings test/audit/expected/ lists"

ln -sfn "$FIXTURES/base" "$T/audit-root"
jctl call Audit '{}' > "$T/raw.json" || fail "raw Audit call failed"
expect_audit base "$T/raw.json"
rc=0
jctl call Audit '{"cpus": [1]}' > "$T/out" 2>&1 || rc=$?
if (( rc != 1 )) || ! grep -q 'InvalidParameter' "$T/out"; then
    fail "Audit with a parameter: exit $rc, $(cat "$T/out")"
fi
pass "raw Varlink Audit(): the same findings; unknown parameters refused"

rc=0
jctl audit > "$T/out" || rc=$?
(( rc == 1 )) || fail "jitterctl audit (daemon, base tree) exited $rc, not 1"
grep -Eq '^warning +isolcpus +1 +isolcpus=managed_irq,domain,2-3; isolated: 2-3$' "$T/out" \
    || fail "text: no isolcpus line for CPU 1: $(cat "$T/out")"
grep -Eq '^ok +rt_throttling +- +sched_rt_runtime_us=-1$' "$T/out" \
    || fail "text: no rt_throttling line: $(cat "$T/out")"
pass "jitterctl audit (daemon) prints the table, exit 1 for the warnings"

stop_daemon || fail "exit status not 0"
pass "clean stop"
