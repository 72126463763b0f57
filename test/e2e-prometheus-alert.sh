# The shipped alert rules in a real Prometheus: node_exporter serves the daemon's textfile,
# Prometheus scrapes it every second and evaluates config/jitterd.rules.yml every second, and
# the alerts follow thefts the test makes itself with a SCHED_FIFO thief on the probe's CPU:
#   - JitterWorstGapHigh (a gap above 1 ms) reports a single long theft, at least as long as
#     the thief's record says it was;
#   - JitterGapAboveSLA (p99.99 of the gaps above 50 us) is inactive on the healthy host and
#     fires once 60 us are taken every 100 us or so, its value in the bucket of those gaps.
# Every rule evaluates without error, and the textfile is never stale.
source "$(dirname "$0")/lib.sh"
need_cpu1
for tool in prometheus prometheus-node-exporter promtool curl jq taskset; do
    command -v "$tool" > /dev/null || fail "needs $tool (tools/dev/deps test)"
done

RULES=$SOURCE_DIR/config/jitterd.rules.yml
TF=$T/textfile
mkdir -p "$TF"

# The rules as shipped, but for: of JitterGapAboveSLA is 3 s instead of 10 minutes, so that
# the test is over in seconds: Prometheus holds an alert pending for that long before it fires,
# which is what the test shortens, not what it checks. Every expression is the shipped one.
awk '/^      - alert: / { sla = ($3 == "JitterGapAboveSLA") }
     sla && /^        for: 10m$/ { print "        for: 3s"; changed++; next }
     { print }
     END { exit changed != 1 }' "$RULES" > "$T/rules.yml" \
    || fail "JitterGapAboveSLA in $RULES has no 'for: 10m' to shorten"
changed=$(diff "$RULES" "$T/rules.yml" | grep '^[<>]' || true)
[[ $changed == $'<         for: 10m\n>         for: 3s' ]] \
    || fail "the test copy of the rules differs in more than the one for: line: $changed"
out=$(promtool check rules "$T/rules.yml" 2>&1) || fail "promtool check rules on the copy: $out"
n_rules=$(grep -c '^      - alert: ' "$RULES")

printf '[probe]\nthreshold = 10us\npreheat = 300ms\n' > "$T/jitterd.conf"
start_daemon --prometheus-textfile "$TF/jitterd.prom"
for _ in $(seq 50); do [[ -f $TF/jitterd.prom ]] && break; sleep 0.1; done
[[ -f $TF/jitterd.prom ]] || fail "no textfile within 5 s"

# serve NAME PATH ARGS...: starts ARGS on CPU 0 (off the probe's CPU) with @PORT@ replaced by
# a free port, and waits until http://127.0.0.1:PORT/PATH answers; sets PORT. A port that
# someone else holds makes the server exit: then another one is tried.
serve() {
    local name=$1 path=$2 try pid i
    shift 2
    PORT=
    for _ in 1 2 3 4 5; do
        try=$((20000 + RANDOM % 40000))
        taskset -c 0 "${@//@PORT@/$try}" >> "$T/$name.log" 2>&1 &
        pid=$!
        CLEANUP_PIDS+=("$pid")
        for ((i = 0; i < 200; i++)); do
            curl -sf --max-time 2 "http://127.0.0.1:$try/$path" > /dev/null 2>&1 \
                && { PORT=$try; return 0; }
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill "$pid" 2>/dev/null
    done
    fail "$name did not start: $(tail -5 "$T/$name.log")"
}

serve node-exporter metrics prometheus-node-exporter --web.listen-address=127.0.0.1:@PORT@ \
    --collector.disable-defaults --collector.textfile --collector.textfile.directory="$TF"
NODE=127.0.0.1:$PORT

cat > "$T/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: ["$T/rules.yml"]
scrape_configs:
  - job_name: node
    static_configs:
      - targets: ["$NODE"]
EOF
serve prometheus -/ready prometheus --config.file="$T/prometheus.yml" \
    --storage.tsdb.path="$T/prometheus-data" --web.listen-address=127.0.0.1:@PORT@ \
    --log.level=warn
PROM=http://127.0.0.1:$PORT
pass "node_exporter on $NODE serves the textfile; Prometheus on ${PROM#http://} scrapes it"

