#!/usr/bin/env python3
"""Checks that the sources keep the layout of docs/design.md "How the code is laid out".

  check-layout.py SOURCE_DIR [BUILD_DIR]

1. No include cycle between modules. A module is a .c file with the .h of the same name;
   module A depends on module B when a file of A includes a header of B.
2. With BUILD_DIR: no call cycle between the object files of the libraries and programs
   (what `nm` says each object defines and uses), so a header cannot hide a call that goes
   back up the flow.
3. The layers: a library folder includes nothing, directly or through another header, from the layers above it (the engine at the
   root of probe/ nothing of its subfolders, of daemon/ or tools/; probe/host/, the readers of
   /proc, /sys and MSRs, nothing but the engine; probe/json/, the readers of JSON members,
   nothing of the project's; probe/varlink/ nothing of the engine, the
   formats, the analyses or the host; probe/analysis/ nothing of the service nor of the host,
   whose data it is handed; jitterctl nothing of the service, nor probe.h, which starts probes
   and whose ProbeSlot it sees only through the summaries).
4. struct Manager and struct ProbeCtl are defined in daemon/manager-private.h only, which only
   the manager's own files and white-box tests include.
5. No test includes a jitterctl command's .c file (jitterctl*.c): commands are tested by running
   jitterctl. A test may include a pure helper's .c (clocks.c) to reach its statics.
6. With BUILD_DIR: the jitterctl binary holds no manager, probe-starting or server code: no
   manager_*, probe_start or varlink_server_* symbol (nm).

Prints every violation and exits 1 if there is one."""

import os
import re
import subprocess
import sys

SOURCE_FOLDERS = ["probe", "daemon", "tools"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

# Folder (its own files, not its subfolders') -> what it must not include: folders by prefix,
# or "FOLDER/*" for the files directly in FOLDER (the service at the daemon/ root).
FORBIDDEN = {
    "probe": ["probe/json/", "probe/format/", "probe/varlink/", "probe/analysis/", "probe/host/",
              "daemon/", "tools/"],
    "probe/host": ["probe/json/", "probe/format/", "probe/varlink/", "probe/analysis/", "daemon/",
                   "tools/"],
    "probe/json": ["probe/*", "probe/format/", "probe/varlink/", "probe/analysis/", "probe/host/",
                   "daemon/", "tools/"],
    "probe/format": ["probe/varlink/", "probe/analysis/", "probe/host/", "daemon/", "tools/"],
    "probe/varlink": ["probe/*", "probe/format/", "probe/analysis/", "probe/host/", "daemon/",
                      "tools/"],
    "probe/analysis": ["probe/varlink/", "probe/host/", "daemon/", "tools/"],
    "tools/jitterctl": [
        "daemon/",  # the service, manager.h and varlink-server.h among it
        "probe/probe.h",
        "tools/benchmarks/",
    ],
}
# jitter-probe, the CLI, sits on top of the engine, its formats and the host's readers.
EXEMPT = {
    ("probe/jitter-probe.c", "probe/format/"),
    ("probe/jitter-probe.c", "probe/host/"),
}
# Header-only helpers that every layer may use (the clock, the cleanup attributes).
SHARED = {"probe/util.h"}
MANAGER_PRIVATE = "daemon/manager-private.h"
MANAGER_FILES = {"daemon/manager.c", "daemon/manager-trace.c", "daemon/manager-capture.c"}


def sources(root, folders, exts=(".c", ".h")):
    out = []
    for folder in folders:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, folder)):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("build"))
            for name in sorted(filenames):
                if name.endswith(exts):
                    out.append(os.path.relpath(os.path.join(dirpath, name), root))
    return out


def resolve(root, src, name, by_base):
    """The file an #include "name" in src means: next to src, else the one file with that
    base name (the include path lists the folders; base names are unique)."""
    here = os.path.normpath(os.path.join(os.path.dirname(src), name))
    if os.path.exists(os.path.join(root, here)):
        return here
    hits = by_base.get(os.path.basename(name), [])
    return hits[0] if len(hits) == 1 else None


def module(path):
    """X.c, X.h, X-private.h (the state X's own files share) and X-internal.h (what X's tests
    see beyond X.h) are one module."""
    stem = os.path.splitext(path)[0]
    for suffix in ("-private", "-internal"):
        if stem.endswith(suffix):
            return stem[: -len(suffix)]
    return stem


def find_cycles(graph):
    """Every elementary cycle found by a depth-first search, once per back edge."""
    cycles, state, stack = [], {}, []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    sys.setrecursionlimit(10000)
    for node in sorted(graph):
        if node not in state:
            visit(node)
    return cycles


def folder_of(path):
    return os.path.dirname(path)


def forbidden(src, dst):
    if dst in SHARED:
        return False
    for folder, rules in FORBIDDEN.items():
        if folder_of(src) != folder:
            continue
        for rule in rules:
            if (src, rule) in EXEMPT:
                continue
            if rule.endswith("/*"):
                # The files directly in that folder (the service at the daemon/ root).
                if folder_of(dst) == rule[:-2]:
                    return True
            elif dst.startswith(rule):
                return True
    return False


