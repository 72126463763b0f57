#!/usr/bin/env bash
# The systemd integration, without a booted system: the units as installed pass
# "systemd-analyze verify" without a single message and score at most 2.0 in
# "systemd-analyze security"; the sysusers.d and tmpfiles.d snippets create the user and the
# directories in a scratch root; the Debian package holds what it must; and the daemon, handed
# its socket the way systemd hands it over (socket activation), answers a Varlink client.
#
# Needs a complete build: a missing jitterd or jitterctl is a failure, not a skip.
# Env: BUILD_DIR, SOURCE_DIR (set by CTest).
set -euo pipefail

: "${BUILD_DIR:?BUILD_DIR must point to the build directory}"
: "${SOURCE_DIR:?SOURCE_DIR must point to the source directory}"
BUILD_DIR=$(realpath "$BUILD_DIR")
SOURCE_DIR=$(realpath "$SOURCE_DIR")

MAX_EXPOSURE=2.0
JITTERD=$BUILD_DIR/daemon/jitterd
JITTERCTL=$BUILD_DIR/tools/jitterctl/jitterctl

failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}
pass() { echo "ok: $*"; }

# cpack's DEB generator needs file and dpkg-shlibdeps (dpkg-dev) for the Depends: line.
for tool in systemd-analyze systemd-sysusers systemd-tmpfiles systemd-socket-activate cpack \
            dpkg-deb dpkg-shlibdeps file jq; do
    command -v "$tool" >/dev/null || { echo "FAIL: $tool is missing (tools/dev/deps test)" >&2; exit 1; }
done