# query EXPR: the value of the first sample of an instant query, or nothing.
query() {
    curl -sf --max-time 5 --data-urlencode "query=$1" "$PROM/api/v1/query" \
        | jq -r '.data.result[0].value[1] // empty'
}
# alert NAME: NAME's alert for CPU 1 as /api/v1/alerts has it (state, value, labels...), or
# nothing while it is inactive.
alert() {
    curl -sf --max-time 5 "$PROM/api/v1/alerts" \
        | jq -c --arg n "$1" '.data.alerts[]
                                | select(.labels.alertname == $n and .labels.cpu == "1")'
}
# rules_health: one line per rule of the group, "NAME HEALTH", evaluated at least once.
rules_health() {
    curl -sf --max-time 5 "$PROM/api/v1/rules" \
        | jq -r '.data.groups[] | select(.name == "jitterd") | .rules[]
                 | select(.lastEvaluation != "0001-01-01T00:00:00Z") | "\(.name) \(.health)"'
}

# The left-hand side of JitterGapAboveSLA's expression, for CPU 1.
SLA_P9999='histogram_quantile(0.9999,
    sum by (instance, cpu, le) (rate(jitter_gap_seconds_bucket{cpu="1"}[5m])))'

# ---- the healthy host: scraped, evaluated, and the SLA alert inactive.
before=
for _ in $(seq 150); do
    before=$(query "$SLA_P9999")
    [[ -n $before && $before != NaN ]] && break
    before=
    sleep 0.1
done
[[ -n $before ]] || fail "no p99.99 of CPU 1's gaps in Prometheus within 15 s"
first_data=$SECONDS
[[ $(query 'jitter_probe_up{cpu="1"}') == 1 ]] \
    || fail "jitter_probe_up of CPU 1 is not 1 in Prometheus"
awk -v v="$before" 'BEGIN { exit !(v <= 50e-6) }' \
    || fail "p99.99 of the gaps is $before s before any theft: this host breaks the SLA by itself"
# Three evaluations on that data.
sleep 3
[[ -z $(alert JitterGapAboveSLA) ]] \
    || fail "JitterGapAboveSLA is active on the healthy host: $(alert JitterGapAboveSLA)"
rules_health > "$T/health"
(( $(wc -l < "$T/health") == n_rules )) || fail "not every rule evaluated: $(cat "$T/health")"
grep -v ' ok$' "$T/health" && fail "rules that do not evaluate cleanly (above)"
pass "healthy host: p99.99 $(awk -v v="$before" 'BEGIN { printf "%.1f", v * 1e6 }') us," \
     "JitterGapAboveSLA inactive; all $n_rules rules evaluate without error"

# ---- one long theft: three times the worst gap Prometheus has seen so far, at least 20 ms.
worst=$(query 'max_over_time(jitter_gap_max_seconds{cpu="1",window="1m"}[5m])')
[[ -n $worst ]] || fail "no worst gap of CPU 1 in Prometheus"
theft_ms=$(awk -v w="$worst" 'BEGIN { t = int(w * 3000) + 1; print t < 20 ? 20 : t }')
(( theft_ms <= 250 )) || fail "CPU 1 too noisy for the test (worst gap $worst s), rerun"
"$THIEF" --cpu 1 --priority 50 --delay 10ms --durations "${theft_ms}ms" > "$T/long.thefts" \
    || fail "the thief could not run on CPU 1"
read -r start end < "$T/long.thefts"
stolen_ns=$((end - start))
value=
for _ in $(seq 150); do
    a=$(alert JitterWorstGapHigh)
    value=$(jq -r 'select(.state == "firing") | .value' <<< "$a")
    [[ -n $value ]] && awk -v v="$value" -v s="$stolen_ns" 'BEGIN { exit !(v * 1e9 >= s) }' && break
    value=
    sleep 0.1
done
[[ -n $value ]] \
    || fail "JitterWorstGapHigh does not report the ${stolen_ns} ns theft within 15 s: $a"
jq -e '.labels.severity == "warning"' <<< "$a" > /dev/null || fail "JitterWorstGapHigh: $a"
pass "JitterWorstGapHigh fires with $value s for a theft of $stolen_ns ns" \
     "(worst gap before it: $worst s)"

