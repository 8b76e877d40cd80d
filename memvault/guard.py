"""Checks of a write's inputs against the vault's rules, made before anything touches the disk.

A refused write leaves no file and no commit: every check here raises before the service
takes its lock. ``validate`` holds the pure checks of single values; this module adds what
needs the vault (its ignore rules) or the settings (size limit, ``allow_secrets``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from . import frontmatter, ids, importer, policy, validate
from .config import Settings
from .errors import InvalidInputError, MemvaultError, SecretRefusedError, UnsafePathError
from .fields import stem_path
from .models import Memory
from .vault import Vault

log = logging.getLogger(__name__)
FORGET_MODES = ("archive", "delete", "purge")


def check_new(
    settings: Settings,
    vault: Vault,
    content: str,
    title: str | None,
    tags: Sequence[str],
    memory_type: str,
    source: str,
    scope: Sequence[str],
    folder: str | None,
) -> str | None:
    """Everything ``remember`` is given; returns the checked folder (None: the default)."""
    check_text(settings, content, title, tags)
    validate.label("type", memory_type or "note")
    validate.label("source", source)
    validate.labels("scope", scope)
    return check_folder(vault, folder) if folder is not None else None


def check_update(
    settings: Settings,
    content: str | None,
    title: str | None,
    fields: dict[str, Any],
    expected_revision: str | None,
) -> None:
    """What ``update`` is given (the fields themselves are checked by ``clean_fields``)."""
    validate.revision(expected_revision)
    if content is not None and not content.strip():  # an agent's "" for "no change" wiped it
        raise InvalidInputError(
            "content is empty: leave it out to keep the memory's text (forget removes a memory)"
        )
    tags = fields.get("tags")
    check_text(settings, content, title, tags if isinstance(tags, list | tuple) else ())


def check_forget(mode: str, reason: str | None) -> None:
    """``forget``'s mode, and its reason (written into the commit message and, when
    archiving, the file's frontmatter)."""
    if mode not in FORGET_MODES:
        raise InvalidInputError(f"mode must be one of {', '.join(FORGET_MODES)}, not {mode!r}")
    validate.reason(reason)


def check_revert(settings: Settings, rel: str, rel_then: str, data: bytes, rev: str) -> str | None:
    """The version of ``rel`` (named ``rel_then`` at ``rev``) that a revert would write back:
    refused where it is not a readable memory (not UTF-8, frontmatter that does not parse,
    over ``max_file_bytes``), which would cost the memory its id and every field, or its
    place in the index. Returns the id it holds, if any."""
    if len(data) > settings.max_file_bytes:
        raise InvalidInputError(
            f"{rel} as of {rev[:10]} is {len(data):,} bytes, over the max_file_bytes limit "
            f"of {settings.max_file_bytes:,}: raise the limit to revert to it, or take that "
            f"version by hand with `git show {rev[:10]}:{rel_then}`"
        )
    try:
        meta = frontmatter.parse(data.decode("utf-8")).meta
    except (UnicodeDecodeError, MemvaultError) as exc:
        why = "it is not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else str(exc)
        raise InvalidInputError(
            f"{rel} as of {rev[:10]} is not a readable memory ({why.split(': fix')[0]}): "
            "reverting to it would drop its id and fields; pick another revision from "
            f"`memvault log {rel}`, or take that version by hand with "
            f"`git show {rev[:10]}:{rel_then}`"
        ) from exc
    ident = str(meta.get("id") or "").strip()
    return ident if ids.is_id(ident) else None


def check_revert_over(
    rel: str, current: Memory | None, ident: str | None, rev: str, rel_then: str
) -> None:
    """A revert never writes one memory's old text over another memory's file: a memory
    deleted since, whose path a new memory took (``rel_then``: its path at ``rev``)."""
    own = str(current.meta.get("id") or "").strip() if current else ""
    if ident and ids.is_id(own) and own != ident:
        raise InvalidInputError(
            f"{rel} holds memory {own} now; at {rev[:10]} it held {ident}, so reverting "
            f"would replace {own}. To bring {ident} back, save "
            f"`git show {rev[:10]}:{rel_then}` as a new file"
        )


def check_text(
    settings: Settings, content: str | None, title: str | None, tags: Sequence[str]
) -> None:
    """Characters, sizes and credentials (refused unless ``allow_secrets``)."""
    if content is not None:
        validate.content(content, settings.max_file_bytes)
    if title is not None:
        validate.title(title.strip())
    validate.tags(tags)
    for name, value in (("content", content), ("title", title), ("a tag", " ".join(tags))):
        kind = policy.secret_kind(value) if value else None
        if kind is None:
            continue
        if not settings.allow_secrets:
            raise SecretRefusedError(
                f"{name} looks like it contains {kind}: memvault does not store secrets "
                "(every memory stays in git history). Remember where the secret is kept "
                "instead, or set allow_secrets = true in .memvault.toml to store it anyway"
            )
        log.warning("%s contains %s; stored because allow_secrets is on", name, kind)


def check_folder(vault: Vault, folder: str) -> str:
    """A folder memvault may create memories in: portable, and not one it ignores."""
    if not folder.strip("/ "):
        return ""
    rel = validate.relpath("folder", folder)
    check_memory_path(vault, f"{rel}/memory.md", folder)
    return rel


def check_memory_path(vault: Vault, rel: str, given: str) -> None:
    if not vault.is_memory_path(rel):
        raise UnsafePathError(
            f"{given!r} is a place memvault ignores (.git, .memvault, .obsidian, .trash, "
            "_templates, _schemas, dot-folders, temporary names or .memvaultignore): a memory "
            "there would never be listed or found; choose another folder"
        )


def import_target(vault: Vault, item: importer.ImportItem) -> tuple[str, str]:
    """(folder, name) an import item may be written to; refused like remember's."""
    try:
        rel = validate.relpath("path", item.path)
        check_memory_path(vault, rel if rel.lower().endswith(".md") else f"{rel}.md", rel)
        if "\x00" in item.text:
            raise InvalidInputError("it contains NUL bytes (binary?)")
        validate.file_size(rel, item.text, vault.max_file_bytes)
    except (InvalidInputError, UnsafePathError) as exc:
        raise type(exc)(f"{item.source}: {exc}") from exc
    folder, _, name = stem_path(rel).rpartition("/")
    return vault.spelled(folder), name
