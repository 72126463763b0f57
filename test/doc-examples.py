#!/usr/bin/env python3
"""Finds the command examples of the documentation, for test/e2e-doc-examples.sh.

The convention is described in docs/testing.md ("The examples in the documentation"):

  Markdown (README.md, docs/*.md): a fenced block of language sh (or bash, shell) holds commands,
  one per line, a line ending in a backslash going on; a block of language console is a
  transcript, its lines starting with "$ " commands and the lines after each the output as shown;
  a block of language ini whose first section is one of jitterd's is a configuration example.
  A block's tags follow the language in the fence: "```sh no-run=install".

  Manual pages: each .nf/.fi block of the EXAMPLES section, tagged by the roff comment
  '.\\" doc-example: TAGS' before it (run, no-run=REASON, needs=PROG, config).

Tags: no-run=REASON (REASON one of install, reboot, long, tuning): the block's syntax is checked,
its commands are not run; needs=PROG: run only where PROG is installed; config (manual pages):
a jitterd.conf example; run (manual pages): the default, said explicitly.

Usage: doc-examples.py --bash SOURCE_DIR   prints a bash script of calls, one per example:
         doc_run FILE LINE NEEDS PROGRAMS SUBCOMMANDS COMMAND SHOWN
         doc_syntax FILE LINE REASON BLOCK
         doc_dry FILE LINE PROGRAM ARG...     (for each jitterd/jitterctl/jitter-probe/tools
                                              command of a no-run block)
         doc_config FILE LINE TEXT
       doc-examples.py --list SOURCE_DIR   the same, for people
       doc-examples.py --links SOURCE_DIR  the relative links of the Markdown that lead nowhere
Exits 1 (after saying where) on a tag it does not know or a block it cannot read.
"""

import glob
import os
import re
import shlex
import sys

NO_RUN_REASONS = ("install", "reboot", "long", "tuning")
JITTERD_SECTIONS = ("probe", "history", "server", "export", "audit", "trace")
SHELL_LANGS = ("sh", "bash", "shell")
# jitterctl's global options that take a value: skipped to find the command.
JITTERCTL_VALUE_OPTIONS = ("--socket", "--timeout")


class Error(Exception):
    pass


class Example:
    def __init__(self, kind, path, line, text, tags, shown=None):
        self.kind = kind  # "run", "syntax" or "config"
        self.path = path
        self.line = line
        self.text = text
        self.tags = tags
        self.shown = shown


def parse_tags(words, where, man=False):
    """Returns {tag: value} for the words after a fence's language (or of a roff comment)."""
    tags = {}
    for w in words:
        key, _, value = w.partition("=")
        if key == "no-run":
            if value not in NO_RUN_REASONS:
                raise Error(f"{where}: no-run={value}: the reason must be one of "
                            f"{', '.join(NO_RUN_REASONS)}")
        elif key == "needs":
            if not re.fullmatch(r"[A-Za-z0-9_.+-]+(,[A-Za-z0-9_.+-]+)*", value):
                raise Error(f"{where}: needs={value}: expected program names")
        elif man and key in ("run", "config") and not value:
            pass
        else:
            raise Error(f"{where}: unknown tag {w!r}")
        tags[key] = value
    return tags


def shell_commands(lines, first_line):
    """Joins continuation lines; returns [(line, command)] without blank and comment lines."""
    out, cur, start = [], "", None
    for i, raw in enumerate(lines):
        line = raw.rstrip()
        if not cur and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if not cur:
            start = first_line + i
        if line.endswith("\\"):
            cur += line[:-1] + " "
            continue
        out.append((start, (cur + line).strip()))
        cur = ""
    if cur:
        out.append((start, cur.strip()))
    return out


def transcript(lines, first_line, where):
    """The commands of a console block, each with the output shown after it."""
    out = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("$ "):
            raise Error(f"{where}:{first_line + i}: a console block must start with '$ '")
        start = first_line + i
        cmd = line[2:]
        while cmd.endswith("\\") and i + 1 < len(lines):
            i += 1
            cmd = cmd[:-1] + " " + re.sub(r"^> ?", "", lines[i])
        i += 1
        shown = []
        while i < len(lines) and not lines[i].startswith("$ "):
            shown.append(lines[i])
            i += 1
        out.append((start, cmd.strip(), "\n".join(shown)))
    return out


