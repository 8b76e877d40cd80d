"""Concurrent writers on one vault while `memvault serve` (with its watcher) runs.

W writer processes (default 4) each make P new memories (default 250), alternating a CLI
`memvault add` and an MCP `remember` over their own `memvault serve` stdio server (each MCP
host runs its own server). After every U-th new memory (default 5) a writer also calls
`update_memory` on one of its memories: updates are counted apart and must add exactly one
commit each. Meanwhile one more `memvault serve` runs on the vault with its watcher, as a
person's editor session would, and must stay quiet (no commit of its own) and alive.

Printed: writes acknowledged and refused, lost writes (an acknowledged memory or update
missing from its file, git's HEAD tree or search), duplicate ids, git errors, new memories
and new commits against the expected (exactly W*P new memories and W*P + updates new
commits), commits by operation, errors logged by the servers, wall time.

Usage: python -m benchmarks.concurrency [--vault PATH] [--writers 4] [--per-writer 250]
       [--update-every 5] [--seed S] [--keep]
Exit status 1 on any discrepancy.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.campaign import (
    Markers,
    McpPipe,
    by_id,
    cli_search,
    commit_count,
    ensure_vault,
    fsck,
    git,
    head_files,
    index_search,
    last_line,
    log_errors,
    memory_text,
    parse_json,
    porcelain,
    random_type,
    run_cli,
    tree_files,
)

QUIET_SECONDS = 5.0  # the watcher commits after debounce_seconds (2 s) of quiet


# -- one writer process ---------------------------------------------------------------
def writer(args: argparse.Namespace) -> None:
    """Make ``per_writer`` memories (+ updates); one JSON line per operation on ``out``."""
    rng, markers = random.Random(args.seed), Markers()
    mine: list[dict[str, Any]] = []
    with open(args.out, "w", encoding="utf-8") as out, open(args.log, "wb") as log:
        pipe = McpPipe(args.vault, stderr=log)
        pipe.initialize()

        def record(entry: dict[str, Any]) -> None:
            out.write(json.dumps(entry) + "\n")
            out.flush()

        for n in range(args.per_writer):
            marker = markers.new()
            base = memory_text(rng, marker)
            made = cli_add(args.vault, base) if n % 2 == 0 else mcp_remember(pipe, base, rng)
            record({**made, "marker": marker})
            if made["ok"]:
                mine.append({"id": made["id"], "base": base, "markers": [marker]})
            if args.update_every and (n + 1) % args.update_every == 0 and mine:
                record(mcp_update(pipe, rng.choice(mine), markers.new()))
        pipe.close()


def cli_add(vault: Path, base: str) -> dict[str, Any]:
    code, out, err, took = run_cli(vault, "--json", "add", base, "--tags", "concurrency")
    data = parse_json(out) if code == 0 else None
    if isinstance(data, dict) and data.get("action") == "created":
        return {"op": "cli add", "ok": True, "id": data["id"], "s": took}
    why = last_line(err) if code != 0 else f"answered {out.strip()[:200]}"
    return {"op": "cli add", "ok": False, "error": f"exit {code}: {why}", "s": took}


def mcp_remember(pipe: McpPipe, base: str, rng: random.Random) -> dict[str, Any]:
    start = time.monotonic()
    arguments = {"content": base, "type": random_type(rng), "tags": ["concurrency"]}
    answer = pipe.call_tool("remember", arguments, timeout=300)
    took = time.monotonic() - start
    if answer.ok and answer.data.get("action") == "created":
        return {"op": "mcp remember", "ok": True, "id": answer.data["id"], "s": took}
    why = answer.error or f"answered {answer.data}"
    return {"op": "mcp remember", "ok": False, "error": why, "s": took}


def mcp_update(pipe: McpPipe, memory: dict[str, Any], marker: str) -> dict[str, Any]:
    start = time.monotonic()
    content = f"{memory['base']} Also {' '.join([*memory['markers'], marker])}."
    answer = pipe.call_tool("update_memory", {"id": memory["id"], "content": content}, 300)
    entry = {"op": "mcp update", "id": memory["id"], "marker": marker}
    entry["s"] = time.monotonic() - start
    if answer.ok and answer.data.get("action") == "updated":
        memory["markers"].append(marker)
        return {**entry, "ok": True}
    return {**entry, "ok": False, "error": answer.error or f"answered {answer.data}"}


# -- the coordinator --------------------------------------------------------------------
def run_writers(root: Path, args: argparse.Namespace, logs: Path) -> list[dict[str, Any]]:
    procs = []
    for i in range(args.writers):
        cmd = [sys.executable, "-m", "benchmarks.concurrency", "--vault", str(root)]
        cmd += ["--per-writer", str(args.per_writer), "--update-every", str(args.update_every)]
        cmd += ["--worker-out", str(logs / f"writer-{i}.jsonl")]
        cmd += ["--worker-log", str(logs / f"writer-{i}-serve.log")]
        cmd += ["--seed", str(args.seed * 100 + i)]
        with (logs / f"writer-{i}.err").open("wb") as err:
            procs.append(subprocess.Popen(cmd, stderr=err))
    for proc in procs:
        proc.wait()
    entries = []
    for i, proc in enumerate(procs):
        if proc.returncode != 0:
            tail = last_line((logs / f"writer-{i}.err").read_text(errors="replace"))
            entries.append({"op": "writer", "ok": False, "error": f"writer {i} died: {tail}"})
        path = logs / f"writer-{i}.jsonl"
        lines = path.read_text().splitlines() if path.exists() else []
        entries.extend({**json.loads(line), "writer": i} for line in lines)
    return entries


def wait_quiet(root: Path, timeout: float = 180) -> bool:
    """Until the tree is clean and HEAD has not moved for QUIET_SECONDS."""
    deadline, last, since = time.monotonic() + timeout, None, time.monotonic()
    while time.monotonic() < deadline:
        head = git(root, "rev-parse", "HEAD").stdout.strip()
        if head != last or porcelain(root):
            last, since = head, time.monotonic()
        elif time.monotonic() - since >= QUIET_SECONDS:
            return True
        time.sleep(0.5)
    return False


def person_edit(root: Path, timeout: float = 120) -> str:
    """Save a file by hand: the watching server's watcher must commit it ('' when it did)."""
    rel = f"inbox/person-edit-{Markers().new()}.md"
    (root / rel).write_text("---\ntype: note\n---\nA person typed this after the run.\n")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if git(root, "log", "--format=%s", "--", rel).stdout.strip():
            return ""
        time.sleep(0.5)
    return f"{rel} not committed after {timeout:.0f} s (is the watcher thread alive?)"