tmp=$(mktemp -d /tmp/jitterd-units.XXXXXX)
daemon_pid=
cleanup() {
    if [[ -n $daemon_pid ]] && kill -0 "$daemon_pid" 2>/dev/null; then
        kill -KILL "$daemon_pid" 2>/dev/null || true
        wait "$daemon_pid" 2>/dev/null || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# --- An installed tree: what "cmake --install" (and so the package) puts on a system. -------
# "systemd-analyze verify --root=" resolves the units' dependencies (sysinit.target, ...) and
# checks every Exec*= command inside the root: it gets the system's own units (not a jitterd
# unit installed on this host, which would shadow the one under test), as on a real host;
# ExecStart= and ExecReload= are the package's own jitterd and jitterctl.
root=$tmp/root
mkdir -p "$root/usr/lib/systemd/system" "$root/etc"
for d in /lib/systemd/system /usr/lib/systemd/system; do
    if [[ -d $d ]]; then
        cp -an "$d/." "$root/usr/lib/systemd/system/"
    fi
done
rm -rf "$root/usr/lib/systemd/system/jitterd."*
if ! DESTDIR=$root cmake --install "$BUILD_DIR" --prefix /usr >"$tmp/install.log" 2>&1; then
    cat "$tmp/install.log" >&2
    echo "FAIL: cmake --install failed (is the build complete?)" >&2
    exit 1
fi
unitdir=$(awk -F= '/^JITTERD_SYSTEMD_UNIT_DIR:/ { print $2 }' "$BUILD_DIR/CMakeCache.txt")
[[ -n $unitdir ]] || { echo "FAIL: JITTERD_SYSTEMD_UNIT_DIR not in the CMake cache" >&2; exit 1; }
for unit in jitterd.service jitterd.socket; do
    [[ -f $root$unitdir/$unit ]] || fail "$unit not installed to $unitdir"
done
[[ -x $root/usr/sbin/jitterd ]] || fail "jitterd not installed to /usr/sbin (ExecStart=)"
[[ -x $root/usr/bin/jitterctl ]] || fail "jitterctl not installed to /usr/bin (ExecReload=)"
for page in man8/jitterd.8 man5/jitterd.conf.5 man1/jitterctl.1 man1/jitter-probe.1; do
    [[ -s $root/usr/share/man/$page ]] || fail "man page $page not installed"
done

# Warnings count: verify exits 0 on e.g. an unknown key, so any output is a failure.
out=$(systemd-analyze verify --man=no --root="$root" jitterd.socket jitterd.service 2>&1) \
    && rc=0 || rc=$?
if [[ $rc -ne 0 || -n $out ]]; then
    fail "systemd-analyze verify (exit $rc):"$'\n'"$out"
else
    pass "systemd-analyze verify: no message"
fi

# A check of the check: a broken copy of the unit must be caught the same way.
mkdir -p "$root/etc/systemd/system"
sed 's/^Type=notify$/Typ=notify/' "$root$unitdir/jitterd.service" \
    >"$root/etc/systemd/system/jitterd.service"
out=$(systemd-analyze verify --man=no --root="$root" jitterd.service 2>&1) || true
rm -f "$root/etc/systemd/system/jitterd.service"
[[ $out == *"Typ"* ]] || fail "systemd-analyze verify did not report an unknown key: '$out'"

# --- Exposure score. ----------------------------------------------------------------------
sec=$(systemd-analyze security --offline=yes --root="$root" jitterd.service 2>&1) || true
score=$(sed -n 's/.*Overall exposure level for jitterd\.service: \([0-9.]*\).*/\1/p' <<<"$sec")
if [[ -z $score ]]; then
    fail "no exposure score in systemd-analyze security output:"$'\n'"$sec"
elif awk -v s="$score" -v m="$MAX_EXPOSURE" 'BEGIN { exit !(s <= m) }'; then
    pass "exposure score $score <= $MAX_EXPOSURE"
else
    fail "exposure score $score > $MAX_EXPOSURE:"$'\n'"$(grep '✗' <<<"$sec")"
fi
# --- The trace drop-in, applied as an administrator would (a copy in the unit's .d). -------
dropin=$root/usr/share/jitterd/jitterd-trace.conf
[[ -s $dropin ]] || fail "the trace drop-in is not installed to /usr/share/jitterd"
mkdir -p "$root/etc/systemd/system/jitterd.service.d"
cp "$dropin" "$root/etc/systemd/system/jitterd.service.d/trace.conf"
out=$(systemd-analyze verify --man=no --root="$root" jitterd.service 2>&1) && rc=0 || rc=$?
[[ $rc -eq 0 && -z $out ]] || fail "systemd-analyze verify with the trace drop-in (exit $rc):"$'\n'"$out"
sec=$(systemd-analyze security --offline=yes --root="$root" jitterd.service 2>&1) || true
trace_score=$(sed -n 's/.*Overall exposure level for jitterd\.service: \([0-9.]*\).*/\1/p' <<<"$sec")
[[ -n $trace_score ]] || fail "no exposure score with the trace drop-in:"$'\n'"$sec"
grep -q '✗ CapabilityBoundingSet=~CAP_(DAC_\*' <<<"$sec" ||
    fail "systemd-analyze security does not see the drop-in's CAP_DAC_OVERRIDE"
awk -v s="$trace_score" -v m="$MAX_EXPOSURE" 'BEGIN { exit !(s <= m) }' ||
    fail "exposure score with the trace drop-in $trace_score > $MAX_EXPOSURE"
pass "trace drop-in: systemd-analyze verify says nothing, exposure $trace_score (without: $score)"
rm -rf "$root/etc/systemd/system/jitterd.service.d"

# What the daemon needs must still be there: the two capabilities, real-time and /proc.
svc=$root$unitdir/jitterd.service
for want in 'CapabilityBoundingSet=CAP_SYS_NICE CAP_IPC_LOCK' \
            'AmbientCapabilities=CAP_SYS_NICE CAP_IPC_LOCK' 'Type=notify' 'User=jitterd' \
            'StateDirectory=jitterd' 'LimitMEMLOCK=infinity'; do
    grep -qxF "$want" "$svc" || fail "jitterd.service lacks '$want'"
done
for banned in RestrictRealtime ProcSubset PrivateUsers ProtectProc RuntimeDirectory; do
    ! grep -q "^$banned=" "$svc" || fail "jitterd.service sets $banned=, which breaks the daemon"
done

# --- TimeoutStartSec=: longer than the daemon may take to send READY=1. ------------------------
# With the configuration it ships with, the daemon sends READY=1, or gives up and says why, after
# at most: the counter's calibration (its bound in daemon/manager.c), the preheat (as jitterd
# --dump-config reads the installed jitterd.conf), READY_GRACE_USEC (daemon/manager.h), and the
# stop of its probes when it gives up (PROBE_STOP_TIMEOUT_NS, probe/probe.h). The unit must wait
# longer, so that systemd reports the daemon's own reason rather than its timeout.
# define_value FILE NAME: the value of "#define NAME" in FILE, as a number.
define_value() {
    local expr
    expr=$(sed -nE "s/^#define $2[[:space:]]+(.*)$/\1/p" "$1" | sed -E 's|/\*.*||; s/ULL|UL|U//g')
    [[ $expr =~ ^[0-9\ \*\(\)]+$ ]] || { echo "FAIL: no numeric #define $2 in $1: '$expr'" >&2; exit 1; }
    echo $(( expr ))
}
usec_of() { systemd-analyze timespan "$1" 2>/dev/null | sed -n 's/^ *μs: //p'; }
conf=$(find "$root" -path '*/jitterd/jitterd.conf' -type f | head -n 1)
start_timeout=$(sed -n 's/^TimeoutStartSec=//p' "$svc")
calibration_ms=$(grep -o 'counter_info_init([^,]*, [0-9.]*, [0-9]*' "$SOURCE_DIR/daemon/manager.c" |
                 sed 's/.*, //')
preheat=$("$JITTERD" --config "$conf" --dump-config 2>/dev/null | sed -n 's/^preheat = //p')
grace_us=$(define_value "$SOURCE_DIR/daemon/manager.h" READY_GRACE_USEC)
stop_ns=$(define_value "$SOURCE_DIR/probe/probe.h" PROBE_STOP_TIMEOUT_NS)
if [[ -z $start_timeout ]]; then
    fail "jitterd.service sets no TimeoutStartSec="
elif [[ -z $(usec_of "$start_timeout") ]]; then
    fail "TimeoutStartSec=$start_timeout is not a time span systemd reads"
elif [[ -z $calibration_ms || -z $preheat || -z $(usec_of "$preheat") || -z $grace_us ||
        -z $stop_ns ]]; then
    fail "cannot work out the start's bound: calibration '$calibration_ms' ms, preheat" \
         "'$preheat', READY grace '$grace_us' us, stop '$stop_ns' ns"
else
    need_us=$(( calibration_ms * 1000 + $(usec_of "$preheat") + grace_us + stop_ns / 1000 ))
    if (( $(usec_of "$start_timeout") > need_us )); then
        pass "TimeoutStartSec=$start_timeout > calibration ${calibration_ms} ms + preheat $preheat" \
             "+ READY grace $(( grace_us / 1000 )) ms + stop $(( stop_ns / 1000000 )) ms"
    else
        fail "TimeoutStartSec=$start_timeout is not longer than what the start may take:" \
             "$(( need_us / 1000 )) ms (calibration ${calibration_ms} ms, preheat $preheat," \
             "READY grace $(( grace_us / 1000 )) ms, stop $(( stop_ns / 1000000 )) ms)"
    fi
fi

# --- sysusers.d and tmpfiles.d. -------------------------------------------------------------
uid= gid=
if systemd-sysusers --root="$root" >"$tmp/sysusers.log" 2>&1; then
    entry=$(grep '^jitterd:' "$root/etc/passwd" || true)
    IFS=: read -r _ _ uid gid _ home shell <<<"$entry"
    if [[ -z $entry ]]; then
        fail "systemd-sysusers did not create user jitterd"
    elif ((uid >= 1000)) || [[ $home != /var/lib/jitterd ]]; then
        fail "user jitterd is not a system user with home /var/lib/jitterd: $entry"
    elif [[ $(grep '^jitterd:' "$root/etc/group" | cut -d: -f3) != "$gid" ]]; then
        fail "group jitterd is not the user's primary group"
    else
        pass "systemd-sysusers: $entry"
    fi
else
    fail "systemd-sysusers: $(cat "$tmp/sysusers.log")"
fi

rm -rf "$root/etc/jitterd" "$root/var"
if systemd-tmpfiles --root="$root" --create jitterd.conf >"$tmp/tmpfiles.log" 2>&1; then
    st=$(stat -c '%u %g %a' "$root/var/lib/jitterd" 2>/dev/null || true)
    if [[ $st != "$uid $gid 750" ]]; then
        fail "/var/lib/jitterd is '$st', want '$uid $gid 750'"
    elif [[ ! -d $root/etc/jitterd/jitterd.conf.d ]]; then
        fail "/etc/jitterd/jitterd.conf.d not created"
    else
        pass "systemd-tmpfiles: /var/lib/jitterd ($st), /etc/jitterd/jitterd.conf.d"
    fi
else
    fail "systemd-tmpfiles: $(cat "$tmp/tmpfiles.log")"
fi

# --- The Debian package. --------------------------------------------------------------------
if cpack -G DEB -B "$tmp/pkg" --config "$BUILD_DIR/CPackConfig.cmake" >"$tmp/cpack.log" 2>&1; then
    deb=$(find "$tmp/pkg" -maxdepth 1 -name 'jitterd_*.deb' | head -n 1)
    if [[ -z $deb ]]; then
        fail "cpack wrote no jitterd_*.deb"
    else
        files=$(dpkg-deb -c "$deb" | awk '{ print $6 }')
        for f in ./usr/sbin/jitterd ./usr/bin/jitterctl ".$unitdir/jitterd.service" \
                 ".$unitdir/jitterd.socket" ./etc/jitterd/jitterd.conf \
                 ./usr/lib/sysusers.d/jitterd.conf ./usr/lib/tmpfiles.d/jitterd.conf \
                 ./usr/share/man/man8/jitterd.8 ./usr/share/man/man5/jitterd.conf.5 \
                 ./usr/share/man/man1/jitterctl.1 ./usr/share/man/man1/jitter-probe.1; do
            grep -qxF "$f" <<<"$files" || fail "package lacks $f"
        done
        ! grep -q '^\./usr/etc' <<<"$files" || fail "package puts configuration in /usr/etc"
        depends=$(dpkg-deb -f "$deb" Depends)
        for dep in libsystemd0 libjansson4 libcap2 systemd; do
            re="(^|, )$dep( |,|$)"
            [[ $depends =~ $re ]] || fail "package Depends lacks $dep: $depends"
        done
        [[ $(dpkg-deb -f "$deb" Package) == jitterd ]] || fail "package is not named jitterd"
        mkdir -p "$tmp/control"
        dpkg-deb -e "$deb" "$tmp/control"
        for s in postinst prerm postrm; do
            [[ -x $tmp/control/$s ]] || fail "package lacks an executable $s"
        done
        grep -qxF /etc/jitterd/jitterd.conf "$tmp/control/conffiles" ||
            fail "jitterd.conf is not a conffile"
        grep -q 'systemd-sysusers' "$tmp/control/postinst" || fail "postinst runs no sysusers"
        pass "package $(basename "$deb"): Depends: $depends"
    fi
else
    fail "cpack -G DEB: $(tail -n 20 "$tmp/cpack.log")"
fi

# --- Socket activation: the daemon serves the socket it is handed. -----------------------
[[ -x $JITTERD ]] || { echo "FAIL: $JITTERD does not exist: build the daemon" >&2; exit 1; }
[[ -x $JITTERCTL ]] || { echo "FAIL: $JITTERCTL does not exist: build jitterctl" >&2; exit 1; }

cpu=$(sed 's/.*[-,]//' /sys/devices/system/cpu/online)
: >"$tmp/jitterd.conf"
mkdir -p "$tmp/state"
systemd-socket-activate -l "$tmp/sock" --fdname=io.jitterd \
    "$JITTERD" --config "$tmp/jitterd.conf" --cpus "$cpu" --state-dir "$tmp/state" \
    >"$tmp/jitterd.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 50); do
    [[ -S $tmp/sock ]] && break
    sleep 0.1
done
[[ -S $tmp/sock ]] || { cat "$tmp/jitterd.log" >&2; echo "FAIL: no socket $tmp/sock" >&2; exit 1; }

version=$(sed -n 's/^CMAKE_PROJECT_VERSION:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt")
if info=$(timeout 30 "$JITTERCTL" --socket "$tmp/sock" call org.varlink.service.GetInfo \
          2>"$tmp/jitterctl.err"); then
    if jq -e --arg v "$version" \
          '.product == "jitterd" and .version == $v and
           (.interfaces | index("io.jitterd")) and (.interfaces | index("org.varlink.service"))' \
          <<<"$info" >/dev/null 2>&1; then
        pass "GetInfo through the activated socket: $(jq -c . <<<"$info")"
    else
        fail "unexpected GetInfo reply: $info"
    fi
else
    fail "jitterctl call GetInfo: $(cat "$tmp/jitterctl.err")"
fi

# The daemon was started by systemd-socket-activate with the socket already bound: it must not
# have bound a socket of its own, and it must stop cleanly on SIGTERM.
kill -TERM "$daemon_pid" 2>/dev/null || true
rc=0
for _ in $(seq 100); do
    kill -0 "$daemon_pid" 2>/dev/null || break
    sleep 0.1
done
if kill -0 "$daemon_pid" 2>/dev/null; then
    fail "jitterd did not stop within 10 s of SIGTERM"
else
    wait "$daemon_pid" || rc=$?
    daemon_pid=
    [[ $rc -eq 0 ]] || fail "jitterd exited with status $rc after SIGTERM"
fi
if ((failures > 0)); then
    echo "--- jitterd log" >&2
    cat "$tmp/jitterd.log" >&2
    echo "$failures check(s) failed" >&2
    exit 1
fi
echo "all systemd integration checks passed"
