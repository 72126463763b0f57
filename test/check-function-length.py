#!/usr/bin/env python3
"""Lists the functions of the project's C and Go sources longer than the limit (80 lines, from
the line of the name to the closing brace) that do not say why in a comment containing
"long because" (in any case), either in the comment just above the function or inside its body.

  check-function-length.py SOURCE_DIR [LIMIT]

The sources are written in the repository's style: in C (clang-format) a function's opening
brace and closing brace are alone on their lines at column 0; in Go (gofmt) a function starts
with "func" at column 0 and its closing brace is alone on its line at column 0. Exits 1 when it
lists one."""

import os
import re
import sys

FOLDERS = ["probe", "daemon", "tools", "test"]
REASON = "long because"
NAME = re.compile(r"^[A-Za-z_][^;{}=]*?\b([A-Za-z_]\w*)\s*\(")
GO_NAME = re.compile(r"^func\s+(?:\([^)]*\)\s*)?(\w+)")


def functions(lines):
    """(name, first line index, last line index) of each function definition."""
    out = []
    i = 0
    while i < len(lines):
        if lines[i] == "{" and i > 0:
            # The signature: the lines above the brace back to one at column 0 that names it.
            j = i - 1
            while j > 0 and lines[j][:1] in (" ", "\t") and lines[j].strip():
                j -= 1
            m = NAME.match(lines[j])
            end = i + 1
            while end < len(lines) and lines[end] != "}":
                end += 1
            if m and not lines[j].startswith(("struct", "typedef", "enum", "union", "#")):
                out.append((m.group(1), j, end))
            i = end
        i += 1
    return out


def go_functions(lines):
    """(name, first line index, last line index) of each Go function and method: from its
    "func" line to the first "}" alone at column 0 after it."""
    out = []
    i = 0
    while i < len(lines):
        m = GO_NAME.match(lines[i])
        if m:
            end = i
            if not lines[i].rstrip().endswith("}"):  # not all on one line
                end = i + 1
                while end < len(lines) and lines[end] != "}":
                    end += 1
            out.append((m.group(1), i, end))
            i = end
        i += 1
    return out


# The functions of a source file, by its extension.
PARSERS = {".c": functions, ".go": go_functions}


def comment_above(lines, first):
    """The comment block that ends right above line @first."""
    k = first - 1
    text = []
    while k >= 0 and lines[k].strip().startswith(("/*", "*", "//")) or (
        k >= 0 and lines[k].rstrip().endswith("*/")
    ):
        text.append(lines[k])
        k -= 1
    return "\n".join(reversed(text))


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    root = sys.argv[1]
    limit = int(sys.argv[2]) if len(sys.argv) == 3 else 80
    found, checked = [], 0
    for folder in FOLDERS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, folder)):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("build"))
            for name in sorted(filenames):
                parse = PARSERS.get(os.path.splitext(name)[1])
                if parse is None:
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8") as fh:
                    lines = fh.read().split("\n")
                for func, first, last in parse(lines):
                    checked += 1
                    length = last - first + 1
                    body = "\n".join(lines[first:last + 1])
                    if length > limit and REASON not in (comment_above(lines, first) + body).lower():
                        found.append((length, os.path.relpath(path, root), first + 1, func))
    for length, path, line, func in sorted(found, reverse=True):
        print(f"{path}:{line}: {func}() is {length} lines, over {limit}, and does not say it is "
              f"\"{REASON}\"")
    if checked == 0:
        print("check-function-length: found no functions: wrong directory?")
        return 1
    print(f"check-function-length: {checked} functions, {len(found)} over {limit} lines "
          "without a reason")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
