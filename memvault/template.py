"""Making a new vault: the template copied in, git initialised, one first commit.

The folder may be one the person already has (an Obsidian vault, a notes folder): the
template only fills in what is missing and never writes over, or through, what is there.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from .config import Settings
from .errors import MemvaultError, ReadOnlyVaultError, UntrustedRepositoryError
from .history import History
from .recovery import committable
from .vault import IGNORE_FILE, STATE_DIR, Vault, case_variants

log = logging.getLogger(__name__)

OBSIDIAN_DIR = ".obsidian"
TEMPLATE_README = "README.md"  # the template's guide to a new vault; its .memvaultignore hides it
# the template's folders a person's own folder of another case stands in for (not archive/,
# profile/ or _schemas/: memvault finds those by their exact names)
PERSONS_CASE = frozenset(
    {"people", "projects", "inbox", "facts", "preferences", "episodes", "summaries", "tasks"}
)


def create_vault(
    root: Path, template: Path | None = None, settings: Settings | None = None
) -> bool:
    """Make ``root`` a vault from the template (git init + first commit).

    A git repository that is no vault yet (an Obsidian vault backed up with git) gets what
    it lacks of the template, committed alone: the person's own changes, staged or not,
    and what their ignore rules ignore stay out of that commit. Returns False when
    ``root`` already is a vault (nothing is touched).
    """
    root = root.expanduser()
    settings = settings or Settings()
    history = History(
        root.resolve() if root.exists() else root, settings.author_name, settings.author_email
    )
    repo = root.is_dir() and history.is_repo()
    if repo and history.made_by_memvault():
        return False
    template = template or template_dir()
    root.mkdir(parents=True, exist_ok=True)
    copied = copy_template(template, root)
    history = History(root.resolve(), settings.author_name, settings.author_email)
    if not repo:
        _warn_if_inside_a_repository(root.resolve(), settings)
        history.init()
    exclude_state_dir(root)
    vault = Vault(root)
    paths = committable(vault, copied if repo else history.changed_paths())  # no symlink, FIFO
    hidden = vault.hidden()  # the person's .memvaultignore: their private files stay out
    paths = [p for p in paths if p in copied or not hidden(p)]
    if repo:
        history.refuse_unfinished("init")
        paths = [p for p in paths if p not in history.ignored(paths)]
    trailers = {"Memvault-Op": "init"}
    if not history.commit(paths, "init: memvault vault", trailers) and not history.head():
        history.commit_empty("init: memvault vault", trailers)
    return True


def _warn_if_inside_a_repository(root: Path, settings: Settings) -> None:
    """A new vault inside another repository's work tree is a repository of its own, which
    the outer one sees as untracked files (or tracks twice): say so, once, at init."""
    outer = History(root.parent, settings.author_name, settings.author_email)
    try:
        top = outer.run("rev-parse", "--show-toplevel", check=False, identity=False).strip()
    except UntrustedRepositoryError as exc:  # another user's: the vault's own is still made
        top = exc.folder
    if top:
        log.warning(
            "%s is inside the git repository at %s: the vault gets a repository of its own, "
            "which that one sees as untracked files; add the folder to its .gitignore",
            root,
            top,
        )


def copy_template(template: Path, root: Path) -> list[str]:
    """Copy into ``root`` the template's files it lacks; a path already there (a file, a
    folder, a symlink, even a dangling one) is never written over nor through. Returns the
    files copied (vault-relative)."""
    left_out, copied = _left_out(root), []
    for src in sorted(template.rglob("*")):
        rel = src.relative_to(template)
        if rel.parts[0] in left_out or _through_a_link(root, rel):
            continue
        dst = root / rel
        if src.is_dir():
            if not os.path.lexists(dst):
                dst.mkdir(parents=True)
        elif not os.path.lexists(dst):
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
            copied.append(rel.as_posix())
    return copied


def _through_a_link(root: Path, rel: Path) -> bool:
    """Whether a folder on the way to ``rel`` in ``root`` is a symlink (dangling or not) or
    not a folder: the template's file would land outside the vault, or nowhere."""
    for depth in range(1, len(rel.parts)):
        step = root.joinpath(*rel.parts[:depth])
        if os.path.islink(step) or (os.path.lexists(step) and not step.is_dir()):
            return True
    return False


def _left_out(root: Path) -> frozenset[str]:
    """The template's top-level names that stay out of a folder the person already has.

    An existing ``.obsidian/`` gets none of the template's settings (its core-plugins list
    would switch the person's other core plugins off). The template's README and the
    ``.memvaultignore`` that hides it come as a pair, into a folder with neither: the
    person's own README stays a memory, and no README of ours appears that their own
    .memvaultignore would leave a memory."""
    present = {n for n in (OBSIDIAN_DIR, TEMPLATE_README, IGNORE_FILE) if os.path.lexists(root / n)}
    left_out = {OBSIDIAN_DIR} & present
    if present & {TEMPLATE_README, IGNORE_FILE}:
        left_out |= {TEMPLATE_README, IGNORE_FILE}
    return frozenset(left_out | _spelled_otherwise(root))


def _spelled_otherwise(root: Path) -> set[str]:
    """The template's folders the person has in another case (``People/``, ``Inbox/``): on
    a case-sensitive disk a second ``people/`` would stand beside theirs (memvault writes
    into theirs, see Vault.spelled)."""
    return {n for n in PERSONS_CASE if not os.path.lexists(root / n) and case_variants(root, n)}


def template_dir() -> Path:
    """The vault template: packaged copy when installed, else the repository's folder."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "_template", here.parent / "vault-template"):
        if candidate.is_dir():
            return candidate
    raise MemvaultError("vault-template not found: reinstall memvault")


def prepare_state_dir(vault: Vault) -> None:
    """Make ``.memvault/`` (the index and memvault's state) and keep it out of git; a
    read-only vault's state folder is elsewhere (:func:`memvault.vault.state_elsewhere`)."""
    if vault.read_only:
        try:
            vault.state_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ReadOnlyVaultError(
                f"the vault {vault.root} is read-only, and its index cannot be kept in "
                f"{vault.state_dir} either ({exc.strerror}): set XDG_CACHE_HOME to a folder "
                "you can write, or make the vault writable, and retry"
            ) from exc
        return
    root = vault.root
    state = root / STATE_DIR
    if (state.exists() or state.is_symlink()) and not state.is_dir():
        raise MemvaultError(
            f"{state} is a file (or a broken link), but memvault keeps its index and state "
            "in a folder of that name: move that file elsewhere (memvault makes the folder "
            "anew), then retry"
        )
    state.mkdir(exist_ok=True)
    exclude_state_dir(root)


def exclude_state_dir(root: Path) -> None:
    """Keep ``.memvault/`` out of git even where the vault's .gitignore forgot it; also
    where ``.git`` is a file naming the git folder (a worktree, ``--separate-git-dir``)."""
    exclude = root / ".git" / "info" / "exclude"
    if not (root / ".git").is_dir():
        if not (root / ".git").is_file():
            return
        where = History(root).run("rev-parse", "--git-path", "info/exclude").strip()
        exclude = root / where  # relative to the vault, or absolute
    exclude.parent.mkdir(parents=True, exist_ok=True)
    text = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
    if f"/{STATE_DIR}/" not in text.split("\n"):
        exclude.write_text(text.rstrip("\n") + f"\n/{STATE_DIR}/\n", encoding="utf-8")
