#!/usr/bin/env bash
# The boot test: the Debian package, installed into a Debian 12 root the way images are
# built, works once that system boots with systemd as PID 1 (systemd-nspawn --boot), as an
# operator would use it.
#
# Every run works on a fresh copy of the minimal bookworm root that test/debian-root.sh
# caches. The package built from BUILD_DIR by cpack is installed with apt in a plain chroot,
# without /proc (as debootstrap, mmdebstrap and "chroot apt-get install" do): dpkg must end
# with the package configured, the user created and the socket enabled. A second copy gets it
# installed in a container without systemd (systemd-nspawn without --boot: /proc mounted, no
# systemd as PID 1), as in a container image's build: configured, the user and the
# directories made at once, and no unit started or reloaded. Then the first copy boots and a
# unit inside it runs the checks, writes what it saw to /jitterd-test/result and powers off;
# the host reads that file.
#
# Checked inside: the state directory made at boot, the socket enabled and listening after
# boot with the right owner and mode, the service not running until the first client,
# "jitterctl status" starts it, it runs as user jitterd with only CAP_SYS_NICE and
# CAP_IPC_LOCK and locked memory, "systemctl reload" returns once the reload is over (the new
# threshold in effect and the probe running again as it returns) and fails on a configuration
# with an error (the daemon goes on with the running one), "systemctl stop" succeeds, the
# journal shows the service started and no error but the one of the bad configuration, and
# purging the package stops and removes everything. Then the package is installed again on the running system (the socket starts at
# once), reinstalled as an upgrade (a running daemon is restarted), and purged again.
#
# Needs root, debootstrap and systemd-nspawn (systemd-container). Exit 77 (skipped) only when
# no cached root file system exists and the Debian mirror that the host's apt uses cannot be
# reached. Env: BUILD_DIR, SOURCE_DIR (set by CTest); JITTERD_TEST_CACHE,
# JITTERD_TEST_MIRROR (optional, see test/debian-root.sh).
set -euo pipefail

: "${BUILD_DIR:?BUILD_DIR must point to the build directory}"
: "${SOURCE_DIR:?SOURCE_DIR must point to the source directory}"
BUILD_DIR=$(realpath "$BUILD_DIR")

# The boot, the checks and the power-off take about 10 s.
BOOT_TIMEOUT=120
# apt-get installing the package from what the tree holds takes a few seconds; it waits for
# the dpkg lock without a limit of its own.
APT_TIMEOUT=120

# shellcheck source=test/debian-root.sh
source "$SOURCE_DIR/test/debian-root.sh"
# This run's copy of the root, with the package and the checks.
debian_root_start boot cpack dpkg-deb

cpack -G DEB -B "$work/pkg" --config "$BUILD_DIR/CPackConfig.cmake" >"$work/cpack.log" 2>&1 ||
    { cat "$work/cpack.log" >&2; die "cpack -G DEB failed"; }
deb=$(find "$work/pkg" -maxdepth 1 -name 'jitterd_*.deb' | head -n 1)
[[ -n $deb ]] || die "cpack wrote no jitterd_*.deb"
mkdir -p "$root/jitterd-test"
cp "$deb" "$root/jitterd-test/"
deb_name=$(basename "$deb")

# The container sees the host's CPUs: probe the last one, as on the host.
cpu=$(sed 's/.*[-,]//' /sys/devices/system/cpu/online)

# --- Installed in a chroot, as images are built. ------------------------------------------
# Plain chroot: no /proc, /sys or /run mounted, no systemd running. apt resolves the
# package's dependencies from what the tree holds, no download needed.
[[ ! -e $root/proc/self ]] || die "the copy of the root has /proc mounted"
rc=0
timeout -k 10 "$APT_TIMEOUT" chroot "$root" /usr/bin/env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y "/jitterd-test/$deb_name" >"$work/apt.log" 2>&1 || rc=$?
if ((rc != 0)); then
    cat "$work/apt.log" >&2
    ((rc != 124 && rc != 137)) ||
        die "apt-get install /jitterd-test/$deb_name took more than $APT_TIMEOUT s in a chroot"
    die "apt-get install /jitterd-test/$deb_name failed in a chroot without /proc (exit $rc)"
