"""Git history of a vault, through GitPython with a clean environment.

Every memvault write is one commit with a readable subject and trailers.
GitPython's ``Repo`` finds, creates and reads the configuration of the
repository; its command layer (``Git.execute``) runs the git CLI for commits,
log, diff and purge: a commit in a 10k-file repo costs tens of milliseconds
this way, while GitPython's pure-Python ``repo.index`` costs several hundred,
so it is never used on the write path. Every command runs with ``GIT_*``
variables scrubbed, hooks and signing off and an explicit identity.
"""

from __future__ import annotations

import itertools
import logging
import math
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

if shutil.which("git") is None:
    # GitPython runs `git version` on import and refuses to import without git; quiet, it
    # imports and memvault says "git is not installed" where git is needed (doctor, init).
    os.environ.setdefault("GIT_PYTHON_REFRESH", "quiet")

import git

from .errors import GitError, InvalidInputError, MemvaultError, UntrustedRepositoryError
from .ids import derived_id
from .models import Commit

log = logging.getLogger(__name__)

_RS, _US, _GS = "\x1e", "\x1f", "\x1d"
_LOG_FORMAT = _RS + _US.join(["%H", "%aI", "%an", "%s", f"%(trailers:only,unfold,separator={_GS})"])
_SHA = r"(?:[0-9a-f]{40}|[0-9a-f]{64})"  # SHA-1, or SHA-256 (git init --object-format)
# where a commit's record starts in a log: a separator a person's commit subject may hold
# too (any control character goes), followed by the sha, which no subject comes before
_RECORD_START = re.compile(_RS + f"(?={_SHA}" + _US + ")")
_FULL_SHA = re.compile(_SHA)
GC_AUTO_LOOSE = 6700  # git's gc.auto default: loose objects before an automatic pack
_SUMMARY = re.compile(r"\[[^\]\n]* (" + _SHA + r")\] ")  # `git commit`'s first line
# "cannot lock ref 'HEAD': is at X but expected Y": the ref moved (update-ref's check), which
# no waiting changes: not a busy lock
_MOVED = "but expected"
_LOOSE = re.compile(r"[0-9a-f]{38}")  # a loose object's file name in objects/xx/
_LOCK_MARKERS = ("index.lock", "cannot lock ref", "Unable to create", "unable to lock")
CLONE_WARNING = (
    "purged from this repository's history; clones, remotes and backups made before "
    "now still hold copies: purge them too to finish a privacy request; `memvault sync` "
    "refuses to bring the remote's old history back, `memvault sync --replace-remote` "
    "replaces it, and other clones take the purge at their next sync (or refuse and say how)"
)
STALE_LOCK_SECONDS = 5.0
"""A git lock file this old, with no git process working in the vault, was left by a
killed git (git holds its locks for milliseconds while it writes)."""
STALE_LOCK_SECONDS_BLIND = 120.0
"""Where running processes cannot be seen (no /proc): only a much older lock counts."""
PROC = Path("/proc")
_PURGE_PREFIX = "memvault-purge-"  # a purge's scratch folder in .git
TEMP_PREFIX = "memvault-"  # temp_files': mkstemp's random part follows
_TEMP_FILE = re.compile(re.escape(TEMP_PREFIX) + r"[a-z0-9_]{8}")
START_SLACK_SECONDS = 2.0
"""A process's start time is known to the second (the boot time's precision): a git
started up to this long after a lock was last written may still be the one holding it."""
PURGED_NAME = "(purged)"
SHALLOW_HINT = (
    " (this vault is a shallow clone: its older history was never fetched; "
    "`git fetch --unshallow` in the vault brings it)"
)
# A diff as git itself makes it, whatever a person's diff.external, textconv drivers or
# diff.noprefix would show instead: what an agent or a reviewer reads is the same everywhere.
GITS_OWN_DIFF = (
    "diff",
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "-M",
    "--src-prefix=a/",
    "--dst-prefix=b/",
)
# Commit messages that name a purged path (a commit that also changed another file)
# get the name replaced: awk reads the names from the environment, no quoting involved.
# Like --prune-empty (a commit left with nothing to change is dropped), except the records
# of earlier purges (empty on purpose, they are the audit trail of what was erased) and the
# commits named ``keep-<sha>`` (the parts of a stash entry: see stashes.py).
_COMMIT_FILTER = (
    'msg=$(cat); case "$msg" in "purge: "*) k=1;; *) k=;; esac; '
    '[ -e "$MEMVAULT_PURGE_DIR/keep-$GIT_COMMIT" ] && k=1; '
    'if [ -n "$k" ]; then printf "%s\\n" "$msg" | git commit-tree "$@"; '
    'else printf "%s\\n" "$msg" | git_commit_non_empty_tree "$@"; fi'
)
# The paths to take out of each commit (listed, NUL-separated, in a file named after the
# commit's original sha): only where a purged version lies, so another file with the same
# bytes (an empty note, a .gitkeep, a template copy) stays.
_INDEX_FILTER = (
    'f="$MEMVAULT_PURGE_DIR/$GIT_COMMIT"; if [ -f "$f" ]; then git rm -q --cached'
    ' --ignore-unmatch --pathspec-from-file="$f" --pathspec-file-nul; fi'
)
# git's refusal of a repository another user owns ("safe.directory"): every command fails,
# also the ones whose failure would otherwise mean "no commits yet"
_DUBIOUS = "detected dubious ownership in repository"
_DUBIOUS_AT = re.compile(r"dubious ownership in repository at '([^'\n]+)'")
_UNDER_WAY = (("MERGE_HEAD", "merge"), ("rebase-merge", "rebase"), ("rebase-apply", "rebase"))
_MSG_FILTER = (  # a commit of another file at a purged name keeps its message
    'if [ -e "$MEMVAULT_PURGE_DIR/msg-$GIT_COMMIT" ]; then cat; else '
    'awk \'BEGIN { n = split(ENVIRON["MEMVAULT_PURGED"], names, "\\n") }'
    ' { for (i = 1; i <= n; i++) if (names[i] != "")'
    " while ((k = index($0, names[i])) > 0)"
    ' $0 = substr($0, 1, k - 1) ENVIRON["MEMVAULT_PURGED_AS"] substr($0, k + length(names[i]));'
    " print }'; fi"
)


@dataclass(frozen=True)
class Delta:
    """One file a commit changed (``git log --raw --numstat``)."""

    status: str  # A (added), M, T (edited), D (deleted), R (renamed), C (copied)
    path: str  # the file's name after the commit (before it, for a deletion)
    old_path: str | None  # renames and copies: the name before
    old_blob: str | None  # None when the file did not exist before
    new_blob: str | None  # None when it no longer exists
    added: int | None = None  # lines; None for binary files
    deleted: int | None = None


@dataclass(frozen=True)
class Deltas:
    """A commit with the files it changed."""

    sha: str
    time: str  # committer date, ISO 8601
    author: str
    trailers: dict[str, str]
    files: tuple[Delta, ...]
    merge: bool = False  # more than one parent: git's log lists no files of its own


@dataclass(frozen=True)
class StaleLock:
    """A git lock file left behind by a git process that no longer runs."""

    path: str  # relative to the vault root, e.g. ".git/index.lock"
    age: float  # seconds since it was last written
    inode: int
    mtime_ns: int


def git_available() -> bool:
    return shutil.which("git") is not None


_CLEAN_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_EDITOR": "true",
    "GIT_PAGER": "cat",
    "GIT_OPTIONAL_LOCKS": "0",
    "FILTER_BRANCH_SQUELCH_WARNING": "1",
}


def identity_config(name: str, email: str) -> list[str]:
    """``-c`` options that make ``name <email>`` both author and committer of a commit.

    ``author.*`` and ``committer.*`` (git 2.22+) outrank ``user.*``: a person who set
    ``author.name`` in their global config would otherwise sign memvault's commits.
    """
    pairs = [
        f"{who}.{key}={value}"
        for who in ("user", "author", "committer")
        for key, value in (("name", name), ("email", email))
    ]
    return [arg for pair in pairs for arg in ("-c", pair)]


# GIT_* variables that say how git reaches a remote or where the person's own
# configuration is, not which repository, index or author a command uses: kept, so memvault's
# git trusts the certificates, uses the ssh and reads the global config the person's git does
_KEPT_GIT_VARS = frozenset(
    {
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_SYSTEM",
        "GIT_CONFIG_NOSYSTEM",
        "GIT_SSL_CAINFO",
        "GIT_SSL_CAPATH",
        "GIT_SSL_CERT",
        "GIT_SSL_KEY",
        "GIT_SSL_NO_VERIFY",
        "GIT_SSH",
        "GIT_SSH_COMMAND",
        "GIT_SSH_VARIANT",
        "GIT_PROXY_COMMAND",
        "GIT_HTTP_PROXY_AUTHMETHOD",
        "GIT_ALLOW_PROTOCOL",
        "GIT_EXEC_PATH",
    }
)


def _inherited_git_vars(env: dict[str, str]) -> list[str]:
    """``GIT_*`` variables of this process that ``env`` does not set itself, and that
    memvault does not keep (:data:`_KEPT_GIT_VARS`)."""
    return sorted(
        k for k in os.environ if k.startswith("GIT_") and k not in env and k not in _KEPT_GIT_VARS
    )


