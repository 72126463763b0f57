# Fleet monitoring end to end: the daemon's node_exporter textfile and `jitterctl export` pass
# `promtool check metrics`, a real node_exporter serves the textfile without a scrape error, a
# real Prometheus parses both and its values lie within what the raw histogram allows,
# the shipped alert rules pass `promtool check rules` and fire on the input they are meant for,
# the dashboard's queries parse, and every metric the rules and the dashboard use is exported.
source "$(dirname "$0")/lib.sh"
need_cpu1

NODE_EXPORTER=$(command -v prometheus-node-exporter || command -v node_exporter || true)
for tool in prometheus promtool curl jq taskset; do
    command -v "$tool" >/dev/null || skip "needs $tool (tools/dev/deps test installs it)"
done
[[ -n $NODE_EXPORTER ]] || skip "needs prometheus-node-exporter (tools/dev/deps test installs it)"

RULES=$SOURCE_DIR/config/jitterd.rules.yml
DASHBOARD=$SOURCE_DIR/config/grafana-dashboard.json
TF=$T/textfile
PROM=$TF/jitterd.prom
mkdir -p "$TF"

printf '[probe]\npreheat = 300ms\n[export]\nprometheus_textfile_interval = 200ms\n' \
    > "$T/jitterd.conf"
start_daemon --prometheus-textfile "$PROM"