fi
status=$(chroot "$root" dpkg-query -W -f='${db:Status-Abbrev}' jitterd 2>&1 || true)
if [[ $status != "ii " ]]; then
    cat "$work/apt.log" >&2
    die "after the chroot install dpkg reports jitterd as '$status', want 'ii '"
fi
echo "ok: installed in a chroot without /proc: dpkg status ii"
passwd_entry=$(chroot "$root" getent passwd jitterd || true)
group_entry=$(chroot "$root" getent group jitterd || true)
[[ -n $passwd_entry && -n $group_entry ]] ||
    die "the chroot install made no user or group jitterd: '$passwd_entry' '$group_entry'"
echo "ok: user and group jitterd: $passwd_entry"
link=$root/etc/systemd/system/sockets.target.wants/jitterd.socket
[[ -L $link ]] || die "the chroot install did not enable jitterd.socket (no $link)"
echo "ok: jitterd.socket enabled"
[[ ! -e $root/etc/systemd/system/multi-user.target.wants/jitterd.service ]] ||
    die "the chroot install enabled jitterd.service"

# --- Installed in a container without systemd. ------------------------------------------------
# A fresh copy of the root, in systemd-nspawn without --boot: /proc is mounted, so the
# postinst's systemd-tmpfiles makes the directories at once, but systemd is not PID 1 (no
# /run/systemd/system), so no unit may be started, restarted or reloaded. Stand-ins for
# systemctl and deb-systemd-invoke, first in PATH, record every call and pass it on. Then, as a
# check of that record, the postinst runs once more with /run/systemd/system present, where it
# must start the socket.
croot=$work/container-root
debian_root_copy "$croot"
mkdir -p "$croot/jitterd-test"
cp "$deb" "$croot/jitterd-test/"
for tool in systemctl deb-systemd-invoke; do
    printf '#!/bin/sh\necho "%s $*" >>/jitterd-test/calls\nexec /usr/bin/%s "$@"\n' \
        "$tool" "$tool" >"$croot/usr/local/sbin/$tool"
    chmod 755 "$croot/usr/local/sbin/$tool"
done
cat >"$croot/jitterd-test/install" <<INSTALL
#!/bin/sh
apt-get install -y /jitterd-test/$deb_name >/jitterd-test/apt.log 2>&1
echo \$? >/jitterd-test/apt.rc
mv /jitterd-test/calls /jitterd-test/calls.install 2>/dev/null || : >/jitterd-test/calls.install
mkdir -p /run/systemd/system
/var/lib/dpkg/info/jitterd.postinst configure >/dev/null 2>&1
INSTALL
chmod 755 "$croot/jitterd-test/install"
rc=0
timeout -k 10 "$APT_TIMEOUT" systemd-nspawn -q -D "$croot" --register=no --keep-unit \
    --private-network --setenv=DEBIAN_FRONTEND=noninteractive /jitterd-test/install \
    >"$work/container.log" 2>&1 </dev/null || rc=$?
if ((rc != 0)); then
    cat "$work/container.log" >&2
    die "the container install ended with $rc (124: it took more than $APT_TIMEOUT s)"
fi
if [[ $(cat "$croot/jitterd-test/apt.rc" 2>/dev/null) != 0 ]]; then
    cat "$croot/jitterd-test/apt.log" >&2
    die "apt-get install /jitterd-test/$deb_name failed in a container without systemd"
fi
status=$(chroot "$croot" dpkg-query -W -f='${db:Status-Abbrev}' jitterd 2>&1 || true)
if [[ $status != "ii " ]]; then
    cat "$croot/jitterd-test/apt.log" >&2
    die "in a container dpkg reports jitterd as '$status', want 'ii '"
fi
entry=$(chroot "$croot" getent passwd jitterd || true)
[[ -n $entry ]] || die "the container install made no user jitterd"
IFS=: read -r _ _ c_uid c_gid _ <<<"$entry"
st=$(stat -c '%u %g %a' "$croot/var/lib/jitterd" 2>&1 || true)
[[ $st == "$c_uid $c_gid 750" ]] ||
    die "the container install made /var/lib/jitterd '$st', want '$c_uid $c_gid 750' (tmpfiles.d)"