def commits_by_op(root: Path, count: int) -> Counter[str]:
    subjects = git(root, "log", "--format=%s", "-n", str(count)).stdout.splitlines()
    return Counter(s.split(":", 1)[0] for s in subjects)


class Check:
    def __init__(self) -> None:
        self.problems: Counter[str] = Counter()
        self.examples: dict[str, str] = {}

    def bad(self, kind: str, detail: str, count: int = 1) -> None:
        self.problems[kind] += count
        self.examples.setdefault(kind, detail)


def verify(root: Path, entries: list[dict[str, Any]], check: Check) -> dict[str, int]:
    """Lost writes and duplicate ids, read from the files, HEAD and the index."""
    files, head = by_id(tree_files(root)), by_id(head_files(root))
    markers: dict[str, list[str]] = {}
    returned: Counter[str] = Counter()
    for e in entries:
        if e.get("ok"):
            markers.setdefault(e["id"], []).append(e["marker"])
            returned[e["id"]] += e["op"] != "mcp update"
    for memory_id in (i for i, n in returned.items() if n > 1):
        check.bad("id returned by two creates", memory_id)
    for memory_id, found in ((i, f) for i, f in files.items() if len(f) > 1):
        check.bad("duplicate id in files", f"{memory_id}: {[p for p, _ in found]}")
    lost: set[str] = set()
    for memory_id, wanted in markers.items():
        for where, snapshot in (("file", files), ("git HEAD", head)):
            text = (snapshot.get(memory_id) or [("", "")])[0][1]
            for marker in wanted:
                if marker not in text:
                    lost.add(marker)
                    check.bad(f"lost write ({where})", f"{memory_id}: {marker} missing")
    lag = verify_search(root, markers, lost, check)
    return {"lost": len(lost), "index lag": lag, "files": len(files)}


def verify_search(root: Path, markers: dict[str, list[str]], lost: set[str], check: Check) -> int:
    """Every marker found by search (the index; else `memvault search`, which syncs first).
    Returns how many needed the sync (index lag); adds the missing ones to ``lost``."""
    hits = index_search(root, [m for ms in markers.values() for m in ms])
    owner = {m: i for i, ms in markers.items() for m in ms}
    lag = 0
    for marker, ids in hits.items():
        if owner[marker] in ids:
            continue
        found, error = cli_search(root, marker)
        if owner[marker] in found:
            lag += 1
            continue
        lost.add(marker)
        check.bad("lost write (search)", f"{owner[marker]}: {marker} not found {error}")
    return lag


