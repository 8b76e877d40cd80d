"""One error tree. Every message says what happened and what to do next."""

from __future__ import annotations


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


class GitError(MemvaultError):
    """A git command failed; carries the command, exit code and stderr."""

    code = "git_error"

    def __init__(self, args: list[str], returncode: int, stderr: str) -> None:
        self.command = args
        self.returncode = returncode
        self.stderr = stderr.strip()
        detail = self.stderr or "(no output)"
        super().__init__(f"git {' '.join(args)} failed with exit code {returncode}: {detail}")


class LockTimeoutError(MemvaultError):
    code = "busy"


class SecretRefusedError(InvalidInputError):
    """Text that looks like a credential, refused unless ``allow_secrets`` is on."""

    code = "secret_refused"
