"""The MCP tools: each parses its arguments, makes one service call and formats the result.

Every tool is a plain function whose first parameter is the service; ``build_tools`` binds
it and runs it in a worker thread (the service blocks on files and git), with the calling
client's name on the commits it makes and any error as an error result the agent can act
on. Parameter descriptions are one line each: ``tools/list`` is paid for in every host's
context (tests/test_tool_surface.py keeps it under 9,000 characters).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from dataclasses import asdict, replace
from typing import Annotated, Any, Literal, TypeVar

import anyio
import anyio.to_thread
from mcp.server.elicitation import AcceptedElicitation
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import NoBackChannelError
from mcp.types import ClientCapabilities, ElicitationCapability, ToolAnnotations
from pydantic import BaseModel, Field

from .. import (
    asof,
    changes,
    context,
    guard,
    lifecycle,
    profile,
    proposals,
    purging,
    reports,
    syncing,
)
from .. import confirm as confirming
from ..errors import InvalidInputError, MemvaultError, explain_unexpected
from ..history import CLONE_WARNING
from ..links import Graph, graph_of, linked_among
from ..models import (
    Access,
    Archival,
    Filters,
    Hit,
    Memory,
    Page,
    RememberResult,
    WriteResult,
    jsonable,
    sort_infos,
)
from ..retrieval import CATCHING_UP, nothing_found
from ..selection import parse as parse_filter
from ..selection import period, undated_note
from ..service import MemoryService, current_client
from .notify import Notifier
from .resources import note_uri
from .schemas import (
    ChangesOut,
    CommitOut,
    ConsolidateOut,
    ContextOut,
    ContextSectionOut,
    DiffOut,
    ForgetOut,
    HistoryOut,
    LinkOut,
    ListOut,
    MemoryOut,
    MemorySummary,
    PendingOut,
    ProfileFieldOut,
    ProfileOut,
    ProposalOut,
    ProposalsOut,
    RecallHit,
    RecallOut,
    RelatedListOut,
    RelatedOut,
    RememberOut,
    SimilarOut,
    StatusOut,
    SyncOut,
    WriteOut,
)
from .surface import MemvaultTool

log = logging.getLogger(__name__)
T = TypeVar("T")
# How long a confirmation asked through the client waits for the person (as long as the
# token it falls back to stays valid); then the call answers with that token.
ELICIT_SECONDS = confirming.TOKEN_TTL.total_seconds()

# -- parameters (one line each) -------------------------------------------------------------
Id = Annotated[str, Field(description="id or path")]
Rev = Annotated[str, Field(description="a memory_history commit")]
Types = Annotated[list[str] | None, Field(description="only these types")]
Tags = Annotated[list[str] | None, Field(description="all of these")]
Folder = Annotated[str | None, Field(description="under this folder")]
Scope = Annotated[list[str] | None, Field(description="only these scopes")]
Archived = Annotated[bool, Field(description="also archived ones")]
When = Annotated[str | None, Field(description="ISO time")]
AsOf = Annotated[str | None, Field(description="ISO time or commit")]
Unit = Annotated[float, Field(description="0..1")]
Sort = Literal["updated", "created", "importance", "path"]
Status = Literal["active", "superseded"]  # archived: forget moves the file and says why
Mode = Literal["archive", "delete", "purge"]
Links = Annotated[list[str] | None, Field(description="ids or titles")]


# -- the tools ------------------------------------------------------------------------------
def remember(
    service: MemoryService,
    content: Annotated[str, Field(description="the text to remember")],
    type: Annotated[str, Field(description="preference|fact|episode|summary|task|note")] = "note",
    tags: Annotated[list[str] | None, Field(description="topic tags")] = None,
    importance: Unit = 0.5,
    confidence: Annotated[float, Field(description="0..1 (1 if the user said it)")] = 0.8,
    title: Annotated[str | None, Field(description="default: first line")] = None,
    folder: Annotated[str | None, Field(description="default: by type")] = None,
    scope: Annotated[list[str] | None, Field(description="e.g. user:me")] = None,
    source: Annotated[str, Field(description="e.g. user")] = "conversation",
    supersedes: Annotated[list[str] | None, Field(description="ids this corrects")] = None,
    links: Links = None,
    expires: When = None,
    valid_from: When = None,
    valid_until: When = None,
) -> RememberOut:
    """Store a fact, preference or decision in the user's words; refuses near-duplicates."""
    args = dict(locals())  # the tool's arguments, taken as the service takes them
    del args["service"]
    return _remember_out(service.remember(**_remember_args(args)))


