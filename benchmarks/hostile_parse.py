"""Seconds to parse hostile lines: does any parser go super-linear on text a person can write?

Every regex of the body's parsers (note.py: links, tags, headings, titles, snippets, an
Excalidraw drawing's reader text; text.py: tokens; facts.py: the fact extractor) runs on
one line of each hostile pattern (``[[[[``, ``<!--<!--``, ``# a`` then a run of spaces...)
at 10k, 100k and 1M characters (a note under ``max_file_bytes``). A linear parser takes
about ten times longer at each size; a quadratic one a hundred. Each (parser, pattern) runs
in a child process stopped after CAP seconds, so one runaway regex cannot hang the script.

Usage: python -m benchmarks.hostile_parse [CAP] [SIZES...]
    e.g. python -m benchmarks.hostile_parse 20 10000 100000 1000000
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable

from memvault import facts, note, text

PATTERNS: dict[str, Callable[[int], str]] = {
    "[": lambda n: "[" * n,
    "]": lambda n: "]" * n,
    "[]": lambda n: "[]" * (n // 2),
    "(": lambda n: "(" * n,
    "<": lambda n: "<" * n,
    "%": lambda n: "%" * n,
    "`": lambda n: "`" * n,
    "`` then ` a": lambda n: "``" + "` a" * (n // 3),
    "#": lambda n: "#" * n,
    "~": lambda n: "~" * n,
    "\\": lambda n: "\\" * n,
    "spaces": lambda n: "a" + " " * n + "b",
    "# a, spaces, b": lambda n: "# a" + " " * n + "b",
    "# a, #s and spaces": lambda n: "# a" + " #" * (n // 2) + "b",
    "![](": lambda n: "![](" * (n // 4),
    "[a](": lambda n: "[a](" * (n // 4),
    "[ then [x]s": lambda n: ("[" + "[x]" * 100) * (n // 301),
    "`a``a```a...": lambda n: "".join("`" * k + "a" for k in range(1, int((2 * n) ** 0.5))),
    "[a](b(": lambda n: "[a](" + "b(" * (n // 2),
    "[a](<": lambda n: "[a](<" * (n // 5),
    '[a](b "': lambda n: '[a](b "' * (n // 7),
    "[[a|": lambda n: "[[a|" * (n // 4),
    "[[a#": lambda n: "[[a#" * (n // 4),
    "<!--": lambda n: "<!--" * (n // 4),
    "%%a%": lambda n: "%%" + "a%" * (n // 2),
    "```\\n": lambda n: "```\n" * (n // 4),
    "#a ": lambda n: "#a " * (n // 3),
    "a-": lambda n: "a-" * (n // 2),
    "1.": lambda n: "1." * (n // 2),
    "1 ": lambda n: "1 " * (n // 2),
    "$": lambda n: "$" * n,
    "一": lambda n: "一" * n,
    "五点": lambda n: "五点" * (n // 2),
    "Ab ": lambda n: "Ab " * (n // 3),
    "a\\n (many lines)": lambda n: "a\n" * (n // 2),
}

PARSERS: dict[str, Callable[[str], object]] = {
    "links": note.links,
    "inline_tags": note.inline_tags,
    "heading": note.heading,
    "title_from": note.title_from,
    "snippet": lambda s: note.snippet(s, "alpha beta gamma"),
    "reader_text": lambda s: note.reader_text(s, {note.EXCALIDRAW_KEY: "parsed"}),
    "tokens": text.tokens,
    "facts": facts.extract.__wrapped__,
}


def one(parser: str, pattern: str, sizes: list[int]) -> None:
    """In the child: time ``parser`` on ``pattern`` at each size, printing as it goes."""
    for size in sizes:
        line = PATTERNS[pattern](size)
        start = time.perf_counter()
        PARSERS[parser](line)
        print(f"{size} {time.perf_counter() - start:.3f}", flush=True)


def measure(parser: str, pattern: str, sizes: list[int], cap: float) -> list[str]:
    """Seconds at each size; ``>CAP`` for the first size not done within CAP seconds."""
    args = [sys.executable, "-m", "benchmarks.hostile_parse", "--one", parser, pattern]
    child = subprocess.Popen([*args, *map(str, sizes)], stdout=subprocess.PIPE, text=True)
    try:
        out, _ = child.communicate(timeout=cap)
    except subprocess.TimeoutExpired:
        child.kill()
        out, _ = child.communicate()
    done = [line.split()[1] for line in out.splitlines()]
    if len(done) == len(sizes):
        return done
    return [*done, f">{cap:g}", *["-"] * (len(sizes) - len(done) - 1)]


def main(argv: list[str]) -> None:
    if argv[:1] == ["--one"]:
        one(argv[1], argv[2], [int(s) for s in argv[3:]])
        return
    cap = float(argv[0]) if argv else 20.0
    sizes = [int(s) for s in argv[1:]] or [10_000, 100_000, 1_000_000]
    print(f"seconds per parse (a child process each, stopped after {cap:g} s)")
    print(f"{'parser':<12} {'pattern':<20} " + " ".join(f"{s:>9}" for s in sizes))
    slow = []
    for parser in PARSERS:
        for pattern in PATTERNS:
            figures = measure(parser, pattern, sizes, cap)
            print(f"{parser:<12} {pattern!r:<20} " + " ".join(f"{f:>9}" for f in figures))
            if _super_linear(sizes, figures):
                slow.append(f"{parser} on {pattern!r}")
    print("super-linear (or stopped):", ", ".join(slow) or "none")


def _super_linear(sizes: list[int], figures: list[str]) -> bool:
    """Whether a run was stopped, or grew over three times faster than its input (on a
    machine shared with others a linear parser's figures wobble by two or so)."""
    if any(f.startswith(">") for f in figures):
        return True
    seconds = [max(float(f), 0.01) for f in figures]
    steps = zip(sizes, sizes[1:], seconds, seconds[1:], strict=False)
    return any(t2 / t1 > 3 * n2 / n1 for n1, n2, t1, t2 in steps if t2 > 0.5)


if __name__ == "__main__":
    main(sys.argv[1:])
