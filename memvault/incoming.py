"""What sync does not take from a remote on its own: commits that change memvault's state
folder (never), and a change to a setting that decides what this machine trusts (only when
a person says so).

The remote is usually the person's other machine, but anyone who can push to it (a shared
vault, a compromised host) could otherwise switch an agent's writes from proposals to
direct commits, let credentials be stored, or have this machine load a model folder whose
weights are pickles.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .config import SETTINGS_FILE, Settings, file_settings
from .errors import GitError, InvalidInputError, MemvaultError
from .history import History
from .vault import STATE_DIR

# The settings that decide what this machine trusts, each with when a new value lets more
# in than the old: an agent's writes committed without review, credentials stored, a model
# folder loaded (its weights may be pickles, run here). A change the other way passes.
LOOSENING: dict[str, Callable[[Any, Any], bool]] = {
    "agent_writes": lambda old, new: new == "direct",
    "propose_clients": lambda old, new: bool(set(old) - set(new)),
    "allow_secrets": lambda old, new: bool(new),
    "embedder": lambda old, new: str(new).strip().startswith("st:"),
}


def refuse(
    history: History, remote: str, branch: str, ours: str, theirs: str, accept_settings: bool
) -> None:
    """Raise, with nothing changed, when the remote's commits (``theirs``, since their
    common ancestor with ``ours``) touch the state folder or a guarded setting."""
    base = history.run("merge-base", ours, theirs, check=False).strip()
    _refuse_state(history, remote, base, theirs)
    _refuse_settings(history, f"{remote}/{branch}", (base, ours, theirs), accept_settings)


def _refuse_state(history: History, remote: str, base: str, theirs: str) -> None:
    """Git overwrites the files it ignores, so the remote's state folder would replace this
    vault's index (Whoosh unpickles its table of contents: code run on this machine) and
    state, and stay tracked, so every later sync would stop at it. Deleting it passes: it
    is how a vault whose history tracked the folder stops tracking it."""
    names = (
        history.run(  # deletions pass: the way out for a vault that tracked it
            "diff", "--name-only", "--no-renames", "--diff-filter=d", base, theirs, "--", STATE_DIR
        )
        if base  # unrelated histories: whatever theirs holds there
        else history.run("ls-tree", "-r", "--name-only", theirs, "--", STATE_DIR)
    )
    if names.strip():
        raise MemvaultError(f"sync refused: {state_tracked(remote, names)}, then sync")


def state_tracked(where: str, names: str) -> str:
    shown = ", ".join(names.split()[:3])
    return (
        f"the commits on {where} change memvault's own state folder {STATE_DIR}/ ({shown}), "
        "which is never synced (this machine's index and statistics would be replaced by "
        "another's); nothing was changed. On the machine that committed it, run "
        f"`git rm -r --cached {STATE_DIR}`, commit and push"
    )


def _refuse_settings(
    history: History, where: str, revs: tuple[str, str, str], accept: bool
) -> None:
    """The ``.memvault.toml`` this sync would leave (the remote's change merged into this
    vault's, as the rebase or merge will) must load here, and loosen no trust setting this
    vault has (``LOOSENING``) unless ``accept``."""
    base, ours, theirs = (_blob(history, rev) for rev in revs)
    if theirs in (base, ours):
        return
    try:
        _regular_file(history, revs[2])
        texts = [(b or b"").decode("utf-8") for b in (base, ours, theirs)]
        merged = history.merge_lines(*texts)
        incoming = file_settings(texts[1] if merged is None else merged)
    except (InvalidInputError, UnicodeDecodeError) as exc:
        raise MemvaultError(
            f"sync refused: the commits on {where} leave {SETTINGS_FILE} unusable here "
            f"({exc}); nothing was changed. Fix it on the machine that committed it (or, if "
            "that machine runs a newer memvault, upgrade this one), then sync"
        ) from exc
    if accept:
        return
    mine = _settings(ours)
    changed = [
        f"{name} {getattr(mine, name)!r} -> {getattr(incoming, name)!r}"
        for name, loosens in LOOSENING.items()
        if getattr(incoming, name) != getattr(mine, name)
        and loosens(getattr(mine, name), getattr(incoming, name))
    ]
    if changed:
        raise MemvaultError(
            f"sync refused: the commits on {where} loosen settings that decide what this "
            f"machine trusts ({'; '.join(changed)}, by {SETTINGS_FILE}); nothing was changed. "
            f"Check them (`git -C {history.root} diff HEAD {where} -- {SETTINGS_FILE}`), "
            "then take them with `memvault sync --accept-settings`, or undo them on the "
            "machine that made them"
        )


def _blob(history: History, rev: str) -> bytes | None:
    if not rev:
        return None
    try:
        return history.file_bytes(rev, SETTINGS_FILE)
    except GitError:  # no such file there
        return None


def _regular_file(history: History, rev: str) -> None:
    """A link (git stores its target as the blob) would be read one way here and followed
    another way by every later command."""
    mode = history.run("ls-tree", rev, "--", SETTINGS_FILE).split(" ", 1)[0]
    if mode and mode not in ("100644", "100755"):
        raise InvalidInputError(f"{SETTINGS_FILE} is not a plain file there (mode {mode})")


def _settings(blob: bytes | None) -> Settings:
    try:
        return file_settings((blob or b"").decode("utf-8"))
    except (InvalidInputError, UnicodeDecodeError):  # an old unusable file: the defaults
        return Settings()
