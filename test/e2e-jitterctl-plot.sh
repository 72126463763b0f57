# jitterctl compare and plot against ground truth. Snapshot A after a phase without thefts,
# snapshot B after one in which a SCHED_FIFO thief takes a large, fixed time in every interval
# (each phase lasts until it holds enough intervals with samples, which a busy host delays):
# compare must call A -> B significant (p < 0.01, after higher) and A -> A not. The plots (from
# the daemon, and from a two-CPU snapshot file) must parse as XML and render in a browser: the
# screenshot is decoded and must show the histogram bars, the timeline line and the text of each
# panel where the layout puts them, and nothing outside the picture.
source "$(dirname "$0")/lib.sh"
need_cpu1
command -v jq > /dev/null || fail "needs jq (tools/dev/deps test)"
command -v xmllint > /dev/null || fail "needs xmllint (libxml2-utils, tools/dev/deps test)"
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
[[ -n $CHROMIUM ]] || fail "needs chromium to render the SVG (tools/dev/deps browser)"
perl -MCompress::Zlib -e 1 2> /dev/null || fail "needs perl with Compress::Zlib (perl)"

cat > "$T/jitterd.conf" <<CONF
[probe]
threshold = 10us
preheat = 300ms
CONF

PHASE=5.5    # seconds: at 200 ms intervals, some 27 intervals per snapshot
INTERVALS=24 # intervals with samples each snapshot needs at least, for the test

start_daemon
# This script and what it starts (jitterctl, jq, the thief's process) stay on CPU 0: the
# SCHED_OTHER probe shares CPU 1 with every task that lands there. The thief pins its thread.
taskset -cp 0 $$ > /dev/null || fail "cannot keep the test on CPU 0"

# sampled: how many intervals since the Reset hold samples. A busy host can leave CPU 1 to
# others for whole intervals: each phase then goes on until it has enough of them.
sampled() {
    jctl --json call GetTimeline '{"cpu": 1, "window": "all"}' \
        | jq '[.points[] | select(.samples > 0)] | length'
}
enough_sampled() { (( $(sampled) >= INTERVALS )); }

# ---- Phase A: whatever the machine does by itself.
jctl call Reset > /dev/null || fail "Reset"
sleep $PHASE
wait_until 20 enough_sampled \
    || fail "only $(sampled) intervals with samples in $PHASE s and 20 s more: CPU 1 is too busy, rerun"
jctl snapshot --output "$T/a.json" || fail "snapshot A"

