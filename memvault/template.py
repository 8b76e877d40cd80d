"""Making a new vault: the template copied in, git initialised, one first commit."""

from __future__ import annotations

import shutil
from pathlib import Path

from .config import Settings
from .errors import MemvaultError
from .history import History
from .recovery import committable
from .vault import STATE_DIR, Vault


def create_vault(
    root: Path, template: Path | None = None, settings: Settings | None = None
) -> bool:
    """Make ``root`` a vault from the template (git init + first commit).

    Returns False when ``root`` already is a vault (nothing is touched).
    """
    root = root.expanduser()
    settings = settings or Settings()
    history = History(
        root.resolve() if root.exists() else root, settings.author_name, settings.author_email
    )
    if root.is_dir() and history.is_repo():
        return False
    template = template or template_dir()
    root.mkdir(parents=True, exist_ok=True)
    for src in sorted(template.rglob("*")):
        rel = src.relative_to(template)
        dst = root / rel
        if src.is_dir():
            dst.mkdir(parents=True, exist_ok=True)
        elif not dst.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    history = History(root.resolve(), settings.author_name, settings.author_email)
    if not history.is_repo():
        history.init()
    exclude_state_dir(root)
    vault = Vault(root)
    paths = committable(vault, history.changed_paths())  # never a symlink or FIFO
    trailers = {"Memvault-Op": "init"}
    if not history.commit(paths, "init: memvault vault", trailers) and not history.head():
        history.commit_empty("init: memvault vault", trailers)
    return True


def template_dir() -> Path:
    """The vault template: packaged copy when installed, else the repository's folder."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "_template", here.parent / "vault-template"):
        if candidate.is_dir():
            return candidate
    raise MemvaultError("vault-template not found: reinstall memvault")


def exclude_state_dir(root: Path) -> None:
    """Keep ``.memvault/`` out of git even where the vault's .gitignore forgot it."""
    exclude = root / ".git" / "info" / "exclude"
    if not (root / ".git").is_dir():
        return
    exclude.parent.mkdir(parents=True, exist_ok=True)
    text = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
    if f"/{STATE_DIR}/" not in text.split("\n"):
        exclude.write_text(text.rstrip("\n") + f"\n/{STATE_DIR}/\n", encoding="utf-8")
