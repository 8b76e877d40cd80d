"""kill -9 at random moments of memvault writes; after each kill, check nothing was lost.

Each trial starts one writer in its own session and kills it: a CLI `memvault add` or
`memvault forget`, or a `memvault serve` over stdio in the middle of a `remember` or
`update_memory` call. Most kills hit the whole process group (git children die too), some
only the writer (its git children finish orphaned). Some trials wait for a git child to
exist (any git, `git add` or `git commit`) and kill a few milliseconds later; the others
kill after a random delay spread over a whole write (calibrated at the start).

After every kill, without any manual help:
  1. `git fsck --no-progress` must pass (else: a corrupt repo);
  2. the working tree state and any git lock files left are recorded;
  3. the next write (`memvault add` with a unique marker) must exit 0 within 30 s
     (else: a stuck vault; the script then removes the git locks itself to go on);
  4. every acknowledged write so far (the client saw success before the kill; the probe
     writes too) must be in its file, in git's HEAD tree and found by search.

Usage: python -m benchmarks.crash [N] [--vault PATH] [--seed S] [--keep]
N: trials (default 200). PATH: a vault to use (created with `memvault init` when missing);
default a temporary one, kept when a check failed. Exit status 1 when anything failed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.campaign import (
    Markers,
    McpPipe,
    ServerGone,
    by_id,
    cli_search,
    ensure_vault,
    fsck,
    git_children,
    head_files,
    index_search,
    kill_group,
    kill_live_groups,
    last_line,
    load_average,
    lock_files,
    log_errors,
    memory_status,
    memory_text,
    memvault_cmd,
    parse_json,
    porcelain,
    random_type,
    run_cli,
    spawn,
    tool_answer,
    tree_files,
    wait_group_gone,
)

KINDS = {"cli-add": 35, "cli-forget": 10, "mcp-remember": 35, "mcp-update": 20}
GIT_TARGETS = ["any", "add", "commit", "commit"]
LAG = "index lag"


@dataclass
class Tracked:
    """An acknowledged memory and what the client was told about it."""

    id: str
    base: str
    markers: list[str]
    archived: bool = False
    uncertain: bool = False  # an unacknowledged update or forget may have landed


@dataclass
class Plan:
    mode: str  # "delay" | "git"
    delay: float  # seconds after the request (delay) or after git appeared (git)
    target: str  # git subcommand to wait for (git mode)
    scope: str  # "group" | "writer"

    def label(self) -> str:
        when = f"{self.delay * 1000:.0f}ms"
        what = f"after {when}" if self.mode == "delay" else f"git {self.target} +{when}"
        return f"{what} {self.scope}"


@dataclass
class Trial:
    n: int
    kind: str
    plan: Plan | None = None
    killed: bool = False
    git_at_kill: list[str] = field(default_factory=list)
    acked: int = 0
    sent: int = 0
    dirty: int = 0
    locks: list[str] = field(default_factory=list)
    next_write: str = ""
    notes: list[str] = field(default_factory=list)

    def line(self) -> str:
        kill = self.plan.label() if self.plan else "-"
        state = "killed" if self.killed else "finished first"
        git_part = f" git@kill={','.join(self.git_at_kill)}" if self.git_at_kill else ""
        locks = f" locks={','.join(self.locks)}" if self.locks else ""
        notes = f"  !! {'; '.join(self.notes)}" if self.notes else ""
        return (
            f"{self.n:>4} {self.kind:<12} {kill:<24} {state:<14}{git_part} "
            f"acked {self.acked}/{self.sent} dirty={self.dirty}{locks} "
            f"next write {self.next_write}{notes}"
        )


class Campaign:
    def __init__(self, root: Path, seed: int, logs: Path, bound: float = 30.0) -> None:
        self.root = root
        self.bound = bound  # seconds the next write may take
        self.hung_after = max(300.0, bound)
        self.rng = random.Random(seed)
        self.logs = logs
        self.markers = Markers()
        self.memories: dict[str, Tracked] = {}
        self.writes: dict[str, str] = {}  # acknowledged write key -> memory id
        self.lost: dict[str, str] = {}  # write key -> how it was found missing
        self.failures: Counter[str] = Counter()
        self.examples: dict[str, str] = {}
        self.counts: Counter[str] = Counter()
        self.reported_dups: set[str] = set()
        self.cli_seconds: list[float] = []
        self.mcp_seconds: list[float] = []

    # -- bookkeeping ------------------------------------------------------------------
    def fail(self, kind: str, detail: str, trial: Trial | None = None) -> None:
        self.failures[kind] += 1
        self.examples.setdefault(kind, f"trial {trial.n if trial else '-'}: {detail}")
        if trial:
            trial.notes.append(f"{kind}: {detail[:200]}")

    def created(self, memory_id: str, base: str, marker: str) -> None:
        self.memories[memory_id] = Tracked(memory_id, base, [marker])
        self.writes[marker] = memory_id
        self.counts["acked creates"] += 1

    def updated(self, memory_id: str, marker: str) -> None:
        memory = self.memories[memory_id]
        memory.markers.append(marker)
        memory.uncertain = False
        self.writes[marker] = memory_id
        self.counts["acked updates"] += 1

    def archived(self, memory_id: str) -> None:
        memory = self.memories[memory_id]
        memory.archived, memory.uncertain = True, False
        self.writes[f"archive:{memory_id}"] = memory_id
        self.counts["acked archives"] += 1

    def active(self) -> list[Tracked]:
        return [m for m in self.memories.values() if not m.archived and not m.uncertain]

    # -- plans and kills --------------------------------------------------------------
    def plan(self, typical: float) -> Plan:
        scope = "group" if self.rng.random() < 0.85 else "writer"
        if self.rng.random() < 0.4:
            return Plan("git", self.rng.uniform(0, 0.012), self.rng.choice(GIT_TARGETS), scope)
        return Plan("delay", self.rng.uniform(0.05, 1.3) * typical, "", scope)

    def kill_per_plan(
        self, proc: subprocess.Popen[Any], plan: Plan, trial: Trial, done: Callable[[], bool]
    ) -> None:
        """Kill per ``plan`` unless the write is done first; wait for the group to go."""
        deadline = time.monotonic() + (plan.delay if plan.mode == "delay" else 120)
        while not done() and time.monotonic() < deadline:
            if plan.mode == "git":
                subs = git_children(proc.pid)
                if subs and (plan.target == "any" or plan.target in subs):
                    time.sleep(plan.delay)
                    break
            time.sleep(0.001)
        if done():
            return
        trial.git_at_kill = git_children(proc.pid)
        if plan.scope == "group":
            kill_group(proc.pid)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        trial.killed = proc.returncode == -signal.SIGKILL
        if not trial.killed:
            trial.git_at_kill = []
        if not wait_group_gone(proc.pid):
            trial.notes.append("orphans of the writer had to be killed after 120 s")

    # -- CLI trials -------------------------------------------------------------------
    def cli_trial(self, trial: Trial) -> None:
        if trial.kind == "cli-forget":
            target = self.rng.choice(self.active())
            args = ["forget", target.id, "--reason", "crash trial"]
        else:
            target, marker = None, self.markers.new()
            base = memory_text(self.rng, marker)
            args = ["add", base, "--type", random_type(self.rng), "--tags", "crash"]
        proc = spawn(
            memvault_cmd(self.root, "--json", *args),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        trial.sent = 1
        trial.plan = self.plan(statistics.median(self.cli_seconds))
        self.kill_per_plan(proc, trial.plan, trial, lambda: proc.poll() is not None)
        out, err = proc.communicate()
        wait_group_gone(proc.pid)
        data = parse_json(out)
        if not isinstance(data, dict) or "id" not in data:
            if not trial.killed:
                self.fail("write-error", f"{' '.join(args[:2])}: {last_line(err)}", trial)
            elif target:
                target.uncertain = True
            return
        trial.acked = 1  # success printed (exit 0, or killed while exiting)
        if target:
            self.archived(target.id)
        elif data.get("action") == "created":
            self.created(data["id"], base, marker)

    # -- MCP trials -------------------------------------------------------------------
    def mcp_request(self, kind: str) -> tuple[str, dict[str, Any], tuple[Any, ...]]:
        """(tool, arguments, what to record on success) for a remember or an update."""
        candidates = self.active()
        marker = self.markers.new()
        if kind == "mcp-update" and candidates:
            target = self.rng.choice(candidates)
            content = f"{target.base} Also {' '.join([*target.markers, marker])}."
            return "update_memory", {"id": target.id, "content": content}, (target, marker)
        base = memory_text(self.rng, marker)
        arguments = {"content": base, "type": random_type(self.rng), "tags": ["crash"]}
        return "remember", arguments, (None, marker, base)

    def record_mcp(self, answer: Any, record: tuple[Any, ...], trial: Trial) -> None:
        target, marker = record[0], record[1]
        if target is not None:
            if answer.ok and answer.data.get("action") == "updated":
                trial.acked += 1
                self.updated(target.id, marker)
        elif answer.ok and answer.data.get("action") == "created":
            trial.acked += 1
            self.created(answer.data["id"], record[2], marker)
        elif answer.ok:
            self.fail("write-refused", f"remember answered {answer.data}", trial)

    def mcp_trial(self, trial: Trial) -> None:
        with (self.logs / f"serve-{trial.n}.log").open("wb") as stderr:
            pipe = McpPipe(self.root, stderr=stderr)
            try:
                pipe.initialize(timeout=120)
                for _ in range(self.rng.randint(0, 2)):
                    tool, arguments, record = self.mcp_request(self.rng.choice(list(KINDS)[2:]))
                    start = time.monotonic()
                    answer = pipe.call_tool(tool, arguments)
                    self.mcp_seconds.append(time.monotonic() - start)
                    trial.sent += 1
                    if not answer.ok:
                        self.fail("write-error", f"{tool}: {answer.error}", trial)
                    self.record_mcp(answer, record, trial)
                tool, arguments, record = self.mcp_request(trial.kind)
                request = pipe.send_tool(tool, arguments)
                trial.sent += 1
            except (ServerGone, TimeoutError) as exc:
                self.fail("server-error", f"{exc}; stderr: {self._tail(trial)}", trial)
                kill_group(pipe.proc.pid)
                pipe.proc.wait()
                return
            trial.plan = self.plan(statistics.median(self.mcp_seconds))
            self.kill_per_plan(pipe.proc, trial.plan, trial, lambda: pipe.answered(request))
            if not trial.killed:  # answered before the kill: end the idle server the same way
                kill_group(pipe.proc.pid)
                pipe.proc.wait()
                wait_group_gone(pipe.proc.pid)
            if not pipe.drain():
                trial.notes.append("server stdout still open 30 s after the kill")
        if pipe.noise:
            self.fail("stdout-noise", pipe.noise[0], trial)
        if request in pipe.responses:
            self.record_mcp(tool_answer(pipe.responses[request]), record, trial)
        elif record[0] is not None:
            record[0].uncertain = True

    def _tail(self, trial: Trial) -> str:
        path = self.logs / f"serve-{trial.n}.log"
        return last_line(path.read_text(errors="replace")) if path.exists() else ""

    # -- after each kill --------------------------------------------------------------
    def after_kill(self, trial: Trial) -> None:
        trial.dirty = len(porcelain(self.root))
        trial.locks = lock_files(self.root)
        self.counts["left uncommitted changes"] += bool(trial.dirty)
        self.counts["left git lock files"] += bool(trial.locks)
        for lock in trial.locks:
            name = "next-index-*.lock" if "next-index-" in lock else lock
            self.counts[f"  left .git/{name}"] += 1
        ok, report = fsck(self.root)
        if not ok:
            self.fail("corrupt-repo", last_line(report), trial)
        self.next_write(trial)
        still = porcelain(self.root)
        if still:
            self.fail("dirty-after-next-write", f"{len(still)} change(s): {still[0]}", trial)
        self.verify(trial)

    def next_write(self, trial: Trial) -> None:
        """The next `memvault add` must succeed by itself, in time.

        A write that fails is a stuck vault, and so is one still running after
        ``hung_after`` seconds. One that succeeds after more than ``bound`` seconds is
        counted apart, with the load average: on a starved machine a CLI start alone can
        take that long, which says nothing about the vault.
        """
        marker = self.markers.new()
        base = memory_text(self.rng, marker)
        code, out, err, took = run_cli(
            self.root, "--json", "add", base, "--tags", "probe", timeout=self.hung_after
        )
        data = parse_json(out) if code == 0 else None
        if isinstance(data, dict) and data.get("action") == "created":
            trial.next_write = f"ok {took:.1f}s"
            if took > self.bound:
                self.counts["slow next writes"] += 1
                trial.notes.append(f"next write took {took:.0f}s, load {load_average()}")
            self.created(data["id"], base, marker)
            self.counts["acked probe writes"] += 1
            return
        why = f"hung {took:.0f}s" if code is None else f"exit {code}: {last_line(err)}"
        locks = lock_files(self.root)
        self.fail("stuck-vault", f"next add {why} (git locks: {locks or 'none'})", trial)
        trial.next_write = "STUCK"
        for lock in locks:  # manual help, so that the next trials mean something
            (self.root / ".git" / lock).unlink(missing_ok=True)
        self.after_failed_write(marker, trial)
        marker = self.markers.new()  # a new text: the failed one may be on disk already
        base = memory_text(self.rng, marker)
        code, out, err, took = run_cli(self.root, "--json", "add", base, "--tags", "probe")
        data = parse_json(out) if code == 0 else None
        if isinstance(data, dict) and data.get("action") == "created":
            trial.next_write = f"STUCK, ok after removing {len(locks)} lock(s)"
            self.created(data["id"], base, marker)
        else:
            self.fail("stuck-after-manual-repair", last_line(err), trial)

    def after_failed_write(self, marker: str, trial: Trial) -> None:
        """A write answered with an error must leave no file behind."""
        left = [path for path, text in tree_files(self.root).items() if marker in text]
        if left:
            self.fail("failed-write-left-a-file", f"{left[0]} (marker {marker})", trial)

    def verify(self, trial: Trial) -> None:
        files, head = by_id(tree_files(self.root)), by_id(head_files(self.root))
        for memory_id, entries in files.items():
            if len(entries) > 1 and memory_id not in self.reported_dups:
                self.reported_dups.add(memory_id)
                paths = ", ".join(p for p, _ in entries)
                self.fail("duplicate-id", f"{memory_id} in {paths}", trial)
        for memory in self.memories.values():
            for where, found in (("file", files), ("git HEAD", head)):
                self._check_copy(memory, where, found.get(memory.id), trial)
        markers = [m for memory in self.memories.values() for m in memory.markers]
        hits = index_search(self.root, markers)
        for marker, ids in hits.items():
            if self.writes[marker] not in ids:
                self._check_search(marker, trial)

    def _check_copy(
        self, memory: Tracked, where: str, entries: list[tuple[str, str]] | None, trial: Trial
    ) -> None:
        if not entries:
            for key in [*memory.markers, f"archive:{memory.id}"]:
                self._lose(key, f"{memory.id} has no file in {where}", trial)
            return
        path, text = entries[0]
        for marker in memory.markers:
            if marker not in text:
                self._lose(marker, f"{marker} missing from {path} in {where}", trial)
        if memory.archived and memory_status(text) != "archived":
            status = memory_status(text)
            self._lose(f"archive:{memory.id}", f"{path} is {status} in {where}", trial)

    def _check_search(self, marker: str, trial: Trial) -> None:
        """Missing from the index as it stands: does the real `memvault search` find it?"""
        ids, error = cli_search(self.root, marker)
        if self.writes[marker] in ids:
            self.counts[LAG] += 1
            trial.notes.append(f"index lag for {marker}")
            return
        self._lose(marker, f"{marker} not found by search {error}".strip(), trial)

    def _lose(self, key: str, how: str, trial: Trial) -> None:
        if key not in self.writes or key in self.lost:
            return
        self.lost[key] = how
        self.fail("lost-acknowledged-write", how, trial)

    # -- the run ----------------------------------------------------------------------
    def calibrate(self) -> None:
        """Unkilled writes: how long a CLI add and an MCP remember take here and now."""
        for _ in range(3):
            marker = self.markers.new()
            base = memory_text(self.rng, marker)
            code, out, err, took = run_cli(self.root, "--json", "add", base)
            data = parse_json(out)
            if code != 0 or not isinstance(data, dict):
                raise SystemExit(f"calibration add failed: {last_line(err)}")
            self.cli_seconds.append(took)
            self.created(data["id"], base, marker)
        pipe = McpPipe(self.root)
        pipe.initialize()
        trial = Trial(0, "calibration")
        for _ in range(3):
            tool, arguments, record = self.mcp_request("mcp-remember")
            start = time.monotonic()
            answer = pipe.call_tool(tool, arguments)
            self.mcp_seconds.append(time.monotonic() - start)
            self.record_mcp(answer, record, trial)
        pipe.close()

    def pick_kind(self) -> str:
        kinds = dict(KINDS)
        if not self.active():
            kinds.pop("cli-forget")
            kinds.pop("mcp-update")
        return self.rng.choices(list(kinds), weights=list(kinds.values()))[0]

    def trial(self, n: int) -> Trial:
        trial = Trial(n, self.pick_kind())
        if trial.kind.startswith("cli"):
            self.cli_trial(trial)
        else:
            self.mcp_trial(trial)
        self.after_kill(trial)
        self.counts[f"trials {trial.kind}"] += 1  # counted once checked (interrupts)
        if trial.killed:
            self.counts[f"killed the {trial.plan.scope if trial.plan else '?'}"] += 1
        if trial.git_at_kill:
            self.counts["kills during git"] += 1
            for sub in set(trial.git_at_kill):
                self.counts[f"  during git {sub}"] += 1
        return trial


def report(c: Campaign, trials: int, wall: float) -> None:
    k = c.counts
    killed = k["killed the group"] + k["killed the writer"]
    acked = len(c.writes)
    print()
    per_kind = ", ".join(f"{x} {k['trials ' + x]}" for x in KINDS)
    print(f"trials: {trials} ({per_kind})")
    print(
        f"kills: {killed} (whole process group {k['killed the group']}, writer alone "
        f"{k['killed the writer']}); writer finished before the kill: {trials - killed}"
    )
    print(f"kills during git: {k['kills during git']}")
    for key in sorted(x for x in k if x.startswith("  during git")):
        print(f"{key}: {k[key]}")
    print(
        f"after the kill: uncommitted changes in {k['left uncommitted changes']} trial(s), "
        f"git lock files in {k['left git lock files']} trial(s)"
    )
    for key in sorted(x for x in k if x.startswith("  left")):
        print(f"  {key.strip()}: {k[key]}")
    print(
        f"acknowledged writes: {acked} (creates {k['acked creates']} incl. "
        f"{k['acked probe writes']} next-write probes, updates {k['acked updates']}, "
        f"archives {k['acked archives']})"
    )
    print(f"acknowledged writes missing from the index until a sync: {k[LAG]}")
    print(f"corrupt repos: {c.failures['corrupt-repo']}")
    print(f"lost acknowledged writes: {len(c.lost)}")
    print(f"stuck vaults: {c.failures['stuck-vault']}")
    print(
        f"next writes that succeeded but took more than {c.bound:.0f} s: "
        f"{k['slow next writes']} (load average now {load_average()})"
    )
    print(f"git lock files left at the end: {lock_files(c.root) or 'none'}")
    print("failures by kind:" + ("" if c.failures else " none"))
    for kind, count in c.failures.most_common():
        print(f"  {kind}: {count}\n    first: {c.examples[kind]}")
    print(f"wall time: {wall:.0f} s ({wall / max(trials, 1):.1f} s per trial)")


def interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("trials", nargs="?", type=int, default=200)
    parser.add_argument("--vault", type=Path, default=None)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--keep", action="store_true", help="Keep the temporary vault.")
    parser.add_argument(
        "--next-write-bound", type=float, default=30.0, help="Seconds the next write may take."
    )
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    tmp = Path(tempfile.mkdtemp(prefix="memvault-crash-"))
    root = (args.vault or tmp / "vault").resolve()
    ensure_vault(root)
    logs = tmp / "logs"
    logs.mkdir()
    print(f"vault {root}, seed {seed}, {args.trials} trials; server logs in {logs}", flush=True)
    c = Campaign(root, seed, logs, args.next_write_bound)
    start = time.monotonic()
    c.calibrate()
    print(
        f"calibration: CLI add {statistics.median(c.cli_seconds):.2f}s, "
        f"MCP remember {statistics.median(c.mcp_seconds):.2f}s",
        flush=True,
    )
    done = 0
    signal.signal(signal.SIGTERM, interrupt)
    try:
        for n in range(1, args.trials + 1):
            print(c.trial(n).line(), flush=True)
            done = n
    except KeyboardInterrupt:
        kill_live_groups()
        print(f"interrupted: the counts below cover the {done} finished trial(s)")
    errors = log_errors(sorted(logs.glob("*.log")))
    for line, count in errors.most_common():
        c.fail("error-logged-by-server", line)
        c.failures["error-logged-by-server"] += count - 1
    report(c, done, time.monotonic() - start)
    failed = bool(c.failures)
    if failed or args.keep or args.vault:
        print(f"vault kept at {root}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
