"""Ids, slugs and safe vault-relative paths. Pure, apart from reading the clock/urandom."""

from __future__ import annotations

import hashlib
import os
import re
import time
import unicodedata
from pathlib import Path, PurePosixPath

from .errors import UnsafePathError

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
ID_PATTERN = re.compile(r"^[0-9A-Za-z][0-9A-Za-z_-]{3,63}$")
MAX_NAME_BYTES = 255  # one file or folder name (ext4, APFS, NTFS)
MAX_PATH_BYTES = 1024  # a whole vault-relative path
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def new_id(now_ms: int | None = None, rand: bytes | None = None) -> str:
    """A sortable 16-character id: 10 chars of milliseconds + 6 random chars."""
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    rnd = int.from_bytes(os.urandom(4) if rand is None else rand, "big") & ((1 << 30) - 1)
    return _b32(ms, 10) + _b32(rnd, 6)


def _b32(number: int, width: int) -> str:
    chars = []
    for _ in range(width):
        chars.append(_CROCKFORD[number & 31])
        number >>= 5
    return "".join(reversed(chars))


def derived_id(relpath: str) -> str:
    """Stable id for a hand-made file without ``id``; written on memvault's next edit."""
    digest = hashlib.sha1(relpath.encode("utf-8")).hexdigest()[:12]
    return f"p-{digest}"


def is_id(text: str) -> bool:
    return bool(ID_PATTERN.match(text)) and "/" not in text and not text.endswith(".md")


def slugify(text: str, max_len: int = 60) -> str:
    """File-name slug that keeps letters of any script (Chinese included)."""
    text = unicodedata.normalize("NFKC", text).strip().lower()
    text = re.sub(r"[^\w\s-]", " ", text)
    text = re.sub(r"[\s_-]+", "-", text).strip("-")
    if len(text) > max_len:
        text = text[:max_len].rsplit("-", 1)[0] or text[:max_len]
    return text or "memory"


def clean_relpath(raw: str) -> str:
    """Normalise a user-given vault-relative path; refuse anything that could escape.

    Pure check on the text: absolute paths, drive letters, ``..`` parts, NUL and
    backslash tricks are refused. Symlinks are checked by :func:`resolve_inside`.
    """
    if not raw or "\x00" in raw:
        raise UnsafePathError("empty path or NUL byte in path: give a path inside the vault")
    if _SURROGATE.search(raw):
        raise UnsafePathError(
            f"{raw!r} is not valid Unicode (a lone surrogate): give paths in UTF-8; a file "
            "whose name is not UTF-8 is never read or committed: rename it"
        )
    text = raw.replace("\\", "/")
    if text.startswith("/") or text.startswith("~"):
        raise UnsafePathError(
            f"{raw!r} is an absolute path: give a path relative to the vault root"
        )
    if re.match(r"^[A-Za-z]:", text):
        raise UnsafePathError(
            f"{raw!r} starts with a drive letter ({text[:2]}), which makes it absolute on "
            "Windows: give a path relative to the vault root"
        )
    parts = [p for p in PurePosixPath(text).parts if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise UnsafePathError(f"{raw!r} contains '..': paths must stay inside the vault")
    if not parts:
        raise UnsafePathError(f"{raw!r} does not name a file inside the vault")
    rel = "/".join(parts)
    _check_length(rel)
    return rel


def _check_length(rel: str) -> None:
    """File systems refuse names over 255 bytes (ENAMETOOLONG): say so up front.

    The last name must leave room for the ``.md`` memvault adds when it has none.
    """
    names = rel.split("/")
    for n, name in enumerate(names):
        size = len(name.encode("utf-8"))
        room = 3 if n == len(names) - 1 and not name.lower().endswith(".md") else 0
        if size + room > MAX_NAME_BYTES:
            raise UnsafePathError(
                f"the name {name[:40]!r}... is {size:,} bytes; names may be at most "
                f"{MAX_NAME_BYTES} bytes (file system limit, .md included): use a shorter name"
            )
    if len(rel.encode("utf-8")) > MAX_PATH_BYTES:
        raise UnsafePathError(
            f"path {rel[:40]!r}... is {len(rel.encode('utf-8')):,} bytes, over the "
            f"{MAX_PATH_BYTES}-byte limit: use a shorter path"
        )


def resolve_inside(root: Path, relpath: str) -> Path:
    """Absolute path for ``relpath`` that is guaranteed (after symlinks) to be in ``root``."""
    rel = clean_relpath(relpath)
    root_real = root.resolve()
    target = (root_real / rel).resolve()
    if target != root_real and root_real not in target.parents:
        raise UnsafePathError(f"{relpath!r} leads outside the vault (through a symlink): refused")
    return root_real / rel