def recall(
    service: MemoryService,
    query: Annotated[str, Field(description="what to look for")],
    k: Annotated[int, Field(ge=1, le=100, description="how many")] = 8,
    types: Types = None,
    tags: Tags = None,
    folder: Folder = None,
    scope: Scope = None,
    since: Annotated[str | None, Field(description="created since (ISO)")] = None,
    until: Annotated[str | None, Field(description="created before (ISO)")] = None,
    include_archived: Archived = False,
    include_expired: Annotated[bool, Field(description="also expired ones")] = False,
    min_relevance: Annotated[float | None, Field(description="0..1; 0 keeps all")] = None,
    as_of: AsOf = None,
) -> RecallOut:
    """Search memory (keywords and meaning) before answering anything that depends on the
    user's past or preferences."""
    filters = _filters(types, tags, folder, scope, since, until, include_archived)
    filters = replace(filters, include_expired=include_expired, min_relevance=min_relevance)
    if as_of:
        return _recall_out(service, asof.recall(service, query, as_of, k, filters), None)
    hits = proposals.recall(service, query, k, filters)  # this client's proposals too
    service.access.hit(h.id for h in hits)  # returned to a client: counted
    floor = service.settings.min_relevance if min_relevance is None else min_relevance
    note = None if hits else _no_match(service, floor, filters)
    left = undated_note(service.undated(filters))
    return _recall_out(service, hits, "; ".join(n for n in (note, left) if n) or None)


def _no_match(service: MemoryService, floor: float, filters: Filters) -> str:
    catching_up = not service.ensure_synced(wait=False)
    return nothing_found(service.records, floor, filters, catching_up)


def get_memory(service: MemoryService, id: Id, as_of: AsOf = None) -> MemoryOut:
    """One memory in full, with links and `revision`."""
    if as_of:  # links resolve among the memories of that time; no access counted
        memory = asof.get(service, id, as_of)
        return _memory_out(memory, graph_of(asof.records_of(service, as_of), memory.info()))
    memory, proposed = proposals.get(service, id)
    seen = service.access.hit([memory.id])[memory.id]
    out = _memory_out(memory, graph_of(service.records, memory.info()), seen)
    out.proposed = proposed
    return out


def list_memories(
    service: MemoryService,
    types: Types = None,
    tags: Tags = None,
    folder: Folder = None,
    scope: Scope = None,
    include_archived: Archived = False,
    sort: Annotated[Sort, Field(description="order")] = "updated",
    limit: Annotated[int, Field(ge=1, le=500, description="page size")] = 50,
    cursor: Annotated[str | None, Field(description="last next_cursor")] = None,
    as_of: AsOf = None,
) -> ListOut:
    """Browse memories without a query (newest first)."""
    filters = _filters(types, tags, folder, scope, None, None, include_archived)
    catching_up = not as_of and not service.ensure_synced(wait=False)  # asked before reading
    proposed: frozenset[str] = frozenset()
    if as_of:
        page = Page.of(sort_infos(asof.records(service, as_of, filters), sort), limit, cursor)
    else:
        page, proposed = proposals.page(service, filters, sort, limit, cursor)
    seen = service.access.of(m.id for m in page.memories)
    memories = [
        MemorySummary.model_validate(
            m.summary() | asdict(seen[m.id]) | {"proposed": m.id in proposed}
        )
        for m in page.memories
    ]
    note = f"{CATCHING_UP}: this list may be incomplete; ask again" if catching_up else None
    return ListOut(memories=memories, total=page.total, next_cursor=page.next_cursor, note=note)


def update_memory(
    service: MemoryService,
    id: Id,
    content: Annotated[str | None, Field(description="new text")] = None,
    title: Annotated[str | None, Field(description="new title")] = None,
    type: Annotated[str | None, Field(description="new type")] = None,
    tags: Annotated[list[str] | None, Field(description="new tags")] = None,
    importance: Annotated[float | None, Field(description="0..1")] = None,
    confidence: Annotated[float | None, Field(description="0..1")] = None,
    status: Annotated[Status | None, Field(description="new status")] = None,
    expected_revision: Annotated[str | None, Field(description="revision you read")] = None,
    links: Links = None,
    expires: When = None,
    valid_from: When = None,
    valid_until: When = None,
) -> WriteOut:
    """Change a memory's text or fields; refuses a stale expected_revision."""
    fields = {"type": type, "tags": tags, "importance": importance}
    fields |= {"confidence": confidence, "status": status, "expires": expires}
    fields |= {"valid_from": valid_from, "valid_until": valid_until}
    result = service.update(
        id, content, fields, title, expected_revision=expected_revision, links=links or []
    )
    return _write_out(result)


