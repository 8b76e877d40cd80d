"""Git history of a vault: one subprocess wrapper with a clean environment.

Every memvault write is one commit with a readable subject and trailers.
The git CLI is used directly (``subprocess``): a commit in a 10k-file repo
costs tens of milliseconds this way, and the environment is fully ours.
"""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from .errors import GitError, MemvaultError
from .models import Commit

log = logging.getLogger(__name__)

_RS, _US, _GS = "\x1e", "\x1f", "\x1d"
_LOCK_MARKERS = ("index.lock", "cannot lock ref", "Unable to create", "unable to lock")
CLONE_WARNING = (
    "purged from this repository's history; clones, remotes and backups made before "
    "now still hold copies: purge them too (or re-clone) to finish a privacy request"
)


def git_available() -> bool:
    return shutil.which("git") is not None


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_TERMINAL_PROMPT="0",
        GIT_EDITOR="true",
        GIT_PAGER="cat",
        GIT_OPTIONAL_LOCKS="0",
        FILTER_BRANCH_SQUELCH_WARNING="1",
    )
    return env


def format_message(subject: str, trailers: dict[str, str]) -> str:
    lines = [subject.replace("\n", " ").strip()]
    clean = {k: " ".join(str(v).split()) for k, v in trailers.items() if v}
    if clean:
        lines.append("")
        lines.extend(f"{k}: {v}" for k, v in clean.items())
    return "\n".join(lines) + "\n"


