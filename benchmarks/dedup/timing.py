"""How long the duplicate check takes on long texts (hunt-b #5).

Usage: python benchmarks/dedup/timing.py [--sizes NEW:OLD ...]

``remember`` runs ``policy.relation`` (and so ``facts.compare``) against up to 5 similar
memories while it holds the vault's write lock; every other writer waits. This prints the
time of each on a log-like text of NEW characters next to one of OLD characters (the
first OLD characters of the same log, as in the tester's report), plus a near-copy at the
bound under which texts are compared fact by fact. No model is loaded: the cosine is
given (0.97).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

from memvault import facts, policy


def log(n: int) -> str:
    """``n`` characters of a log: numbered words, as in the report's repro."""
    words = " ".join(f"word{i} alpha{i % 97} beta{i % 89}" for i in range(n // 10))
    return ("Log dump: " + words)[:n]


def timed(call: Callable[..., object], *args: object) -> tuple[float, object]:
    """Seconds ``call(*args)`` takes with nothing cached, and what it returns."""
    facts.extract.cache_clear()
    start = time.perf_counter()
    result = call(*args)
    return time.perf_counter() - start, result


def size(spec: str) -> tuple[int, int]:
    new, old = spec.split(":")
    return int(new), int(old)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--sizes", nargs="*", type=size, default=[(150_000, 30_000)], help="NEW:OLD characters"
    )
    args = parser.parse_args(argv)
    bound = getattr(facts, "MAX_CHARS", None)
    print(f"facts.MAX_CHARS: {bound}")
    cases = [(log(n), log(o), f"{n:,} vs {o:,} chars") for n, o in args.sizes]
    if bound:
        near = log(bound)
        cases.append((near.replace("word7 ", "word8 "), near, f"{bound:,} vs {bound:,} chars"))
    for new, old, label in cases:
        seconds, verdict = timed(policy.relation, new, old, 0.97, True)
        print(f"policy.relation {label}: {seconds:.3f} s ({verdict})")
        seconds, _ = timed(facts.compare, new, old)
        print(f"facts.compare   {label}: {seconds:.3f} s")


if __name__ == "__main__":
    sys.exit(main())