def forget(
    service: MemoryService,
    id: Annotated[str | None, Field(description="id or path")] = None,
    mode: Annotated[Mode, Field(description="how to forget")] = "archive",
    reason: Annotated[str | None, Field(description="why")] = None,
    scope: Annotated[str | None, Field(description="session:<id>")] = None,
    filter: Annotated[
        str | None, Field(description="e.g. type:episode tag:x until:2026-01")
    ] = None,
    confirm: Annotated[str | None, Field(description="token given")] = None,
) -> ForgetOut:
    """archive (undoable), delete or purge (erase all history; only if the user asks)."""
    _one_target(id, scope, filter, mode, reason)
    _proposable(service, mode, filter)
    operation = confirming.resolve(service, id, mode, scope, filter)
    verdict = confirming.gate(service, operation, confirm)
    if not verdict.go:
        out = _unconfirmed(operation, verdict)
        left = undated_note(service.undated(parse_filter(filter))) if filter else None
        out.warning = "; ".join(n for n in (out.warning, left) if n) or None
        return out
    if scope is not None:
        archived = lifecycle.forget_scope(service, scope, reason, operation.ids)
        return _many_out(service, archived)
    if filter is not None:
        ids = operation.ids
        return _many_out(service, lifecycle.forget_selected(service, ids, mode, reason, filter))
    return _one_out(service.forget(operation.ids[0], mode, reason))


def memory_history(service: MemoryService, id: Id) -> HistoryOut:
    """A memory's changes (across renames): who, when, what."""
    path = service.history_path(id)
    commits = [CommitOut.model_validate(c.brief()) for c in service.log(id)]
    return HistoryOut(path=path, commits=commits)


def memory_changes(
    service: MemoryService,
    since: Annotated[str | None, Field(description="cursor or ISO time")] = None,
) -> ChangesOut:
    """What changed since `since`, by whom; pass `cursor` next time."""
    feed = changes.feed(service, since)
    found = [asdict(c) for c in feed.changes]
    return ChangesOut(changes=found, cursor=feed.cursor, more=feed.more)


def memory_diff(service: MemoryService, id: Id, rev: Rev) -> DiffOut:
    """Unified diff of a memory from `rev` to now."""
    return DiffOut(diff=service.diff(id, rev) or "(no difference)")


def revert_memory(service: MemoryService, id: Id, rev: Rev) -> WriteOut:
    """Restore a memory as of `rev` (a new commit)."""
    return _write_out(service.revert(id, rev))


def related(
    service: MemoryService,
    id: Id,
    depth: Annotated[int, Field(description="hops, 1..3")] = 1,
) -> RelatedListOut:
    """Linked memories (out and in), up to `depth` hops."""
    memory = service.get(id)
    found = graph_of(service.records, memory.info()).related(memory.id, depth)
    return RelatedListOut(
        related=[
            RelatedOut(
                id=r.memory.id,
                title=r.memory.title,
                path=r.memory.path,
                relation=r.relation,
                depth=r.depth,
            )
            for r in found
        ]
    )


def consolidate(
    service: MemoryService,
    dry_run: Annotated[bool, Field(description="false: apply")] = True,
) -> ConsolidateOut:
    """Propose merges and archives of expired or unused memories; dry_run=false applies."""
    proposals = [
        ProposalOut.model_validate(asdict(p)) for p in lifecycle.consolidate(service, dry_run)
    ]
    message = f"{len(proposals)} proposal(s)" if proposals else "no proposals"
    if proposals and dry_run:
        message += ": call consolidate(dry_run=false) to apply"
    return ConsolidateOut(dry_run=dry_run, proposals=proposals, message=message)


def set_profile(
    service: MemoryService,
    field: Annotated[str, Field(description="e.g. health.allergies")],
    value: Annotated[Any, Field(description="text, number, bool or list")],
    reason: Annotated[str | None, Field(description="why")] = None,
    source: Annotated[str | None, Field(description="e.g. user")] = None,
) -> WriteOut:
    """Set one profile field; a new list replaces the old."""
    result = profile.set_field(service, field, value, reason, source or "conversation")
    return _write_out(proposals.as_proposed(service, result))


