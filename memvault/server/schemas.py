"""What the MCP tools return: one pydantic model per result, at the MCP edge only.

Kept lean on purpose: every field and description here is paid for in each host's context
(``tools/list`` carries these as output schemas), so no field repeats what the tool's
description says and none is derivable from another (a note's URI is ``memory://note/`` +
its path, given once by remember and get_memory).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class SimilarOut(BaseModel):
    id: str
    title: str
    cosine: float
    relation: Literal["duplicate", "possible_contradiction", "related", "superseded"]
    proposed: bool = Field(default=False, exclude_if=lambda v: not v)  # this client's, pending


class RememberOut(BaseModel):
    id: str | None
    path: str | None
    uri: str | None
    action: Literal["created", "duplicate", "rejected", "proposed"]
    commit: str | None
    similar: list[SimilarOut]
    reason: str | None = None


class RecallHit(BaseModel):
    id: str
    path: str
    title: str
    type: str
    tags: list[str]
    snippet: str
    score: float
    why: dict[str, Any]
    created: str | None
    updated: str | None
    relevance: float
    links: list[str] = Field(default_factory=list, exclude_if=lambda v: not v)  # other hits
    proposed: bool = Field(default=False, exclude_if=lambda v: not v)  # this client's, pending


class RecallOut(BaseModel):
    results: list[RecallHit]
    count: int = 0
    note: str | None = None


def _plain(schema: dict[str, Any]) -> None:
    """Publish a model as a plain object: the README names its fields (tools/list budget)."""
    schema.clear()
    schema["type"] = "object"


class LinkOut(BaseModel):
    model_config = ConfigDict(json_schema_extra=_plain)

    id: str | None  # None: a broken link (title is then its target as written)
    title: str


class MemoryOut(BaseModel):
    # the file's frontmatter as written (meta) and body, plus what memvault derives
    id: str
    path: str
    uri: str
    title: str
    type: str
    status: str
    revision: str
    meta: dict[str, Any]
    body: str
    problems: list[str]
    links: list[LinkOut]
    backlinks: list[LinkOut]
    hits: int  # times returned to a client before this read
    last_accessed: str | None
    proposed: bool = Field(default=False, exclude_if=lambda v: not v)  # this client's, pending


class MemorySummary(BaseModel):
    id: str
    path: str
    title: str
    type: str
    tags: list[str]
    status: str
    importance: float
    updated: str | None
    hits: int
    last_accessed: str | None
    proposed: bool = Field(default=False, exclude_if=lambda v: not v)  # this client's, pending


class ListOut(BaseModel):
    memories: list[MemorySummary]
    total: int
    next_cursor: str | None
    note: str | None = Field(default=None, exclude_if=lambda v: v is None)  # index catching up


class WriteOut(BaseModel):
    id: str
    path: str
    action: str
    commit: str | None
    revision: str
    previous_revision: str | None = None


class ProfileFieldOut(BaseModel):
    field: str
    value: str | float | bool | list[str]
    id: str
    path: str
    updated: str | None


class ProfileOut(BaseModel):
    fields: list[ProfileFieldOut]
    unset: list[str]  # "units (metric|imperial)": the field and what it takes
    problems: list[str] = []


class ForgetOut(BaseModel):
    id: str | None = None
    path: str | None = None
    action: str
    commit: str | None
    warning: str | None = None
    erased: list[str] = []
    archived: list[str] = []  # forget(scope= or filter=): the ids archived
    forgotten: list[str] = []  # forget(filter=) by delete or purge: the ids gone
    confirm: str | None = None  # not done yet: pass this back as confirm=
    pending: list[str] = []  # not done yet: the ids it would forget
    pending_paths: list[str] = []  # ...and their paths, in the same order


class CommitOut(BaseModel):
    commit: str
    date: str
    author: str
    subject: str
    op: str | None
    path: str | None


class HistoryOut(BaseModel):
    path: str
    commits: list[CommitOut]


class ChangesOut(BaseModel):
    # each change: id, path, old_path, op, who, name, commit, time, diff (models.Change)
    changes: list[dict[str, Any]]
    cursor: str | None
    more: bool


class DiffOut(BaseModel):
    diff: str


class RelatedOut(BaseModel):
    model_config = ConfigDict(json_schema_extra=_plain)

    id: str
    title: str
    path: str
    relation: Literal["out", "in"]
    depth: int


class RelatedListOut(BaseModel):
    related: list[RelatedOut]


class ProposalOut(BaseModel):
    kind: Literal["merge", "supersede", "archive"]
    ids: list[str]
    paths: list[str]
    reason: str
    applied: bool = False
    commit: str | None = None


class ConsolidateOut(BaseModel):
    dry_run: bool
    proposals: list[ProposalOut]
    message: str


class SyncOut(BaseModel):
    remote: str
    branch: str
    action: str
    fetched: bool
    pushed: int
    changed: list[str]
    conflicts: list[str]
    error: str | None = None
    commit: str | None = None
    time: str


class StatusOut(BaseModel):
    vault: str
    memories: int
    by_type: dict[str, int]
    archived: int
    problems: int
    uncommitted: int
    last_commits: list[dict[str, Any]]
    index: dict[str, Any]
    conflicts: list[str] = []
    sync: dict[str, Any] | None = None
    proposals: dict[str, int] = Field(default_factory=dict, exclude_if=lambda v: not v)


class ContextSectionOut(BaseModel):
    name: str
    ids: list[str]
    tokens: int
    left_out: list[str]


class ContextOut(BaseModel):
    text: str
    used_tokens: int
    budget_tokens: int
    over_budget: bool
    sections: list[ContextSectionOut]


class PendingOut(BaseModel):
    id: str
    op: str
    memory: str | None
    paths: list[str]
    subject: str
    time: str


class ProposalsOut(BaseModel):
    mode: Literal["direct", "propose"]  # what this client's writes do
    proposals: list[PendingOut]