class CleanGit(git.Git):
    """GitPython's command runner, run in a clean environment.

    ``Git.execute`` builds each command's environment from a copy of ``os.environ``
    and can only add to it. ``GIT_*`` variables memvault inherits (``GIT_DIR`` and
    ``GIT_INDEX_FILE`` when it runs inside a git hook, a person's ``GIT_AUTHOR_NAME``)
    would redirect or re-attribute its commits, so they are unset with ``env -u`` (all but
    the few that say how to reach a remote and where the person's config is): nothing is
    prepended when none is set, which is the usual case.
    """

    def execute(self, command: Any, *args: Any, **kwargs: Any) -> Any:
        env = {**_CLEAN_ENV, **(kwargs.pop("env", None) or {})}
        where = self.working_dir
        if where is not None and not os.access(where, os.X_OK):
            # Git.execute would run git in this process's cwd instead: another repository
            raise MemvaultError(f"cannot run git in {where}: the folder is missing or locked")
        inherited = _inherited_git_vars(env)
        if inherited and not isinstance(command, str):
            unset = [arg for name in inherited for arg in ("-u", name)]
            command = ["env", *unset, *command]
        return super().execute(command, *args, env=env, **kwargs)


class VaultRepo(git.Repo):
    """A GitPython ``Repo`` whose commands (``repo.git``, ``init``) use :class:`CleanGit`."""

    GitCommandWrapperType = CleanGit


def _text(data: bytes) -> str:
    """Git output as text, exactly as ``subprocess``'s text mode reads it: UTF-8 with
    replacement characters, universal newlines."""
    text = data.decode("utf-8", "replace")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


@contextmanager
def _stdin(text: str | None) -> Iterator[IO[bytes] | None]:
    """A file holding ``text`` for git's stdin (pathspecs can exceed a pipe's buffer)."""
    if text is None:
        yield None
        return
    with tempfile.TemporaryFile() as handle:
        handle.write(text.encode("utf-8"))
        handle.seek(0)
        yield handle


def _whitespace_cleaned(message: str) -> str:
    """``message`` as ``git commit -F`` stores it (its "whitespace" clean-up): no trailing
    spaces, no runs of empty lines, none at either end, a final newline; "" if empty."""
    lines = [line.rstrip() for line in message.split("\n")]
    kept = [line for n, line in enumerate(lines) if line or (n and lines[n - 1])]
    text = "\n".join(kept).strip("\n")
    return text + "\n" if text else ""


def format_message(subject: str, trailers: dict[str, str]) -> str:
    lines = [subject.replace("\n", " ").strip()]
    clean = {k: " ".join(str(v).split()) for k, v in trailers.items() if v}
    if clean:
        lines.append("")
        lines.extend(f"{k}: {v}" for k, v in clean.items())
    return "\n".join(lines) + "\n"