def get_profile(service: MemoryService) -> ProfileOut:
    """The user's profile: every field, set or not."""
    found = profile.read(service)
    fields = [ProfileFieldOut.model_validate(asdict(e)) for e in found.fields]
    return ProfileOut(fields=fields, unset=list(found.unset), problems=list(found.problems))


def build_context(
    service: MemoryService,
    topic: Annotated[str, Field(description="the task")],
    budget_tokens: Annotated[int, Field(description="max tokens")] = 1500,
) -> ContextOut:
    """Profile, preferences and memories for a topic, within a token budget."""
    found = context.build_context(service, topic, budget_tokens)
    sections = [
        ContextSectionOut(
            name=s.name,
            ids=[i.id for i in s.items],
            tokens=s.tokens,
            left_out=[i.id for i in s.left_out],
        )
        for s in found.sections
    ]
    return ContextOut(
        text=found.text,
        used_tokens=found.used_tokens,
        budget_tokens=found.budget_tokens,
        over_budget=found.over_budget,
        sections=sections,
    )


def vault_status(service: MemoryService) -> StatusOut:
    """Counts, index state, problems, last commits."""
    return StatusOut.model_validate(asdict(reports.status(service)))


def sync(
    service: MemoryService,
    remote: Annotated[str | None, Field(description="default origin")] = None,
) -> SyncOut:
    """Sync with the git remote; a conflict keeps both texts."""
    return SyncOut.model_validate(asdict(syncing.sync(service, remote)))


def list_proposals(service: MemoryService) -> ProposalsOut:
    """Your writes awaiting review (proposal mode)."""
    proposing, found = proposals.mine(service)
    return ProposalsOut(
        mode="propose" if proposing else "direct",
        proposals=[
            PendingOut(
                id=p.id,
                op=p.op,
                memory=p.memory,
                paths=list(p.paths),
                subject=p.subject,
                time=p.time,
            )
            for p in found
        ],
    )


# Only what differs from the spec's defaults (not read-only, destructive, not idempotent),
# but for the read-only flag of writers: hosts show it.
READ = ToolAnnotations(read_only_hint=True)
WRITE = ToolAnnotations(destructive_hint=False)  # readOnlyHint defaults to false (MCP)
DESTRUCTIVE = ToolAnnotations(destructive_hint=True)
TOOLS: list[tuple[Callable[..., Any], ToolAnnotations]] = [
    (remember, WRITE),
    (recall, READ),
    (get_memory, READ),
    (list_memories, READ),
    (update_memory, WRITE),
    (forget, DESTRUCTIVE),
    (memory_history, READ),
    (memory_changes, READ),
    (memory_diff, READ),
    (revert_memory, WRITE),
    (related, READ),
    (consolidate, WRITE),
    (set_profile, WRITE),
    (get_profile, READ),
    (build_context, READ),
    (vault_status, READ),
    (sync, WRITE),
    (list_proposals, READ),
]
# What an agent in proposal mode writes on its branch instead of the vault (see proposals).
PROPOSABLE = frozenset({remember, update_memory, forget, revert_memory, consolidate, set_profile})


# -- helpers --------------------------------------------------------------------------------
def _filters(
    types: list[str] | None,
    tags: list[str] | None,
    folder: str | None,
    scope: list[str] | None,
    since: str | None,
    until: str | None,
    include_archived: bool,
) -> Filters:
    start, end = period(since, until)
    return Filters(
        types=tuple(types or ()),
        tags=tuple(tags or ()),
        folder=folder,
        scope=tuple(scope or ()),
        since=start,
        until=end,
        include_archived=include_archived,
    )


def _one_target(
    id: str | None, scope: str | None, selection: str | None, mode: str, reason: str | None
) -> None:
    """What ``forget`` is asked, checked before a person is asked to confirm it."""
    guard.check_forget(mode, reason)
    if sum(x is not None for x in (id, scope, selection)) != 1:
        raise InvalidInputError(
            "give one of id (one memory), scope (a session's memories) or filter "
            "(every memory it selects, listed for confirmation first)"
        )
    if scope is not None and mode != "archive":
        raise InvalidInputError(f"a scope is forgotten by archive only, not {mode}")


