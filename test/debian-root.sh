# shellcheck shell=bash
# A minimal Debian 12 root file system for the tests that install or build in one (e2e-boot,
# e2e-setup): made once with debootstrap --variant=minbase from the mirror the host's apt
# uses, cached in $JITTERD_TEST_CACHE (default /var/cache/jitterd-test), and copied for each
# run. Sourced by those tests; needs root, debootstrap, wget, flock and systemd-nspawn.
# Env: JITTERD_TEST_CACHE, JITTERD_TEST_MIRROR (optional).

DEBIAN_SUITE=bookworm
DEBIAN_CACHE=${JITTERD_TEST_CACHE:-/var/cache/jitterd-test}
DEBIAN_ROOTFS=$DEBIAN_CACHE/$DEBIAN_SUITE-rootfs
# What the tree holds besides minbase; a change of this list makes a new tree.
DEBIAN_INCLUDE=systemd,systemd-sysv,dbus,libsystemd0,libjansson4,libcap2,libtracefs1,libtraceevent1,procps
DEBIAN_STAMP="$DEBIAN_SUITE $DEBIAN_INCLUDE v2"
# debootstrap of this list takes about a minute from a near mirror.
DEBOOTSTRAP_TIMEOUT=300
# Another run holds the cache's lock while it makes the tree (bounded above) and copies it.
DEBIAN_LOCK_TIMEOUT=$((DEBOOTSTRAP_TIMEOUT + 60))

# The Debian mirror the host's apt is configured with, for the suite's main component.
debian_mirror() {
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        [[ -f $f ]] || continue
        awk -v suite="$DEBIAN_SUITE" '
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
        sed -nE "s/^deb( \[[^]]*\])? ([^ ]+) $DEBIAN_SUITE( .*)? main( .*)?\$/\2/p" \
            /etc/apt/sources.list
    fi
}

# debian_mirror_reachable MIRROR: whether the mirror answers for the suite.
debian_mirror_reachable() {
    wget -q -T 30 -t 2 -O /dev/null "${1%/}/dists/$DEBIAN_SUITE/InRelease"
}

# debian_root_copy DEST: copies the cached root file system to DEST (which must not exist),
# making it first when there is none. Exits 77 (skipped) when there is no cached tree and no
# reachable mirror to make one, 1 when debootstrap fails.
debian_root_copy() {
    local dest=$1 mirror keyring=()
    mkdir -p "$DEBIAN_CACHE"
    exec 9>"$DEBIAN_CACHE/lock"
    if ! flock -w "$DEBIAN_LOCK_TIMEOUT" 9; then
        echo "FAIL: $DEBIAN_CACHE/lock stayed locked for $DEBIAN_LOCK_TIMEOUT s: another run" \
             "making or copying the Debian root hangs (see fuser -v $DEBIAN_CACHE/lock)" >&2
        exit 1
    fi
    if [[ ! -f $DEBIAN_ROOTFS/.jitterd-rootfs ||
          $(cat "$DEBIAN_ROOTFS/.jitterd-rootfs") != "$DEBIAN_STAMP" ]]; then
        mirror=${JITTERD_TEST_MIRROR:-$(debian_mirror | head -n 1)}
        if [[ -z $mirror ]]; then
            echo "skipped: Debian root: no cached root file system in $DEBIAN_ROOTFS," \
                 "and no Debian $DEBIAN_SUITE mirror in the host's apt sources" \
                 "(set JITTERD_TEST_MIRROR)" \
                 "to debootstrap one from"
            exit 77
        fi
        mirror=${mirror%/}
        if ! debian_mirror_reachable "$mirror"; then
            echo "skipped: Debian root: no cached root file system in $DEBIAN_ROOTFS," \
                 "and debootstrap cannot reach the package mirror $mirror to make one"
            exit 77
        fi
        echo "debootstrap $DEBIAN_SUITE from $mirror into $DEBIAN_ROOTFS (only the first time)"
        rm -rf "$DEBIAN_ROOTFS" "$DEBIAN_ROOTFS.new"
        [[ -f /usr/share/keyrings/debian-archive-keyring.gpg ]] &&
            keyring=(--keyring=/usr/share/keyrings/debian-archive-keyring.gpg)
        if ! timeout -k 10 "$DEBOOTSTRAP_TIMEOUT" debootstrap --variant=minbase \
                --include="$DEBIAN_INCLUDE" "${keyring[@]}" "$DEBIAN_SUITE" \
                "$DEBIAN_ROOTFS.new" "$mirror" >"$DEBIAN_CACHE/debootstrap.log" 2>&1; then
            tail -n 30 "$DEBIAN_CACHE/debootstrap.log" >&2
            rm -rf "$DEBIAN_ROOTFS.new"
            echo "FAIL: debootstrap failed or took more than $DEBOOTSTRAP_TIMEOUT s" \
                 "(log: $DEBIAN_CACHE/debootstrap.log)" >&2
            exit 1
        fi
        # An empty machine-id: each boot gets a transient one. (A missing one would make the
        # boot a "first boot", on which systemd applies the presets and enables every unit.)
        : >"$DEBIAN_ROOTFS.new/etc/machine-id"
        rm -rf "$DEBIAN_ROOTFS.new/var/cache/apt/archives/"*.deb
        echo "$DEBIAN_STAMP" >"$DEBIAN_ROOTFS.new/.jitterd-rootfs"
        mv "$DEBIAN_ROOTFS.new" "$DEBIAN_ROOTFS"
    fi
    cp -a --reflink=auto "$DEBIAN_ROOTFS" "$dest"
    flock -u 9
    exec 9>&-
}

die() {
    echo "FAIL: $*" >&2
    exit 1
}

# debian_root_start NAME [TOOL...]: checks that this runs as root with the tools it needs, then
# makes the work directory $work (/var/tmp/jitterd-NAME.*, removed on exit) with a copy of the
# root file system in $root.
debian_root_start() {
    local name=$1 tool
    shift
    [[ $(id -u) -eq 0 ]] || die "must run as root (debootstrap, chroot, systemd-nspawn)"
    for tool in debootstrap wget flock systemd-nspawn "$@"; do
        command -v "$tool" >/dev/null || die "$tool is missing (tools/dev/deps test)"
    done
    work=$(mktemp -d "/var/tmp/jitterd-$name.XXXXXX")
    # shellcheck disable=SC2064 # $work is fixed now
    trap "rm -rf '$work'" EXIT
    trap 'exit 143' TERM INT
    root=$work/root
    debian_root_copy "$root"
}