def check_includes(root, problems):
    files = sources(root, SOURCE_FOLDERS)
    by_base = {}
    for f in files:
        by_base.setdefault(os.path.basename(f), []).append(f)
    graph, includes = {}, {}
    for src in files:
        with open(os.path.join(root, src), encoding="utf-8") as fh:
            text = fh.read()
        graph.setdefault(module(src), set())
        includes[src] = []
        for name in INCLUDE.findall(text):
            dst = resolve(root, src, name, by_base)
            if dst is None:
                continue
            includes[src].append(dst)
            if module(dst) != module(src):
                graph[module(src)].add(module(dst))
    for src in files:
        # What src sees: its includes and, through them, theirs.
        seen, todo = {}, [(dst, []) for dst in includes[src]]
        while todo:
            dst, via = todo.pop()
            if dst in seen:
                continue
            seen[dst] = via
            todo.extend((nxt, via + [dst]) for nxt in includes.get(dst, ()))
        for dst, via in sorted(seen.items()):
            if forbidden(src, dst):
                through = f" through {' -> '.join(via)}" if via else ""
                problems.append(
                    f"layer: {src} includes {dst}{through}, which its layer must not see"
                )
    for cycle in find_cycles(graph):
        problems.append("include cycle: " + " -> ".join(cycle))
    return len(files)


def check_calls(build, problems):
    # The object files each target of probe/, daemon/ and tools/ links now, from the link
    # commands CMake wrote (a build directory may keep objects of files that moved).
    objects = []
    for dirpath, _, filenames in os.walk(build):
        rel = os.path.relpath(dirpath, build)
        if "link.txt" not in filenames or rel.split(os.sep)[0] not in SOURCE_FOLDERS:
            continue
        target_dir = os.path.dirname(os.path.dirname(dirpath))  # above CMakeFiles/T.dir
        with open(os.path.join(dirpath, "link.txt"), encoding="utf-8") as fh:
            for token in fh.read().split():
                token = token.strip('"')
                if token.endswith(".c.o"):
                    objects.append(os.path.normpath(os.path.join(target_dir, token)))
    defined, used = {}, {}
    for obj in objects:
        out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
        name = os.path.basename(obj)[: -len(".c.o")]
        # An executable's main() file and a library's file of the same name are different.
        unit = os.path.relpath(obj, build).split("/CMakeFiles/")[0] + "/" + name
        used.setdefault(unit, set())
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TDRB":
                defined.setdefault(parts[2], set()).add(unit)
            elif len(parts) == 2 and parts[0] == "U":
                used[unit].add(parts[1])
    graph = {}
    for unit, symbols in used.items():
        graph.setdefault(unit, set())
        for sym in symbols:
            for target in defined.get(sym, ()):
                # Link to the definition in the same target when there are two (the
                # executables that define main-side helpers).
                if target != unit and target.split("/")[:-1] == unit.split("/")[:-1]:
                    graph[unit].add(target)
                elif target != unit and len(defined[sym]) == 1:
                    graph[unit].add(target)
    for cycle in find_cycles(graph):
        problems.append("call cycle: " + " -> ".join(cycle))
    return len(objects)


# What the jitterctl binary must not hold (docs/design.md "How the code is laid out").
JITTERCTL = "tools/jitterctl/jitterctl"
SERVICE_SYMBOL = re.compile(r"^(manager_\w*|probe_start|varlink_server_\w*)$")


def check_jitterctl_symbols(build, problems):
    path = os.path.join(build, JITTERCTL)
    if not os.path.exists(path):
        problems.append(f"jitterctl: {path} is not built")
        return
    # Not check=True: nm fails on a stripped binary, which is reported rather than passed.
    out = subprocess.run(["nm", path], capture_output=True, text=True).stdout
    names = sorted({line.split()[-1] for line in out.splitlines() if line.strip()})
    if not names:
        problems.append(f"jitterctl: nm lists no symbols in {path} (stripped?): cannot check it")
    for name in (n for n in names if SERVICE_SYMBOL.match(n)):
        problems.append(f"jitterctl: the binary holds {name}, code of the service")


def check_manager_private(root, problems):
    files = sources(root, SOURCE_FOLDERS + ["test"])
    for src in files:
        with open(os.path.join(root, src), encoding="utf-8") as fh:
            text = fh.read()
        for struct in ("Manager", "ProbeCtl"):
            if re.search(r"^\s*struct\s+%s\s*\{" % struct, text, re.M) and src != MANAGER_PRIVATE:
                problems.append(f"opaque: struct {struct} is defined in {src}")
        if re.search(r'#\s*include\s+"(.*/)?manager-private\.h"', text) and not (
            src in MANAGER_FILES or src.startswith("test/")
        ):
            problems.append(f"opaque: {src} includes manager-private.h")
        if src.startswith("test/"):
            for name in INCLUDE.findall(text):
                if re.match(r"(.*/)?jitterctl[^/]*\.c$", name):
                    problems.append(f"test: {src} includes the jitterctl command source {name}")


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    root = sys.argv[1]
    problems = []
    n_files = check_includes(root, problems)
    n_objects = check_calls(sys.argv[2], problems) if len(sys.argv) == 3 else 0
    if len(sys.argv) == 3:
        check_jitterctl_symbols(sys.argv[2], problems)
    check_manager_private(root, problems)
    for p in problems:
        print(p)
    if n_files == 0 or (len(sys.argv) == 3 and n_objects == 0):
        print("check-layout: found no sources or no object files: wrong directory?")
        return 1
    print(f"check-layout: {n_files} source files, {n_objects} object files, "
          f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