class History:
    """The vault's git repository."""

    # set in every git process this History starts (a proposal worktree pins its ceiling)
    base_env: dict[str, str] = {}  # noqa: RUF012 (never mutated; replaced per instance)

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
        self._git = CleanGit(root)
        self._objects: Path | None = None  # the object folder, found at the first commit
        self._maintenance: threading.Thread | None = None  # git's packing, in the background

    # -- plumbing -----------------------------------------------------------
    def run(
        self,
        *args: str,
        check: bool = True,
        input_text: str | None = None,
        identity: bool = True,
        env: dict[str, str] | None = None,
    ) -> str:
        """Run git in the vault; retry with back-off while another writer holds a lock.

        A lock that no running git holds (left by a killed git) is removed, then retried.
        """
        if not git_available():
            raise MemvaultError("git is not installed or not on PATH: install git and retry")
        config = ["-c", "commit.gpgsign=false", "-c", "core.quotepath=false"]
        config += ["-c", "core.autocrlf=false", "-c", "core.hooksPath=/dev/null"]
        # a person's `core.safecrlf = true` with `eol=crlf` in .gitattributes would refuse to
        # stage every LF file memvault writes: git's conversion stays, its refusal does not
        config += ["-c", "core.safecrlf=false"]
        # memvault's trailers are `Key: value`; a person's trailer.separators without ":"
        # would hide them from `%(trailers)`: its commits would read as a person's edits
        config += ["-c", "trailer.separators=:"]
        # messages are written and read as UTF-8, whatever encodings the person set
        config += ["-c", "i18n.commitEncoding=UTF-8", "-c", "i18n.logOutputEncoding=UTF-8"]
        if identity:
            config += identity_config(self.author_name, self.author_email)
        cmd = ["git", "--literal-pathspecs", *config, *args]
        delay, deadline = 0.02, time.monotonic() + self.lock_retry_seconds
        while True:
            returncode, stdout, stderr = self._execute(cmd, input_text, env)
            if returncode == 0 or not check:
                return stdout
            busy = any(m in stderr for m in _LOCK_MARKERS) and _MOVED not in stderr
            if busy and time.monotonic() < deadline:
                if self.clear_stale_locks():
                    continue
                log.debug("git lock busy, retrying in %.2fs: %s", delay, stderr.strip())
                time.sleep(delay)
                delay = min(delay * 2, 0.5)
                continue
            raise GitError(list(args), returncode, stderr)

    def _execute(
        self, cmd: list[str], input_text: str | None, env: dict[str, str] | None
    ) -> tuple[int, str, str]:
        """One git command through GitPython's ``Git.execute``: exit code, stdout, stderr.

        Failures come back as an exit code, not as ``GitCommandError`` (whose ``stderr``
        is reformatted for display): the raw stderr is what lock detection reads.
        """
        returncode, stdout, stderr = self._execute_bytes(cmd, input_text, env)
        return returncode, _text(stdout), stderr

    def _execute_bytes(
        self, cmd: list[str], input_text: str | None, env: dict[str, str] | None
    ) -> tuple[int, bytes, str]:
        """:meth:`_execute` with stdout as git wrote it (``cat-file`` sizes count bytes)."""
        try:
            with _stdin(input_text) as stdin:
                returncode, stdout, stderr = self._git.execute(
                    cmd,
                    istream=stdin,
                    env={**self.base_env, **(env or {})},
                    with_extended_output=True,
                    with_exceptions=False,
                    stdout_as_string=False,
                    strip_newline_in_stdout=False,
                )
        except git.exc.GitCommandNotFound as exc:
            raise MemvaultError(f"git could not be started ({exc}): install git and retry") from exc
        text = _text(os.fsencode(stderr))
        if returncode and _DUBIOUS in text:
            found = _DUBIOUS_AT.search(text)
            folder = found.group(1) if found else str(self.root)
            raise UntrustedRepositoryError(cmd[1:], returncode, text, folder)
        return returncode, bytes(stdout), text

    def git_dir(self) -> Path:
        """The repository's git folder: ``.git``, or in a linked worktree (a client's
        proposals) the folder its ``.git`` file names."""
        dot_git = self.root / ".git"
        if dot_git.is_file():
            text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
            if text.startswith("gitdir:"):
                return (self.root / text.removeprefix("gitdir:").strip()).resolve()
        return dot_git

    def shallow(self) -> frozenset[str]:
        """The commits a shallow clone's history stops at (their parents were never
        fetched); empty for a full clone."""
        try:
            text = (self.git_dir() / "shallow").read_text(encoding="ascii")
        except (OSError, UnicodeDecodeError):
            return frozenset()
        return frozenset(line.strip() for line in text.splitlines() if line.strip())

    def shallow_hint(self) -> str:
        """What to add to "not in this history" in a shallow clone, else ""."""
        return SHALLOW_HINT if self.shallow() else ""

    @contextmanager
    def temp_files(self, *texts: str) -> Iterator[list[str]]:
        """``texts`` written as they are to files in the git folder (a commit message, a
        merge's three versions), for git commands that read files; removed afterwards."""
        names = []
        try:
            for text in texts:
                fd, name = tempfile.mkstemp(prefix=TEMP_PREFIX, dir=self.git_dir())
                names.append(name)
                with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
                    handle.write(text)
            yield names
        finally:
            for name in names:
                os.unlink(name)

    def temp_leftovers(self) -> list[Path]:
        """Files of :meth:`temp_files` that a kill left in the git folder (a commit message,
        a merge's versions of a memory): what a purge erases with the memory."""
        try:
            entries = list(os.scandir(self.git_dir()))
        except OSError:
            return []
        return [Path(e.path) for e in entries if _TEMP_FILE.fullmatch(e.name) and e.is_file()]

    def unfinished(self) -> bool:
        """Whether a git merge or rebase stopped half-way here (a person's to finish or abort):
        nothing may be committed over it."""
        return self.underway() is not None

    def underway(self) -> str | None:
        """``merge`` or ``rebase`` while git's stopped half-way through one here, else None."""
        git_dir = self.git_dir()
        return next((w for f, w in _UNDER_WAY if (git_dir / f).exists()), None)

    def unmerged(self) -> dict[str, dict[int, tuple[str, str]]]:
        """What git left unmerged (a merge's conflict, a `git stash pop`, a `checkout -m`):
        path -> stage (1 base, 2 ours, 3 theirs) -> (file mode, blob)."""
        out: dict[str, dict[int, tuple[str, str]]] = {}
        for entry in self.run("ls-files", "-u", "-z").split("\0"):
            head, tab, path = entry.partition("\t")
            parts = head.split()
            if tab and len(parts) == 3:
                out.setdefault(path, {})[int(parts[2])] = (parts[0], parts[1])
        return out

    def refuse_unfinished(self, what: str) -> None:
        """Raise :class:`InvalidInputError` while a merge or rebase is half-way: a commit
        over it would fail after the files were written, or join the person's merge."""
        if self.unfinished():
            raise InvalidInputError(
                f"a git merge or rebase is in progress in the vault: finish or abort it "
                f"(`git merge --continue` or `--abort`, `git rebase --abort`), then {what} "
                "again; nothing was written. An abort throws away files changed since: "
                "`memvault doctor` names them"
            )

    # -- locks left by killed git processes ------------------------------------
    def stale_locks(
        self, now: float | None = None, min_age: float = STALE_LOCK_SECONDS, proc: Path = PROC
    ) -> list[StaleLock]:
        """Git lock files that no running git can hold: none while a git that was already
        running when a lock was last written works in the vault.

        ``now`` (epoch seconds) and ``proc`` are parameters so tests need not wait.
        """
        found = list(_lock_files(self.git_dir()))
        if not found:
            return []
        starts = git_starts_in(self.root, proc)
        if starts is None:
            min_age = max(min_age, STALE_LOCK_SECONDS_BLIND)
        now = time.time() if now is None else now
        return [
            StaleLock(
                Path(os.path.relpath(path, self.root)).as_posix(), age, st.st_ino, st.st_mtime_ns
            )
            for path, st in found
            if (age := now - st.st_mtime) >= min_age
            # only a git already running when the lock was last written can hold it: one
            # started since (a person's `git log` in a pager) must not keep it for ever
            and not any(start <= st.st_mtime + START_SLACK_SECONDS for start in starts or ())
        ]

    def clear_stale_locks(self, now: float | None = None, proc: Path = PROC) -> list[StaleLock]:
        """Remove the locks :meth:`stale_locks` finds, each with a warning naming it."""
        removed = []
        for lock in self.stale_locks(now, proc=proc):
            path = self.root / lock.path
            try:
                st = path.stat()
                if (st.st_ino, st.st_mtime_ns) != (lock.inode, lock.mtime_ns):
                    continue  # replaced since it was judged: a live git owns it now
                path.unlink()
            except FileNotFoundError:
                continue
            except OSError as exc:
                log.warning("could not remove stale git lock %s: %s", path, exc)
                continue
            log.warning(
                "removed stale git lock %s (%.0fs old, no git process that ran when it was "
                "written runs in %s): "
                "a git process was killed while writing",
                path,
                lock.age,
                self.root,
            )
            removed.append(lock)
        return removed

    def is_repo(self) -> bool:
        """Whether the vault folder itself is a git repository (its parents do not count)."""
        try:
            VaultRepo(self.root).close()
        except (git.exc.InvalidGitRepositoryError, git.exc.NoSuchPathError):
            return False
        return True

    def init(self) -> None:
        if not git_available():
            raise MemvaultError("git is not installed or not on PATH: install git and retry")
        try:
            VaultRepo.init(self.root, initial_branch="main", quiet=True).close()
        except git.exc.GitCommandError as exc:
            stderr = str(exc.stderr).strip().removeprefix("stderr: '").removesuffix("'")
            status = exc.status if isinstance(exc.status, int) else -1
            raise GitError(["init", "--initial-branch=main"], status, stderr) from exc

    def head(self) -> str | None:
        out = self.run("rev-parse", "--verify", "-q", "HEAD", check=False).strip()
        return out or None

    def tip(self) -> str | None:
        """:meth:`head`, read from the ref files where it can be (no git process: a write
        asks before and after its commit)."""
        return self._head_sha() or self.head()

    def repo_identity(self) -> tuple[str, str]:
        """The repository's configured identity (a person's edits), else memvault's.

        Asked of git itself (one ``git config``), so it is what the person's git uses:
        system, global (``GIT_CONFIG_GLOBAL`` too, which GitPython's reader does not see),
        XDG, ``include``/``includeIf`` and repository config; the person's ``author.name``
        / ``author.email`` outrank their ``user.*``, as in git.
        """
        pattern = r"^(author|user)\.(name|email)$"
        try:  # without memvault's own `-c user.name=...`, which git config would report
            out = self.run("config", "--get-regexp", pattern, check=False, identity=False)
        except MemvaultError as exc:
            log.warning(
                "could not read the git identity in %s (%s): using memvault's", self.root, exc
            )
            return self.author_name, self.author_email
        found: dict[str, str] = {}
        for line in out.splitlines():  # in git's order of precedence: the last one wins
            key, _, value = line.partition(" ")
            if value.strip():
                found[key.lower()] = value.strip()
        name, email = (
            found.get(f"author.{k}") or found.get(f"user.{k}") for k in ("name", "email")
        )
        return name or self.author_name, email or self.author_email

    # -- writing ------------------------------------------------------------
    def commit(
        self,
        paths: Sequence[str],
        subject: str,
        trailers: dict[str, str] | None = None,
        as_person: bool = False,
        date: str | None = None,
    ) -> str | None:
        """Stage ``paths`` (adds, edits, deletions) and commit only them.

        ``date`` is the author date (a person's edit is dated when they saved it).
        Returns the new commit sha, or None when nothing changed.
        """
        self._refuse_nested(paths)
        paths = self._committable(paths)
        if not paths:
            return None
        before = self._head_sha()  # a file read: to tell another git client's commit apart
        # Paths go through stdin, not argv: an import of 50k files overflows the argument list.
        spec = "\0".join(paths)
        self._stage(self._not_staged_yet(paths))
        wanted = set(paths)
        staged = set(self.run("diff", "--cached", "--name-only", "--no-renames", "-z").split("\0"))
        staged.discard("")
        if not wanted.intersection(staged):
            return None
        message = format_message(subject, trailers or {})
        if staged <= wanted and date is None and not as_person:
            # the index holds exactly these paths' changes: it is the commit
            made = self._commit_index(message)
            if made is not None:
                return made
        args = ["commit", "--no-verify"]
        if not staged <= wanted:  # changes staged by someone else stay out of this commit
            args += ["--pathspec-from-file=-", "--pathspec-file-nul"]
        if date is not None:
            args.append(f"--date={date}")
        stdin = spec if "--pathspec-file-nul" in args else None
        try:
            return self._commit(args, message, as_person, stdin)
        except GitError:
            head = self._head_sha()
            if before is None or head == before or self._dirty(paths):
                raise
            # Another git client (obsidian-git's backup, a person's `git commit -a`) committed
            # these files between our staging and our commit: HEAD moved and holds them as
            # written, so they are in history, not lost; that commit is the answer.
            log.info("%d file(s) were committed by another git client meanwhile", len(paths))
            return head

    def _refuse_nested(self, paths: Sequence[str]) -> None:
        """Refuse paths inside another git repository in the vault (see :meth:`apart`):
        `git add` stages nothing there and says nothing, so the write would look like no
        change while the other repository's file was rewritten or moved."""
        for path, inner in self.apart(paths).items():
            raise GitError(
                ["add", "--", path],
                1,
                f"error: {inner}/ is another git repository inside the vault: memvault "
                f"cannot commit its files; move the notes out of {inner}/ (or add "
                f"{inner}/ to .memvaultignore)",
            )

    def apart(self, paths: Iterable[str]) -> dict[str, str]:
        """Of ``paths``, those inside another git repository in the vault (a cloned folder,
        a submodule), each with that repository's folder. A folder with files the vault
        tracks is the vault's, even with a ``.git`` of its own (git stages it as usual)."""
        found, judged = {}, {}
        for path in paths:
            parts = path.split("/")[:-1]
            for n in range(1, len(parts) + 1):
                inner = "/".join(parts[:n])
                if inner not in judged:
                    judged[inner] = os.path.lexists(self.root / inner / ".git") and self._apart(
                        inner
                    )
                if judged[inner]:
                    found[path] = inner
                    break
        return found

    def _apart(self, folder: str) -> bool:
        """Whether git keeps ``folder`` (which holds a ``.git``) out of the vault's
        repository: no file in it is tracked, or it is a submodule (a gitlink)."""
        entries = self.run("ls-files", "-s", "-z", "--", folder).split("\0")
        tracked = [e for e in entries if e]
        return not tracked or any(
            e.startswith("160000 ") and e.partition("\t")[2] == folder for e in tracked
        )

    def _stage(self, paths: Sequence[str]) -> None:
        """``git add -A`` of ``paths`` (of a path that is now a folder, the deletion of
        the file it was); a path git ignores (a .gitignore, ``info/exclude``
        or the person's ``core.excludesFile``) is refused naming the rule that ignores it."""
        folders = [
            p for p in paths if (self.root / p).is_dir() and not (self.root / p).is_symlink()
        ]
        if folders:  # a note a folder replaced: its deletion only (add would take the folder)
            spec = "\0".join(folders)
            self.run("update-index", "--force-remove", "-z", "--stdin", input_text=spec)
            paths = [p for p in paths if p not in folders]
        if not paths:
            return
        spec = "\0".join(paths)
        try:
            self.run("add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul", input_text=spec)
        except GitError as exc:
            rules = self._ignoring(paths) if "are ignored by one of your" in exc.stderr else ""
            if rules:
                why = (
                    f"git ignores {rules}: memvault commits every file it writes; remove that "
                    "rule, or add a `!` line for the path to the vault's .gitignore"
                )
            elif "sparse-checkout definition" in exc.stderr:
                named = [ln for ln in exc.stderr.splitlines() if ln in paths] or paths
                why = (
                    f"{named[0]} is outside the vault's sparse checkout: memvault commits every "
                    "file it writes; widen it (`git sparse-checkout add`) or end it "
                    "(`git sparse-checkout disable`)"
                )
            else:
                raise
            raise GitError(exc.command, exc.returncode, f"error: {why}") from exc

    def _ignoring(self, paths: Sequence[str]) -> str:
        """Which of ``paths`` git ignores and by which rule, in one line ("" for none)."""
        found = [f"{path} ({rule})" for path, rule in self.ignored(paths).items()]
        return ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")

    def ignored(self, paths: Sequence[str]) -> dict[str, str]:
        """The ``paths`` git ignores, each with the rule that does (`pattern` in file, line)."""
        if not paths:
            return {}
        spec = "".join(f"{path}\0" for path in paths)
        # not through run(): check-ignore takes paths, not pathspecs, and refuses
        # --literal-pathspecs
        _code, out, _err = self._execute(["git", "check-ignore", "-v", "-z", "--stdin"], spec, None)
        fields = out.split("\0")
        return {
            path: f"`{pattern}` in {source}, line {line}"
            for source, line, pattern, path in zip(*[iter(fields)] * 4, strict=False)
            if path
        }

    def last_by_op(self, op: str) -> dict[str, str]:
        """path -> the newest commit of HEAD's history with ``Memvault-Op: <op>`` that
        changed it, for the files no other commit deleted or created anew since (a note a
        person saved at a path an import once wrote is the person's). One ``git log``."""
        if self.head() is None:
            return {}
        fmt = "--format=%x01%H%x02%(trailers:key=Memvault-Op,valueonly,unfold)"
        out = self.run("log", fmt, "--name-status", "-z", "--no-renames")
        found: dict[str, str] = {}
        settled: set[str] = set()
        for record in out.split("\x01")[1:]:  # newest first
            head, _, rest = record.partition("\0")
            sha, _, ops = head.partition("\x02")
            fields = rest.lstrip("\n").split("\0")
            for status, path in zip(fields[::2], fields[1::2], strict=False):
                if not path or path in settled:
                    continue
                if op in ops.split():
                    found[path] = sha
                    settled.add(path)
                elif status in ("A", "D"):  # created anew or deleted by another commit
                    settled.add(path)
        return found

    def made_by_memvault(self) -> bool:
        """Whether some commit of the repository is memvault's (a vault, not only a repository)."""
        out = self.run("log", "--all", "-1", "--format=%H", "--grep=^Memvault-Op: ", check=False)
        return bool(out.strip())

    def _dirty(self, paths: Sequence[str]) -> bool:
        """Whether any of ``paths`` differs from HEAD (in the index or the work tree)."""
        for at in range(0, len(paths), 500):  # `status` takes no pathspec file
            chunk = paths[at : at + 500]
            if self.run("status", "--porcelain", "-z", "--", *chunk).strip("\0"):
                return True
        return False

    def _commit_index(self, message: str) -> str | None:
        """Commit the index as it stands on top of HEAD with git's plumbing: ``write-tree``,
        ``commit-tree``, then ``update-ref`` from the parent to the new commit, which git
        refuses if HEAD moved meanwhile. ``git commit`` makes the same commit but first
        refreshes the stat data of every index entry (an ``lstat`` per file) and writes the
        index again: at 10k files 42 -> 25 ms of git's CPU, 108 -> 70 ms at load 5.
        None when this way does not apply (no commit yet, not a plain repository, an empty
        message, an index git cannot make a tree of, HEAD moved): ``git commit`` then runs,
        with its own answer."""
        parent = self._head_sha()
        text = _whitespace_cleaned(message)
        if parent is None or not text:
            return None
        try:
            tree = self.run("write-tree").strip()
        except GitError:
            return None
        with self.temp_files(text) as (message_file,):
            sha = self.run("commit-tree", tree, "-p", parent, "-F", message_file).strip()
        try:  # as `git commit` moves HEAD (and logs it so in the reflog)
            self.run("update-ref", "-m", f"commit: {text.split(chr(10))[0]}", "HEAD", sha, parent)
        except GitError:
            return None  # the commit object stays unreferenced; git gc drops it
        self._tidy()
        return sha

    def _head_sha(self) -> str | None:
        """The commit HEAD points at, read from the files of a plain repository (loose or
        packed ref); None when it cannot be read that way (then git is asked instead)."""
        git_dir = self.root / ".git"
        try:
            head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
            if not head.startswith("ref: "):
                return head if _FULL_SHA.fullmatch(head) else None
            ref = head[len("ref: ") :]
            if (git_dir / ref).is_file():
                sha = (git_dir / ref).read_text(encoding="utf-8").strip()
                return sha if _FULL_SHA.fullmatch(sha) else None
            for line in (git_dir / "packed-refs").read_text(encoding="utf-8").splitlines():
                sha, _, name = line.partition(" ")
                if name == ref and _FULL_SHA.fullmatch(sha):
                    return sha
        except (OSError, UnicodeDecodeError):
            return None
        return None

    def _commit(
        self, args: list[str], message: str, as_person: bool, stdin: str | None = None
    ) -> str | None:
        """Run ``git commit`` with the message in a file (stdin may carry pathspecs)."""
        if as_person:
            args = [*identity_config(*self.repo_identity()), *args]
        with self.temp_files(message) as (message_file,):
            # not quiet, full hashes: git's summary line names the commit ("[main <sha>]
            # subject"), so no `rev-parse HEAD` after it. No `git maintenance run --auto`
            # after it either (a process per commit): see _tidy
            config = ["-c", "core.abbrev=no", "-c", "maintenance.auto=false"]
            out = self.run(*config, *args, "-F", message_file, input_text=stdin)
        self._tidy()
        made = _SUMMARY.match(out)
        return made.group(1) if made else self.head()

    def _tidy(self) -> None:
        """What ``git commit`` does after each commit, only when it has work: git packs
        loose objects (``gc --auto``) once about 6,700 are loose, which it estimates from the
        objects/17 folder; that estimate is one directory listing here, and the maintenance
        (which checks again, honouring the repository's settings) runs in the background."""
        if self._objects is None:  # no git process for a plain repository
            plain = (self.root / ".git").is_dir()
            common = ".git" if plain else self.run("rev-parse", "--git-common-dir", check=False)
            self._objects = self.root / common.strip() / "objects"
        if self._maintenance is not None and self._maintenance.is_alive():
            return  # one at a time: loose objects stay counted until it has packed them
        try:  # object names only, as git counts them (not tmp_obj_* files)
            loose = sum(1 for e in os.scandir(self._objects / "17") if _LOOSE.fullmatch(e.name))
        except OSError:
            return
        if loose > -(-GC_AUTO_LOOSE // 256):  # as git rounds it
            self._maintenance = threading.Thread(
                target=self._maintain, name="memvault-git-maintenance", daemon=True
            )
            self._maintenance.start()

    def _maintain(self) -> None:
        try:
            self.run("maintenance", "run", "--auto", "--quiet", check=False)
        except MemvaultError as exc:  # the vault was closed or moved meanwhile
            log.debug("background git maintenance did not run: %s", exc)

    def _committable(self, paths: Sequence[str]) -> list[str]:
        """Drop paths that neither exist nor are tracked (created and deleted unseen)."""
        missing = [p for p in paths if not (self.root / p).exists()]
        if not missing:
            return list(paths)
        tracked: set[str] = set()
        # --with-tree=HEAD: a path already removed from the index (`git mv`, `git rm`) still
        # counts, so its deletion is committed with the rest.
        with_tree = ["--with-tree=HEAD"] if self.head() else []
        for at in range(0, len(missing), 500):
            chunk = missing[at : at + 500]
            tracked.update(self.run("ls-files", "-z", *with_tree, "--", *chunk).split("\0"))
        return [p for p in paths if p not in missing or p in tracked]

    def _not_staged_yet(self, paths: Sequence[str]) -> list[str]:
        """``paths`` minus deletions already staged (`git mv`, `git rm`): `git add` would
        fail on a path that is neither in the work tree nor in the index."""
        missing = [p for p in paths if not os.path.lexists(self.root / p)]
        if not missing:
            return list(paths)
        in_index: set[str] = set()
        for at in range(0, len(missing), 500):
            in_index.update(self.run("ls-files", "-z", "--", *missing[at : at + 500]).split("\0"))
        return [p for p in paths if p not in missing or p in in_index]

    def commit_empty(self, subject: str, trailers: dict[str, str]) -> str | None:
        """A commit that changes no file: a record in the log (for example of a purge)."""
        args = ["commit", "--no-verify", "--allow-empty"]
        return self._commit(args, format_message(subject, trailers), as_person=False)

    def uncommitted(self) -> list[str]:
        """Paths with changes not yet committed (ignored files excluded)."""
        return [path for path, _source in self._status()]

    def changed_paths(self) -> list[str]:
        """Every path with uncommitted changes, both sides of a staged rename included."""
        return [p for path, source in self._status() for p in (path, source) if p]

    def _status(self) -> list[tuple[str, str | None]]:
        """(path, the source of a staged rename or copy, else None) of every change."""
        out = self.run("status", "--porcelain=v1", "-z", "--untracked-files=all")
        entries, found, i = out.split("\0"), [], 0
        while i < len(entries):
            entry, source = entries[i], None
            if len(entry) > 3:
                if entry[0] in "RC" and i + 1 < len(entries):
                    i += 1
                    source = entries[i]
                found.append((entry[3:], source))
            i += 1
        return found

    def staged_paths(self) -> list[str]:
        """Paths whose staged content differs from HEAD (renames as deletion + addition)."""
        if self.head() is None:
            return []
        out = self.run("diff", "--cached", "--name-only", "--no-renames", "-z")
        return [p for p in out.split("\0") if p]

    # -- reading ------------------------------------------------------------
    def log(
        self, path: str | None = None, limit: int | None = None, rev: str | None = None
    ) -> list[Commit]:
        """Commits, newest first (of ``rev``'s history, else HEAD's); for one path,
        following renames, also a move git did not see as one (:meth:`_moved_unseen`)."""
        # --cc: a merge lists the files it holds in a version neither parent had (a
        # person's resolution of a conflict), which plain --name-status leaves out
        args = ["log", f"--format={_LOG_FORMAT}", "--name-status", "--cc", "-z"]
        if limit and path is None:  # a file's log is cut after the merges are dropped
            args.append(f"-n{limit}")
        if rev is not None:
            args.append(rev)
        if path is not None:
            args += ["--follow", "--", path]
        if self.head() is None:
            return []
        found = [c for c in (_parse_record(r, path) for r in _split(self.run(*args))) if c]
        if path is not None:  # --follow also lists merges that took one side's version
            found = [c for c in found if c.path is not None]
        if path is not None and found and (not limit or len(found) < limit):
            earlier = self._moved_unseen(found[-1], found[-1].path or path)
            if earlier is not None:
                left = limit - len(found) if limit else None
                found += self.log(earlier, left, rev=f"{found[-1].sha}^")
        return found[:limit] if limit else found

    def log_of(
        self, path: str, memory_id: str | None = None, rev: str | None = None
    ) -> list[Commit]:
        """The commits of the memory now (or last) at ``path`` (``memory_id``, else the id
        its newest version gives), newest first: :meth:`log` of the path less the commits
        of another memory that stood there (:func:`_own`), and, when a sync's merge moved
        it (two machines filed two memories at one path: one went to ``-2``; git follows
        no such move), its history before the merge."""
        found = self.log(path, rev=rev)
        versions = [(c.sha, c.path or path) for c in found]
        versions += [(f"{c.sha}^", _name_before(c, path)) for c in found]
        texts = self.texts_at([(rev or "HEAD", path), *versions])
        memory_id = memory_id or next((i for i in map(_front_id, texts) if i), None)
        if memory_id is None:  # a note without an id: its path's history
            return found
        own = _own(found, texts[1 : len(found) + 1], texts[len(found) + 1 :], memory_id)
        oldest = own[-1] if own else None
        name = _name_before(oldest, path) if oldest else path
        at = (f"{oldest.sha}^" if name != oldest.path else oldest.sha) if oldest else rev
        added = self.run("log", "-m", "--first-parent", "--diff-filter=A", "-1", "--name-status",
                         "-z", f"--format={_LOG_FORMAT}", at or "HEAD", "--", name)  # fmt: skip
        merge = next((c for c in (_parse_record(r, name) for r in _split(added)) if c), None)
        came = self._merged_from(merge.sha, memory_id) if merge else None
        if merge is None or came is None or any(c.sha == merge.sha for c in own):
            return own
        return [*own, merge, *self.log_of(came[1], memory_id, rev=came[0])]

    def _merged_from(self, merge: str, memory_id: str) -> tuple[str, str] | None:
        """(parent, path): where, in a parent other than the first, the merge ``merge``
        found the memory ``memory_id`` it wrote elsewhere (None: not a merge, or no such)."""
        for parent in self.run("rev-list", "--parents", "-n1", merge).split()[2:]:
            out = self.run(
                "diff", "--name-only", "--no-renames", "--diff-filter=MD", "-z", parent, merge
            )
            names = [n for n in out.split("\0") if n]
            for name, text in zip(names, self.texts_at([(parent, n) for n in names]), strict=True):
                if _front_id(text) == memory_id:
                    return parent, name
        return None

    def _moved_unseen(self, commit: Commit, name: str) -> str | None:
        """The name the file ``name`` had before ``commit`` added it, where the commit moved
        it and changed it too much for git's rename detection (a short note archived: the
        new frontmatter lines outweigh its text): the file the commit deleted whose ``id:``
        (or, for a note without one, the id derived from its path) is the added file's."""
        out = self.run("diff-tree", "-r", "--root", "--no-commit-id", "--no-renames",
                       "--name-status", "-z", commit.sha)  # fmt: skip
        fields = out.split("\0")
        changes = list(zip(fields[0::2], fields[1::2], strict=False))
        deleted = [p for status, p in changes if status == "D"]
        if ("A", name) not in changes or not deleted:
            return None
        parent = f"{commit.sha}^"
        texts = self.texts_at([(commit.sha, name), *((parent, p) for p in deleted)])
        wanted = _front_id(texts[0])
        for old, text in zip(deleted, texts[1:], strict=True):
            if wanted and text is not None and (_front_id(text) or derived_id(old)) == wanted:
                return old
        return None

    def commits_since(self, since: str | None = None, tip: str = "HEAD") -> list[Commit]:
        """Commits after ``since`` (every commit when None) up to ``tip``, oldest first,
        renames detected."""
        if self.head() is None:
            return []
        args = ["log", "--reverse", "-M", f"--format={_LOG_FORMAT}", "--name-status", "-z"]
        args.append(tip if since is None else f"{since}..{tip}")
        return [c for c in (_parse_record(r, None) for r in _split(self.run(*args))) if c]

    def commit_before(self, moment: str) -> str | None:
        """The last commit made at or before ``moment`` (ISO time), or None: of HEAD's
        first parents, what the vault's folder held then (a branch merged later, a sync's
        other machine, had commits of its own at that time that the folder did not)."""
        if self.head() is None:
            return None
        out = self.run("rev-list", "-1", "--first-parent", f"--before={moment}", "HEAD")
        return out.strip() or None

    def commit_time(self, rev: str) -> str:
        """When commit ``rev`` was made (committer date, ISO 8601)."""
        return self.run("show", "-s", "--format=%cI", self._rev(rev)).strip()

    def tree(self, rev: str) -> dict[str, str]:
        """Every file in the tree of commit ``rev``: path -> blob sha."""
        out = self.run("ls-tree", "-r", "-z", "--full-tree", self._rev(rev))
        files = {}
        for entry in out.split("\0"):
            head, _, path = entry.partition("\t")
            parts = head.split()
            if path and len(parts) == 3 and parts[1] == "blob":
                files[path] = parts[2]
        return files

    def blob_bytes(self, shas: Iterable[str]) -> dict[str, bytes]:
        """The bytes of each blob (one ``cat-file --batch`` call); unknown ones left out."""
        wanted = [s for s in dict.fromkeys(shas) if s and s.strip("0")]
        if not wanted:
            return {}
        code, out, err = self._execute_bytes(
            ["git", "cat-file", "--batch"], "\n".join(wanted) + "\n", None
        )
        if code:
            raise GitError(["cat-file", "--batch"], code, err)
        return _parse_batch(out)

    def merge_lines(self, base: str, ours: str, theirs: str) -> str | None:
        """A three-way line merge of two texts with ``git merge-file``; None on overlap."""
        with self.temp_files(ours, base, theirs) as names:
            try:
                return self.run("merge-file", "-p", "--quiet", *names)
            except GitError:
                return None  # overlapping changes (exit code: how many)

    def texts_at(self, versions: Sequence[tuple[str, str]]) -> list[str | None]:
        """The text of each ``(commit, path)`` (None where the commit has no such file):
        two git calls for any number of versions."""
        if not versions:
            return []
        names = "".join(f"{sha}:{path}\n" for sha, path in versions)
        found = self.run("cat-file", "--batch-check", input_text=names).splitlines()
        blobs = [
            parts[0] if len(parts) == 3 and parts[1] == "blob" else None
            for parts in (line.split() for line in found)
        ]
        data = self.blob_bytes(b for b in blobs if b)
        return [data[b].decode("utf-8", "replace") if b in data else None for b in blobs]

    def file_bytes(self, rev: str, path: str) -> bytes:
        """The file ``path`` of commit ``rev`` exactly as committed (line endings, bytes
        that are not UTF-8): what a revert writes back."""
        spec = f"{self._rev(rev)}:{path}"
        code, out, err = self._execute_bytes(["git", "cat-file", "blob", spec], None, None)
        if code:
            raise GitError(["cat-file", "blob", spec], code, err)
        return out

    def show(self, rev: str, path: str) -> str:
        return self.run("show", f"{self._rev(rev)}:{path}")

    def diff(self, rev: str, path_at_rev: str, current_path: str) -> str:
        """Unified diff from ``rev``'s version of the memory to the working file: git's own,
        whatever the person's ``diff.external`` or ``textconv`` drivers would show instead,
        with git's usual ``a/`` and ``b/`` whatever ``diff.noprefix`` says."""
        return self.run(*GITS_OWN_DIFF, self._rev(rev), "--", path_at_rev, current_path)

    def resolve(self, rev: str) -> str:
        return self._rev(rev)

    def _rev(self, rev: str) -> str:
        if not rev or rev.startswith("-"):
            raise MemvaultError(f"{rev!r} is not a revision: give a commit sha from `log`")
        out = self._verified(rev)
        if not out:
            raise MemvaultError(
                f"unknown revision {rev!r}{self.shallow_hint()}: pick one from `memvault log`"
            )
        return out

    def _verified(self, rev: str) -> str | None:
        """The commit ``rev`` names, or None; a short sha that several commits start with
        is refused as such (git's ``-q`` would make it read as unknown)."""
        try:
            return self.run("rev-parse", "--verify", f"{rev}^{{commit}}").strip() or None
        except UntrustedRepositoryError:
            raise
        except GitError as exc:
            if "is ambiguous" not in exc.stderr:
                return None
            raise InvalidInputError(
                f"{rev!r} is the start of more than one commit's sha: give more of it "
                "(`memvault log` shows 10 characters)"
            ) from exc

    # -- what changed, for the feed of changes -------------------------------------
    def commit_of(self, rev: str) -> str | None:
        """The full sha of the commit ``rev`` names in this repository, else None."""
        if not rev or rev.startswith("-") or self.head() is None:
            return None
        return self._verified(rev)

    def is_ancestor(self, sha: str, of: str) -> bool:
        """Whether commit ``sha`` is in the history of ``of`` (itself included)."""
        return self.run("merge-base", sha, of, check=False).strip() == sha

    def deltas(self, revs: str, since: str | None, skip: int, count: int) -> list[Deltas]:
        """Commits of ``revs`` (e.g. ``a1b2c3..HEAD``), newest first, ``count`` of them
        after the first ``skip`` (committed at ``since`` or later), with the files each
        changed: one ``git log`` with raw entries (status, blobs) and line counts."""
        args = ["log", "-z", "--raw", "--numstat", "-M", "--root", "--no-abbrev", "--no-color"]
        args += ["--no-show-signature", f"--format={_DELTA_FORMAT}", f"--skip={skip}", f"-n{count}"]
        if since:
            args.append(f"{self._since_option()}={since}")
        out = self.run(*args, revs, "--")
        return [c for c in (_parse_deltas(r) for r in _split(out)) if c]

    def spine(self, revs: str, since: str | None) -> list[tuple[str, bool]]:
        """The first-parent commits of ``revs`` (committed at ``since`` or later), oldest
        first, each with whether it is a merge."""
        since_args = [f"{self._since_option()}={since}"] if since else []
        out = self.run("rev-list", "--first-parent", "--reverse", "--parents", *since_args, revs)
        return [(line.split()[0], len(line.split()) > 2) for line in out.splitlines() if line]

    def _since_option(self) -> str:
        """git's ``--since`` stops the walk at the first commit dated before it, so one
        commit made with a wrong clock (1970 on a board without a real-time clock) hides
        every older one; ``--since-as-filter`` (git 2.38+) looks at them all."""
        return "--since-as-filter" if self._git.version_info >= (2, 38) else "--since"

    def settled_by_merge(self, sha: str) -> dict[str, str]:
        """The files a merge commit holds in a version neither parent had (what the merge
        itself settled: memvault's merge of a conflict), each with its blob there."""
        names = [n for n in self.run("diff-tree", "--cc", "--name-only", "-z", sha).split("\0")]
        paths = [n for n in names[1:] if n]  # the first entry is the commit's own name
        if not paths:
            return {}
        out = self.run("ls-tree", "-z", sha, "--", *paths)
        found = {}
        for entry in out.split("\0"):
            meta, _, path = entry.partition("\t")
            parts = meta.split()
            if len(parts) == 3 and parts[1] == "blob":
                found[path] = parts[2]
        return found

    def blobs(self, shas: Iterable[str], max_bytes: int) -> dict[str, str]:
        """The text of each blob of ``shas`` up to ``max_bytes`` long (larger ones are left
        out): sizes from ``cat-file --batch-check``, contents from one ``cat-file --batch``."""
        wanted = [s for s in dict.fromkeys(shas) if s and s.strip("0")]
        if not wanted:
            return {}
        sizes = self.run("cat-file", "--batch-check", input_text="\n".join(wanted) + "\n")
        small = [
            parts[0]
            for parts in (line.split() for line in sizes.splitlines())
            if len(parts) == 3 and parts[1] == "blob" and int(parts[2]) <= max_bytes
        ]
        return {
            sha: data.decode("utf-8", "replace") for sha, data in self.blob_bytes(small).items()
        }

    def names_in_history(self, path: str) -> list[str]:
        """Every path the file at ``path`` had, following renames (see :meth:`lineage`)."""
        return self.lineage(path)[0]

    def lineage(
        self, path: str, rev: str | None = None, memory_id: str | None = None
    ) -> tuple[list[str], set[str]]:
        """Every path the file at ``path`` (in ``rev``, else HEAD) had, following renames,
        and the commits that changed it under them.

        ``git log --follow`` also follows a *copy* of a similar file (a memory that
        supersedes another is written in the same commit as the other's change): a source
        still in that commit and still in the work tree (in ``rev``) is another file, and
        the walk stops there (its older commits are that file's history, not this one's).
        With ``memory_id``, it also stops at a commit that deleted a file at that name
        which was not that memory: what stood there before is another note.
        """
        names, commits = [path], set[str]()
        for commit in self.log(path, rev=rev):
            if memory_id and commit.path in commit.deleted:
                gone = self.texts_at([(f"{commit.sha}^", commit.path)])[0]
                if _front_id(gone) != memory_id:  # not the memory deleted, then restored
                    return names, commits
            commits.add(commit.sha)
            if commit.path and commit.path not in names:
                names.append(commit.path)
            for old, _new in commit.renames:
                there = self._in_commit(rev, old) if rev else (self.root / old).exists()
                if there and self._in_commit(commit.sha, old):
                    return names, commits
                if old not in names:
                    names.append(old)
        return names, commits

    def _in_commit(self, sha: str, path: str) -> bool:
        return bool(self.run("ls-tree", "--name-only", sha, "--", path, check=False).strip())

    # -- privacy ------------------------------------------------------------
    def paths_holding(self, pattern: str) -> list[str]:
        """Every path at which some commit of any ref (merges too) added or removed a line
        matching the extended regex ``pattern``: where a memory's ``id:`` line ever was."""
        out = self.run(
            "log", "--all", "-m", "--no-renames", "--format=", "--name-only", "-z",
            "-E", f"-G{pattern}",
        )  # fmt: skip
        return list(dict.fromkeys(p for p in out.split("\0") if p.strip()))

    def last_path_of(self, memory_id: str) -> str | None:
        """The path where HEAD's history last added or removed the line ``id: memory_id``
        (a memory deleted since: what its log and revert read), else None."""
        if self.head() is None:
            return None
        pattern = f"^id:[[:space:]]*[\"']?{memory_id}([\"'[:space:]]|$)"
        out = self.run("log", "-1", "--no-renames", "--format=", "--name-only", "-z", "-E",
                       f"-G{pattern}", "HEAD")  # fmt: skip
        return next((p for p in out.split("\0") if p.strip()), None)

    def last_held(self, memory_id: str) -> tuple[str, str] | None:
        """``(commit, path)``: the newest version of a memory whose file is gone, the
        parent of the commit that took its ``id:`` line away (HEAD's history first, then
        any ref's), else None. When that commit kept the file, without the line (a person
        removed it), the file is the memory's until a later commit of HEAD deleted it."""
        pattern = f"^id:[[:space:]]*[\"']?{memory_id}([\"'[:space:]]|$)"
        for refs in (["HEAD"], ["--all"]):
            out = self.run("log", "-1", "--no-renames", "--format=%H", "--name-only", "-z",
                           "-E", f"-G{pattern}", *refs, check=False)  # fmt: skip
            sha, *paths = [field.strip() for field in out.split("\0") if field.strip()] or [""]
            for path in paths:
                now, before = self.texts_at([(sha, path), (f"{sha}^", path)])
                if _front_id(now) == memory_id:
                    return sha, path
                if _front_id(before) != memory_id:
                    continue
                gone = self.run("log", "--reverse", "--no-renames", "--diff-filter=D",
                                "--format=%H", f"{sha}..HEAD", "--", path).split()  # fmt: skip
                return (f"{gone[0]}^" if now is not None and gone else f"{sha}^"), path
        return None

    def first_holders(self, groups: dict[str, dict[str, str]]) -> dict[str, str]:
        """For each id, of its ``paths`` (path -> the path it was first committed at), the
        one whose first path gained the line ``id: <id>`` in the oldest commit of HEAD's
        history: the same answer on every clone. Within one commit, and among files never
        committed with it (which lose to committed ones), the smallest path; of two with one
        first path, the one that moved away from it. One ``git
        log`` for every id (a copied folder shares hundreds)."""
        found = {memory_id: min(paths) for memory_id, paths in groups.items()}
        if self.head() is None or not groups:
            return found
        ids = "|".join(re.sub(r"([.^$*+?()\[\]{}|\\])", r"\\\1", i) for i in groups)
        pattern = f"^id:[[:space:]]*[\"']?({ids})([\"'[:space:]]|$)"
        # of two files with one first path (`git mv a b`, then `cp b a`), the one that moved
        # from it is the older (set last, it stays); then the smallest path
        firsts = {
            memory_id: {first: path for path, first in _moved_last(paths)}
            for memory_id, paths in groups.items()
        }
        every = sorted({first for named in firsts.values() for first in named})
        out = self.run("log", "--reverse", "--no-renames", "--format=%x01", "--name-only",
                       "-z", "-E", f"-G{pattern}", "HEAD", "--", *every, check=False)  # fmt: skip
        open_ids = dict(firsts)
        for commit in out.split("\x01"):
            files = set(commit.strip("\0\n").split("\0"))
            for memory_id, named in list(open_ids.items()):
                held = [named[p] for p in files if p in named]
                if held:
                    found[memory_id] = min(held)
                    del open_ids[memory_id]
            if not open_ids:
                break
        return found

    def _holding(
        self, wanted: dict[str, set[str]], spare: frozenset[tuple[str, str]] = frozenset()
    ) -> dict[str, list[str]]:
        """For every commit of every ref: which of ``wanted``'s paths hold one of the blobs
        wanted there, but the ``(commit, path)`` of ``spare`` (one ``cat-file
        --batch-check`` for all commit:path pairs)."""
        commits = self.run("rev-list", "--all").split()
        pairs = [(c, p) for c in commits for p in wanted]
        if not pairs:
            return {}
        listing = "".join(f"{c}:{p}\n" for c, p in pairs)
        found = self.run("cat-file", "--batch-check=%(objectname)", input_text=listing)
        out: dict[str, list[str]] = {}
        for (commit, path), line in zip(pairs, found.splitlines(), strict=True):
            if line.split(" ", 1)[0] in wanted[path] and (commit, path) not in spare:
                out.setdefault(commit, []).append(path)
        return out

    def other_lives(self, blob: str, path: str, lineage: set[str], rest: set[str]) -> set[str]:
        """The commits of any ref holding ``blob`` at ``path`` whose last change there is
        none of ``lineage`` (a file's commits) but one of ``rest`` (the others that put it
        there or took it away): another file with the same bytes. None unless one of
        ``rest`` holds it (a deletion or an edit of the file: one call, not one a commit)."""
        holders = self._holding({path: {blob}})
        if not rest & holders.keys():
            return set()
        found = set()
        for commit in holders:
            last = self.run("log", "-1", "--format=%H", commit, "--", path).strip()
            if last not in lineage:
                found.add(commit)
        return found

    def blobs_at(self, paths: Sequence[str]) -> dict[str, set[str]]:
        """Every blob any commit of any ref (merges too) put at or took from ``paths``:
        blob sha -> the commits that changed it there."""
        if not paths:
            return {}
        out = self.run(
            "log", "--all", "-m", "--no-renames", "--format=%x01%H", "--raw", "--no-abbrev",
            "-z", "--", *paths,
        )  # fmt: skip
        found: dict[str, set[str]] = {}
        commit = ""
        for raw in out.split("\0"):
            field = raw.strip("\n")
            if field.startswith("\x01"):
                commit = field[1:].split("\n", 1)[0]
            elif field.startswith(":"):  # :old_mode new_mode old_sha new_sha status
                for sha in field.split()[2:4]:
                    if sha.strip("0"):
                        found.setdefault(sha, set()).add(commit)
        return found

    def purge(
        self,
        versions: Iterable[tuple[str, str]],
        names: Iterable[str],
        keep: Iterable[str] = (),
        others: Iterable[str] = (),
        spare: Iterable[tuple[str, str]] = (),
    ) -> None:
        """Take each ``(blob, path)`` version out of every commit of every ref that holds
        that blob at that path but the ``(commit, path)`` of ``spare`` (another file, even
        at a path a purged version once had or with the same bytes, stays), replace
        ``names`` in commit messages but those of ``others`` (commits of another file at
        one of those names), then drop old objects. An annotated tag is written anew on its
        rewritten commit (a signed one loses its signature). The commits of ``keep`` stay
        even when left with their parent's tree (a stash entry's parts: see stashes.py)."""
        names = list(dict.fromkeys(names))
        wanted: dict[str, set[str]] = {}
        for blob, path in versions:
            if "\n" in path:
                raise MemvaultError(f"{path!r}: a file name holding a newline cannot be purged")
            wanted.setdefault(path, set()).add(blob)
        for left in self.git_dir().glob(f"{_PURGE_PREFIX}*"):  # a purge killed before
            shutil.rmtree(left, ignore_errors=True)  # (the caller holds the write lock)
        folder = Path(tempfile.mkdtemp(prefix=_PURGE_PREFIX, dir=self.git_dir()))
        try:
            for mark in [*(f"keep-{sha}" for sha in keep), *(f"msg-{sha}" for sha in others)]:
                (folder / mark).touch()
            for commit, paths in self._holding(wanted, frozenset(spare)).items():
                (folder / commit).write_bytes(b"".join(os.fsencode(p) + b"\0" for p in paths))
            self.run(
                "filter-branch",
                "--force",
                # its scratch folder (the purged names, an index of the purged blobs) in
                # .git: by default `.git-rewrite/` in the vault, where a kill left it for
                # the next write to commit as the person's files
                "-d",
                str(folder / "rewrite"),
                "--commit-filter",
                _COMMIT_FILTER,
                "--index-filter",
                _INDEX_FILTER,
                "--msg-filter",
                _MSG_FILTER,
                "--tag-name-filter",  # annotated tags too: a tag object names its commit
                "cat",
                "--",
                "--all",
                env={
                    "MEMVAULT_PURGE_DIR": str(folder),
                    "MEMVAULT_PURGED": "\n".join(names),
                    "MEMVAULT_PURGED_AS": PURGED_NAME,
                },
            )
            refs = self.run("for-each-ref", "--format=%(refname)", "refs/original/").split()
            for ref in refs:
                self.run("update-ref", "-d", ref)
            self.drop_unreachable()
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def drop_unreachable(self, reflogs: Sequence[str] = ()) -> None:
        """Delete every object no ref reaches now, once the reflogs of ``reflogs`` (all of
        them when none are named) are forgotten: what a purge erased, or the remote's old
        history once a purge reached the remote or this clone. The caller holds the write
        lock (a concurrent write's new objects are unreachable until it commits)."""
        named = [r for r in reflogs if self.commit_of(r)]  # git refuses a ref that is not
        if named or not reflogs:
            self.run("reflog", "expire", "--expire=now", *(named or ["--all"]))
        self.run("gc", "-q", "--prune=now")

    # -- following one file -------------------------------------------------
    def knows(self, path: str) -> bool:
        """True when some commit touched ``path`` (a deleted file's history is still there)."""
        if self.head() is None:
            return False
        return bool(self.run("log", "-1", "--format=%H", "--", path).strip())

    def exists_at(self, rev: str, path: str) -> bool:
        out = self.run("ls-tree", "--name-only", rev, "--", path, check=False)
        return out.strip() == path

    def path_at(self, path: str, rev: str) -> str:
        """The name the file now at ``path`` had at ``rev`` (following renames)."""
        sha = self.resolve(rev)
        if self.exists_at(sha, path):  # the first name tried anyway: no followed log
            return path
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


def _lock_files(git_dir: Path) -> Iterator[tuple[Path, os.stat_result]]:
    """Lock files git may leave: index, HEAD, config, next-index-*, refs and reflogs."""
    if not git_dir.is_dir():
        return
    candidates = [*git_dir.glob("*.lock"), *(git_dir / "objects" / "info").glob("*.lock")]
    for sub in ("refs", "logs"):
        candidates += (git_dir / sub).rglob("*.lock")
    for path in candidates:
        try:
            yield path, path.stat()
        except OSError:
            continue  # gone meanwhile


def git_starts_in(root: Path, proc: Path = PROC) -> list[float] | None:
    """When each git process working in ``root`` (its cwd or ``-C`` inside it) started,
    in epoch seconds (``-inf`` when unknown: it may hold any lock).

    None when processes cannot be seen (no /proc): the caller must fall back to age.
    """
    if not (proc / "self").exists():
        return None
    root, boot = root.resolve(), _boot_time(proc)
    starts = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = _argv(entry)
            if not any(_is_git(arg) for arg in [*argv[:2], _exe(entry)]):
                continue
            # a git still starting (argv not readable yet) counts wherever it works
            if _reads_only(argv):
                continue  # a person's `git log` in a pager all day holds no lock
            if argv == [""] or _works_in(root, Path(os.readlink(entry / "cwd")), argv):
                starts.append(_started(entry, boot))
        except OSError:
            continue  # ended meanwhile, or not ours to see
    return starts


def _reads_only(argv: list[str]) -> bool:
    """Whether a git command line runs a command that never takes a lock (``git log``,
    ``git -C x --no-pager show``): git's options before the command skipped, an alias
    or anything unknown counts as one that may (``git diff`` may refresh the index)."""
    args = iter(argv[1:])
    for arg in args:
        if arg in _GIT_VALUE_OPTIONS:
            next(args, None)
        elif not arg.startswith("-"):
            return arg in _READERS
    return False


_GIT_VALUE_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace"})
_READERS = frozenset({"log", "show", "blame", "annotate", "shortlog", "whatchanged", "grep"})


def _works_in(root: Path, where: Path, argv: list[str]) -> bool:
    places = [where]  # before and after git applies its -C options
    for flag, value in itertools.pairwise(argv):
        if flag == "-C":
            places.append(Path(os.path.normpath(places[-1] / value)))
    return any(place == root or root in place.parents for place in places)


def _boot_time(proc: Path) -> float | None:
    try:
        for line in (proc / "stat").read_text().splitlines():
            if line.startswith("btime "):
                return float(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def _started(entry: Path, boot: float | None) -> float:
    """A process's start in epoch seconds (field 22 of its stat, in ticks since boot)."""
    try:
        fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        ticks = float(fields[19])
    except (OSError, IndexError, ValueError):
        return -math.inf
    return -math.inf if boot is None else boot + ticks / os.sysconf("SC_CLK_TCK")


def _argv(entry: Path) -> list[str]:
    """A process's arguments; empty for a few microseconds while it execs: wait them out."""
    for _ in range(50):
        argv = (entry / "cmdline").read_bytes().decode("utf-8", "replace").split("\0")
        if argv != [""] or not _is_git(_exe(entry)):
            return argv
        time.sleep(0.001)
    return argv


def _exe(entry: Path) -> str:
    """The program a process runs: set as exec starts, before its arguments are readable."""
    try:
        return os.readlink(entry / "exe")
    except OSError:
        return ""


def _is_git(arg: str) -> bool:
    name = os.path.basename(arg)
    return name == "git" or name.startswith("git-")


_DELTA_FORMAT = _RS + _US.join(
    ["%H", "%cI", "%an", f"%(trailers:only,unfold,separator={_GS})", "%P"]
)
_NO_BLOB = "0" * 40


_FRONT_ID = re.compile(r"\A---[ \t]*\r?\n(?:.*\r?\n)*?id:[ \t]*[\"']?([^\"'\s#]+)", re.MULTILINE)


def _name_before(commit: Commit, path: str) -> str:
    """The name the file at ``commit.path`` had in the commit's parent (a rename's old one)."""
    name = commit.path or path
    return next((old for old, new in commit.renames if new == name), name)


def _own(
    found: list[Commit], texts: list[str | None], before: list[str | None], memory_id: str
) -> list[Commit]:
    """Of a path's commits (newest first, with the file's text in each and in its parent),
    those of the memory ``memory_id``: a commit whose file is another id's (or that
    deleted another id's) is left out, unless this memory's own later commit changed
    that id to its own in place (a person edited the ``id:``; a rename git saw from
    another file is another memory's history)."""
    ids, own = {memory_id}, []
    for commit, text, earlier in zip(found, texts, before, strict=True):
        here = _front_id(text) or _front_id(earlier)
        if here is not None and here not in ids:
            continue
        own.append(commit)
        if _name_before(commit, commit.path or "") == commit.path:
            ids.add(_front_id(earlier) or memory_id)
    return own


def _front_id(text: str | None) -> str | None:
    """The ``id:`` a note's frontmatter gives (its first block only), else None."""
    if not text:
        return None
    head = text.split("\n---", 1)[0]
    found = _FRONT_ID.match(head + "\n")
    return found.group(1) if found else None


def _split(log_output: str) -> list[str]:
    """A log's records (formats starting with ``_RS`` and the sha)."""
    return _RECORD_START.split(log_output)


def _header(head: str, count: int) -> list[str] | None:
    """The ``count`` fields of a record's header: the second last (a subject or trailers:
    a person's text, which may hold the separator) takes what the others leave."""
    first = head.split(_US, count - 2)
    if len(first) < count - 1:
        return None
    *fixed, rest = first
    middle, sep, last = rest.rpartition(_US)
    return [*fixed, middle, last] if sep else None


def _moved_last(paths: dict[str, str]) -> list[tuple[str, str]]:
    """(path, first path) pairs, those whose file moved from its first path last, each
    part from the largest path to the smallest."""
    by_path = sorted(paths.items(), reverse=True)
    return sorted(by_path, key=lambda pair: pair[0] != pair[1])


def _parse_trailers(text: str) -> dict[str, str]:
    trailers: dict[str, str] = {}
    for item in text.strip().split(_GS):
        key, sep, value = item.partition(":")
        if sep:
            trailers[key.strip()] = value.strip()
    return trailers


def _parse_deltas(record: str) -> Deltas | None:
    """One ``git log -z --raw --numstat`` record: header NUL, then (after a newline) raw
    entries ``:mode mode blob blob STATUS NUL path [NUL path]`` and numstat entries
    ``added TAB deleted TAB path NUL`` (a rename: ``added TAB deleted TAB NUL old NUL new``)."""
    head, _, rest = record.partition("\0")
    fields = _header(head, 5)  # sha, time, author, trailers (a person's text), parents
    if fields is None:
        return None
    tokens = rest.removeprefix("\n").split("\0")
    raw: list[Delta] = []
    i = 0
    while i < len(tokens) and tokens[i].startswith(":"):
        meta = tokens[i][1:].split()
        status = meta[4][:1] if len(meta) >= 5 else "M"
        old_blob = meta[2] if len(meta) >= 5 and meta[2] != _NO_BLOB else None
        new_blob = meta[3] if len(meta) >= 5 and meta[3] != _NO_BLOB else None
        if status in ("R", "C"):
            old, new = tokens[i + 1], tokens[i + 2]
            raw.append(Delta(status, new, old, old_blob, new_blob))
            i += 3
        else:
            raw.append(Delta(status, tokens[i + 1], None, old_blob, new_blob))
            i += 2
    lines = _numstat(tokens[i:])
    counted = [(d, lines.get(d.path, (None, None))) for d in raw]
    files = tuple(replace(d, added=added, deleted=deleted) for d, (added, deleted) in counted)
    merge = len(fields[4].split()) > 1
    return Deltas(fields[0], fields[1], fields[2], _parse_trailers(fields[3]), files, merge)


def _numstat(tokens: list[str]) -> dict[str, tuple[int | None, int | None]]:
    """path (the new name of a rename) -> (lines added, lines deleted); None for binary."""
    out: dict[str, tuple[int | None, int | None]] = {}
    i = 0
    while i < len(tokens):
        added, _, rest = tokens[i].partition("\t")
        deleted, tab, path = rest.partition("\t")
        if not tab:
            i += 1
            continue
        if not path and i + 2 < len(tokens):  # a rename: old and new names follow
            path = tokens[i + 2]
            i += 2
        counts = (
            (int(added), int(deleted)) if added.isdigit() and deleted.isdigit() else (None, None)
        )
        out[path] = counts
        i += 1
    return out


def _parse_batch(out: bytes) -> dict[str, bytes]:
    """``git cat-file --batch`` output: ``sha type size LF content LF`` per object."""
    texts: dict[str, bytes] = {}
    at = 0
    while at < len(out):
        end = out.find(b"\n", at)
        if end < 0:
            break
        header = out[at:end].decode("ascii", "replace").split()
        at = end + 1
        if len(header) != 3:
            continue  # "<sha> missing"
        size = int(header[2])
        texts[header[0]] = out[at : at + size]
        at += size + 1
    return texts


def _parse_record(record: str, path: str | None) -> Commit | None:
    """One ``git log -z --name-status`` record: header, NUL-newline, name-status entries."""
    head, _, rest = record.partition("\0")
    rest = rest.lstrip("\n\0")  # a merge's combined entries follow a NUL, not a newline
    fields = _header(head, 5)
    if fields is None:
        return None
    sha, date, author, subject, trailer_text = fields
    trailers: dict[str, str] = {}
    for item in trailer_text.strip().split(_GS):
        key, sep, value = item.partition(":")
        if sep:
            trailers[key.strip()] = value.strip()
    names = rest.split("\0")
    files: list[str] = []
    renames: list[tuple[str, str]] = []
    deleted: list[str] = []
    i = 0
    while i < len(names) - 1:
        status = names[i].strip()
        combined = len(status) > 1 and not status[1:].isdigit()  # a merge's, one name
        if status[:1] in ("R", "C") and not combined and i + 2 < len(names):
            renames.append((names[i + 1], names[i + 2]))
            files.append(names[i + 2])
            i += 3
        elif status:
            files.append(names[i + 1])
            if set(status) == {"D"}:
                deleted.append(names[i + 1])
            i += 2
        else:
            i += 1
    where = files[-1] if (path is not None and files) else None
    return Commit(
        sha, date, author, subject, where, trailers, tuple(files), tuple(renames), tuple(deleted)
    )