[[ -d $croot/etc/jitterd/jitterd.conf.d ]] ||
    die "the container install made no /etc/jitterd/jitterd.conf.d"
unit_calls=$(grep -E ' (start|restart|try-restart|reload|daemon-reload|stop)( |$)' \
    "$croot/jitterd-test/calls.install" || true)
[[ -z $unit_calls ]] || die "postinst touched units where systemd does not run:"$'\n'"$unit_calls"
grep -q '^deb-systemd-invoke start jitterd.socket' "$croot/jitterd-test/calls" 2>/dev/null ||
    die "the stand-ins did not see the postinst start the socket where systemd runs:" \
        "$(cat "$croot/jitterd-test/calls" 2>&1)"
echo "ok: installed in a container without systemd: dpkg status ii, user $entry," \
     "/var/lib/jitterd ($st), /etc/jitterd/jitterd.conf.d, no unit started or reloaded" \
     "($(wc -l <"$croot/jitterd-test/calls.install") calls of systemctl or deb-systemd-invoke)"
rm -rf "$croot"

{
    echo '#!/bin/bash'
    echo "CPU=$cpu"
    echo "DEB=/jitterd-test/$deb_name"
    cat <<'EOF'
# Runs inside the booted container; every line of /jitterd-test/result is "ok: ..." or
# "FAIL: ...", and the last one "done".
exec >/jitterd-test/result 2>&1
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; }
expect() { # expect WHAT WANT GOT
    if [[ $3 == "$2" ]]; then ok "$1: $3"; else fail "$1: '$3', want '$2'"; fi
}
# errors_after [CURSOR]: the errors of the units in the journal (after CURSOR).
errors_after() {
    journalctl -b -u jitterd.service -u jitterd.socket -p err --no-pager -q ${1:+--after-cursor="$1"}
}
# cursor: where the journal ends now, with what was sent to it so far (the daemon's stderr and
# PID 1's own lines come on their own time).
cursor() {
    journalctl --sync
    journalctl -n 1 --show-cursor --no-pager -q | sed -n 's/^-- cursor: //p'
}
# status_value NAME: the first value, a number or a string, of a member NAME in GetStatus.
status_value() {
    timeout 30 jitterctl --json status | grep -Eo "\"$1\": ?(\"[^\"]*\"|[0-9]+)" | head -1 |
        sed -E 's/^[^:]*: ?"?//; s/"$//'
}
# test_conf [LINE]: the drop-in of this test, probing $CPU with SCHED_FIFO 50, and LINE.
test_conf() {
    printf '[probe]\ncpus = %s\npriority = 50\n%s\n' "$CPU" "${1:-}" >/etc/jitterd/jitterd.conf.d/test.conf
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
# The chroot had no /proc for systemd-tmpfiles: the boot made the state directory.
expect "/var/lib/jitterd made at boot" "jitterd jitterd 750" \
    "$(stat -c '%U %G %a' /var/lib/jitterd 2>&1)"
[[ -d /etc/jitterd/jitterd.conf.d ]] && ok "drop-in directory /etc/jitterd/jitterd.conf.d" ||
    fail "no /etc/jitterd/jitterd.conf.d"
# SCHED_FIFO probes: what the unit's CAP_SYS_NICE and LimitRTPRIO= are for. The kernel's RT
# throttling (sched_rt_runtime_us) leaves the other tasks of that CPU 5 % meanwhile. The
# service is not running yet, so it starts with this.
test_conf

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

# A reload that restarts the probe (a new threshold): over when systemctl returns.
test_conf 'threshold = 20us'
if out=$(systemctl reload jitterd.service 2>&1); then
    ok "systemctl reload jitterd"
else
    fail "systemctl reload jitterd: $out"
fi
expect "jitterd.service after reload" active "$(systemctl is-active jitterd.service)"
expect "the threshold as the reload returned" 20000 "$(status_value threshold_ns)"
expect "the probe as the reload returned" running "$(status_value state)"
expect "main PID after reload" "$pid" "$(systemctl show -p MainPID --value jitterd.service)"
if out=$(timeout 30 jitterctl status 2>&1); then
    ok "jitterctl status after reload"
else
    fail "jitterctl status after reload: $out"
fi
journalctl --sync
errors=$(errors_after)
[[ -z $errors ]] && ok "journal: no error from jitterd.service or jitterd.socket so far" ||
    fail "journal errors:"$'\n'"$errors"

# A reload of a configuration with an error fails, and the daemon keeps the running one.
before_bad=$(cursor)
test_conf 'threshold = bogus'
if out=$(systemctl reload jitterd.service 2>&1); then
    fail "systemctl reload of a bad configuration succeeded"
else
    ok "systemctl reload of a bad configuration failed: $out"
fi
expect "jitterd.service after the failed reload" active "$(systemctl is-active jitterd.service)"
expect "main PID after the failed reload" "$pid" "$(systemctl show -p MainPID --value jitterd.service)"
expect "the threshold after the failed reload" 20000 "$(status_value threshold_ns)"
journalctl --sync
if journalctl -b -u jitterd.service --no-pager -q --after-cursor="$before_bad" |
        grep -q 'test.conf:4: threshold'; then
    ok "journal: the error by file and line (test.conf:4)"
else
    fail "journal: no 'test.conf:4: threshold' after the bad reload"
fi
test_conf 'threshold = 20us'
after_bad=$(cursor)

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
errors=$(errors_after "$after_bad")
if [[ -z $errors ]]; then
    ok "journal: no error from jitterd.service or jitterd.socket after the bad reload"
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

# Installed on the running system: the socket starts at once, the service still waits.
if out=$(DEBIAN_FRONTEND=noninteractive apt-get install -y "$DEB" 2>&1); then
    ok "apt-get install on the running system"
else
    fail "apt-get install on the running system: $out"
fi
expect "dpkg status" "ii " "$(dpkg-query -W -f='${db:Status-Abbrev}' jitterd 2>&1)"
expect "jitterd.socket after installing" active "$(systemctl is-active jitterd.socket)"
expect "jitterd.socket enabled after installing" enabled "$(systemctl is-enabled jitterd.socket)"
expect "jitterd.service after installing" inactive "$(systemctl is-active jitterd.service)"
expect "jitterd.service enabled after installing" disabled \
    "$(systemctl is-enabled jitterd.service)"

# An upgrade (here a reinstall) restarts a running daemon.
timeout 60 jitterctl status >/dev/null 2>&1 || true
if wait_state jitterd.service active 30; then
    pid=$(systemctl show -p MainPID --value jitterd.service)
    if out=$(DEBIAN_FRONTEND=noninteractive apt-get install -y --reinstall "$DEB" 2>&1); then
        ok "apt-get install --reinstall"
    else
        fail "apt-get install --reinstall: $out"
    fi
    if wait_state jitterd.service active 30; then
        new_pid=$(systemctl show -p MainPID --value jitterd.service)
        if [[ $new_pid != 0 && $new_pid != "$pid" ]]; then
            ok "the upgrade restarted the daemon (PID $pid, then $new_pid)"
        else
            fail "the upgrade did not restart the daemon (PID $pid, then $new_pid)"
        fi
    else
        fail "jitterd.service is $(systemctl is-active jitterd.service) after the upgrade"
    fi
else
    fail "jitterd.service did not start for jitterctl after installing on the running system"
fi
if out=$(DEBIAN_FRONTEND=noninteractive apt-get purge -y jitterd 2>&1); then
    ok "apt-get purge jitterd, again"
else
    fail "apt-get purge jitterd, again: $out"
fi
expect "jitterd.service after the second purge" inactive "$(systemctl is-active jitterd.service)"
expect "jitterd.socket after the second purge" inactive "$(systemctl is-active jitterd.socket)"
[[ ! -e /var/lib/jitterd ]] && ok "/var/lib/jitterd purged again" || fail "/var/lib/jitterd left"

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
