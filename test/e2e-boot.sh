#!/usr/bin/env bash
# The boot test: the Debian package, installed on a Debian 12 system that boots with systemd
# as PID 1 (systemd-nspawn --boot), works as an operator would use it.
#
# A minimal bookworm root file system is made once with debootstrap and cached in
# $JITTERD_TEST_CACHE (default /var/cache/jitterd-test); every run boots a fresh copy of it.
# The package built from BUILD_DIR by cpack is installed with apt (offline: its dependencies
# are in the cached tree), then the container boots and a unit inside it runs the checks,
# writes what it saw to /jitterd-test/result and powers off; the host reads that file.
#
# Checked inside: the socket is enabled and listening after boot with the right owner and mode,
# the service is not running until the first client, "jitterctl status" starts it, it runs as
# user jitterd with only CAP_SYS_NICE and CAP_IPC_LOCK and locked memory, "systemctl reload"
# and "systemctl stop" succeed, the journal shows the service started and no error, and
# purging the package stops and removes everything.
#
# Needs root, debootstrap and systemd-nspawn (systemd-container). Exit 77 (skipped) only when
# no cached root file system exists and the Debian mirror that the host's apt uses cannot be
# reached. Env: BUILD_DIR, SOURCE_DIR (set by CTest); JITTERD_TEST_CACHE,
# JITTERD_TEST_MIRROR (optional).
set -euo pipefail

: "${BUILD_DIR:?BUILD_DIR must point to the build directory}"
: "${SOURCE_DIR:?SOURCE_DIR must point to the source directory}"
BUILD_DIR=$(realpath "$BUILD_DIR")

SUITE=bookworm
CACHE=${JITTERD_TEST_CACHE:-/var/cache/jitterd-test}
ROOTFS=$CACHE/$SUITE-rootfs
# What the tree holds besides minbase; a change of this list makes a new tree.
INCLUDE=systemd,systemd-sysv,dbus,libsystemd0,libjansson4,libcap2,libtracefs1,libtraceevent1,procps
STAMP="$SUITE $INCLUDE v2"
BOOT_TIMEOUT=300

die() {
    echo "FAIL: $*" >&2
    exit 1
}

[[ $(id -u) -eq 0 ]] || die "must run as root (debootstrap, systemd-nspawn)"
for tool in debootstrap systemd-nspawn cpack dpkg-deb wget flock; do
    command -v "$tool" >/dev/null || die "$tool is missing (tools/deps test)"
done

