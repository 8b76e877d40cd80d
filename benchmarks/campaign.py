"""Shared pieces of the reliability campaign (`crash.py`, `concurrency.py`).

The campaign drives memvault from the outside, as a person or an MCP host would: the real
`memvault` command line and `memvault serve` over stdio (raw JSON-RPC lines), real git.
What it checks is read straight from the disk (working tree files, git's HEAD tree) and
from the search index, never from memvault's own answers.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from benchmarks.common import TYPES, sentence
from memvault.config import load_settings
from memvault.index import Index, SearchQuery
from memvault.service import Filters

PROTOCOL = "2025-11-25"
_ID = re.compile(r"^id:\s*['\"]?([^'\"\s]+)", re.M)
_STATUS = re.compile(r"^status:\s*['\"]?([^'\"\s]+)", re.M)
LIVE_GROUPS: set[int] = set()  # process groups started here, maybe still running


# -- commands -------------------------------------------------------------------------
def memvault_cmd(vault: Path, *args: str) -> list[str]:
    """The installed console script next to this interpreter (it honours PYTHONPATH)."""
    exe = Path(sys.executable).parent / "memvault"
    head = [str(exe)] if exe.exists() else [sys.executable, "-m", "memvault.cli"]
    return [*head, "--vault", str(vault), *args]


def git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_OPTIONAL_LOCKS"] = "0"  # our own status calls never take .git/index.lock
    return env


def git(root: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args],
        cwd=root,
        env=git_env(),
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        timeout=timeout,
        check=False,
    )


def fsck(root: Path) -> tuple[bool, str]:
    proc = git(root, "fsck", "--no-progress", timeout=300)
    return proc.returncode == 0, (proc.stdout + proc.stderr).strip()


def porcelain(root: Path) -> list[str]:
    out = git(root, "status", "--porcelain=v1", "--untracked-files=all").stdout
    return [line for line in out.splitlines() if line.strip()]


def commit_count(root: Path) -> int:
    return int(git(root, "rev-list", "--count", "HEAD").stdout.strip() or 0)


def lock_files(root: Path) -> list[str]:
    """Git lock files under .git (index.lock, HEAD.lock, refs/**.lock, next-index-*.lock)."""
    gitdir = root / ".git"
    found = [p for p in gitdir.glob("*.lock")]
    found += [p for p in (gitdir / "refs").rglob("*.lock")]
    return sorted(str(p.relative_to(gitdir)) for p in found)


def run_cli(vault: Path, *args: str, timeout: float = 120) -> tuple[int | None, str, str, float]:
    """(exit code or None on timeout, stdout, stderr, seconds) of one `memvault` command."""
    start = time.monotonic()
    proc = spawn(
        memvault_cmd(vault, *args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        out, err = proc.communicate()
        return None, out, err, time.monotonic() - start
    finally:
        LIVE_GROUPS.discard(proc.pid)
    return proc.returncode, out, err, time.monotonic() - start


def spawn(cmd: list[str], **kwargs: Any) -> subprocess.Popen[Any]:
    """A child in its own session (so its whole group can be killed), remembered in
    LIVE_GROUPS until it is known to be gone."""
    proc = subprocess.Popen(cmd, start_new_session=True, **kwargs)
    LIVE_GROUPS.add(proc.pid)
    return proc


def kill_live_groups() -> None:
    """On an interrupted run: kill every writer and server this process started."""
    for pgid in list(LIVE_GROUPS):
        if group_members(pgid):
            kill_group(pgid)
    LIVE_GROUPS.clear()


def load_average() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def parse_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def last_line(text: str) -> str:
    """The CLI's one-line error (`error: ...`) if there is one, else the last line."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    return (errors or lines or [""])[-1][:400]


# -- processes --------------------------------------------------------------------------
def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def _git_subcommand(argv: list[str]) -> str:
    args = iter(argv[1:])
    for arg in args:
        if arg == "-c":
            next(args, None)
        elif not arg.startswith("-"):
            return arg
    return "?"


def git_children(pid: int) -> list[str]:
    """Subcommands of the git processes that ``pid`` (any of its threads) started."""
    found = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    for task in tasks:
        try:
            kids = Path(f"/proc/{pid}/task/{task}/children").read_text().split()
        except OSError:
            continue
        for kid in kids:
            try:
                argv = Path(f"/proc/{kid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            words = [a.decode(errors="replace") for a in argv if a]
            if words and os.path.basename(words[0]) == "git":
                found.append(_git_subcommand(words))
    return found


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes in process group ``pgid``."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry))
    return members


def wait_group_gone(pgid: int, timeout: float = 120) -> bool:
    """Wait until every process of the group has exited (orphaned git children too)."""
    deadline = time.monotonic() + timeout
    while group_members(pgid):
        if time.monotonic() > deadline:
            kill_group(pgid)
            return False
        time.sleep(0.02)
    LIVE_GROUPS.discard(pgid)
    return True


# -- MCP over stdio, raw JSON-RPC lines ----------------------------------------------
class ServerGone(Exception):
    """The server closed its stdout (it exited or was killed)."""


class McpPipe:
    """`memvault serve` in its own session, spoken to with JSON-RPC lines on its pipes."""

    def __init__(self, vault: Path, stderr: IO[bytes] | int = subprocess.DEVNULL) -> None:
        self.proc = spawn(
            memvault_cmd(vault, "serve"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
        self.responses: dict[int, dict[str, Any]] = {}
        self.noise: list[str] = []  # stdout lines that were not JSON-RPC
        self.notifications = 0
        self.closed = False
        self._changed = threading.Condition()
        self._next = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            message = parse_json(raw.decode("utf-8", errors="replace"))
            with self._changed:
                if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
                    self.noise.append(raw.decode("utf-8", errors="replace")[:200])
                elif "id" in message and ("result" in message or "error" in message):
                    self.responses[int(message["id"])] = message
                else:
                    self.notifications += 1
                self._changed.notify_all()
        with self._changed:
            self.closed = True
            self._changed.notify_all()

    def send(self, method: str, params: dict[str, Any] | None = None) -> int:
        self._next += 1
        self._write({"jsonrpc": "2.0", "id": self._next, "method": method, "params": params or {}})
        return self._next

    def notify(self, method: str) -> None:
        self._write({"jsonrpc": "2.0", "method": method})

    def _write(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(message) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise ServerGone(f"server stdin closed: {exc}") from exc

    def answered(self, request_id: int) -> bool:
        return request_id in self.responses

    def wait(self, request_id: int, timeout: float) -> dict[str, Any]:
        with self._changed:
            self._changed.wait_for(lambda: request_id in self.responses or self.closed, timeout)
            if request_id in self.responses:
                return self.responses.pop(request_id)
            if self.closed:
                raise ServerGone("server closed stdout before answering")
        raise TimeoutError(f"no answer to request {request_id} in {timeout:.0f}s")

    def drain(self, timeout: float = 30) -> bool:
        """After a kill: wait until everything the server wrote before dying is read."""
        with self._changed:
            return self._changed.wait_for(lambda: self.closed, timeout)

    def initialize(self, timeout: float = 120) -> None:
        params = {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "memvault-campaign", "version": "1"},
        }
        answer = self.wait(self.send("initialize", params), timeout)
        if "error" in answer:
            raise ServerGone(f"initialize refused: {answer['error']}")
        self.notify("notifications/initialized")

    def send_tool(self, name: str, arguments: dict[str, Any]) -> int:
        return self.send("tools/call", {"name": name, "arguments": arguments})

    def call_tool(self, name: str, arguments: dict[str, Any], timeout: float = 120) -> ToolAnswer:
        return tool_answer(self.wait(self.send_tool(name, arguments), timeout))

    def close(self, timeout: float = 60) -> int | None:
        """Close stdin (the server exits) and wait; kill the group if it will not."""
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(self.proc.pid)
            return self.proc.wait()
        finally:
            wait_group_gone(self.proc.pid)


@dataclass(frozen=True)
class ToolAnswer:
    ok: bool
    data: dict[str, Any]
    error: str


def tool_answer(message: dict[str, Any]) -> ToolAnswer:
    if "error" in message:
        return ToolAnswer(False, {}, f"JSON-RPC error: {message['error']}")
    result = message["result"]
    if result.get("isError"):
        texts = [c.get("text", "") for c in result.get("content", [])]
        return ToolAnswer(False, {}, " ".join(texts)[:400])
    return ToolAnswer(True, result.get("structuredContent") or {}, "")


# -- content --------------------------------------------------------------------------
@dataclass
class Markers:
    """Unique search terms: one word ``mark<run><n>`` that the tokenizer keeps whole."""

    run: str = field(default_factory=lambda: os.urandom(4).hex())
    n: int = 0

    def new(self) -> str:
        self.n += 1
        return f"mark{self.run}n{self.n:05d}"


def memory_text(rng: random.Random, *markers: str) -> str:
    """A plausible sentence plus the markers and three random words, so that two writes
    are never near-duplicates (memvault would rightly refuse the second one)."""
    words = " ".join("".join(rng.choices("bcdfghjklmnprstvz", k=7)) for _ in range(3))
    return f"{sentence(rng, chinese=False)} Reference {' '.join(markers)} ({words})."


def random_type(rng: random.Random) -> str:
    return rng.choice(TYPES)


# -- what is on disk ------------------------------------------------------------------
def frontmatter_of(text: str) -> str:
    if not text.startswith("---"):
        return ""
    end = text.find("\n---", 3)
    return text[3:end] if end > 0 else ""


def memory_id(text: str) -> str | None:
    match = _ID.search(frontmatter_of(text))
    return match.group(1) if match else None


def memory_status(text: str) -> str:
    match = _STATUS.search(frontmatter_of(text))
    return match.group(1) if match else "active"


def by_id(files: dict[str, str]) -> dict[str, list[tuple[str, str]]]:
    out: dict[str, list[tuple[str, str]]] = {}
    for path, text in files.items():
        found = memory_id(text)
        if found:
            out.setdefault(found, []).append((path, text))
    return out


def tree_files(root: Path) -> dict[str, str]:
    """Every Markdown file of the working tree that git does not ignore."""
    out = git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").stdout
    files = {}
    for rel in sorted(set(out.split("\0"))):
        if not rel.endswith(".md"):
            continue
        try:
            files[rel] = (root / rel).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue  # listed by the index but deleted in the tree
    return files


def head_files(root: Path) -> dict[str, str]:
    """Every Markdown file in the HEAD commit's tree (one `git cat-file --batch`)."""
    listing = git(root, "ls-tree", "-r", "-z", "HEAD").stdout
    blobs = {}
    for entry in listing.split("\0"):
        if "\t" not in entry:
            continue
        info, path = entry.split("\t", 1)
        parts = info.split()
        if path.endswith(".md") and parts[1] == "blob":
            blobs[path] = parts[2]
    if not blobs:
        return {}
    proc = subprocess.run(
        ["git", "cat-file", "--batch"],
        cwd=root,
        env=git_env(),
        input="\n".join(blobs.values()).encode() + b"\n",
        capture_output=True,
        timeout=300,
        check=False,
    )
    data, pos, texts = proc.stdout, 0, []
    while pos < len(data):
        header_end = data.index(b"\n", pos)
        size = int(data[pos:header_end].split()[2])
        texts.append(data[header_end + 1 : header_end + 1 + size].decode("utf-8", "replace"))
        pos = header_end + 1 + size + 1
    return dict(zip(blobs, texts, strict=True))


def index_search(root: Path, markers: list[str]) -> dict[str, set[str]]:
    """Ids the search index returns for each marker, read as the index stands (no sync)."""
    index = Index(root / ".memvault" / "index", load_settings(root), load_embedder=False)
    try:
        now = dt.datetime.now().astimezone()
        everything = Filters(include_archived=True)
        return {
            m: {hit.doc.id for hit in index.search(SearchQuery(m, 10, everything, "bm25"), now)}
            for m in markers
        }
    finally:
        index.close()


def cli_search(root: Path, marker: str, timeout: float = 120) -> tuple[set[str], str]:
    """Ids `memvault search MARKER` returns (the real command, which syncs the index)."""
    code, out, err, _ = run_cli(
        root,
        "--json",
        "search",
        marker,
        "-k",
        "10",
        "--mode",
        "bm25",
        "--include-archived",
        timeout=timeout,
    )
    results = parse_json(out) if code == 0 else None
    if not isinstance(results, list):
        return set(), f"exit {code}: {last_line(err)}"
    return {r["id"] for r in results}, ""


def ensure_vault(path: Path) -> None:
    if (path / ".git").exists():
        return
    code, _, err, _ = run_cli(path, "init", str(path))
    if code != 0:
        raise SystemExit(f"memvault init {path} failed: {last_line(err)}")


def log_errors(paths: list[Path]) -> Counter[str]:
    """Tracebacks (by their last line) and ERROR/CRITICAL records in servers' stderr logs."""
    found: Counter[str] = Counter()
    for path in paths:
        in_traceback = False
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith("Traceback"):
                in_traceback = True
            elif in_traceback and line and not line[0].isspace():
                found[f"{path.name}: {line[:200]}"] += 1
                in_traceback = False
            elif line.startswith(("ERROR", "CRITICAL")):
                found[f"{path.name}: {line[:200]}"] += 1
    return found