# The names the rules and the dashboard use (histogram series by their _bucket name).
metric_names() {
    { cat "$RULES"; jq -r '.panels[].targets[].expr, .templating.list[].definition // empty' \
        "$DASHBOARD"; } | grep -v '^ *#' | grep -oE "\b$1[a-z0-9_]*" | sort -u
}
mapfile -t wanted < <(metric_names jitter_)
(( ${#wanted[@]} >= 8 )) || fail "only ${#wanted[@]} jitter_ metrics found in the rules and dashboard"

# has_series FILE NAME: FILE has a sample of NAME.
has_series() { grep -qE "^$2(\{| )" "$1"; }

# The file appears after the first interval; interrupt counts need a few intervals to move.
for _ in $(seq 100); do
    missing=()
    if [[ -f $PROM ]]; then
        for name in "${wanted[@]}"; do has_series "$PROM" "$name" || missing+=("$name"); done
        (( ${#missing[@]} == 0 )) && break
    fi
    sleep 0.2
done
[[ -f $PROM ]] || fail "no textfile $PROM after 20 s"
(( ${#missing[@]} == 0 )) || fail "metrics used by the rules or dashboard not exported: ${missing[*]}"
pass "the textfile has every metric the rules and the dashboard use (${#wanted[@]})"

cp "$PROM" "$T/daemon.prom"
out=$(promtool check metrics < "$T/daemon.prom" 2>&1) || fail "promtool check metrics: $out"
[[ -z $out ]] || fail "promtool check metrics on the textfile: $out"
pass "promtool check metrics: the textfile is clean"

[[ $(stat -c %a "$PROM") == 644 ]] || fail "textfile mode $(stat -c %a "$PROM"), not 644"
extra=$(find "$TF" -name '*.prom' ! -path "$PROM")
[[ -z $extra ]] || fail "other .prom files beside the textfile: $extra"
grep -qE '^jitter_probe_up\{cpu="1"\} 1$' "$T/daemon.prom" || fail "probe of CPU 1 not up"
grep -qE '^jitter_gap_seconds_bucket\{cpu="1",le="\+Inf"\} [1-9]' "$T/daemon.prom" \
    || fail "empty gap histogram"
pass "textfile mode 644, no stray .prom file, probe up, histogram filled"

# The file is replaced every interval: its mtime moves.
m1=$(stat -c %Y.%y "$PROM")
sleep 1.2
[[ $(stat -c %Y.%y "$PROM") != "$m1" ]] || fail "textfile not rewritten within 1.2 s"
pass "textfile rewritten every interval"

# jitterctl export prints the same exposition: promtool finds it clean, with the same families.
# Its values are checked below, as Prometheus parses them.
jctl export --format prometheus > "$T/ctl.prom" || fail "jitterctl export failed"
out=$(promtool check metrics < "$T/ctl.prom" 2>&1) || fail "promtool check metrics: $out"
[[ -z $out ]] || fail "promtool check metrics on jitterctl export: $out"
diff <(grep '^# TYPE' "$T/daemon.prom") <(grep '^# TYPE' "$T/ctl.prom") > "$T/types.diff" \
    || fail "jitterctl export and the textfile have different families: $(cat "$T/types.diff")"
pass "jitterctl export: clean, the same families as the textfile"

rc=0
jctl export --format json > /dev/null 2>&1 || rc=$?
(( rc == 2 )) || fail "jitterctl export --format json exited $rc, not 2"
pass "jitterctl export refuses an unknown format"

# Like every command: the common options may follow it, and --help needs no daemon.
"$JITTERCTL" export --socket "$SOCK" --format prometheus > "$T/ctl2.prom" \
    || fail "jitterctl export --socket SOCKET failed"
grep -q '^jitter_probe_up{cpu="1"} 1$' "$T/ctl2.prom" \
    || fail "jitterctl export --socket SOCKET printed no jitter_probe_up for CPU 1"
"$JITTERCTL" --socket "$T/none" export --help > "$T/help.txt" \
    || fail "jitterctl export --help needs a daemon"
grep -q '^Usage: jitterctl export' "$T/help.txt" || fail "jitterctl export --help: $(cat "$T/help.txt")"
pass "jitterctl export takes --socket after the command; --help needs no daemon"

# A real node_exporter serves the textfile. Its port is free when it stays up.
port=
for _ in 1 2 3 4 5; do
    try=$((20000 + RANDOM % 40000))
    "$NODE_EXPORTER" --web.listen-address="127.0.0.1:$try" --collector.disable-defaults \
        --collector.textfile --collector.textfile.directory="$TF" > "$T/node.log" 2>&1 &
    CLEANUP_PIDS+=($!)
    for _ in $(seq 50); do
        curl -sf "http://127.0.0.1:$try/metrics" > "$T/node.txt" 2>/dev/null && port=$try && break
        kill -0 "${CLEANUP_PIDS[-1]}" 2>/dev/null || break
        sleep 0.1
    done
    [[ -n $port ]] && break
done
[[ -n $port ]] || fail "node_exporter did not serve metrics: $(tail -5 "$T/node.log")"
grep -qx 'node_textfile_scrape_error 0' "$T/node.txt" \
    || fail "node_exporter: $(grep -E 'scrape_error|level=error' "$T/node.txt" "$T/node.log")"
for name in "${wanted[@]}"; do
    has_series "$T/node.txt" "$name" || fail "node_exporter does not serve $name"
done
mapfile -t node_wanted < <(metric_names node_)
for name in "${node_wanted[@]}"; do
    has_series "$T/node.txt" "$name" || fail "node_exporter has no $name, which the rules use"
done
grep -qE '^node_textfile_mtime_seconds\{file="([^"]*/)?jitterd\.prom"\}' "$T/node.txt" \
    || fail "no node_textfile_mtime_seconds for jitterd.prom"
pass "node_exporter serves the textfile: no scrape error, every metric the rules use"

# ---- A real Prometheus scrapes the textfile (job node) and what jitterctl export printed
# (job ctl, through a second node_exporter), and its parsed values are held to the daemon's
# raw histogram, summed here: GetHistogram (window all) A before and B after. Counts only
# grow, so for every le, the gaps of the buckets wholly at or below it in A <= Prometheus'
# value <= the gaps of the buckets that start at or below it in B; likewise _count against
# the totals and _sum against the buckets' edges (whole nanoseconds: each 1 ns wider).
mkdir -p "$T/ctl-textfile"
port2=
for _ in 1 2 3 4 5; do
    try=$((20000 + RANDOM % 40000))
    taskset -c 0 "$NODE_EXPORTER" --web.listen-address="127.0.0.1:$try" \
        --collector.disable-defaults --collector.textfile \
        --collector.textfile.directory="$T/ctl-textfile" > "$T/node2.log" 2>&1 &
    CLEANUP_PIDS+=($!)
    wait_until 5 curl -sf "http://127.0.0.1:$try/metrics" -o /dev/null && { port2=$try; break; }
done
[[ -n $port2 ]] || fail "the second node_exporter did not serve: $(tail -5 "$T/node2.log")"
printf '%s\n' 'global:' '  scrape_interval: 1s' 'scrape_configs:' \
    '  - job_name: node' "    static_configs: [{targets: [\"127.0.0.1:$port\"]}]" \
    '  - job_name: ctl' "    static_configs: [{targets: [\"127.0.0.1:$port2\"]}]" \
    > "$T/prometheus.yml"
prom_port=
for _ in 1 2 3 4 5; do
    try=$((20000 + RANDOM % 40000))
    taskset -c 0 prometheus --config.file="$T/prometheus.yml" --log.level=warn \
        --storage.tsdb.path="$T/prometheus-data" --web.listen-address="127.0.0.1:$try" \
        >> "$T/prometheus.log" 2>&1 &
    CLEANUP_PIDS+=($!)
    wait_until 20 curl -sf "http://127.0.0.1:$try/-/ready" -o /dev/null && { prom_port=$try; break; }
done
[[ -n $prom_port ]] || fail "Prometheus did not start: $(tail -5 "$T/prometheus.log")"
PROMQL=http://127.0.0.1:$prom_port/api/v1/query
# promql EXPR: the instant query's result, as JSON.
promql() { curl -sf --max-time 5 --data-urlencode "query=$1" "$PROMQL" | jq -c .data.result; }

hist() { jctl --json call GetHistogram '{"cpu": 1, "window": "all", "kind": "gap"}'; }
hist > "$T/hist-a.json" || fail "GetHistogram A"
t_a=$(date +%s.%N)
jctl export > "$T/ctl-textfile/ctl.prom.tmp" \
    && mv "$T/ctl-textfile/ctl.prom.tmp" "$T/ctl-textfile/ctl.prom" || fail "jitterctl export"
# Prometheus has scraped a textfile written after A (node_textfile_mtime_seconds of that same
# scrape), and jitterctl's file.
fresh() {
    promql 'node_textfile_mtime_seconds{job="node"}' \
        | jq -e --argjson t "$t_a" '.[0].value[1] | tonumber > $t' > /dev/null \
        && promql 'jitter_gap_seconds_count{job="ctl",cpu="1"}' | jq -e 'length == 1' > /dev/null
}
wait_until 15 fresh || fail "no scrape of a textfile written after GetHistogram A within 15 s"
for job in node ctl; do
    promql "{__name__=~\"jitter_gap_seconds_(bucket|count|sum)\",job=\"$job\",cpu=\"1\"}" \
        > "$T/prom-$job.json"
done
hist > "$T/hist-b.json" || fail "GetHistogram B"
for job in node ctl; do
    jq -n -r --slurpfile a "$T/hist-a.json" --slurpfile b "$T/hist-b.json" \
        --slurpfile p "$T/prom-$job.json" '
        ($a[0].buckets) as $ba | ($b[0].buckets) as $bb
        | [$p[0][] | {name: .metric.__name__, le: .metric.le, v: (.value[1] | tonumber)}] as $s
        | [$s[] | select(.name == "jitter_gap_seconds_bucket")] as $buckets
        | [$buckets[]
           | (if .le == "+Inf" then infinite else (.le | tonumber) * 1e9 end) as $le
           | ([$ba[] | select(.upper_ns <= $le) | .count] | add // 0) as $lo
           | ([$bb[] | select(.lower_ns <= $le) | .count] | add // 0) as $hi
           | select(.v < $lo or .v > $hi) | "le=\(.le): \(.v) not within [\($lo), \($hi)]"]
        + [$s[] | select(.name == "jitter_gap_seconds_count")
           | select(.v < $a[0].total or .v > $b[0].total)
           | "_count \(.v) not within [\($a[0].total), \($b[0].total)]"]
        + [$s[] | select(.name == "jitter_gap_seconds_sum")
           | ([$ba[] | .count * (.lower_ns - 1)] | add / 1e9) as $lo
           | ([$bb[] | .count * (.upper_ns + 1)] | add / 1e9) as $hi
           | select(.v < $lo * 0.999999 or .v > $hi * 1.000001)
           | "_sum \(.v) not within [\($lo), \($hi)]"]
        + (if ($buckets | length) < 20 then ["only \($buckets | length) buckets"] else [] end)
        + (if ([$s[] | select(.name != "jitter_gap_seconds_bucket")] | length) != 2
           then ["no _count or _sum"] else [] end)
        | .[]' > "$T/mismatch-$job.txt" || fail "cannot compare job $job"
    [[ ! -s $T/mismatch-$job.txt ]] \
        || fail "Prometheus' parse of job $job disagrees with GetHistogram: $(head -5 "$T/mismatch-$job.txt")"
done
pass "Prometheus scrapes the textfile and jitterctl export: every bucket, _count and _sum" \
     "within what GetHistogram's raw buckets, summed here, allow"

out=$(promtool check rules "$RULES" 2>&1) || fail "promtool check rules: $out"
pass "promtool check rules: $(grep -o '[0-9]* rules found' <<< "$out")"

# The alerts fire on what they are meant for, and not on a healthy host. promtool compares
# annotations too, so the test runs on a copy of the rules without them.
awk '/^        annotations:/ { skip = 1; next } skip && !/^          / { skip = 0 } !skip' "$RULES" \
    > "$T/rules-bare.yml"
cat > "$T/rules-test.yml" <<EOF
rule_files: [$T/rules-bare.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      # CPU 2 is clean: 600000 gaps a minute, all under 20 us. CPU 3 has 1 in 1000 at 200 us.
      - series: 'jitter_gap_seconds_bucket{instance="h",cpu="2",le="2e-05"}'
        values: '0+600000x40'
      - series: 'jitter_gap_seconds_bucket{instance="h",cpu="2",le="5e-05"}'
        values: '0+600000x40'
      - series: 'jitter_gap_seconds_bucket{instance="h",cpu="2",le="0.0002"}'
        values: '0+600000x40'
      - series: 'jitter_gap_seconds_bucket{instance="h",cpu="2",le="+Inf"}'
        values: '0+600000x40'
      - series: 'jitter_gap_seconds_bucket{instance="h",cpu="3",le="2e-05"}'
        values: '0+599400x40'
      - series: 'jitter_gap_seconds_bucket{instance="h",cpu="3",le="5e-05"}'
        values: '0+599400x40'
      - series: 'jitter_gap_seconds_bucket{instance="h",cpu="3",le="0.0002"}'
        values: '0+600000x40'
      - series: 'jitter_gap_seconds_bucket{instance="h",cpu="3",le="+Inf"}'
        values: '0+600000x40'
      - series: 'jitter_probe_up{instance="h",cpu="2"}'
        values: '1x40'
      - series: 'jitter_probe_up{instance="h",cpu="3"}'
        values: '1x10 0x30'
      - series: 'node_textfile_mtime_seconds{instance="h",file="/var/lib/node_exporter/jitterd.prom"}'
        values: '0+60x5 300x35'
      # jitterd on h takes 3 s of CPU a minute (5 % of a core), on b 3 s until minute 10 and
      # 9 s a minute (15 %) from then on; the budget is 10 % of a core on both.
      - series: 'jitter_daemon_cpu_seconds_total{instance="h"}'
        values: '0+3x40'
      - series: 'jitter_daemon_cpu_seconds_total{instance="b"}'
        values: '0+3x10 30+9x30'
      - series: 'jitter_daemon_cpu_budget_ratio{instance="h"}'
        values: '0.1x40'
      - series: 'jitter_daemon_cpu_budget_ratio{instance="b"}'
        values: '0.1x40'
    alert_rule_test:
      - eval_time: 30m
        alertname: JitterGapAboveSLA
        exp_alerts:
          - exp_labels: {severity: warning, instance: h, cpu: "3"}
      - eval_time: 30m
        alertname: JitterProbeDown
        exp_alerts:
          - exp_labels: {severity: critical, instance: h, cpu: "3"}
      - eval_time: 3m
        alertname: JitterdTextfileStale
        exp_alerts: []
      - eval_time: 30m
        alertname: JitterdTextfileStale
        exp_alerts:
          - exp_labels: {severity: critical, instance: h, file: /var/lib/node_exporter/jitterd.prom}
      # Over the budget from minute 10: the 5-minute rate is above it from about minute 13, and
      # the alert fires 10 minutes later; not yet at minute 18, and never on h.
      - eval_time: 18m
        alertname: JitterdOverBudget
        exp_alerts: []
      - eval_time: 30m
        alertname: JitterdOverBudget
        exp_alerts:
          - exp_labels: {severity: warning, instance: b}
EOF
out=$(promtool test rules "$T/rules-test.yml" 2>&1) || fail "promtool test rules: $out"
pass "the alert rules fire on a gap SLA breach, a probe down, a stale textfile and a daemon" \
     "over its CPU budget only"

# The dashboard: valid JSON whose queries are valid PromQL (checked as recording rules, with
# Grafana's variables replaced by what they expand to).
jq -e '.panels | length > 0' "$DASHBOARD" > /dev/null || fail "the dashboard is not valid JSON"
{
    echo "groups:"
    echo "  - name: dashboard"
    echo "    rules:"
    jq -r '.panels[].targets[].expr' "$DASHBOARD" \
        | sed -e 's/\$__rate_interval/5m/g' -e 's/\$instance/.*/g' -e 's/\$cpu/.*/g' \
        | jq -R . | nl -ba -w1 -s' ' | while read -r n expr; do
            echo "      - record: dashboard:query_$n"
            echo "        expr: $expr"
        done
} > "$T/dashboard-rules.yml"
out=$(promtool check rules "$T/dashboard-rules.yml" 2>&1) \
    || fail "dashboard queries do not parse: $out"
pass "the dashboard's $(grep -c record: "$T/dashboard-rules.yml") queries parse"

# A textfile that cannot be written: one error for the whole episode, measuring goes on, and a
# notice once it can be written again.
rm -rf "$TF"
sleep 1.5
kill -0 "$DAEMON_PID" || fail "jitterd died when its textfile could not be written"
mkdir "$TF"
for _ in $(seq 50); do [[ -f $PROM ]] && break; sleep 0.1; done
[[ -f $PROM ]] || fail "textfile not written again once its directory is back"
errors=$(grep -c 'cannot write the Prometheus textfile' "$T/daemon.log" || true)
(( errors == 1 )) || fail "$errors errors logged for one episode of failed writes, not 1"
grep -q 'writing the Prometheus textfile .* again' "$T/daemon.log" || fail "no notice on recovery"
jctl export > /dev/null || fail "jitterd stopped answering after failed writes"
pass "a textfile that cannot be written: one error, measuring goes on, notice on recovery"

stop_daemon || fail "jitterd did not exit cleanly"
pass "jitterd stopped"

# The textfile's own interval: with 200 ms harvests and prometheus_textfile_interval = 1s, the
# file changes once a second (the first harvest writes it), not at each of the 15 harvests in
# 3 s. The test counts the changes it sees, looking every 50 ms.
rm -f "$PROM"
printf '[probe]\npreheat = 300ms\n[export]\nprometheus_textfile_interval = 1s\n' \
    > "$T/jitterd.conf"
start_daemon --prometheus-textfile "$PROM"
wait_until 5 test -f "$PROM" || fail "no textfile within 5 s"
last=$(stat -c %Y.%y "$PROM") changes=0
for _ in $(seq 60); do
    sleep 0.05
    now=$(stat -c %Y.%y "$PROM")
    [[ $now == "$last" ]] || changes=$((changes + 1))
    last=$now
done
# 3 s at one write a second, with half a harvest of slack: 2 to 4 changes.
(( changes >= 2 && changes <= 4 )) \
    || fail "the textfile changed $changes times in 3 s, not about 3 (prometheus_textfile_interval = 1s)"
stop_daemon || fail "jitterd did not exit cleanly"
pass "prometheus_textfile_interval = 1s: the textfile changed $changes times in 3 s of 200 ms harvests"