# The Debian mirror the host's apt is configured with, for the suite's main component.
apt_mirror() {
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        [[ -f $f ]] || continue
        awk -v suite="$SUITE" '
            BEGIN { RS = ""; FS = "\n" }
            {
                types = uris = suites = comps = ""
                for (i = 1; i <= NF; i++) {
                    if ($i ~ /^#/) continue
                    if ($i ~ /^Types:/) types = " " substr($i, 7) " "
                    if ($i ~ /^URIs:/) uris = substr($i, 6)
                    if ($i ~ /^Suites:/) suites = " " substr($i, 8) " "
                    if ($i ~ /^Components:/) comps = " " substr($i, 12) " "
                }
                if (types ~ / deb / && suites ~ (" " suite " ") && comps ~ / main /) {
                    split(uris, u, " ")
                    print u[1]
                    exit
                }
            }' "$f"
    done
    if [[ -f /etc/apt/sources.list ]]; then
        sed -nE "s/^deb( \[[^]]*\])? ([^ ]+) $SUITE( .*)? main( .*)?\$/\2/p" /etc/apt/sources.list
    fi
}

# --- The cached root file system. -----------------------------------------------------------
mkdir -p "$CACHE"
exec 9>"$CACHE/lock"
flock 9
if [[ ! -f $ROOTFS/.jitterd-rootfs || $(cat "$ROOTFS/.jitterd-rootfs") != "$STAMP" ]]; then
    mirror=${JITTERD_TEST_MIRROR:-$(apt_mirror | head -n 1)}
    if [[ -z $mirror ]]; then
        echo "SKIP: no cached root file system in $ROOTFS, and no Debian $SUITE mirror in the"
        echo "host's apt sources (set JITTERD_TEST_MIRROR) to debootstrap one from"
        exit 77
    fi
    mirror=${mirror%/}
    if ! wget -q -T 30 -t 2 -O /dev/null "$mirror/dists/$SUITE/InRelease"; then
        echo "SKIP: no cached root file system in $ROOTFS, and debootstrap cannot reach the"
        echo "package mirror $mirror to make one"
        exit 77
    fi
    echo "debootstrap $SUITE from $mirror into $ROOTFS (only the first time)"
    rm -rf "$ROOTFS" "$ROOTFS.new"
    keyring=()
    [[ -f /usr/share/keyrings/debian-archive-keyring.gpg ]] &&
        keyring=(--keyring=/usr/share/keyrings/debian-archive-keyring.gpg)
    if ! debootstrap --variant=minbase --include="$INCLUDE" "${keyring[@]}" "$SUITE" \
            "$ROOTFS.new" "$mirror" >"$CACHE/debootstrap.log" 2>&1; then
        tail -n 30 "$CACHE/debootstrap.log" >&2
        rm -rf "$ROOTFS.new"
        die "debootstrap failed (log: $CACHE/debootstrap.log)"
    fi
    # An empty machine-id: each boot gets a transient one. (A missing one would make the
    # boot a "first boot", on which systemd applies the presets and enables every unit.)
    : >"$ROOTFS.new/etc/machine-id"
    rm -rf "$ROOTFS.new/var/cache/apt/archives/"*.deb
    echo "$STAMP" >"$ROOTFS.new/.jitterd-rootfs"
    mv "$ROOTFS.new" "$ROOTFS"
fi

# --- This run's copy, with the package and the checks. --------------------------------------
work=$(mktemp -d /var/tmp/jitterd-boot.XXXXXX)
cleanup() {
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 143' TERM INT
root=$work/root
cp -a --reflink=auto "$ROOTFS" "$root"
flock -u 9

cpack -G DEB -B "$work/pkg" --config "$BUILD_DIR/CPackConfig.cmake" >"$work/cpack.log" 2>&1 ||
    { cat "$work/cpack.log" >&2; die "cpack -G DEB failed"; }
deb=$(find "$work/pkg" -maxdepth 1 -name 'jitterd_*.deb' | head -n 1)
[[ -n $deb ]] || die "cpack wrote no jitterd_*.deb"
mkdir -p "$root/jitterd-test"
cp "$deb" "$root/jitterd-test/"
deb_name=$(basename "$deb")

# The container sees the host's CPUs: probe the last one, as on the host.
cpu=$(sed 's/.*[-,]//' /sys/devices/system/cpu/online)

# Installed as an operator would, before the boot: apt resolves the package's dependencies
# from what the tree holds, no download needed. The postinst runs without a running systemd
# here; it must still create the user and enable the socket.
systemd-nspawn -q -D "$root" --register=no --keep-unit --private-network \
    --chdir=/jitterd-test --setenv=DEBIAN_FRONTEND=noninteractive \
    apt-get install -y "./$deb_name" >"$work/apt.log" 2>&1 ||
    { cat "$work/apt.log" >&2; die "apt-get install ./$deb_name failed in the container"; }

mkdir -p "$root/etc/jitterd/jitterd.conf.d"
# SCHED_FIFO probes: what the unit's CAP_SYS_NICE and LimitRTPRIO= are for. The kernel's RT
# throttling (sched_rt_runtime_us) leaves the other tasks of that CPU 5 % meanwhile.
printf '[probe]\ncpus = %s\npriority = 50\n' "$cpu" \
    >"$root/etc/jitterd/jitterd.conf.d/test.conf"

{
    echo '#!/bin/bash'
    echo "CPU=$cpu"
    cat <<'EOF'
# Runs inside the booted container; every line of /jitterd-test/result is "ok: ..." or
# "FAIL: ...", and the last one "done".
exec >/jitterd-test/result 2>&1
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; }
expect() { # expect WHAT WANT GOT
    if [[ $3 == "$2" ]]; then ok "$1: $3"; else fail "$1: '$3', want '$2'"; fi
}
wait_state() { # wait_state UNIT STATE SECONDS
    local i
    for ((i = 0; i < $3 * 10; i++)); do
        [[ $(systemctl is-active "$1") == "$2" ]] && return 0
        sleep 0.1
    done
    return 1
}

expect "jitterd.socket enabled" enabled "$(systemctl is-enabled jitterd.socket)"
expect "jitterd.socket after boot" active "$(systemctl is-active jitterd.socket)"
state=$(systemctl is-active jitterd.service)
expect "jitterd.service before the first client" inactive "$state"
if [[ $state != inactive ]]; then
    systemctl show -p WantedBy,RequiredBy,TriggeredBy jitterd.service
    journalctl -b --no-pager -o short-monotonic | grep -i -B3 'Starting jitterd.service'
fi
expect "socket owner, group, mode" "root jitterd 660" \
    "$(stat -c '%U %G %a' /run/jitterd/io.jitterd 2>&1)"
expect "user jitterd" "jitterd" "$(id -gn jitterd 2>&1)"

if out=$(timeout 60 jitterctl status 2>&1); then
    ok "jitterctl status answered ($(wc -l <<<"$out") lines)"
else
    fail "jitterctl status: $out"
fi
if wait_state jitterd.service active 30; then
    ok "jitterd.service started by the first client"
else
    fail "jitterd.service is $(systemctl is-active jitterd.service) after the first client"
fi
pid=$(systemctl show -p MainPID --value jitterd.service)
if [[ -n $pid && $pid != 0 ]]; then
    expect "user of the daemon" jitterd "$(ps -o user= -p "$pid" | tr -d ' ')"
    # CAP_IPC_LOCK (14) and CAP_SYS_NICE (23), nothing else, even in the bounding set.
    expect "capability bounding set" 0000000000804000 \
        "$(awk '/^CapBnd:/ { print $2 }' "/proc/$pid/status")"
    # The drop-in's "cpus =" took effect: a thread is pinned to exactly that CPU.
    if grep -qx "Cpus_allowed_list:[[:space:]]*$CPU" /proc/"$pid"/task/*/status; then
        ok "a probe thread is pinned to CPU $CPU"
    else
        fail "no thread of the daemon is pinned to CPU $CPU"
    fi
    policies=$(ps -L -o cls= -p "$pid" | sort | uniq -c | xargs)
    if [[ $(ps -L -o cls= -p "$pid") == *FF* ]]; then
        ok "a probe thread runs SCHED_FIFO (threads by policy: $policies)"
    else
        fail "no SCHED_FIFO thread (threads by policy: $policies)"
    fi
    locked=$(awk '/^VmLck:/ { print $2 }' "/proc/$pid/status")
    if [[ -n $locked && $locked -gt 0 ]]; then
        ok "memory locked: $locked kB"
    else
        fail "no memory locked (VmLck: '$locked')"
    fi
else
    fail "no main PID for jitterd.service"
fi
status=$(systemctl show -p StatusText --value jitterd.service)
[[ -n $status ]] && ok "status text: $status" || fail "the daemon sent no STATUS="

out=$(timeout 30 jitterctl call org.varlink.service.GetInfo 2>&1)
[[ $out == *'"io.jitterd"'* ]] && ok "GetInfo lists io.jitterd" || fail "GetInfo: $out"

if out=$(systemctl reload jitterd.service 2>&1); then
    ok "systemctl reload jitterd"
else
    fail "systemctl reload jitterd: $out"
fi
expect "jitterd.service after reload" active "$(systemctl is-active jitterd.service)"
expect "main PID after reload" "$pid" "$(systemctl show -p MainPID --value jitterd.service)"
if out=$(timeout 30 jitterctl status 2>&1); then
    ok "jitterctl status after reload"
else
    fail "jitterctl status after reload: $out"
fi

if out=$(systemctl stop jitterd.service 2>&1); then
    ok "systemctl stop jitterd"
else
    fail "systemctl stop jitterd: $out"
fi
expect "jitterd.service after stop" inactive "$(systemctl is-active jitterd.service)"
expect "result of the service" success "$(systemctl show -p Result --value jitterd.service)"
expect "jitterd.socket after stopping the service" active "$(systemctl is-active jitterd.socket)"

journal=$(journalctl -b -u jitterd.service -u jitterd.socket --no-pager -o short-monotonic)
if grep -q 'Started jitterd.service' <<<"$journal"; then
    ok "journal: the service reported ready (Started)"
else
    fail "journal: no 'Started jitterd.service'"
fi
grep -q 'Reloaded jitterd.service' <<<"$journal" && ok "journal: Reloaded" ||
    fail "journal: no 'Reloaded jitterd.service'"
errors=$(journalctl -b -u jitterd.service -u jitterd.socket -p err --no-pager -q)
if [[ -z $errors ]]; then
    ok "journal: no error from jitterd.service or jitterd.socket"
else
    fail "journal errors:"$'\n'"$errors"
fi

# Removing the package stops everything it started; purging removes its state.
if out=$(DEBIAN_FRONTEND=noninteractive apt-get purge -y jitterd 2>&1); then
    ok "apt-get purge jitterd"
else
    fail "apt-get purge jitterd: $out"
fi
expect "jitterd.socket after purge" inactive "$(systemctl is-active jitterd.socket)"
[[ ! -e /run/jitterd/io.jitterd ]] && ok "socket file removed" || fail "socket file left"
[[ ! -e /var/lib/jitterd ]] && ok "/var/lib/jitterd purged" || fail "/var/lib/jitterd left"

echo "--- journal"
journalctl -b -u jitterd.service -u jitterd.socket --no-pager -o short-monotonic
echo done
systemctl poweroff --no-block
EOF
} >"$root/jitterd-test/check"
chmod 755 "$root/jitterd-test/check"

cat >"$root/etc/systemd/system/jitterd-boot-check.service" <<'EOF'
[Unit]
Description=jitterd boot test
After=multi-user.target

[Service]
Type=oneshot
ExecStart=/jitterd-test/check
StandardOutput=journal+console
EOF
ln -s /etc/systemd/system/jitterd-boot-check.service \
    "$root/etc/systemd/system/multi-user.target.wants/jitterd-boot-check.service"

# --- Boot. ----------------------------------------------------------------------------------
# CAP_IPC_LOCK is not among the capabilities nspawn grants a container by default; the unit
# needs it for mlockall.
start=$(date +%s)
rc=0
timeout -k 30 "$BOOT_TIMEOUT" systemd-nspawn -q -D "$root" --boot --register=no --keep-unit \
    --private-network --capability=CAP_IPC_LOCK --console=read-only \
    >"$work/console.log" 2>&1 </dev/null || rc=$?
echo "container ran $(($(date +%s) - start)) s (exit $rc)"

result=$root/jitterd-test/result
if ! grep -qx done "$result" 2>/dev/null; then
    tail -n 60 "$work/console.log" >&2
    [[ -f $result ]] && cat "$result" >&2
    die "the checks did not complete inside the container (nspawn exit $rc)"
fi
sed '/^--- journal$/,$d' "$result"
if grep -q '^FAIL' "$result"; then
    sed -n '/^--- journal$/,$p' "$result" >&2
    die "$(grep -c '^FAIL' "$result") check(s) failed inside the container"
fi
[[ $rc -eq 0 ]] || die "systemd-nspawn exited with $rc"
echo "boot test passed"