# The theft must stand out of this machine's own noise: twice the 90th percentile of A's worst
# gap per interval, at least 2 ms. Beyond 60 ms CPU 1 is too busy for the test to mean anything.
p90=$(jq '[.cpus[0].timeline.points[] | select(.samples > 0) | .max_gap_ns] | sort
          | if length < 20 then -length else .[(length * 0.9 | floor)] end' "$T/a.json")
(( p90 > 0 )) || fail "only $((-p90)) intervals with samples in ${PHASE} s: CPU 1 is too busy, rerun"
theft_us=$((p90 * 2 / 1000))
(( theft_us >= 2000 )) || theft_us=2000
(( theft_us <= 60000 )) \
    || fail "CPU 1 too busy (p90 of the worst gap per interval $((p90 / 1000)) us), rerun"

# ---- Phase B: the same time plus a theft of theft_us every 150 ms (every interval has one), in
# rounds of 12 until the phase has lasted PHASE and holds INTERVALS intervals with samples (at
# most three times as many rounds).
# Every theft must be an event bounded from both sides (THEFT_JQ), within the clocks' slack and
# the noise of phase A.
slack_ns=$(clock_slack_ns)
noise=$(noise_ns)
# The events of phase B, all the history holds since its Reset (with those of the interval the
# Reset fell in, harvested after it, as the histogram has them too): "THEFT" for each that is
# a theft, bounded from both sides, else its length; a theft that no event is makes "missing".
b_events() {
    jctl --json events --cpu 1 --since 1m --min "$((theft_us / 4))us" --limit 10000 \
        | tee "$T/b-events.json" | jq -r --argjson th "$(thefts_json "$T/thefts")" --argjson slack "$slack_ns" \
            --argjson noise "$noise" "$THEFT_JQ"'
            . as $ev
            | ($th[] | . as [$s, $e, $due]
               | select(any($ev[]; is_theft($s; $e; $due; $slack; $noise)) | not)
               | "missing \($s) \($e - $s)"),
              ($ev[] | . as $x
               | if any($th[]; . as [$s, $e, $due] | $x | is_theft($s; $e; $due; $slack; $noise))
                 then "THEFT" else .duration_ns end)'
}
# A host stall beside a theft (beyond the noise phase A measured) makes its event longer than
# the bounds allow: phase B is then taken again, three times at most.
for attempt in 1 2 3; do
    jctl call Reset > /dev/null || fail "Reset"
    rounds=$(awk -v p=$PHASE 'BEGIN { printf "%d", p / 0.15 / 12 }')
    count=0
    : > "$T/thefts"
    while (( count < rounds * 12 )) || ! enough_sampled; do
        (( count < 3 * rounds * 12 )) \
            || fail "only $(sampled) intervals with samples after $count thefts: CPU 1 is too busy, rerun"
        "$THIEF" --cpu 1 --delay 20ms --period 150ms --durations "${theft_us}us" --count 12 --due \
            >> "$T/thefts" || fail "jitter-thief failed"
        count=$((count + 12))
    done
    sleep 0.25
    jctl snapshot --output "$T/b.json" || fail "snapshot B"
    pass "phases: A, then B with $count thefts of $theft_us us (A's p90 worst gap $((p90 / 1000)) us)"
    b_events > "$T/b-events" || fail "events of phase B"
    grep -q '^missing' "$T/b-events" || break
    msg="thefts of phase B that are no event, bounded from both sides (slack $slack_ns ns,"
    msg+=" noise $noise ns): $(grep '^missing' "$T/b-events" | head -3 | tr '\n' ' ')"
    (( attempt < 3 )) || fail "$msg (3 attempts)"
    echo "phase B, attempt $attempt: $msg; taken again"
done
pass "each of the $count thefts of phase B is an event, bounded from both sides (slack" \
     "$slack_ns ns, noise $noise ns)"

# ---- compare
rc=0
out=$(jctl compare "$T/a.json" "$T/b.json") || rc=$?
line=$(grep 'Mann-Whitney U = ' <<< "$out" || true)
p=$(sed -nE 's/.*, p = ([^:]+): .*/\1/p' <<< "$line")
if (( rc != 0 )) || ! grep -q ': significant (p < 0.01), after is higher$' <<< "$line" \
    || ! awk -v p="${p:-1}" 'BEGIN { exit !(p < 0.01) }'; then
    echo "$out" >&2
    fail "compare A B exited $rc, not significant with p < 0.01"
fi
jctl --json compare "$T/a.json" "$T/b.json" > "$T/ab.json" || fail "compare --json A B"
jq -e '.cpus[0] | .mann_whitney.significant == true and .mann_whitney.p < 0.01
       and .interval_worst_gaps.before.n >= 20 and .interval_worst_gaps.after.n >= 20
       and .interval_worst_gaps.after.mean_ns > .interval_worst_gaps.before.mean_ns' \
    "$T/ab.json" > /dev/null \
    || fail "compare --json A B: $(jq -c '.cpus[0] | {interval_worst_gaps, mann_whitney}' "$T/ab.json")"
n=$(jq -c '[.cpus[0].interval_worst_gaps.before.n, .cpus[0].interval_worst_gaps.after.n]' "$T/ab.json")
pass "compare A B: significant, p = $p, after is higher ($n intervals)"

out=$(jctl compare "$T/b.json" "$T/a.json") || fail "compare B A"
grep -q ': significant (p < 0.01), after is lower$' <<< "$out" \
    || { echo "$out" >&2; fail "compare B A: not significant, after lower"; }
out=$(jctl compare "$T/a.json" "$T/a.json") || fail "compare A A"
grep -Eq ', p = 1: not significant \(p >= 0.01\)$' <<< "$out" \
    || { echo "$out" >&2; fail "compare A A is not \"not significant\" with p = 1"; }
pass "compare B A: significant, after lower; compare A A: not significant, p = 1"

# ---- plot: from the daemon (phase B), and from a snapshot of two CPUs (A as 1, B as 2).
jctl plot --svg "$T/plot.svg" || fail "plot"
jq --slurpfile b "$T/b.json" '.cpus += [$b[0].cpus[0] | .cpu = 2]' "$T/a.json" > "$T/two.json"
jctl plot --svg "$T/two.svg" --snapshot "$T/two.json" || fail "plot --snapshot"
for f in plot two; do
    xmllint --noout "$T/$f.svg" || fail "$f.svg is not well-formed XML"
    # The labels under an x axis (same y, centred) stay apart: an 11 px "100 ms" is ~40 px wide.
    close=$(sed -nE 's/^<text class="tick" x="([0-9.]+)" y="([0-9.]+)" text-anchor="middle">.*/\2 \1/p' \
        "$T/$f.svg" | sort -k1,1n -k2,2n \
        | awk '$1 == y && $2 - x < 42 { printf "%s at x %s and %s; ", $1, x, $2 } { y = $1; x = $2 }')
    [[ -z $close ]] || fail "$f.svg: x axis labels run into each other at y $close"
done
# The histogram of phase B holds every theft: bars of gaps at least theft_us long count them,
# and no more gaps than those and the events of the noise as long as the shortest such bar
# (events of phase B up to the plot that are no theft).
read -r long bar_lo < <(grep -oE '<rect class="bar"[^>]*><title>[0-9]+\.\.[0-9]+ ns: [0-9]+</title>' \
        "$T/plot.svg" \
    | sed -E 's/.*<title>([0-9]+)\.\.([0-9]+) ns: ([0-9]+)<.*/\1 \2 \3/' \
    | awk -v t=$((theft_us * 1000)) '$2 >= t { n += $3; if (lo == "" || $1 < lo) lo = $1 }
                                    END { print n + 0, lo + 0 }')
b_events > "$T/b-events" || fail "events of phase B"
extra=$(awk -v lo="$bar_lo" '$1 != "THEFT" && $1 != "missing" && $1 >= lo' "$T/b-events" | wc -l)
(( long >= count && long <= count + extra )) \
    || fail "plot: $long gaps of at least $theft_us us in the histogram, want $count (the thefts)" \
            "to $((count + extra)) (and $extra events of the noise from $bar_lo ns);" \
            "bars: $(grep -oE '<title>[0-9]+\.\.[0-9]+ ns: [0-9]+</title>' "$T/plot.svg" | tail -8 | tr '\n' ' ')" \
            "events: $(jq -c '[.[] | [.start_ns, .duration_ns]]' "$T/b-events.json")"
pass "plot: well-formed SVGs; $long gaps of at least $theft_us us among the bars, the $count" \
     "thefts and $extra of the noise at most"

# render NAME: a 1200x900 screenshot of NAME.svg by a headless Chromium.
render() {
    local profile
    profile=$(mktemp -d "$T/chromium.XXXXXX")
    timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$profile" --screenshot="$T/$1.png" --window-size=1200,900 \
        "file://$T/$1.svg" > "$T/chromium-$1.log" 2>&1 \
        || { tail -20 "$T/chromium-$1.log" >&2; fail "chromium could not render $1.svg"; }
    [[ -s $T/$1.png ]] || fail "chromium wrote no $1.png"
    # The size, from the IHDR chunk: bytes 16..23, big-endian.
    local size
    size=$(od -An -tu1 -j16 -N8 "$T/$1.png" \
        | awk '{ printf "%dx%d", (($1 * 256 + $2) * 256 + $3) * 256 + $4,
                                 (($5 * 256 + $6) * 256 + $7) * 256 + $8 }')
    [[ $size == 1200x900 ]] || fail "$1.png is $size, not 1200x900"
}

# pixels PNG REGION...: decodes the PNG and counts, in each REGION (NAME:X0:Y0:X1:Y1), the
# pixels of the histogram bars' blue, of the timeline's red, of dark text and frames, and those
# that are not white. Prints "NAME BAR RED DARK NONWHITE" per region.
pixels() {
    perl - "$@" <<'PERL'
use strict;
use warnings;
use Compress::Zlib;

my ($file, @regions) = @ARGV;
open(my $fh, '<:raw', $file) or die "cannot open $file: $!\n";
my $png = do { local $/; <$fh> };
substr($png, 0, 8) eq "\x89PNG\r\n\x1a\n" or die "$file is not a PNG\n";
my ($w, $h, $depth, $type, $interlace, $idat) = (0, 0, 0, 0, 0, '');
for (my $pos = 8; $pos + 8 <= length $png;) {
    my ($len, $name) = unpack('N a4', substr($png, $pos, 8));
    my $data = substr($png, $pos + 8, $len);
    $pos += 12 + $len;
    ($w, $h, $depth, $type, undef, undef, $interlace) = unpack('N N C C C C C', $data)
        if $name eq 'IHDR';
    $idat .= $data if $name eq 'IDAT';
    last if $name eq 'IEND';
}
die "$file: unsupported PNG (depth $depth, colour type $type, interlace $interlace)\n"
    unless $depth == 8 && ($type == 2 || $type == 6) && !$interlace;
my $bpp = $type == 6 ? 4 : 3;
my $stride = $w * $bpp;
my $raw = uncompress($idat);
defined $raw && length($raw) == $h * ($stride + 1) or die "$file: bad image data\n";
my @r = map { [split /:/] } @regions;
my %n = map { $_->[0] => [0, 0, 0, 0] } @r;
my @prev = (0) x $stride;
for my $y (0 .. $h - 1) {
    my $filter = ord(substr($raw, $y * ($stride + 1), 1));
    my @cur = unpack('C*', substr($raw, $y * ($stride + 1) + 1, $stride));
    if ($filter) {
        for my $i (0 .. $stride - 1) {
            my $a = $i >= $bpp ? $cur[$i - $bpp] : 0;
            my $b = $prev[$i];
            my $v;
            if ($filter == 1) {
                $v = $a;
            } elsif ($filter == 2) {
                $v = $b;
            } elsif ($filter == 3) {
                $v = ($a + $b) >> 1;
            } else {
                my $c = $i >= $bpp ? $prev[$i - $bpp] : 0;
                my $p = $a + $b - $c;
                my ($pa, $pb, $pc) = (abs($p - $a), abs($p - $b), abs($p - $c));
                $v = $pa <= $pb && $pa <= $pc ? $a : $pb <= $pc ? $b : $c;
            }
            $cur[$i] = ($cur[$i] + $v) & 255;
        }
    }
    for my $reg (@r) {
        my ($name, $x0, $y0, $x1, $y1) = @$reg;
        next if $y < $y0 || $y >= $y1;
        my $c = $n{$name};
        for my $x ($x0 .. ($x1 > $w ? $w : $x1) - 1) {
            my ($R, $G, $B) = @cur[$x * $bpp .. $x * $bpp + 2];
            $c->[0]++ if abs($R - 0x3b) <= 12 && abs($G - 0x78) <= 12 && abs($B - 0xb0) <= 12;
            $c->[1]++ if $R >= 150 && $R - $G >= 60 && $R - $B >= 60;
            $c->[2]++ if $R <= 110 && $G <= 110 && $B <= 110;
            $c->[3]++ if $R < 250 || $G < 250 || $B < 250;
        }
    }
    @prev = @cur;
}
print join(' ', $_->[0], @{$n{$_->[0]}}), "\n" for @r;
PERL
}

# check_render NAME ROWS: each row's panels show bars, line and text; the title is there; the
# page outside the picture is blank.
check_render() {
    local name=$1 rows=$2 regions=() i y0 height
    height=$((50 + rows * 320 + 10))
    regions+=("title:0:0:1000:45" "right:1000:0:1200:900" "below:0:$height:1200:900")
    for ((i = 0; i < rows; i++)); do
        y0=$((50 + i * 320))
        regions+=("hist$i:10:$y0:490:$((y0 + 320))" "time$i:490:$y0:970:$((y0 + 320))")
    done
    pixels "$T/$name.png" "${regions[@]}" > "$T/$name.pixels" || fail "cannot decode $name.png"
    awk -v rows="$rows" '
        { bar[$1] = $2; red[$1] = $3; dark[$1] = $4; ink[$1] = $5 }
        END {
            bad = ""
            if (dark["title"] < 50) bad = bad " no title;"
            if (ink["right"] + ink["below"] > 0) bad = bad " ink outside the picture;"
            for (i = 0; i < rows; i++) {
                if (bar["hist" i] < 200) bad = bad " row " i ": no histogram bars;"
                if (dark["hist" i] < 300) bad = bad " row " i ": no histogram axes or text;"
                if (red["time" i] < 60) bad = bad " row " i ": no timeline line;"
                if (dark["time" i] < 300) bad = bad " row " i ": no timeline axes or text;"
            }
            if (bad != "") { print bad; exit 1 }
        }' "$T/$name.pixels" > "$T/$name.verdict" \
        || { cat "$T/$name.pixels" >&2; fail "$name.png:$(cat "$T/$name.verdict")"; }
}

render plot
check_render plot 1
render two
check_render two 2
pass "chromium renders both SVGs at 1200x900: bars, lines, axes and titles where they belong"