def ini_is_jitterd(lines):
    for line in lines:
        m = re.match(r"\s*\[([^\]]+)\]", line)
        if m:
            return m.group(1).strip() in JITTERD_SECTIONS
    return False


def examples_of_block(path, line, lang, tags, body):
    where = f"{path}:{line}"
    if lang in SHELL_LANGS:
        kind = "syntax" if "no-run" in tags else "run"
        if kind == "syntax":
            return [Example("syntax", path, line, "\n".join(body), tags)]
        return [Example("run", path, n, c, tags) for n, c in shell_commands(body, line + 1)]
    if lang == "console":
        if "no-run" in tags:
            raise Error(f"{where}: a console block shows what ran: no-run is for sh blocks")
        return [Example("run", path, n, c, tags, shown)
                for n, c, shown in transcript(body, line + 1, path)]
    if lang == "ini" and ini_is_jitterd(body):
        return [Example("config", path, line, "\n".join(body) + "\n", tags)]
    return []


def markdown(path, rel):
    out = []
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^ {0,3}(`{3,})(.*)$", lines[i])
        if not m:
            i += 1
            continue
        fence, info = m.group(1), m.group(2).split()
        start = i + 1
        body = []
        i += 1
        while i < len(lines) and not re.match(r"^ {0,3}" + fence + r"\s*$", lines[i]):
            body.append(lines[i])
            i += 1
        if i >= len(lines):
            raise Error(f"{rel}:{start}: unterminated code block")
        i += 1
        lang = info[0] if info else ""
        tags = parse_tags(info[1:], f"{rel}:{start}") if lang in SHELL_LANGS + ("console",
                                                                                   "ini") else {}
        out += examples_of_block(rel, start, lang, tags, body)
    return out


ROFF_ESCAPES = [("\\(aq", "'"), ("\\(dq", '"'), ("\\(mc", "µ"), ("\\(en", "–"), ("\\(mu", "×"),
                ("\\-", "-"), ("\\~", " "), ("\\ ", " "), ("\\&", ""), ("\\e", "\\")]


def unroff(line):
    out, i = "", 0
    while i < len(line):
        for esc, rep in ROFF_ESCAPES:
            if line.startswith(esc, i):
                out += rep
                i += len(esc)
                break
        else:
            if line.startswith("\\f", i):  # font changes
                i += 3 if i + 2 < len(line) and line[i + 2] != "(" else 5
                continue
            out += line[i]
            i += 1
    return out


def manpage(path, rel):
    out = []
    lines = open(path, encoding="utf-8").read().split("\n")
    in_examples, tags, tag_line = False, None, None
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith(".SH"):
            in_examples = line.split(None, 1)[1:] == ["EXAMPLES"] or \
                line.strip() == '.SH "EXAMPLES"'
        elif in_examples and line.startswith('.\\" doc-example:'):
            tags = parse_tags(line.split(":", 1)[1].split(), f"{rel}:{i + 1}", man=True)
            tag_line = i + 1
        elif in_examples and line.strip() == ".nf":
            start = i + 1
            body = []
            i += 1
            while i < len(lines) and lines[i].strip() != ".fi":
                body.append(unroff(lines[i]))
                i += 1
            if tags is None:
                raise Error(f"{rel}:{start}: an EXAMPLES block without a "
                            "'.\\\" doc-example:' comment before it")
            t = dict(tags)
            if "config" in t:
                out.append(Example("config", rel, start, "\n".join(body) + "\n", t))
            else:
                t.pop("run", None)
                out += examples_of_block(rel, start, "sh", t, body)
            tags = None
        i += 1
    if tags is not None:
        raise Error(f"{rel}:{tag_line}: a doc-example comment with no block after it")
    return out


def program_of(word):
    """The program an example's command word names: jitterd, jitterctl, jitter-probe, a
    tools/ script, or None."""
    base = os.path.basename(word)
    if base in ("jitterd", "jitterctl", "jitter-probe"):
        return base
    if re.fullmatch(r"(\./)?tools/[A-Za-z0-9_/.-]+", word):
        return word[2:] if word.startswith("./") else word
    return None


def segments(command):
    """The simple commands of a command line, as argument lists without redirections."""
    text = re.sub(r"(?<![\w$])\d+(?=>)", "", command)  # "2>file" -> ">file"
    lex = shlex.shlex(text, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    lex.commenters = "#"
    words = list(lex)
    segs, cur, skip = [], [], False
    for w in words:
        if skip:
            skip = False
            continue
        if w in ("|", "||", "&&", ";", "&", "(", ")"):
            segs.append(cur)
            cur = []
        elif w in (">", ">>", "<", ">&", "&>", ">|"):
            skip = True
        else:
            cur.append(w)
    segs.append(cur)
    out = []
    for seg in segs:
        while seg and (re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", seg[0]) or
                       seg[0] in ("sudo", "exec", "time")):
            seg = seg[1:]
        if seg:
            out.append(seg)
    return out


def jitterctl_subcommands(command):
    subs = []
    for seg in segments(command):
        if program_of(seg[0]) != "jitterctl":
            continue
        args = seg[1:]
        while args and args[0].startswith("-"):
            args = args[2:] if args[0] in JITTERCTL_VALUE_OPTIONS else args[1:]
        if args:
            subs.append(args[0])
    return subs


def emit_bash(examples):
    q = shlex.quote
    for ex in examples:
        where = f"{q(ex.path)} {ex.line}"
        if ex.kind == "run":
            try:
                segments(ex.text)
            except ValueError as e:
                raise Error(f"{ex.path}:{ex.line}: {e}: {ex.text}")
            progs = " ".join(sorted({p for p in map(program_of, (seg[0] for seg in
                                                                 segments(ex.text))) if p}))
            subs = " ".join(jitterctl_subcommands(ex.text))
            print(f"doc_run {where} {q(ex.tags.get('needs', ''))} {q(progs)} {q(subs)} "
                  f"{q(ex.text)} {q(ex.shown or '')}")
        elif ex.kind == "config":
            print(f"doc_config {where} {q(ex.text)}")
        else:
            print(f"doc_syntax {where} {q(ex.tags['no-run'])} {q(ex.text)}")
            for _, cmd in shell_commands(ex.text.split("\n"), ex.line + 1):
                try:
                    segs = segments(cmd)
                except ValueError:
                    continue  # bash -n says where
                for seg in segs:
                    prog = program_of(seg[0])
                    if prog:
                        print(f"doc_dry {where} {q(prog)} " + " ".join(q(a) for a in seg[1:]))


def emit_list(examples):
    for ex in examples:
        tag = " ".join(f"{k}={v}" if v else k for k, v in ex.tags.items())
        print(f"{ex.path}:{ex.line}: {ex.kind}{' [' + tag + ']' if tag else ''}")
        for line in ex.text.rstrip("\n").split("\n"):
            print(f"    {line}")


def slug(heading):
    """GitHub's anchor of a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def check_links(files, root):
    """Says which relative links of the Markdown files lead nowhere (file or heading)."""
    def headings(path):
        out, fenced = set(), False
        for line in open(path, encoding="utf-8").read().split("\n"):
            if re.match(r"^ {0,3}```", line):
                fenced = not fenced
            elif not fenced and re.match(r"^#+\s", line):
                out.add(slug(line.lstrip("#")))
        return out

    bad = []
    for f in files:
        rel = os.path.relpath(f, root)
        for n, line in enumerate(open(f, encoding="utf-8").read().split("\n"), 1):
            for link in re.findall(r"\]\(([^)\s]+)\)", line):
                if re.match(r"[a-z]+:", link):
                    continue
                path, _, anchor = link.partition("#")
                target = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
                if not os.path.exists(target):
                    bad.append(f"{rel}:{n}: {link}: no such file")
                elif anchor and target.endswith(".md") and anchor not in headings(target):
                    bad.append(f"{rel}:{n}: {link}: no such heading")
    return bad


def main(argv):
    if len(argv) == 3 and argv[1] == "--links":
        root = argv[2]
        files = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs",
                                                                                  "*.md")))
        bad = check_links(files, root)
        for b in bad:
            print(b)
        return 1 if bad else 0
    if len(argv) != 3 or argv[1] not in ("--bash", "--list"):
        print(__doc__, file=sys.stderr)
        return 2
    root = argv[2]
    files = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs",
                                                                              "*.md")))
    pages = sorted(glob.glob(os.path.join(root, "systemd", "man", "*.[1-8]")) +
                   glob.glob(os.path.join(root, "tools", "jitterctl", "*.[1-8]")))
    examples = []
    try:
        for f in files:
            examples += markdown(f, os.path.relpath(f, root))
        for f in pages:
            examples += manpage(f, os.path.relpath(f, root))
        (emit_bash if argv[1] == "--bash" else emit_list)(examples)
    except (Error, ValueError) as e:
        print(f"doc-examples: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