def _proposable(service: MemoryService, mode: str, selection: str | None) -> None:
    """A purge erases history, so it cannot be a proposal: refused before the person is
    asked to confirm it (Drafts.forget and purging.purge_many refuse it too, later)."""
    if mode == "purge" and isinstance(service, proposals.Drafts):
        raise purging.not_proposable(
            "--filter ... --purge" if selection is not None else "ID --purge"
        )


def _unconfirmed(operation: confirming.Operation, verdict: confirming.Verdict) -> ForgetOut:
    """Nothing forgotten: what would be, and the token that confirms it (if any)."""
    return ForgetOut(
        action="declined" if verdict.token is None else "needs_confirmation",
        commit=None,
        warning=verdict.note,
        confirm=verdict.token,
        pending=list(operation.ids),
        pending_paths=list(operation.paths),
    )


def _one_out(result: WriteResult) -> ForgetOut:
    memory = result.memory
    return ForgetOut(
        id=memory.id,
        path=memory.path,
        action=result.action,
        commit=result.commit,
        warning=CLONE_WARNING if result.action == "purged" else None,
        erased=list(result.erased),
    )


def _many_out(service: MemoryService, result: Archival) -> ForgetOut:
    """Several memories forgotten in one commit (a session scope or a filter); on a
    proposing client's branch, proposed."""
    ids = [m.id for m in result.memories]
    warning = CLONE_WARNING if ids and result.mode == "purge" else None
    if not ids:
        warning = "no active memory matches: nothing forgotten"
    proposed = isinstance(service, proposals.Drafts) and result.commit is not None
    return ForgetOut(
        action="proposed" if proposed else result.action,
        commit=result.commit,
        warning=warning,
        erased=list(result.erased),
        archived=ids if result.mode == "archive" else [],
        forgotten=ids if result.mode != "archive" else [],
    )


def _remember_args(args: dict[str, Any]) -> dict[str, Any]:
    """remember's arguments for MemoryService.remember: no None lists, dates together."""
    dates = {key: args.pop(key) for key in ("expires", "valid_from", "valid_until")}
    lists = {key: args[key] or [] for key in ("tags", "scope", "supersedes", "links")}
    return args | lists | {"dates": dates}


def _remember_out(result: RememberResult) -> RememberOut:
    memory = result.memory
    return RememberOut(
        id=memory.id if memory else None,
        path=memory.path if memory else None,
        uri=note_uri(memory.path) if memory else None,
        action=result.action,
        commit=result.commit,
        similar=[SimilarOut.model_validate(asdict(s)) for s in result.similar],
        reason=result.reason,
    )


def _recall_out(service: MemoryService, hits: list[Hit], note: str | None) -> RecallOut:
    among = linked_among(service.records, [h.id for h in hits])
    results = [RecallHit.model_validate({**asdict(h), "links": among.get(h.id, [])}) for h in hits]
    return RecallOut(results=results, count=len(results), note=note)


def _memory_out(memory: Memory, graph: Graph, seen: Access | None = None) -> MemoryOut:
    seen = seen or Access()
    links = [
        LinkOut(id=o.memory.id, title=o.memory.title)
        if o.memory
        else LinkOut(id=None, title=o.target)
        for o in graph.outgoing(memory.info())
    ]
    backlinks = [LinkOut(id=m.id, title=m.title) for m in graph.backlinks(memory.id)]
    return MemoryOut(
        id=memory.id,
        path=memory.path,
        uri=note_uri(memory.path),
        title=memory.title,
        type=memory.type,
        status=memory.status,
        revision=memory.content_hash,
        meta=jsonable(memory.meta),
        body=memory.body,
        problems=list(memory.problems),
        links=links,
        backlinks=backlinks,
        hits=seen.hits,
        last_accessed=seen.last_accessed,
    )


def _write_out(result: WriteResult) -> WriteOut:
    memory = result.memory
    return WriteOut(
        id=memory.id,
        path=memory.path,
        action=result.action,
        commit=result.commit,
        revision=memory.content_hash,
        previous_revision=result.previous_revision,
    )


# -- binding --------------------------------------------------------------------------------
def build_tools(service: MemoryService, notifier: Notifier) -> list[MemvaultTool]:
    """The tools bound to ``service``, as the MCP server publishes them."""
    return [
        MemvaultTool.from_function(
            bind(fn, service, notifier),
            description=" ".join((fn.__doc__ or "").split()),
            annotations=annotations,
            context_kwarg="ctx",
        )
        for fn, annotations in TOOLS
    ]


