"""One error tree. Every message says what happened and what to do next."""

from __future__ import annotations

import errno
import os


class MemvaultError(Exception):
    """Base of every error memvault raises on purpose."""

    code = "error"


class VaultNotFoundError(MemvaultError):
    code = "vault_not_found"


class UnsafePathError(MemvaultError):
    """An id or path that would leave the vault (``..``, absolute, symlink)."""

    code = "unsafe_path"


class MemoryNotFoundError(MemvaultError):
    code = "not_found"


class MalformedMemoryError(MemvaultError):
    """A file memvault cannot parse; it is reported and never rewritten."""

    code = "malformed"

    def __init__(self, message: str, kind: str = "malformed") -> None:
        super().__init__(message)
        self.kind = kind  # malformed | binary | too_large | encoding


class StaleRevisionError(MemvaultError):
    """The file changed since the caller read it (optimistic concurrency)."""

    code = "stale_revision"


class InvalidInputError(MemvaultError):
    code = "invalid_input"


class ConfirmationError(MemvaultError):
    """A confirmation token that is unknown, used, expired or for another operation."""

    code = "confirmation_refused"


class GitError(MemvaultError):
    """A git command failed; carries the command, exit code and stderr."""

    code = "git_error"

    def __init__(self, args: list[str], returncode: int, stderr: str) -> None:
        self.command = args
        self.returncode = returncode
        self.stderr = stderr.strip()
        detail = self.stderr or "(no output)"
        super().__init__(f"git {' '.join(args)} failed with exit code {returncode}: {detail}")

    @property
    def reason(self) -> str:
        """git's own reason in one line: its first ``fatal:``/``error:`` line that is not
        boilerplate (``Could not read from remote repository``, "and the repository
        exists."), else its first other line (``ssh: Could not resolve hostname ...``, a
        hook's ``remote: ...``), else the exit code."""
        lines = [line.strip() for line in self.stderr.splitlines() if line.strip()]
        told = [
            line
            for line in lines
            if not line.startswith(("hint:", "To ")) and not any(g in line for g in _BOILERPLATE)
        ]
        first = next((line for line in told if line.startswith(("fatal:", "error:"))), None)
        return first or (told or lines or [f"exit code {self.returncode}"])[0]


class UntrustedRepositoryError(GitError):
    """git refuses the vault's repository: another user owns the folder (git's
    ``safe.directory`` check, "dubious ownership"). Raised for every git command, also
    those whose failure would otherwise read as "no commits yet"."""

    code = "untrusted_repository"

    def __init__(self, args: list[str], returncode: int, stderr: str, folder: str) -> None:
        super().__init__(args, returncode, stderr)
        self.folder = folder
        self.args = (
            f"git refuses to read the repository at {folder}: the folder belongs to another "
            "user (git's 'dubious ownership' check), so its history cannot be read. If you "
            f"trust it, run `git config --global --add safe.directory {folder}` and retry, "
            "or run memvault as the folder's owner",
        )


_BOILERPLATE = (
    "Could not read from remote repository",
    "Please make sure you have the correct access rights",
    "and the repository exists",
    "failed to push some refs",
)


class NotSavedError(MemvaultError):
    """A write whose git commit failed: its files were put back as they were."""

    code = "not_saved"


class LockTimeoutError(MemvaultError):
    code = "busy"


class ReadOnlyVaultError(MemvaultError):
    """A write asked of a vault memvault may not write (a read-only mount, permissions)."""

    code = "read_only"


class SecretRefusedError(InvalidInputError):
    """Text that looks like a credential, refused unless ``allow_secrets`` is on."""

    code = "secret_refused"


class SchemaError(MemvaultError):
    """A schema in the vault (``_schemas/``) that memvault cannot use; fixed by hand."""

    code = "bad_schema"


class UnexpectedError(MemvaultError):
    """An exception from outside this tree, reworded at an adapter's boundary."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


def explain_unexpected(exc: BaseException) -> MemvaultError:
    """``exc`` (not a MemvaultError) as one short line: what failed and what to do next."""
    if isinstance(exc, OSError):
        where = f" ({_shorten(os.fsdecode(exc.filename))})" if exc.filename else ""
        if exc.errno == errno.ENAMETOOLONG:
            return UnexpectedError(
                f"a file name is too long for the file system{where}: "
                "use a shorter id, path, title or folder",
                "name_too_long",
            )
        return UnexpectedError(
            f"{exc.strerror or _shorten(str(exc))}{where}: check that the vault folder exists "
            "and is writable and that the disk is not full, then retry",
            "os_error",
        )
    return UnexpectedError(
        f"unexpected {type(exc).__name__}: {_shorten(str(exc))}; this is a bug in memvault: "
        "run `memvault doctor` and report it with the traceback (the server's stderr, or the "
        "command again with --debug)",
        "internal_error",
    )


def _shorten(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else f"{text[: limit - 21]}…{text[-20:]}"
