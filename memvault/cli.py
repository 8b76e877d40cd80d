"""Command line: a thin click adapter over MemoryService. The only module that prints."""

from __future__ import annotations

import json
import logging
import os
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NoReturn

import click

from . import __version__
from .binding import serving_token
from .config import default_vault_path, load_settings
from .errors import MemvaultError, explain_unexpected
from .models import Access, Filters, MemoryInfo, Page, jsonable, sort_infos

log = logging.getLogger("memvault")


@dataclass
class Ctx:
    vault: Path
    json: bool
    debug: bool


def _fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(1)


@contextmanager
def _errors(ctx: Ctx) -> Iterator[None]:
    """One line on stderr and exit 1 for every error, a traceback only with --debug."""
    try:
        yield
    except MemvaultError as exc:
        if ctx.debug:
            raise
        _fail(str(exc))
    except BrokenPipeError:
        _reader_left()
    except Exception as exc:
        if ctx.debug:
            raise
        _fail(str(explain_unexpected(exc)))


def _reader_left() -> NoReturn:
    """The output's reader left (`memvault list | head -1`): exit quietly as git does (status
    141, SIGPIPE's), not with an error about the vault; stdout goes to /dev/null so the
    interpreter's last flush cannot fail again."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    sys.exit(141)


def _emit(ctx: Ctx, data: Any, human: Callable[[], None]) -> None:
    if ctx.json:
        click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))
    else:
        human()


def _service(ctx: Ctx, recover: bool = True, embedder: bool = True) -> Any:
    """The vault's service. Read commands pass ``recover=False``: they never commit."""
    from .service import MemoryService

    _check_vault(ctx.vault)
    settings = load_settings(ctx.vault)
    service = MemoryService.open(ctx.vault, settings, recover=recover, load_embedder=embedder)
    service.client = "cli"  # named in the commits it makes (Memvault-Client)
    return service


def _check_vault(root: Path) -> None:
    """Say what is wrong when ``root`` is no folder: a file given for the vault, or the
    default vault missing while the command runs inside another vault's folder."""
    if root.is_dir():
        return
    if root.exists():
        _fail(f"{root} is a file, not a vault folder: give --vault the vault's folder")
    here = Path.cwd()
    inside = next((d for d in (here, *here.parents) if (d / ".memvault").is_dir()), None)
    if inside is not None:
        _fail(
            f"no vault at {root}; this folder is inside the vault {inside}: pass "
            f"--vault {inside} (or set MEMVAULT_VAULT)"
        )


def _split(value: str | None) -> tuple[str, ...]:
    return tuple(v.strip() for v in (value or "").split(",") if v.strip())


pass_ctx = click.make_pass_decorator(Ctx)
NOT_WRITTEN = 3  # exit status of `add` when the text was a duplicate or rejected