class History:
    """The vault's git repository."""

    def __init__(
        self,
        root: Path,
        author_name: str = "memvault",
        author_email: str = "memvault@localhost",
        lock_retry_seconds: float = 10.0,
    ) -> None:
        self.root = root
        self.author_name = author_name
        self.author_email = author_email
        self.lock_retry_seconds = lock_retry_seconds

    # -- plumbing -----------------------------------------------------------
    def run(
        self,
        *args: str,
        check: bool = True,
        input_text: str | None = None,
        identity: bool = True,
    ) -> str:
        """Run git in the vault; retry with back-off while another writer holds a lock."""
        if not git_available():
            raise MemvaultError("git is not installed or not on PATH: install git and retry")
        config = ["-c", "commit.gpgsign=false", "-c", "core.quotepath=false"]
        config += ["-c", "core.autocrlf=false", "-c", "core.hooksPath=/dev/null"]
        if identity:
            config += [
                "-c",
                f"user.name={self.author_name}",
                "-c",
                f"user.email={self.author_email}",
            ]
        cmd = ["git", "--literal-pathspecs", *config, *args]
        delay, deadline = 0.02, time.monotonic() + self.lock_retry_seconds
        while True:
            proc = subprocess.run(
                cmd,
                cwd=self.root,
                env=_clean_env(),
                input=input_text,
                capture_output=True,
                text=True,
                encoding="utf-8",
                errors="replace",
                stdin=None if input_text is not None else subprocess.DEVNULL,
            )
            if proc.returncode == 0 or not check:
                return proc.stdout
            if any(m in proc.stderr for m in _LOCK_MARKERS) and time.monotonic() < deadline:
                log.debug("git lock busy, retrying in %.2fs: %s", delay, proc.stderr.strip())
                time.sleep(delay)
                delay = min(delay * 2, 0.5)
                continue
            raise GitError(list(args), proc.returncode, proc.stderr)

    def is_repo(self) -> bool:
        return (self.root / ".git").exists()

    def init(self) -> None:
        self.run("init", "-q", "-b", "main")

    def head(self) -> str | None:
        out = self.run("rev-parse", "--verify", "-q", "HEAD", check=False).strip()
        return out or None

    def repo_identity(self) -> tuple[str, str]:
        """The repository's configured identity (a person's edits), else memvault's."""
        name = self.run("config", "user.name", check=False, identity=False).strip()
        email = self.run("config", "user.email", check=False, identity=False).strip()
        return name or self.author_name, email or self.author_email

    # -- writing ------------------------------------------------------------
    def commit(
        self,
        paths: Sequence[str],
        subject: str,
        trailers: dict[str, str] | None = None,
        as_person: bool = False,
    ) -> str | None:
        """Stage ``paths`` (adds, edits, deletions) and commit only them.

        Returns the new commit sha, or None when nothing changed.
        """
        paths = self._committable(paths)
        if not paths:
            return None
        # Paths go through stdin, not argv: an import of 50k files overflows the argument list.
        spec = "\0".join(paths)
        self.run("add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul", input_text=spec)
        wanted = set(paths)
        staged = self.run("diff", "--cached", "--name-only", "--no-renames", "-z").split("\0")
        if not wanted.intersection(staged):
            return None
        args = ["commit", "-q", "--no-verify", "--pathspec-from-file=-", "--pathspec-file-nul"]
        return self._commit(args, format_message(subject, trailers or {}), as_person, spec)

    def _commit(
        self, args: list[str], message: str, as_person: bool, stdin: str | None = None
    ) -> str | None:
        """Run ``git commit`` with the message in a file (stdin may carry pathspecs)."""
        if as_person:
            name, email = self.repo_identity()
            args = ["-c", f"user.name={name}", "-c", f"user.email={email}", *args]
        fd, message_file = tempfile.mkstemp(prefix="memvault-msg-", dir=self.root / ".git")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(message)
            self.run(*args, "-F", message_file, input_text=stdin)
        finally:
            os.unlink(message_file)
        return self.head()

    def _committable(self, paths: Sequence[str]) -> list[str]:
        """Drop paths that neither exist nor are tracked (created and deleted unseen)."""
        missing = [p for p in paths if not (self.root / p).exists()]
        if not missing:
            return list(paths)
        tracked: set[str] = set()
        for at in range(0, len(missing), 500):
            tracked.update(self.run("ls-files", "-z", "--", *missing[at : at + 500]).split("\0"))
        return [p for p in paths if p not in missing or p in tracked]

    def commit_all(
        self, subject: str, trailers: dict[str, str], as_person: bool = False
    ) -> str | None:
        """Commit every change in the work tree (recovery of crashes and hand edits)."""
        self.run("add", "-A")
        if not self.run("diff", "--cached", "--name-only").strip():
            return None
        return self._commit(
            ["commit", "-q", "--no-verify"], format_message(subject, trailers), as_person
        )

    def commit_empty(self, subject: str, trailers: dict[str, str]) -> str | None:
        """A commit that changes no file: a record in the log (for example of a purge)."""
        args = ["commit", "-q", "--no-verify", "--allow-empty"]
        return self._commit(args, format_message(subject, trailers), as_person=False)

    def uncommitted(self) -> list[str]:
        """Paths with changes not yet committed (ignored files excluded)."""
        out = self.run("status", "--porcelain=v1", "-z", "--untracked-files=all")
        paths = []
        entries = out.split("\0")
        i = 0
        while i < len(entries):
            entry = entries[i]
            if len(entry) > 3:
                paths.append(entry[3:])
                if entry[0] in "RC":
                    i += 1  # the rename source follows
            i += 1
        return paths

    # -- reading ------------------------------------------------------------
    def log(self, path: str | None = None, limit: int | None = None) -> list[Commit]:
        """Commits, newest first; for one path, following renames."""
        fmt = _RS + _US.join(["%H", "%aI", "%an", "%s", f"%(trailers:only,unfold,separator={_GS})"])
        args = ["log", f"--format={fmt}", "--name-status", "-z"]
        if limit:
            args.append(f"-n{limit}")
        if path is not None:
            args += ["--follow", "--", path]
        if self.head() is None:
            return []
        return [c for c in (_parse_record(r, path) for r in self.run(*args).split(_RS)) if c]

    def show(self, rev: str, path: str) -> str:
        return self.run("show", f"{self._rev(rev)}:{path}")

    def diff(self, rev: str, path_at_rev: str, current_path: str) -> str:
        """Unified diff from ``rev``'s version of the memory to the working file."""
        return self.run("diff", "--no-color", "-M", self._rev(rev), "--", path_at_rev, current_path)

    def resolve(self, rev: str) -> str:
        return self._rev(rev)

    def _rev(self, rev: str) -> str:
        if not rev or rev.startswith("-"):
            raise MemvaultError(f"{rev!r} is not a revision: give a commit sha from `log`")
        out = self.run("rev-parse", "--verify", "-q", f"{rev}^{{commit}}", check=False).strip()
        if not out:
            raise MemvaultError(f"unknown revision {rev!r}: pick one from `memvault log`")
        return out

    def names_in_history(self, path: str) -> list[str]:
        """Every path the file at ``path`` had, following renames."""
        names = [path]
        for commit in self.log(path):
            if commit.path and commit.path not in names:
                names.append(commit.path)
            for old, _new in commit.renames:
                if old not in names:
                    names.append(old)
        return names

    # -- privacy ------------------------------------------------------------
    def purge(self, paths: Iterable[str]) -> None:
        """Erase ``paths`` from every commit of every ref, then drop old objects."""
        quoted = " ".join(shlex.quote(p) for p in paths)
        self.run(
            "filter-branch",
            "--force",
            "--prune-empty",
            "--index-filter",
            f"git rm -r -q --cached --ignore-unmatch -- {quoted}",
            "--",
            "--all",
        )
        refs = self.run("for-each-ref", "--format=%(refname)", "refs/original/").split()
        for ref in refs:
            self.run("update-ref", "-d", ref)
        self.run("reflog", "expire", "--expire=now", "--all")
        self.run("gc", "-q", "--prune=now")

    # -- following one file -------------------------------------------------
    def knows(self, path: str) -> bool:
        """True when some commit touched ``path`` (a deleted file's history is still there)."""
        return bool(self.log(path, limit=1))

    def exists_at(self, rev: str, path: str) -> bool:
        out = self.run("ls-tree", "--name-only", rev, "--", path, check=False)
        return out.strip() == path

    def path_at(self, path: str, rev: str) -> str:
        """The name the file now at ``path`` had at ``rev`` (following renames)."""
        sha = self.resolve(rev)
        for name in self.names_in_history(path):
            if self.exists_at(sha, name):
                return name
        raise MemvaultError(
            f"{path} did not exist at {rev[:12]}: pick a revision from `memvault log {path}`"
        )

    @staticmethod
    def history_of(path: str, commits: Sequence[Commit]) -> list[tuple[Commit, str]]:
        """Of ``commits`` (newest first, one log), those that touched the file now at
        ``path``, with its name then, following renames backwards."""
        out, name = [], path
        for commit in commits:
            if name in commit.files:
                out.append((commit, name))
                for old, new in commit.renames:
                    if new == name:
                        name = old
        return out


def _parse_record(record: str, path: str | None) -> Commit | None:
    """One ``git log -z --name-status`` record: header, NUL-newline, name-status entries."""
    head, _, rest = record.partition("\0\n")
    fields = head.rstrip("\0").split(_US)
    if len(fields) < 5:
        return None
    sha, date, author, subject, trailer_text = fields[:5]
    trailers: dict[str, str] = {}
    for item in trailer_text.strip().split(_GS):
        key, sep, value = item.partition(":")
        if sep:
            trailers[key.strip()] = value.strip()
    names = rest.split("\0")
    files: list[str] = []
    renames: list[tuple[str, str]] = []
    i = 0
    while i < len(names) - 1:
        status = names[i].strip()
        if status[:1] in ("R", "C") and i + 2 < len(names):
            renames.append((names[i + 1], names[i + 2]))
            files.append(names[i + 2])
            i += 3
        elif status:
            files.append(names[i + 1])
            i += 2
        else:
            i += 1
    where = files[-1] if (path is not None and files) else None
    return Commit(sha, date, author, subject, where, trailers, tuple(files), tuple(renames))