# ---- a theft of 60 us every P us until the alert fires.
# rate(...[5m]) takes every gap since the first scrape, so the thefts' gaps must become more
# than 1 in 10^4 of all of them. With R samples per second on this host and the probe left
# P - 60 us between thefts, the thefts are f = 1 / (R (P - 60 us)) of the gaps while the thief
# runs: P = 60 us + 1 / (1e-3 R) makes that 1 in 1000, but the probe keeps at least 40 us, or
# it stalls and measures nothing. The Q quiet seconds before then need
# 1e-4 Q / ((f - 1e-4) (1 - 60 us / P)) seconds of theft to be outweighed: the thief runs
# until the alert fires, for at most twice that and 4 s more for the pending time and the
# scrapes, and at least 20 s: R is per second of wall time, so another task sharing CPU 1
# makes the loop look slower, and f larger, than they are.
rate=$(query 'irate(jitter_samples_total{cpu="1"}[10s])')
[[ -n $rate ]] || fail "no sample rate of CPU 1 in Prometheus"
read -r period_us max_s < <(awk -v r="$rate" -v q=$((SECONDS - first_data + 2)) 'BEGIN {
    d = 60e-6; p = int((d + 1 / (1e-3 * r)) * 1e6) + 1
    if (p < 100) p = 100
    f = 1 / (r * (p / 1e6 - d))
    if (f <= 1.5e-4) { print p, 999; exit }
    need = 1e-4 * q / ((f - 1e-4) * (1 - d / (p / 1e6)))
    m = int(2 * need + 4.999)
    print p, m < 20 ? 20 : m }')
if (( max_s > 30 )); then
    skip_part "JitterGapAboveSLA after periodic thefts" \
        "at $rate samples/s the thefts would need over 30 s to be 1 in 10^4 of the gaps"
else
    # In 1 s chunks, each with its record, until the alert fires (or max_s is up).
    chunk=$((1000000 / period_us))
    rm -f "$T/stop"
    (
        for ((i = 0; i < max_s; i++)); do
            [[ -e $T/stop ]] && break
            "$THIEF" --cpu 1 --priority 50 --delay 1ms --period "${period_us}us" --durations 60us \
                --count $chunk >> "$T/periodic.thefts" || exit 1
        done
    ) &
    thief=$!
    CLEANUP_PIDS+=("$thief")
    t0=$SECONDS
    state=
    for _ in $(seq $(((max_s + 10) * 10))); do
        a=$(alert JitterGapAboveSLA)
        state=$(jq -r '.state // empty' <<< "$a")
        [[ $state == firing ]] && break
        sleep 0.1
    done
    touch "$T/stop"
    wait "$thief" || fail "the thief could not run on CPU 1"
    [[ $state == firing ]] \
        || fail "JitterGapAboveSLA not firing within $((SECONDS - t0)) s of 60 us thefts every" \
                "$period_us us: ${a:-inactive}"
    took=$((SECONDS - t0))
    # Ground truth: the thief's record. Nearly all of its thefts took at least 50 us.
    n=$(wc -l < "$T/periodic.thefts")
    long=$(awk '$2 - $1 >= 50000' "$T/periodic.thefts" | wc -l)
    (( n > 0 && long * 10 >= n * 9 )) || fail "only $long of $n thefts took 50 us or more"
    # Its value is the p99.99, which lies in the bucket of the thefts' gaps: (50 us, 100 us].
    value=$(jq -r .value <<< "$a")
    awk -v v="$value" 'BEGIN { exit !(v > 50e-6 && v <= 100e-6) }' \
        || fail "JitterGapAboveSLA fires with p99.99 $value s, not within (50 us, 100 us]"
    jq -e --arg node "$NODE" '.labels == {alertname: "JitterGapAboveSLA", cpu: "1",
            instance: $node, severity: "warning"}
        and .annotations.summary == "CPU 1 on \($node): p99.99 gap above 50 us"' <<< "$a" \
        > /dev/null \
        || fail "JitterGapAboveSLA with other labels or summary: $a"
    pass "JitterGapAboveSLA fires ${took} s after 60 us began to be taken every $period_us us" \
         "($long thefts of 50 us or more)," \
         "p99.99 $(awk -v v="$value" 'BEGIN { printf "%.1f", v * 1e6 }') us"
fi

# The file was fresh throughout, and nothing broke the rules' evaluation.
curl -sf --max-time 5 "$PROM/api/v1/alerts" \
    | jq -e '[.data.alerts[] | select(.labels.alertname == "JitterdTextfileStale")] == []' \
    > /dev/null \
    || fail "JitterdTextfileStale is active while the textfile is rewritten every interval"
rules_health | grep -v ' ok$' && fail "rules that no longer evaluate cleanly (above)"
pass "JitterdTextfileStale inactive; all rules still evaluate without error"

stop_daemon || fail "jitterd did not exit cleanly"