def report(
    root: Path, args: argparse.Namespace, entries: list[dict[str, Any]], before: dict[str, Any]
) -> Check:
    check = Check()
    ok = [e for e in entries if e.get("ok")]
    creates = [e for e in ok if e["op"] != "mcp update"]
    updates = [e for e in ok if e["op"] == "mcp update"]
    for e in entries:
        if not e.get("ok"):
            kind = "git error" if re.search(r"\bgit\b|lock", e["error"], re.I) else "error"
            check.bad(f"{kind} ({e['op']})", e["error"])
    found = verify(root, entries, check)
    new_memories = found["files"] - before["files"]
    new_commits = commit_count(root) - before["commits"]
    expected = args.writers * args.per_writer
    if new_memories != expected:
        check.bad("new memories != expected", f"{new_memories} != {expected}")
    if new_commits != len(creates) + len(updates):
        check.bad("new commits != acknowledged writes", f"{new_commits}")
    ok_fsck, fsck_out = fsck(root)
    if not ok_fsck:
        check.bad("git fsck failed", last_line(fsck_out))
    if dirty := porcelain(root):
        check.bad("uncommitted at the end", f"{len(dirty)}: {dirty[0]}")
    by_op = commits_by_op(root, new_commits)
    print(
        f"writers: {args.writers} x {args.per_writer} new memories, update every "
        f"{args.update_every}"
    )
    per_op = Counter(e["op"] for e in creates)
    print(f"acknowledged: {len(creates)} creates ({dict(per_op)}), {len(updates)} updates")
    print(f"refused or failed: {len(entries) - len(ok)}")
    print(f"lost writes: {found['lost']}  (acknowledged, then missing from file, HEAD or search)")
    print(f"missing from the index until `memvault search` synced: {found['index lag']}")
    dups = sum(n for k, n in check.problems.items() if k.startswith(("id ", "duplicate id")))
    print(f"duplicate ids: {dups}")
    git_errors = sum(n for k, n in check.problems.items() if k.startswith("git"))
    print(f"git errors: {git_errors}")
    print(f"new memories: {new_memories} (expected {expected})")
    print(
        f"new commits: {new_commits} (expected {len(creates)} + {len(updates)} updates "
        f"= {len(creates) + len(updates)}); by operation: {dict(by_op)}"
    )
    return check


def coordinate(args: argparse.Namespace) -> int:
    seed = args.seed
    tmp = Path(tempfile.mkdtemp(prefix="memvault-concurrency-"))
    root = (args.vault or tmp / "vault").resolve()
    ensure_vault(root)
    logs = tmp / "logs"
    logs.mkdir()
    print(f"vault {root}, seed {seed}; logs in {logs}", flush=True)
    before = {"commits": commit_count(root), "files": len(by_id(tree_files(root)))}
    start = time.monotonic()
    with (logs / "watching-serve.log").open("wb") as log:
        watching = McpPipe(root, stderr=log)
        watching.initialize()
        entries = run_writers(root, args, logs)
        writing = time.monotonic() - start
        quiet = wait_quiet(root)
        check = report(root, args, entries, before)
        edit = person_edit(root)
        alive = watching.proc.poll() is None
        code = watching.close()
    print(f"a person's edit after the run, committed by the watching server: {edit or 'yes'}")
    if edit:
        check.bad("watcher missed a person's edit", edit)
    if not quiet:
        check.bad("vault never went quiet", "HEAD kept moving or the tree stayed dirty 180 s")
    if not alive:
        check.bad("watching server died", f"exit {watching.proc.returncode}")
    if code not in (0, None):
        check.bad("watching server exit status", str(code))
    errors = log_errors(sorted(logs.glob("*.log")))
    if errors:
        check.bad("errors logged by servers", next(iter(errors)), sum(errors.values()))
    warnings = sum(p.read_text(errors="replace").count("Warning:") for p in logs.glob("*.log"))
    print(f"servers' stderr: {sum(errors.values())} error(s), {warnings} warning line(s)")
    for line, count in errors.most_common():
        print(f"  {count} x {line}")
    slowest = max((e.get("s", 0.0) for e in entries), default=0.0)
    print(
        f"wall time: {time.monotonic() - start:.0f} s (writers {writing:.0f} s); "
        f"slowest write {slowest:.1f} s"
    )
    print("discrepancies:" + ("" if check.problems else " none"))
    for kind, count in check.problems.most_common():
        print(f"  {kind}: {count}\n    first: {check.examples[kind]}")
    if check.problems or args.keep or args.vault:
        print(f"vault kept at {root}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if check.problems else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vault", type=Path, default=None)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--per-writer", type=int, default=250)
    parser.add_argument("--update-every", type=int, default=5, help="0: no updates.")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--keep", action="store_true", help="Keep the temporary vault.")
    parser.add_argument("--worker-out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--worker-log", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.seed is None:
        args.seed = random.randrange(1 << 20)
    if args.worker_out:
        args.out, args.log = args.worker_out, args.worker_log
        writer(args)
        return
    raise SystemExit(coordinate(args))


if __name__ == "__main__":
    main()