def bind(fn: Callable[..., T], service: MemoryService, notifier: Notifier) -> Callable[..., Any]:
    """``fn`` without its service parameter, run by ``call``, taking the request context."""
    signature = inspect.signature(fn, eval_str=True)
    params = list(signature.parameters.values())[1:]
    ctx = inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)

    async def tool(ctx: Context, **kwargs: Any) -> T:
        return await call(ctx, notifier, lambda: run(service, **kwargs))

    def run(service: MemoryService, **kwargs: Any) -> T:
        if fn not in PROPOSABLE:
            return fn(service, **kwargs)
        with proposals.writer(service) as target:  # the client's branch, if it proposes
            return fn(target, **kwargs)

    tool.__name__ = tool.__qualname__ = fn.__name__
    tool.__signature__ = signature.replace(parameters=[*params, ctx])  # type: ignore[attr-defined]
    tool.__annotations__ = {p.name: p.annotation for p in [*params, ctx]}
    tool.__annotations__["return"] = signature.return_annotation
    return tool


async def call(ctx: Context | None, notifier: Notifier, fn: Callable[[], T]) -> T:
    """Run a blocking service call in a worker thread, errors as tool errors."""
    _attach(ctx, notifier)
    token = current_client.set(_client_name(ctx))
    asking = confirming.current_asker.set(_asker(ctx))
    try:
        return await anyio.to_thread.run_sync(fn)
    except ToolError:
        raise
    except Exception as exc:
        raise _tool_error(exc) from exc
    finally:
        confirming.current_asker.reset(asking)
        current_client.reset(token)


class Confirmation(BaseModel):
    """What an elicitation asks the person: a yes or no."""

    confirm: bool = Field(description="yes, do it")


def _asker(ctx: Context | None) -> confirming.Asker | None:
    """Asks the person through the client (MCP elicitation), if the client declared it can;
    called from the worker thread that runs the tool."""
    wanted = ClientCapabilities(elicitation=ElicitationCapability())
    try:
        able = ctx is not None and ctx.session.check_client_capability(wanted)
    except Exception:  # outside a request, or no session: nobody to ask
        return None
    if not able or ctx is None:
        return None
    asked = ctx

    def ask(question: str) -> bool | None:
        return anyio.from_thread.run(_elicit, asked, question)

    return ask


async def _elicit(ctx: Context, question: str) -> bool | None:
    """True confirmed, False declined or cancelled, None the client could not ask (or
    nobody answered within :data:`ELICIT_SECONDS`: a worker thread waits meanwhile)."""
    try:
        with anyio.fail_after(ELICIT_SECONDS):
            answer = await ctx.elicit(question, Confirmation)
    except TimeoutError:
        log.warning(
            "no answer to the confirmation within %.0f s: confirming by token", ELICIT_SECONDS
        )
        return None
    except NoBackChannelError:  # a 2026-07-28 call: the server asks nothing, as designed
        log.debug("no channel to ask the client through: confirming by token")
        return None
    except Exception as exc:  # the client failed: confirm by token
        log.warning("could not ask through the client (%s): confirming by token", exc)
        return None
    return isinstance(answer, AcceptedElicitation) and answer.data.confirm


def _attach(ctx: Context | None, notifier: Notifier) -> None:
    """Let the notifier reach this client (and learn the event loop)."""
    try:
        if ctx is not None:
            notifier.attach(ctx.session)
            return
    except Exception:  # outside a request, or no session: the loop is enough
        pass
    notifier.loop = notifier.loop or asyncio.get_running_loop()


def _client_name(ctx: Context | None) -> str:
    """The calling client's name and version; ``unnamed`` when it gave none (a modern
    per-request call may leave its client info out): an MCP call always has a name, so
    proposal mode never falls back to writing directly."""
    try:
        params = ctx.session.client_params if ctx is not None else None
    except Exception:  # outside a request, or no session: no name
        params = None
    info = params.client_info if params is not None else None
    if info is None or not info.name.strip():
        return "unnamed"
    return f"{info.name}/{info.version}" if info.version else info.name


def _tool_error(exc: Exception) -> ToolError:
    """Any exception as an error result the agent can act on (never a bare "Error")."""
    if isinstance(exc, MemvaultError):
        return ToolError(f"{exc.code}: {exc}")
    log.error("unexpected error in a tool call", exc_info=exc)
    error = explain_unexpected(exc)
    return ToolError(f"{error.code}: {error}")