def _late_flag(click_ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """--json / --debug given after the command name: same effect as before it."""
    obj = click_ctx.find_object(Ctx)
    if not value or obj is None:
        return
    if param.name == "json":
        obj.json = True
    else:
        obj.debug = True
        logging.getLogger().setLevel(logging.DEBUG)


class _Group(click.Group):
    """Every command takes --json and --debug after its name too (DESIGN section 9),
    and nothing ends in a traceback unless --debug was given."""

    group_class = type  # `eval` and any later sub-group behave the same

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        for flag, text in (
            ("json", "Machine-readable JSON output."),
            ("debug", "Verbose logs and tracebacks."),
        ):
            cmd.params.append(
                click.Option(
                    [f"--{flag}"],
                    is_flag=True,
                    expose_value=False,
                    callback=_late_flag,
                    help=text,
                )
            )
        super().add_command(cmd, name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except BrokenPipeError:
            _reader_left()
        except Exception as exc:
            obj = ctx.find_object(Ctx)
            if obj is None or obj.debug:
                raise
            _fail(str(exc) if isinstance(exc, MemvaultError) else str(explain_unexpected(exc)))


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--vault",
    type=click.Path(path_type=Path),
    default=None,
    help="Vault folder (default: $MEMVAULT_VAULT, else ~/.local/share/memvault/vault).",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")
@click.option("--debug", is_flag=True, help="Verbose logs and tracebacks.")
@click.version_option(__version__, prog_name="memvault")
@click.pass_context
def cli(click_ctx: click.Context, vault: Path | None, as_json: bool, debug: bool) -> None:
    """memvault: long-term memory for AI agents, as a git-backed Markdown vault."""
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if debug else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    click_ctx.obj = Ctx((vault or default_vault_path()).expanduser(), as_json, debug)


@cli.command()
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option("--clone", "url", default=None, help="Start from this git remote (any git URL).")
@click.option("--branch", default=None, help="With --clone: the remote's branch to start from.")
@pass_ctx
def init(ctx: Ctx, path: Path | None, url: str | None, branch: str | None) -> None:
    """Create a vault from the template (git init + first commit), or clone one."""
    from .template import create_vault

    target = (path or ctx.vault).expanduser()
    if url:
        _clone(ctx, url, target, branch)
        return
    if branch:
        raise click.UsageError("--branch goes with --clone")
    with _errors(ctx):
        created = create_vault(target)
    state = "created" if created else "exists"
    _emit(
        ctx,
        {"vault": str(target.resolve()), "state": state},
        lambda: click.echo(
            f"{'Created vault' if created else 'Vault already exists'} at {target.resolve()}"
        ),
    )


def _clone(ctx: Ctx, url: str, target: Path, branch: str | None) -> None:
    from .service import MemoryService
    from .syncing import clone_vault

    with _errors(ctx):
        state = clone_vault(url, target, branch=branch)
        service = MemoryService.open(target, load_settings(target))
        indexed = service.sync_index()
        service.close()
    where = target.resolve()
    lines = {
        "cloned": f"Cloned {url} into {where}: {indexed} memories indexed",
        "created": f"{url} is empty: created a vault at {where}; `memvault sync` fills it",
    }
    data = {"vault": str(where), "state": state, "remote": url, "indexed": indexed}
    _emit(ctx, data, lambda: click.echo(lines[state]))


@cli.command()
@click.argument("text")
@click.option("--type", "type_", default="note", show_default=True, help="Memory type.")
@click.option("--tags", default="", help="Comma-separated tags.")
@click.option("--importance", type=float, default=0.5, show_default=True)
@click.option("--confidence", type=float, default=1.0, show_default=True)
@click.option("--title", default=None)
@click.option("--folder", default=None, help="Folder in the vault (default: by type).")
@click.option("--scope", default="", help="Comma-separated scope labels (session:<id>...).")
@click.option("--link", "links", multiple=True, help="Id or title to link to (repeatable).")
@click.option("--expires", default=None, help="ISO date or date-time it lapses at.")
@click.option("--valid-from", default=None, help="ISO date or date-time it holds from.")
@click.option("--valid-until", default=None, help="ISO date or date-time it holds until.")
@click.option(
    "--supersedes",
    multiple=True,
    help="Id of a memory this corrects (repeatable): marked superseded.",
)
@pass_ctx
def add(
    ctx: Ctx,
    text: str,
    type_: str,
    tags: str,
    importance: float,
    confidence: float,
    title: str | None,
    folder: str | None,
    scope: str,
    links: tuple[str, ...],
    expires: str | None,
    valid_from: str | None,
    valid_until: str | None,
    supersedes: tuple[str, ...],
) -> None:
    """Remember TEXT as a new memory (one commit); TEXT '-' reads it from stdin
    (`pbpaste | memvault add -`).

    Exit 0 when it was written; exit 3 when nothing was written because TEXT
    duplicates a memory (named with its path and id) or is too trivial to keep.
    """
    dates = {"expires": expires, "valid_from": valid_from, "valid_until": valid_until}
    with _errors(ctx):
        service = _service(ctx)
        result = service.remember(
            _stdin_text() if text == "-" else text,
            type=type_,
            tags=_split(tags),
            importance=importance,
            confidence=confidence,
            title=title,
            folder=folder,
            scope=_split(scope),
            source="user",
            links=links,
            dates=dates,
            supersedes=list(supersedes),
        )
    if result.memory is None:
        _not_written(ctx, result)
    data = {**result.memory.summary(), "commit": result.commit, "action": result.action}
    data["similar"] = [s.__dict__ for s in result.similar]

    def human() -> None:
        click.echo(f"{result.action} {result.memory.path} ({result.memory.id})")
        for s in result.similar:
            if s.relation in SAID:
                click.echo(f"  {SAID[s.relation]} {s.path} ({s.id})")

    _emit(ctx, data, human)


def _stdin_text() -> str:
    """The text piped to `add -`, UTF-8 (a byte order mark dropped)."""
    if sys.stdin.isatty():
        click.echo("type the text to remember, then Ctrl-D on a line of its own", err=True)
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise MemvaultError(
            f"the text on stdin is not UTF-8 (byte {exc.start}): convert it, e.g. with "
            "`iconv -t UTF-8`, and pipe it again; nothing written"
        ) from exc


SAID = {  # what `add` says of a close memory it reports (related ones stay in --json)
    "possible_contradiction": "may contradict",
    "superseded": "says again what a corrected memory said:",
}


def _not_written(ctx: Ctx, result: Any) -> NoReturn:
    """A duplicate or rejected `add`: one line (or the JSON result) and exit 3."""
    twin = next((s for s in result.similar if s.relation == "duplicate"), None)
    data = {
        "action": result.action,
        "id": None,
        "path": None,
        "commit": None,
        "reason": result.reason,
        "duplicate_of": {"id": twin.id, "path": twin.path} if twin else None,
        "similar": [s.__dict__ for s in result.similar],
    }
    if result.action == "duplicate" and twin:
        line = f"duplicate: already remembered as {twin.path} ({twin.id}); nothing written"
    else:
        line = f"{result.action}: {result.reason}; nothing written"
    _emit(ctx, data, lambda: click.echo(line))
    sys.exit(NOT_WRITTEN)


@cli.command()
@click.argument("id_or_path")
@click.option(
    "--content",
    default=None,
    help="New text (a title that was only the old first line follows it; else kept).",
)
@click.option("--title", default=None)
@click.option("--type", "type_", default=None)
@click.option("--tags", default=None, help="Comma-separated tags (replace the old ones).")
@click.option("--importance", type=float, default=None)
@click.option("--confidence", type=float, default=None)
@click.option("--status", type=click.Choice(["active", "superseded"]), default=None)
@click.option("--expires", default=None, help="ISO date or date-time; '' removes it.")
@click.option("--valid-from", default=None, help="ISO date or date-time; '' removes it.")
@click.option("--valid-until", default=None, help="ISO date or date-time; '' removes it.")
@click.option("--expected-revision", default=None, help="Refuse if the file changed since.")
@pass_ctx
def update(
    ctx: Ctx,
    id_or_path: str,
    content: str | None,
    title: str | None,
    type_: str | None,
    tags: str | None,
    importance: float | None,
    confidence: float | None,
    status: str | None,
    expires: str | None,
    valid_from: str | None,
    valid_until: str | None,
    expected_revision: str | None,
) -> None:
    """Change a memory's text or fields, keeping the rest of the file (one commit)."""
    fields: dict[str, Any] = {"type": type_, "importance": importance, "confidence": confidence}
    fields |= {"status": status, "expires": expires, "valid_from": valid_from}
    fields |= {"valid_until": valid_until, "tags": None if tags is None else list(_split(tags))}
    with _errors(ctx):
        result = _service(ctx).update(
            id_or_path, content, fields, title=title, expected_revision=expected_revision
        )
    data = {**result.memory.summary(), "commit": result.commit, "action": result.action}
    _emit(ctx, data, lambda: click.echo(f"{result.action} {result.memory.path}"))


@cli.command()
@click.argument("query")
@click.option("-k", "k", default=8, show_default=True, help="How many results.")
@click.option("--type", "types", default="", help="Comma-separated types to keep.")
@click.option("--tags", default="", help="Comma-separated tags that must all be present.")
@click.option("--folder", default=None)
@click.option("--mode", type=click.Choice(["hybrid", "bm25", "vector"]), default="hybrid")
@click.option("--include-archived", is_flag=True, help="Also search archived/superseded.")
@click.option("--include-expired", is_flag=True, help="Also search memories past expires.")
@click.option("--explain", is_flag=True, help="Show why each result ranked where it did.")
@click.option(
    "--min-relevance",
    type=click.FloatRange(0.0, 1.0),
    default=None,
    help="Drop results less relevant than this (0..1; 0 keeps all). Default: the setting.",
)
@click.option("--as-of", default=None, help="As the vault was then: ISO time or commit.")
@pass_ctx
def search(
    ctx: Ctx,
    query: str,
    k: int,
    types: str,
    tags: str,
    folder: str | None,
    mode: str,
    include_archived: bool,
    include_expired: bool,
    explain: bool,
    min_relevance: float | None,
    as_of: str | None,
) -> None:
    """Hybrid search (BM25 + vectors + recency/importance); each result shows its
    relevance (0..1, absolute) and its score (rank among this query's results)."""
    filters = Filters(
        types=_split(types),
        tags=_split(tags),
        folder=folder,
        include_archived=include_archived,
        include_expired=include_expired,
        min_relevance=min_relevance,
    )
    with _errors(ctx):
        service = _service(ctx, recover=False, embedder=as_of is None)
        if as_of is not None:  # full text over that commit's files
            from .asof import recall

            results = recall(service, query, as_of, k, filters)
        else:
            results = service.recall(query, k=k, filters=filters, mode=mode)
            if mode != "bm25":
                _say_embedded(service.index_status())
            service.access.hit(r.id for r in results)  # shown to a person: counted
        floor = service.settings.min_relevance if min_relevance is None else min_relevance

    def human() -> None:
        if not results:
            from .retrieval import nothing_found

            click.echo(nothing_found(service.records, floor, filters))
        for n, r in enumerate(results, 1):
            click.echo(
                f"{n:>2}. relevance {r.relevance:.2f}  score {r.score:.3f}  "
                f"{r.title}  [{r.type}] {r.path}"
            )
            click.echo(f"      {r.snippet}")
            if explain:
                click.echo(f"      why: {json.dumps(r.why, ensure_ascii=False)}")

    _emit(ctx, [asdict(r) for r in results], human)


@cli.command()
@click.argument("id_or_path")
@click.option("--as-of", default=None, help="As the vault was then: ISO time or commit.")
@pass_ctx
def show(ctx: Ctx, id_or_path: str, as_of: str | None) -> None:
    """A memory with its metadata (or as it was at --as-of)."""
    with _errors(ctx):
        service = _service(ctx, recover=False, embedder=False)
        if as_of is not None:
            from .asof import get

            memory, seen = get(service, id_or_path, as_of), Access()
        else:
            memory = service.get(id_or_path)
            seen = service.access.hit([memory.id])[memory.id]  # as it was before this read
    data = {**memory.summary(), **asdict(seen), "meta": jsonable(memory.meta), "body": memory.body}
    if memory.problems:
        data["problems"] = list(memory.problems)

    def human() -> None:
        click.echo(f"{memory.title}\n  id: {memory.id}\n  path: {memory.path}")
        click.echo(
            f"  type: {memory.type}  status: {memory.status}  tags: {', '.join(memory.tags)}"
        )
        click.echo(f"  importance: {memory.importance}  confidence: {memory.confidence}")
        click.echo(f"  created: {memory.created}  updated: {memory.updated}")
        click.echo(f"  hits: {seen.hits}  last accessed: {seen.last_accessed or 'never'}")
        if memory.expires:
            click.echo(f"  expires: {memory.expires}")
        for problem in memory.problems:
            click.echo(f"  problem: {problem}")
        click.echo("")
        click.echo(memory.body.rstrip())

    _emit(ctx, data, human)


@cli.command()
@click.argument("id_or_path")
@click.option("--depth", type=click.IntRange(1, 3), default=1, show_default=True, help="Hops.")
@pass_ctx
def links(ctx: Ctx, id_or_path: str, depth: int) -> None:
    """Memories a memory links to (out) or is linked from (in), and its broken links."""
    from .links import graph_of

    with _errors(ctx):
        service = _service(ctx, recover=False, embedder=False)
        memory = service.get(id_or_path)
        graph = graph_of(service.records, memory.info())
        found = graph.related(memory.id, depth)
        broken = [o.target for o in graph.outgoing(memory.info()) if o.memory is None]
    rows = [{**r.memory.summary(), "relation": r.relation, "depth": r.depth} for r in found]

    def human() -> None:
        click.echo(f"{memory.title}  ({memory.id}, {memory.path})")
        if not rows and not broken:
            click.echo("  no links")
        for r in found:
            arrow = "->" if r.relation == "out" else "<-"
            click.echo(f"  {'  ' * (r.depth - 1)}{arrow} {r.memory.title}  [{r.memory.path}]")
        for target in broken:
            click.echo(f"  -> [[{target}]]  (broken: no such memory)")

    _emit(ctx, {"id": memory.id, "related": rows, "broken": broken}, human)


@cli.command(name="list")
@click.option("--type", "types", default="", help="Comma-separated types.")
@click.option("--tags", default="", help="Comma-separated tags that must all be present.")
@click.option("--folder", default=None)
@click.option("--limit", type=click.IntRange(min=1), default=None)
@click.option(
    "--sort", type=click.Choice(["updated", "created", "importance", "path"]), default="updated"
)
@click.option("--include-archived", is_flag=True)
@click.option("--include-expired", is_flag=True, help="Also memories past expires.")
@click.option("--as-of", default=None, help="As the vault was then: ISO time or commit.")
@pass_ctx
def list_(
    ctx: Ctx,
    types: str,
    tags: str,
    folder: str | None,
    limit: int | None,
    sort: str,
    include_archived: bool,
    include_expired: bool,
    as_of: str | None,
) -> None:
    """Memories, newest first; unreadable files are reported on stderr."""
    filters = Filters(
        types=_split(types),
        tags=_split(tags),
        folder=folder,
        include_archived=include_archived,
        include_expired=include_expired,
    )
    with _errors(ctx):
        service = _service(ctx, recover=False, embedder=False)
        if as_of is not None:
            from .asof import records

            page = Page.of(sort_infos(records(service, as_of, filters), sort), limit, None)
        else:
            page = service.list_memories(filters, sort=sort, limit=limit)
        seen = service.access.of(m.id for m in page.memories)
    for problem in page.unreadable:
        click.echo(f"warning: {problem.message}", err=True)
    memories = page.memories
    data = [m.summary() | asdict(seen[m.id]) for m in memories]
    _emit(ctx, data, lambda: _print_memories(memories))


def _print_memories(memories: tuple[MemoryInfo, ...]) -> None:
    if not memories:
        click.echo("no memories")
    for m in memories:
        day = (m.updated or m.created or "")[:10] or "no date"  # a note init took in as it was
        click.echo(f"{day:<10}  {m.type:<10}  {m.id}  {m.path}")


@cli.command(name="log")
@click.argument("id_or_path", required=False)
@click.option("--limit", type=click.IntRange(min=1), default=None)
@pass_ctx
def log_(ctx: Ctx, id_or_path: str | None, limit: int | None) -> None:
    """History of the vault, or of one memory (following renames)."""
    with _errors(ctx):
        commits = _service(ctx, recover=False, embedder=False).log(id_or_path, limit=limit)

    def human() -> None:
        for c in commits:
            where = f"  ({c.path})" if c.path else ""
            click.echo(f"{c.sha[:10]}  {c.date[:19]}  {c.author:<12} {c.subject}{where}")

    _emit(ctx, [c.brief() for c in commits], human)


@cli.command()
@click.option("--since", default=None, help="A commit (the last cursor) or an ISO time.")
@click.option("--limit", type=click.IntRange(1, 500), default=None, help="At most (default 50).")
@pass_ctx
def changes(ctx: Ctx, since: str | None, limit: int | None) -> None:
    """What changed in memories since a commit or time (default: the last 20), newest first.

    The cursor printed on stderr is the --since of the next call.

    \b
    Examples:
      memvault changes --since 2026-11-30T18:00
      memvault changes --since 9613345c2c --limit 200
    """
    from . import changes as feed_of

    with _errors(ctx):
        feed = feed_of.feed(_service(ctx, recover=False, embedder=False), since, limit)

    def human() -> None:
        for change in feed.changes:
            click.echo(feed_of.line(change))
        if feed.more and since:  # the oldest came: the cursor goes on from there
            click.echo("(newer changes follow: pass the cursor below as --since)", err=True)
        elif feed.more:
            click.echo("(older changes left out: raise --limit or pass --since)", err=True)
        click.echo(f"cursor: {feed.cursor}", err=True)

    _emit(ctx, asdict(feed), human)


@cli.command()
@click.argument("id_or_path")
@click.argument("rev")
@pass_ctx
def revert(ctx: Ctx, id_or_path: str, rev: str) -> None:
    """Restore a memory as it was at REV (a new commit; nothing is lost)."""
    with _errors(ctx):
        result = _service(ctx).revert(id_or_path, rev)
    data = {**result.memory.summary(), "commit": result.commit, "action": result.action}
    path, at = result.memory.path, rev[:10]
    said = f"reverted {path} to {at}" if result.commit else f"{path} is already as at {at}"
    _emit(ctx, data, lambda: click.echo(said))


@cli.command()
@click.argument("id_or_path", required=False)
@click.option("--delete", "mode", flag_value="delete", help="Delete the file (history keeps it).")
@click.option("--purge", "mode", flag_value="purge", help="Erase it from all git history.")
@click.option("--reason", default=None)
@click.option("--scope", default=None, help="Archive every memory of session:<id> (one commit).")
@click.option(
    "--filter",
    "selection",
    default=None,
    help="Every memory matching e.g. 'type:episode tag:trip until:2026-01-01' (one commit).",
)
@click.option("--dry-run", is_flag=True, help="With --filter: list what it selects, forget none.")
@click.option("--yes", is_flag=True, help="Do not ask 'are you sure' at a terminal.")
@pass_ctx
def forget(
    ctx: Ctx,
    id_or_path: str | None,
    mode: str | None,
    reason: str | None,
    scope: str | None,
    selection: str | None,
    dry_run: bool,
    yes: bool,
) -> None:
    """Archive a memory (default, reversible); --delete or --purge to go further;
    --scope session:<id> archives a session's working memory at once; --filter selects
    memories by type:, tag:, scope:, folder:, since:, until:, archived:yes and lists them
    first. At a terminal, delete, purge, a profile field or several memories ask first
    (--yes: do not ask); a --filter without --yes off a terminal only lists."""
    from .history import CLONE_WARNING

    if sum(x is not None for x in (id_or_path, scope, selection)) != 1 or (scope and mode):
        _fail(
            "give one of ID_OR_PATH, --scope session:<id> (archived only) or --filter "
            "'type:... tag:...'"
        )
    if selection is not None:
        _forget_selected(ctx, selection, mode or "archive", reason, dry_run, yes)
        return
    confirmed = None
    if not yes and sys.stdin.isatty():
        confirmed = _ask_before_forgetting(ctx, id_or_path, mode or "archive", scope)
    if scope is not None:
        _forget_scope(ctx, scope, reason, confirmed)
        return
    assert id_or_path is not None
    with _errors(ctx):
        result = _service(ctx).forget(id_or_path, mode or "archive", reason)
    data = {**result.memory.summary(), "commit": result.commit, "action": result.action}
    if result.action == "purged":
        data["erased"] = list(result.erased)
        data["warning"] = CLONE_WARNING
        click.echo(f"erased from: {', '.join(result.erased)}", err=True)
        click.echo(f"warning: {result.memory.id} {CLONE_WARNING}", err=True)
    _emit(ctx, data, lambda: click.echo(f"{result.action} {result.memory.path}"))


@cli.command()
@click.argument("field", required=False)
@click.argument("values", nargs=-1)
@click.option("--reason", default=None, help="Why (recorded in the commit).")
@pass_ctx
def profile(ctx: Ctx, field: str | None, values: tuple[str, ...], reason: str | None) -> None:
    """The user's profile: all fields, one FIELD, or set FIELD to VALUE (one commit).

    A list field takes several values (`memvault profile health.allergies penicillin
    peanuts`) or one with commas (`"penicillin, peanuts"`). Fields and allowed values
    come from the vault's _schemas/profile.yaml.
    """
    from . import profile as profiles

    with _errors(ctx):
        service = _service(ctx, recover=bool(values), embedder=bool(values))  # reads: no
        if values:
            value = values[0] if len(values) == 1 else list(values)
            result = profiles.set_field(service, field or "", value, reason, "user")
        elif field:
            entry, problem = profiles.lookup(service, field)
        else:
            found = profiles.read(service)
    if values:
        data = {**result.memory.summary(), "commit": result.commit, "action": result.action}
        _emit(ctx, data, lambda: click.echo(f"{result.action} {result.memory.path}"))
    elif field:
        _show_field(ctx, field, entry, problem)
    else:
        _emit(ctx, asdict(found), lambda: _print_profile(found))


def _show_field(ctx: Ctx, field: str, entry: Any, problem: str | None) -> None:
    """The value on stdout; an unset field prints nothing there and says so on stderr (and
    why, when its file holds a value that does not count)."""
    if entry is None:
        hint = f"{field} is not set: set it with `memvault profile {field} VALUE`"
        click.echo(f"warning: {problem}" if problem else hint, err=True)
        _emit(ctx, {"field": field, "value": None, "problem": problem}, lambda: None)
        return
    _emit(ctx, asdict(entry), lambda: click.echo(_profile_value(entry.value)))


def _print_profile(found: Any) -> None:
    for entry in found.fields:
        click.echo(f"{entry.field}: {_profile_value(entry.value)}")
    if not found.fields:
        click.echo("no profile fields set")
    if found.unset:
        click.echo(f"not set: {', '.join(found.unset)}", err=True)
    for problem in found.problems:
        click.echo(f"warning: {problem}", err=True)


def _profile_value(value: Any) -> str:
    from .profile import show

    return show(value)


def _ask_before_forgetting(
    ctx: Ctx, id_or_path: str | None, mode: str, scope: str | None
) -> tuple[str, ...]:
    """A person at a terminal confirms destructive forgetting (no token: they are here);
    the ids they were shown."""
    from .confirm import resolve

    with _errors(ctx):
        operation = resolve(_service(ctx), id_or_path, mode, scope)
    if operation.destructive and operation.ids:
        click.confirm(f"{operation.describe()}: are you sure?", abort=True, err=True)
    return operation.ids


def _forget_selected(
    ctx: Ctx, selection: str, mode: str, reason: str | None, dry_run: bool, yes: bool
) -> None:
    """List what a filter selects; forget it only with --yes or the person's yes at a
    terminal (exactly the listed memories, in one commit or one purge)."""
    from .confirm import resolve
    from .history import CLONE_WARNING
    from .lifecycle import forget_selected
    from .selection import parse, undated_note

    with _errors(ctx):
        service = _service(ctx)
        operation = resolve(service, None, mode, selection=selection)
        left = undated_note(service.undated(parse(selection)))
    pairs = zip(operation.ids, operation.paths, strict=True)
    matches = [{"id": i, "path": p} for i, p in pairs]
    listing = {"dry_run": True, "mode": mode, "filter": selection, "matches": matches}
    if left:  # not selected, and so not forgotten: said before anything is
        listing["warning"] = left
        click.echo(f"warning: {left}", err=True)
    asking = not yes and not dry_run and sys.stdin.isatty() and bool(operation.ids)
    if dry_run or not operation.ids or not (yes or asking):
        _emit(ctx, listing, lambda: _print_selected(operation, dry_run or not operation.ids))
        return
    if asking:
        click.echo("\n".join(operation.paths), err=True)
        click.confirm(f"{operation.describe()}: are you sure?", abort=True, err=True)
    with _errors(ctx):
        result = forget_selected(service, operation.ids, mode, reason, selection)
    data = {"commit": result.commit, "mode": mode, "forgotten": [m.id for m in result.memories]}
    if result.mode == "purge":
        data["erased"], data["warning"] = list(result.erased), CLONE_WARNING
        click.echo(f"warning: {CLONE_WARNING}", err=True)
    lines = [f"{result.action} {m.path}" for m in result.memories] or ["nothing matched"]
    _emit(ctx, data, lambda: click.echo("\n".join(lines)))


def _print_selected(operation: Any, asked_for: bool) -> None:
    for path in operation.paths:
        click.echo(path)
    count = len(operation.ids)
    if not count:
        click.echo("no memory matches the filter: nothing to forget", err=True)
    elif not asked_for:
        click.echo(
            f"{count} selected, nothing forgotten: add --yes to {operation.mode} them", err=True
        )
    else:
        click.echo(f"{count} selected (dry run: nothing forgotten)", err=True)


def _forget_scope(
    ctx: Ctx, scope: str, reason: str | None, confirmed: tuple[str, ...] | None
) -> None:
    from .lifecycle import forget_scope

    with _errors(ctx):
        result = forget_scope(_service(ctx), scope, reason, confirmed)
    data = {"commit": result.commit, "archived": [m.summary() for m in result.memories]}
    lines = [f"archived {m.path}" for m in result.memories] or [f"nothing in {scope} to archive"]
    _emit(ctx, data, lambda: click.echo("\n".join(lines)))


@cli.command()
@click.option("--apply", is_flag=True, help="Apply every proposal (one commit each).")
@pass_ctx
def consolidate(ctx: Ctx, apply: bool) -> None:
    """Propose merges of near-duplicates, supersessions and archives by the forgetting
    policy (expired; long unused and doubtful); --apply applies them."""
    from .lifecycle import consolidate as plan

    with _errors(ctx):
        proposals = plan(_service(ctx, recover=apply), dry_run=not apply)

    def human() -> None:
        if not proposals:
            click.echo("no proposals")
        for p in proposals:
            done = f" applied {p.commit[:10] if p.commit else ''}" if p.applied else ""
            click.echo(f"{p.kind:<9} {', '.join(p.paths)}{done}\n          {p.reason}")
        if proposals and not apply:
            click.echo("run `memvault consolidate --apply` to apply them")

    _emit(ctx, {"applied": apply, "proposals": [asdict(p) for p in proposals]}, human)


@cli.command()
@click.argument("topic")
@click.option("--budget", default=1500, show_default=True, help="Tokens at most (estimated).")
@pass_ctx
def context(ctx: Ctx, topic: str, budget: int) -> None:
    """What memory knows about TOPIC: profile, preferences, memories, episodes, with ids."""
    from .context import build_context

    with _errors(ctx):
        found = build_context(_service(ctx, recover=False), topic, budget)
    data = {**asdict(found), "ids": list(found.ids)}
    _emit(ctx, data, lambda: click.echo(found.text, nl=False))
    if not ctx.json:
        left = f", {len(found.left_out)} left out" if found.left_out else ""
        over = " (over: the profile alone is larger)" if found.over_budget else ""
        click.echo(f"about {found.used_tokens} of {budget} tokens{left}{over}", err=True)


@cli.command(name="import")
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@pass_ctx
def import_(ctx: Ctx, source: Path) -> None:
    """Import a folder of notes (Obsidian, Logseq, Notion, Bear: .md, .markdown, .txt) or
    a JSONL of memories (the MCP memory server's memory.jsonl too).

    One commit; files it cannot read are skipped and named. Safe to repeat: unchanged notes
    are left alone, changed ones update the same memory, linked attachments are copied.
    A note without created: is dated by the commit that added its file (a folder in git),
    else by the file's modification time, never after its own updated:.

    \b
    Examples:
      memvault import ~/Documents/Obsidian/MyVault
      memvault --json import memories.jsonl
    """
    with _errors(ctx):
        service = _service(ctx)
        with click.progressbar(length=1, label="indexing", file=sys.stderr) as bar:
            result = service.import_path(source, progress=_progress(bar))
        _say_embedded(service.index_status())  # a bulk import leaves vectors for later
    _emit(ctx, asdict(result), lambda: click.echo(result.summary()))


@cli.command()
@click.option("--full", is_flag=True, help="Drop the index and rebuild it from the files.")
@pass_ctx
def reindex(ctx: Ctx, full: bool) -> None:
    """Bring the index up to date with the files (only changed files unless --full)."""
    with _errors(ctx):
        service = _service(ctx, recover=False)
        if full:
            service.reset_index()
        with click.progressbar(length=1, label="indexing", file=sys.stderr) as bar:
            count = service.sync_index(progress=_progress(bar))
        embedded = _fill_vectors(service)
        state = service.index_status()
    data = {"indexed": count, "embedded": embedded, "index": state}
    _emit(ctx, data, lambda: click.echo(f"indexed {count} file(s), embedded {embedded}"))


def _say_embedded(state: dict[str, Any]) -> None:
    """One stderr line when some memories have no vectors yet (they rank by text only)."""
    embedding = state.get("embedding")
    if embedding and embedding["done"] < embedding["total"]:
        click.echo(
            f"embedded: {embedding['done']} of {embedding['total']} memories; the others "
            "rank by text only (`memvault reindex` or a running `memvault serve` embeds them)",
            err=True,
        )
    elif state.get("state") not in (None, "ready"):
        click.echo(f"embedder {state['state']}: results rank by text only", err=True)


PROGRESS_SECONDS = 5.0  # a progress line this often when stderr is not a terminal


def _fill_vectors(service: Any) -> int:
    """Make missing vectors with a progress bar on a terminal, else a line every few
    seconds; Ctrl-C or a kill keeps every batch already stored."""
    import time

    if sys.stderr.isatty():
        bars: list[Any] = []

        def bar(p: Any) -> None:
            if not bars:
                bars.append(click.progressbar(length=p.total, label="embedding", file=sys.stderr))
                bars[0].__enter__()
            bars[0].update(p.done - bars[0].pos)

        try:
            return int(service.fill_vectors(bar, wait=60))
        finally:
            if bars:
                bars[0].__exit__(None, None, None)
    last = [0.0]

    def line(p: Any) -> None:
        now = time.monotonic()
        if now - last[0] >= PROGRESS_SECONDS or p.done >= p.total:
            last[0] = now
            eta = f", about {p.eta_seconds:.0f}s left" if p.eta_seconds else ""
            rate = f" ({p.rate:.1f}/s{eta})" if p.rate else ""
            click.echo(f"embedding: {p.done}/{p.total} memories{rate}", err=True)

    return int(service.fill_vectors(line, wait=60))


def _progress(bar: Any) -> Callable[[int, int], None]:
    def update(done: int, total: int) -> None:
        bar.length = max(total, 1)
        bar.update(done - bar.pos)

    return update


# reported by doctor, but no failure: memvault commits edits itself, and a link to a note
# not written yet is an Obsidian habit
NOTICES = {"uncommitted", "broken_link"}


@cli.command()
@pass_ctx
def doctor(ctx: Ctx) -> None:
    """Report malformed files, duplicate ids and keys, broken links, uncommitted changes, git
    trouble.

    Exit 1 when a problem needs attention; uncommitted edits and broken links alone exit 0
    (edits are committed on the next start; a link may name a note not written yet).
    """
    from .doctor import run_checks
    from .history import History
    from .vault import Vault, writable

    with _errors(ctx):
        _check_vault(ctx.vault)
        if not ctx.vault.is_dir():
            _fail(f"no vault at {ctx.vault}: create one with `memvault init`")
        settings = load_settings(ctx.vault)
        vault = Vault(ctx.vault, settings.max_file_bytes, read_only=not writable(ctx.vault))
        problems = run_checks(vault, History(vault.root), settings.embedder)
    data = [p.__dict__ for p in problems]

    def human() -> None:
        if not problems:
            click.echo(f"ok: no problems found in {vault.root}")
        for p in problems:
            click.echo(f"{p.kind:<13} {p.message}")

    _emit(ctx, {"vault": str(vault.root), "problems": data}, human)
    if any(p.kind not in NOTICES for p in problems):
        sys.exit(1)


@cli.command()
@pass_ctx
def status(ctx: Ctx) -> None:
    """Counts, index state, embedder, last commits."""
    from .reports import status as vault_status

    with _errors(ctx):
        data = vault_status(_service(ctx, recover=False), wait_for_embedder=30)

    def human() -> None:
        click.echo(f"vault: {data.vault}")
        types = ", ".join(f"{k} {v}" for k, v in data.by_type.items()) or "none"
        click.echo(f"memories: {data.memories} ({types}); archived {data.archived}")
        click.echo(f"problems: {data.problems}  uncommitted: {data.uncommitted}")
        idx = data.index
        reason = f": {idx['reason']}" if idx.get("reason") else ""
        click.echo(
            f"index: {idx['memories']} indexed, {idx['with_vectors']} with vectors; "
            f"embedder {idx['embedder']} ({idx['state']}{reason})"
        )
        if data.sync:
            last = data.sync
            state = f"not synced: {last['error']}" if last.get("error") else last["action"]
            when = ", ".join(str(v) for v in (last["time"], last["remote"]) if v)
            click.echo(f"last sync ({when}): {state}")
        for path in data.conflicts:
            click.echo(f"conflict: {path}")
        for client, count in data.proposals.items():
            click.echo(f"proposals: {count} from {client}, waiting for `memvault review`")
        emb = idx.get("embedding")
        if emb and emb["done"] < emb["total"]:
            eta = f", about {emb['eta_seconds']}s left" if emb.get("eta_seconds") else ""
            click.echo(f"embedding: {emb['done']}/{emb['total']} memories{eta}")
        for c in data.last_commits:
            click.echo(f"  {c['commit'][:10]} {c['date'][:19]} {c['subject']}")

    _emit(ctx, asdict(data), human)


@cli.command()
@click.option("--remote", default=None, help="Git remote (default: the branch's, else origin).")
@click.option(
    "--replace-remote",
    is_flag=True,
    help="After a purge here: replace the remote's history with this vault's, when it holds "
    "nothing but what the purge rewrote.",
)
@click.option(
    "--accept-settings",
    is_flag=True,
    help="Take the remote's loosening of a setting that decides what this machine trusts "
    "(agent_writes, propose_clients, allow_secrets, embedder); refused without it.",
)
@pass_ctx
def sync(ctx: Ctx, remote: str | None, replace_remote: bool, accept_settings: bool) -> None:
    """Commit pending edits, fetch, integrate and push through a git remote.

    Same memory changed on both sides: both texts are kept and the memory is flagged
    `conflict` (see `resolve`). A remote that cannot be reached is reported, not an error.
    """
    from .syncing import sync as sync_vault

    with _errors(ctx):
        result = sync_vault(
            _service(ctx), remote, replace_remote=replace_remote, accept_settings=accept_settings
        )

    def human() -> None:
        where = f"{result.remote}/{result.branch}"
        changed = f"{len(result.changed)} memory file(s) changed here"
        click.echo(f"{where}: {result.action}; {changed}; {result.pushed} commit(s) pushed")
        for path in result.conflicts:
            click.echo(f"conflict: {path} (both versions kept: `memvault resolve {path} --keep`)")
        if result.error:
            click.echo(f"not synced: {result.error}")

    _emit(ctx, asdict(result), human)


@cli.command()
@click.argument("id_or_path")
@click.option(
    "--keep",
    type=click.Choice(["ours", "theirs", "both"]),
    required=True,
    help="ours: this vault's text; theirs: the other side's; both: one after the other.",
)
@pass_ctx
def resolve(ctx: Ctx, id_or_path: str, keep: str) -> None:
    """Settle a memory a sync left in conflict (one commit)."""
    from .syncing import resolve_conflict

    with _errors(ctx):
        result = resolve_conflict(_service(ctx), id_or_path, keep)
    _emit(
        ctx,
        {"id": result.memory.id, "path": result.memory.path, "commit": result.commit},
        lambda: click.echo(f"resolved {result.memory.path} (kept {keep}): {result.commit}"),
    )


@cli.group(invoke_without_command=True)
@click.option("--client", default=None, help="Only this MCP client's proposals.")
@click.pass_context
def review(click_ctx: click.Context, client: str | None) -> None:
    """Agents' proposals (agent_writes = "propose"), with their diffs; accept or reject them."""
    if click_ctx.invoked_subcommand is not None:
        return
    from . import proposals

    ctx = click_ctx.find_object(Ctx)
    assert ctx is not None
    with _errors(ctx):
        service = _service(ctx, recover=False, embedder=False)
        found = [(p, proposals.diff(service, p)) for p in proposals.pending(service, client)]
    data = [asdict(p) | {"diff": d} for p, d in found]
    _emit(ctx, data, lambda: _print_proposals(found))


def _print_proposals(found: list[tuple[Any, str]]) -> None:
    if not found:
        click.echo("no proposals waiting", err=True)
    for proposal, diff in found:
        click.echo(f"{proposal.id}  {proposal.client}  {proposal.time}  {proposal.subject}")
        click.echo(diff.rstrip("\n") + "\n")


def _decide(
    ctx: Ctx, action: str, ids: tuple[str, ...], everything: bool, client: str | None
) -> None:
    from . import proposals

    decide = proposals.accept if action == "accept" else proposals.reject
    decisions = []
    if not ids and not everything:
        raise click.UsageError(
            f"give proposal ids to {action} (`memvault review` lists them) or --all"
        )
    with _errors(ctx):
        service = _service(ctx, embedder=action == "accept")  # accepted memories get vectors
        if everything:
            waiting = [p.id for p in proposals.pending(service, client)]
            # client by client: each one's oldest first to accept, newest first to reject
            ids = tuple(waiting if action == "accept" else reversed(waiting))
        try:
            for proposal_id in ids:  # each its own commit: what is done stays done
                decisions.append(decide(service, proposal_id))
                if not ctx.json:
                    _print_decisions(decisions[-1:])
        finally:  # and is said, in JSON too, when a later one is refused
            data = [
                {"id": d.proposal.id, "action": d.action, "commit": d.commit, "paths": [*d.paths]}
                for d in decisions
            ]
            _emit(ctx, data, lambda: None)


def _print_decisions(decisions: list[Any]) -> None:
    for d in decisions:
        # no commit: the vault held the change already (a person's edit, an interrupted accept)
        done = d.commit or "the vault held it already, nothing to commit"
        click.echo(f"{d.action} {d.proposal.id} ({d.proposal.subject}): {done}")


@review.command()
@click.argument("ids", nargs=-1)
@click.option(
    "--all", "everything", is_flag=True, help="Every waiting proposal: each client's oldest first."
)
@click.option("--client", default=None, help="With --all: only this client's.")
@pass_ctx
def accept(ctx: Ctx, ids: tuple[str, ...], everything: bool, client: str | None) -> None:
    """Apply proposals to the vault (one commit each, as you)."""
    _decide(ctx, "accept", ids, everything, client)


@review.command()
@click.argument("ids", nargs=-1)
@click.option(
    "--all", "everything", is_flag=True, help="Every waiting proposal: each client's newest first."
)
@click.option("--client", default=None, help="With --all: only this client's.")
@pass_ctx
def reject(ctx: Ctx, ids: tuple[str, ...], everything: bool, client: str | None) -> None:
    """Drop proposals (one commit each on the client's branch, as you)."""
    _decide(ctx, "reject", ids, everything, client)


@cli.command()
@click.option(
    "--out", type=click.Path(path_type=Path), default=None, help="File (default or -: stdout)."
)
@pass_ctx
def export(ctx: Ctx, out: Path | None) -> None:
    """Every memory with metadata and history, as JSON (to read, not to import).

    \b
    Example:
      memvault export --out ~/memvault-export.json
    """
    from .reports import export as export_vault

    out = None if out == Path("-") else out
    with _errors(ctx):
        service = _service(ctx, recover=False, embedder=False)
        if out and out.resolve().is_relative_to(service.root.resolve()):
            _fail(
                f"{out} is inside the vault: the export (every memory's text and history) "
                "would be committed with the vault's next write, where a purge cannot erase "
                "it; give --out a file outside the vault"
            )
        data = export_vault(service)
        text = json.dumps(data, ensure_ascii=False, indent=2)
        if out:
            _write_export(out, text + "\n")
            click.echo(f"exported {len(data['memories'])} memories to {out}", err=True)
        else:
            click.echo(text)


def _write_export(out: Path, text: str) -> None:
    """``text`` to ``out``: a file whole or not at all (a temporary file beside it, then
    renamed; a link's target is written and the link kept, the file's mode kept); a
    device, FIFO or pipe (`/dev/stdout`, `>(gzip)`) is written to as it is."""
    try:
        if out.exists() and not stat.S_ISREG(os.stat(out).st_mode):
            with open(out, "w", encoding="utf-8") as stream:
                stream.write(text)
            return
        target = out.resolve()
        temp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            temp.write_text(text, encoding="utf-8")
            if target.exists():
                os.chmod(temp, stat.S_IMODE(os.stat(target).st_mode))
            os.replace(temp, target)
        finally:
            temp.unlink(missing_ok=True)
    except OSError as exc:
        raise MemvaultError(
            f"cannot write the export to {out} ({exc.strerror or exc}): give --out a file "
            "in a folder that exists and that you can write to"
        ) from exc


@cli.command()
@click.option("--http", "use_http", is_flag=True, help="Streamable HTTP instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535))
@click.option("--token", default=None, envvar="MEMVAULT_TOKEN", help="Bearer token for HTTP.")
@click.option("--init/--no-init", "create", default=True, help="Create the vault when missing.")
@click.option("--watch/--no-watch", default=True, help="Watch the vault for edits by people.")
@pass_ctx
def serve(
    ctx: Ctx, use_http: bool, host: str, port: int, token: str | None, create: bool, watch: bool
) -> None:
    """Serve the vault to MCP hosts (stdio by default) with the watcher running."""
    with _errors(ctx):
        token = serving_token(use_http, host, token)  # before the vault is created or opened
        from .server import serve as run_server

        if create and not (ctx.vault / ".git").exists():
            from .template import create_vault

            existed, where = ctx.vault.exists(), ctx.vault.expanduser().resolve()
            if create_vault(ctx.vault):  # said, so a mistyped --vault is seen in the host's log
                made = "made the folder {} a vault" if existed else "created a new vault at {}"
                click.echo(
                    f"memvault: {made.format(where)} (pass --no-init to refuse a missing vault)",
                    err=True,
                )
        auth = " (bearer token required)" if use_http and token else ""

        def announce(where: str) -> None:
            click.echo(f"memvault: serving {ctx.vault} over {where}{auth}", err=True)

        try:
            run_server(ctx.vault, use_http, host, port, token, watch, announce)
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: stopped on purpose, all cleaned up
            if not use_http:
                _exit_now()


def _exit_now() -> None:
    """Exit 0 once a stopped stdio server has cleaned up: stdin is read by a worker thread
    that the interpreter would wait for at exit, for ever while the host holds stdin open."""
    import logging

    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    os._exit(0)


@cli.command()
@pass_ctx
def watch(ctx: Ctx) -> None:
    """Watch a vault without serving it: index and commit edits made by people."""
    import threading

    from .watcher import Watcher

    with _errors(ctx):
        service = _service(ctx)
        service.ensure_synced()
        service.start_embedding()  # vectors fill in behind the text index
        watcher = Watcher(service)
        watcher.start()
    click.echo(f"watching {service.root} (Ctrl-C to stop)", err=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        watcher.stop()
        service.close()


@cli.group(name="eval")
def eval_() -> None:
    """Measure recall on public benchmarks."""


@eval_.command(name="locomo")
@click.option(
    "--data",
    type=click.Path(path_type=Path),
    default=None,
    help="locomo10.json (default: ../shared/datasets/locomo/locomo10.json).",
)
@click.option(
    "--variant",
    "variants",
    type=click.Choice(["T", "C", "S", "O"]),
    multiple=True,
    help="T turns, C turns with the line they reply to, S sessions, O observations (default: all).",
)
@click.option(
    "--mode",
    "modes",
    type=click.Choice(["bm25", "vector", "hybrid"]),
    multiple=True,
    help="Retrieval mode (default: all).",
)
@click.option(
    "--split", type=click.Choice(["dev", "test", "all"]), default="all", show_default=True
)
@click.option(
    "--cache",
    type=click.Path(path_type=Path),
    default=None,
    help="Where built vaults are kept (default: ~/.cache/memvault/eval).",
)
@pass_ctx
def eval_locomo(
    ctx: Ctx,
    data: Path | None,
    variants: tuple[str, ...],
    modes: tuple[str, ...],
    split: str,
    cache: Path | None,
) -> None:
    """LoCoMo retrieval metrics per category (one real vault per conversation)."""
    from .eval import runner

    with _errors(ctx):
        path = data or runner.default_data()
        if path is None or not path.is_file():
            _fail("LoCoMo data not found: pass --data PATH/locomo10.json")
        result = runner.run(
            path,
            variants or runner.VARIANTS,
            modes or runner.MODES,
            split,
            cache,
            load_settings(None),
            progress=lambda m: click.echo(m, err=True),
        )
    _emit(ctx, result, lambda: click.echo(runner.render(result)))


@cli.command()
@pass_ctx
def connect(ctx: Ctx) -> None:
    """Print how an MCP host connects to this vault (command line and config snippet)."""
    _emit(ctx, host_config(ctx.vault), lambda: click.echo(connect_text(ctx.vault)))


def host_config(vault: Path) -> dict[str, Any]:
    exe = Path(sys.executable).parent / "memvault"
    command = str(exe) if exe.exists() else "memvault"
    return {
        "mcpServers": {
            "memvault": {"command": command, "args": ["--vault", str(vault.resolve()), "serve"]}
        }
    }


def connect_text(vault: Path) -> str:
    config = host_config(vault)
    entry = config["mcpServers"]["memvault"]
    line = " ".join([entry["command"], *entry["args"]])
    return (
        f"vault: {vault.resolve()}\n"
        f"stdio command: {line}\n"
        "host config (Claude Desktop, Cursor, ...):\n" + json.dumps(config, indent=2)
    )


def main() -> None:
    cli(prog_name="memvault")


if __name__ == "__main__":
    main()
