"""The hostile-input corpus: bad MCP tool arguments, hand-made files, bad CLI arguments.

Each case states its exact outcome: an error result with a code and a phrase that says
what is wrong, or a file skipped with a doctor finding of a given kind (or read as it is).
After every case the vault is untouched: same HEAD, clean `git status`, no new file or
folder anywhere (``.git/`` and ``.memvault/`` included), every memory byte-identical.
One vault and one service serve each group; a case leaves nothing a later case could see.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from mcp import Client
from mcp.types import CallToolResult

from memvault.cli import cli
from memvault.config import Settings
from memvault.doctor import check_files
from memvault.server import build_server
from memvault.service import MemoryService, create_vault

from .helpers import git

MB = 1024 * 1024
GHP = "ghp_" + "A1b2C3d4E5" * 4
AKIA = "AKIA" + "IOSFODNN7EXAMPLE"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----"


@dataclass
class Vault:
    root: Path
    service: MemoryService
    seed_id: str


def _commit_all(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "-c", "user.name=Person", "-c", "user.email=p@example.org", "commit", "-qm", message)


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Vault]:
    root = tmp_path_factory.mktemp("hostile") / "vault"
    create_vault(root)
    (root / ".memvaultignore").write_text("private/\n", encoding="utf-8")
    _commit_all(root, "ignore private/")
    service = MemoryService.open(root, Settings(embedder="none"))
    made = service.remember("The user keeps a paper notebook for meeting notes.", type="fact")
    assert made.memory is not None
    yield Vault(root, service, made.memory.id)
    service.close()


def snapshot(root: Path) -> tuple[str, dict[str, str]]:
    """HEAD, and every path under the vault with a hash of its bytes ("" for folders)."""
    files = {}
    for path in root.rglob("*"):
        rel = path.relative_to(root).as_posix()
        if rel.startswith((".memvault/index/", ".memvault/access.sqlite")) or rel in (
            ".git/index",
            ".memvault/catalog.json",
            ".memvault/provenance.json",
        ):
            continue  # caches refreshed by reads, and the access statistics reads count
        is_file = path.is_file() and not path.is_symlink()
        files[rel] = hashlib.sha1(path.read_bytes()).hexdigest() if is_file else ""
    return git(root, "rev-parse", "HEAD").strip(), files


def assert_untouched(root: Path, before: tuple[str, dict[str, str]]) -> None:
    head, files = snapshot(root)
    assert head == before[0], "a refused write made a commit"
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    assert set(files) - set(before[1]) == set(), "a refused write left a new path"
    assert files == before[1], "a refused write changed a file"


def call(service: MemoryService, tool: str, args: dict[str, Any]) -> CallToolResult:
    server, notifier = build_server(service)

    async def main() -> CallToolResult:
        async with Client(server, mode="legacy") as client:
            return await asyncio.wait_for(client.call_tool(tool, args), timeout=120)

    try:
        return asyncio.run(main())
    finally:
        service.listeners.remove(notifier.on_change)


def text_of(result: CallToolResult) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


# -- MCP tool arguments ------------------------------------------------------------------

Args = Callable[[str], dict[str, Any]]


def remember(**extra: Any) -> Args:
    return lambda _seed: {"content": "The user waters the plants on Sundays.", **extra}


def update(**extra: Any) -> Args:
    return lambda seed: {"id": seed, **extra}


def big(size: int) -> str:
    return ("The user wrote a very long note. " * (size // 33 + 1))[:size]


FIVE_K = "x" * 5000
MCP_CASES: list[tuple[str, str, Args, str, str]] = [
    # remember: characters that are not text
    (
        "nul-in-content",
        "remember",
        remember(content="Fact with a NUL \x00 byte."),
        "invalid_input",
        "NUL byte",
    ),
    ("nul-in-title", "remember", remember(title="Ti\x00tle"), "invalid_input", "title"),
    (
        "bell-in-content",
        "remember",
        remember(content="Ring the \x07 bell always."),
        "invalid_input",
        "control character",
    ),
    (
        "escape-in-content",
        "remember",
        remember(content="Colour \x1b[31m red text."),
        "invalid_input",
        "control character",
    ),
    (
        "del-in-content",
        "remember",
        remember(content="Delete \x7f character here."),
        "invalid_input",
        "control character",
    ),
    (
        "c1-in-content",
        "remember",
        remember(content="C1 control \x9b inside text."),
        "invalid_input",
        "control character",
    ),
    (
        "formfeed-in-content",
        "remember",
        remember(content="Page one.\x0cPage two."),
        "invalid_input",
        "control character",
    ),
    (
        "surrogate-in-content",
        "remember",
        remember(content="Lone \ud800 surrogate text."),
        "invalid_input",
        "lone surrogate",
    ),
    (
        "low-surrogate-in-content",
        "remember",
        remember(content="Lone \udc80 low surrogate."),
        "invalid_input",
        "lone surrogate",
    ),
    (
        "surrogate-in-title",
        "remember",
        remember(title="Bad \udfff title"),
        "invalid_input",
        "lone surrogate",
    ),
    (
        "surrogate-in-tag",
        "remember",
        remember(tags=["ok", "b\ud834ad"]),
        "invalid_input",
        "lone surrogate",
    ),
    ("newline-in-title", "remember", remember(title="Two\nlines"), "invalid_input", "one line"),
    ("cr-in-title", "remember", remember(title="Two\rlines"), "invalid_input", "one line"),
    ("nul-in-tag", "remember", remember(tags=["a\x00b"]), "invalid_input", "NUL byte"),
    ("newline-in-tag", "remember", remember(tags=["a\nb"]), "invalid_input", "a tag"),
    ("nul-in-type", "remember", remember(type="fa\x00ct"), "invalid_input", "type"),
    ("newline-in-source", "remember", remember(source="agent\nx"), "invalid_input", "source"),
    ("control-in-scope", "remember", remember(scope=["user:\x01me"]), "invalid_input", "scope"),
    # remember: sizes
    (
        "content-2mb",
        "remember",
        remember(content=big(2 * MB)),
        "invalid_input",
        "split it into several memories",
    ),
    ("content-10mb", "remember", remember(content=big(10 * MB)), "invalid_input", "over the"),
    (
        "content-just-over-limit",
        "remember",
        remember(content=big(1_000_000 - 4096 + 1)),
        "invalid_input",
        "max_file_bytes",
    ),
    (
        "title-201-chars",
        "remember",
        remember(title="t" * 201),
        "invalid_input",
        "over the limit of 200",
    ),
    (
        "51-tags",
        "remember",
        remember(tags=[f"t{n}" for n in range(51)]),
        "invalid_input",
        "more than the limit of 50",
    ),
    (
        "tag-101-chars",
        "remember",
        remember(tags=["t" * 101]),
        "invalid_input",
        "over the limit of 100",
    ),
    ("type-101-chars", "remember", remember(type="t" * 101), "invalid_input", "type is 101"),
    (
        "supersedes-5000-chars",
        "remember",
        remember(supersedes=[FIVE_K]),
        "unsafe_path",
        "255 bytes",
    ),
    ("importance-2", "remember", remember(importance=2.0), "invalid_input", "between 0 and 1"),
    (
        "confidence-negative",
        "remember",
        remember(confidence=-0.1),
        "invalid_input",
        "between 0 and 1",
    ),
    # remember: folders the vault ignores or cannot hold
    ("folder-git", "remember", remember(folder=".git"), "unsafe_path", "memvault ignores"),
    (
        "folder-git-hooks",
        "remember",
        remember(folder=".git/hooks"),
        "unsafe_path",
        "memvault ignores",
    ),
    (
        "folder-memvault",
        "remember",
        remember(folder=".memvault"),
        "unsafe_path",
        "memvault ignores",
    ),
    (
        "folder-memvault-index",
        "remember",
        remember(folder=".memvault/index"),
        "unsafe_path",
        "memvault ignores",
    ),
    (
        "folder-obsidian",
        "remember",
        remember(folder=".obsidian"),
        "unsafe_path",
        "memvault ignores",
    ),
    (
        "folder-templates",
        "remember",
        remember(folder="_templates"),
        "unsafe_path",
        "memvault ignores",
    ),
    ("folder-trash", "remember", remember(folder=".trash"), "unsafe_path", "memvault ignores"),
    (
        "folder-dot-dir",
        "remember",
        remember(folder="notes/.hidden"),
        "unsafe_path",
        "memvault ignores",
    ),
    (
        "folder-nested-git",
        "remember",
        remember(folder="a/.git/b"),
        "unsafe_path",
        "memvault ignores",
    ),
    (
        "folder-backslash-git",
        "remember",
        remember(folder=".git\\hooks"),
        "unsafe_path",
        "memvault ignores",
    ),
    (
        "folder-memvaultignore",
        "remember",
        remember(folder="private/stuff"),
        "unsafe_path",
        ".memvaultignore",
    ),
    (
        "folder-windows-chars",
        "remember",
        remember(folder="a:*?<>|b"),
        "unsafe_path",
        "not allowed in names",
    ),
    (
        "folder-question-mark",
        "remember",
        remember(folder="what?"),
        "unsafe_path",
        "not allowed in names",
    ),
    (
        "folder-quote",
        "remember",
        remember(folder='say "hi"'),
        "unsafe_path",
        "not allowed in names",
    ),
    (
        "folder-reserved-con",
        "remember",
        remember(folder="con"),
        "unsafe_path",
        "Windows cannot store",
    ),
    (
        "folder-reserved-lpt1",
        "remember",
        remember(folder="notes/LPT1.txt"),
        "unsafe_path",
        "Windows cannot store",
    ),
    (
        "folder-trailing-dot",
        "remember",
        remember(folder="notes."),
        "unsafe_path",
        "ending in a dot",
    ),
    (
        "folder-trailing-space",
        "remember",
        remember(folder="notes /x"),
        "unsafe_path",
        "ending in a dot or space",
    ),
    (
        "folder-300-chars",
        "remember",
        remember(folder="f" * 300),
        "unsafe_path",
        "at most 255 bytes",
    ),
    (
        "folder-300-bytes-chinese",
        "remember",
        remember(folder="记" * 100),
        "unsafe_path",
        "at most 255 bytes",
    ),
    (
        "folder-path-over-1024",
        "remember",
        remember(folder="/".join(["d" * 250] * 5)),
        "unsafe_path",
        "1024-byte limit",
    ),
    ("folder-dotdot", "remember", remember(folder="../escape"), "unsafe_path", "'..'"),
    ("folder-dotdot-inside", "remember", remember(folder="facts/../../x"), "unsafe_path", "'..'"),
    ("folder-absolute", "remember", remember(folder="/etc"), "unsafe_path", "absolute path"),
    ("folder-home", "remember", remember(folder="~/notes"), "unsafe_path", "absolute path"),
    ("folder-drive-letter", "remember", remember(folder="C:/Users"), "unsafe_path", "drive letter"),
    ("folder-nul", "remember", remember(folder="a\x00b"), "invalid_input", "NUL byte"),
    ("folder-newline", "remember", remember(folder="a\nb"), "invalid_input", "one line"),
    (
        "folder-surrogate",
        "remember",
        remember(folder="a\ud800b"),
        "invalid_input",
        "lone surrogate",
    ),
    # remember: secrets
    (
        "secret-github-token",
        "remember",
        remember(content=f"The deploy token is {GHP} for CI."),
        "secret_refused",
        "a GitHub token",
    ),
    (
        "secret-github-pat",
        "remember",
        remember(content="Use github_pat_11ABCDEFG0123456789_abcdefghijklmnop to push."),
        "secret_refused",
        "a GitHub token",
    ),
    (
        "secret-aws-key",
        "remember",
        remember(content=f"AWS key id {AKIA} in prod."),
        "secret_refused",
        "an AWS access key id",
    ),
    (
        "secret-private-key",
        "remember",
        remember(content=f"Server key:\n{PEM}"),
        "secret_refused",
        "a private key",
    ),
    (
        "secret-openssh-key",
        "remember",
        remember(content="-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n"),
        "secret_refused",
        "a private key",
    ),
    (
        "secret-sk-key",
        "remember",
        remember(content="OpenAI key sk-abc123def456ghi789jkl012mno345 for tests."),
        "secret_refused",
        "an API key",
    ),
    (
        "secret-sk-proj-key",
        "remember",
        remember(content="Key: sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34."),
        "secret_refused",
        "an API key",
    ),
    (
        "secret-slack-bot",
        "remember",
        remember(content="Slack bot xoxb-123456789012-abcdefghij works."),
        "secret_refused",
        "a Slack token",
    ),
    (
        "secret-slack-user",
        "remember",
        remember(content="Slack user xoxp-123456789012-abcdefghij works."),
        "secret_refused",
        "a Slack token",
    ),
    (
        "secret-in-title",
        "remember",
        remember(title=f"token {GHP}"),
        "secret_refused",
        "title looks like",
    ),
    ("secret-in-tag", "remember", remember(tags=[AKIA]), "secret_refused", "a tag looks like"),
    # update_memory
    (
        "update-empty-revision",
        "update_memory",
        update(content="New text here.", expected_revision=""),
        "invalid_input",
        "expected_revision is empty",
    ),
    (
        "update-blank-revision",
        "update_memory",
        update(content="New text here.", expected_revision="  "),
        "invalid_input",
        "expected_revision is empty",
    ),
    (
        "update-stale-revision",
        "update_memory",
        update(content="New text here.", expected_revision="0000000000000000"),
        "stale_revision",
        "call get_memory and retry",
    ),
    (
        "update-nul-in-content",
        "update_memory",
        update(content="Now \x00 broken."),
        "invalid_input",
        "NUL byte",
    ),
    (
        "update-surrogate-in-content",
        "update_memory",
        update(content="Now \ud800 broken."),
        "invalid_input",
        "lone surrogate",
    ),
    ("update-2mb", "update_memory", update(content=big(2 * MB)), "invalid_input", "split it"),
    ("update-newline-in-title", "update_memory", update(title="a\nb"), "invalid_input", "one line"),
    (
        "update-51-tags",
        "update_memory",
        update(tags=[f"t{n}" for n in range(51)]),
        "invalid_input",
        "limit of 50",
    ),
    ("update-control-in-type", "update_memory", update(type="fa\x1bct"), "invalid_input", "type"),
    (
        "update-secret",
        "update_memory",
        update(content=f"Key {AKIA} here."),
        "secret_refused",
        "AWS access key",
    ),
    ("update-secret-in-tag", "update_memory", update(tags=[GHP]), "secret_refused", "GitHub token"),
    (
        "update-id-5000-chars",
        "update_memory",
        lambda _s: {"id": FIVE_K, "content": "x y z w"},
        "unsafe_path",
        "255 bytes",
    ),
    (
        "update-id-traversal",
        "update_memory",
        lambda _s: {"id": "../../etc/passwd", "content": "x y z w"},
        "unsafe_path",
        "'..'",
    ),
    (
        "update-git-config",
        "update_memory",
        lambda _s: {"id": ".git/config", "content": "x y z w"},
        "unsafe_path",
        "not a memory file",
    ),
    ("update-nothing", "update_memory", update(), "invalid_input", "nothing to update"),
    (
        "update-status-not-allowed",
        "update_memory",
        update(status="bogus"),
        "invalid_input",
        "status must be one of 'active', 'superseded', got 'bogus'",
    ),
    # reading and other tools
    (
        "get-id-5000-chars",
        "get_memory",
        lambda _s: {"id": FIVE_K},
        "unsafe_path",
        "255 bytes",
    ),
    (
        "get-path-1100-bytes",
        "get_memory",
        lambda _s: {"id": "/".join(["p" * 200] * 6)},
        "unsafe_path",
        "1024-byte limit",
    ),
    ("get-nul", "get_memory", lambda _s: {"id": "a\x00b"}, "unsafe_path", "NUL byte"),
    (
        "get-surrogate",
        "get_memory",
        lambda _s: {"id": "a\ud800b"},
        "unsafe_path",
        "not valid Unicode",
    ),
    (
        "get-git-head",
        "get_memory",
        lambda _s: {"id": ".git/HEAD"},
        "unsafe_path",
        "not a memory file",
    ),
    (
        "get-windows-drive",
        "get_memory",
        lambda _s: {"id": "a:*?<>|b"},
        "unsafe_path",
        "drive letter",
    ),
    ("forget-id-5000-chars", "forget", lambda _s: {"id": FIVE_K}, "unsafe_path", "255 bytes"),
    (
        "forget-git-config",
        "forget",
        lambda _s: {"id": ".git/config", "mode": "delete"},
        "unsafe_path",
        "not a memory file",
    ),
    (
        "history-id-5000-chars",
        "memory_history",
        lambda _s: {"id": FIVE_K},
        "unsafe_path",
        "255 bytes",
    ),
    (
        "diff-option-as-rev",
        "memory_diff",
        lambda s: {"id": s, "rev": "--output=/tmp/x"},
        "error",
        "is not a revision",
    ),
    (
        "revert-unknown-rev",
        "revert_memory",
        lambda s: {"id": s, "rev": "nope"},
        "error",
        "unknown revision",
    ),
    ("recall-empty-query", "recall", lambda _s: {"query": "  "}, "invalid_input", "query is empty"),
    (
        "recall-k-zero",
        "recall",
        lambda _s: {"query": "notebook", "k": 0},
        "invalid_input",
        "between 1 and 100",
    ),
    (
        "recall-bad-since",
        "recall",
        lambda _s: {"query": "notebook", "since": "last tuesday"},
        "invalid_input",
        "ISO date",
    ),
    # what would not fit the frontmatter a memory is read back with (64 KB)
    (
        "forget-reason-70000-chars",
        "forget",
        lambda s: {"id": s, "reason": "x" * 70_000},
        "invalid_input",
        "reason is 70,000 characters, over the limit of 500",
    ),
    (  # checked before the person is asked to confirm a delete, not after
        "forget-delete-reason-70000-chars",
        "forget",
        lambda s: {"id": s, "mode": "delete", "reason": "x" * 70_000},
        "invalid_input",
        "reason is 70,000 characters, over the limit of 500",
    ),
    (
        "forget-filter-purge-reason-nul",
        "forget",
        lambda s: {"filter": "type:fact", "mode": "purge", "reason": "user\x00asked"},
        "invalid_input",
        "reason contains a NUL byte",
    ),
    (
        "forget-reason-nul",
        "forget",
        lambda s: {"id": s, "reason": "user\x00asked"},
        "invalid_input",
        "reason contains a NUL byte",
    ),
    (
        "remember-1000-scope-labels",
        "remember",
        remember(scope=[f"user:{i:03d}" + "z" * 90 for i in range(1000)]),
        "invalid_input",
        "1000 scope labels is more than the limit of 50",
    ),
    (
        "set-profile-100-long-items",
        "set_profile",
        lambda _s: {
            "field": "interests",
            "value": [f"hobby {i:03d} " + "y" * 970 for i in range(100)],
        },
        "invalid_input",
        "over the 65,536-byte limit memvault reads back",
    ),
    # a NUL byte where git or a path would take it
    (
        "recall-as-of-nul",
        "recall",
        lambda _s: {"query": "notebook", "as_of": "2026\x00"},
        "invalid_input",
        "as_of contains a NUL byte",
    ),
    ("get-as-of-nul", "get_memory", lambda s: {"id": s, "as_of": "\x00"}, "invalid_input", "as_of"),
    ("list-as-of-nul", "list_memories", lambda _s: {"as_of": "a\x00"}, "invalid_input", "as_of"),
    (
        "changes-since-nul",
        "memory_changes",
        lambda _s: {"since": "\x00"},
        "invalid_input",
        "since contains a NUL byte",
    ),
    # a document pasted as a query
    (
        "recall-query-40000-chars",
        "recall",
        lambda _s: {"query": ("notebook meeting 笔记 " * 2000)[:40_000]},
        "invalid_input",
        "query is 40,000 characters, over the limit of 2,000",
    ),
    (
        "recall-as-of-query-40000-chars",
        "recall",
        lambda _s: {"query": "n" * 40_000, "as_of": "HEAD"},
        "invalid_input",
        "shorten it",
    ),
    (
        "context-topic-40000-chars",
        "build_context",
        lambda _s: {"topic": "notebook " * 5000},
        "invalid_input",
        "topic is 44,999 characters",
    ),
]


@pytest.mark.parametrize(
    ("tool", "args", "code", "phrase"),
    [pytest.param(*case[1:], id=case[0]) for case in MCP_CASES],
)
def test_a_hostile_tool_call_is_a_clear_error_and_leaves_the_vault_untouched(
    vault: Vault, tool: str, args: Args, code: str, phrase: str
) -> None:
    before = snapshot(vault.root)
    result = call(vault.service, tool, args(vault.seed_id))
    text = text_of(result)
    assert result.is_error, text[:300]
    assert f"{code}: " in text, text[:300]
    assert phrase in text, text[:300]
    assert "Traceback" not in text
    assert_untouched(vault.root, before)


def test_a_secret_is_stored_with_a_warning_when_allow_secrets_is_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "vault"
    create_vault(root)
    service = MemoryService.open(root, Settings(embedder="none", allow_secrets=True))
    try:
        made = service.remember(f"The CI deploy token is {GHP}.", type="fact")
    finally:
        service.close()
    assert made.action == "created" and made.memory is not None
    assert GHP in (root / made.memory.path).read_text(encoding="utf-8")
    assert "content contains a GitHub token; stored because allow_secrets is on" in caplog.text


# -- hand-made files --------------------------------------------------------------------


def fm(yaml_text: str, body: str = "# Hand made\n\nA note written by a person.\n") -> bytes:
    return f"---\n{yaml_text}\n---\n{body}".encode()


def alias_bomb(levels: int = 9) -> bytes:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for prev, name in list(zip("abcdefgh", "bcdefghi", strict=True))[: levels - 1]:
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    lines.append(f"tags: *{'abcdefghi'[levels - 1]}")
    return fm("\n".join(lines))


def nested_block(depth: int) -> str:
    return "root:\n" + "".join("  " * n + f"k{n}:\n" for n in range(1, depth)) + "  " * depth + "v"


ANCHOR = "frontmatter uses YAML anchors or aliases"
NOT_YAML = "frontmatter is not valid YAML"
# (id, bytes, doctor finding kind or None when the file is read as it is, phrase)
FILE_CASES: list[tuple[str, bytes, str | None, str]] = [
    ("alias-bomb", alias_bomb(), "malformed", ANCHOR),
    ("alias-bomb-small", alias_bomb(3), "malformed", ANCHOR),
    ("anchor-without-alias", fm("type: &t fact"), "malformed", ANCHOR),
    ("alias-in-tags", fm("base: &b [x]\ntags: *b"), "malformed", ANCHOR),
    ("merge-key", fm("base: &b {type: fact}\nmeta:\n  <<: *b"), "malformed", ANCHOR),
    ("frontmatter-over-64kb", fm("note: " + "y" * 70_000), "malformed", "65,536-byte limit"),
    ("nested-flow-50", fm("tags: " + "[" * 50 + "]" * 50), "malformed", "nested more than 20"),
    ("nested-flow-5000", fm("tags: " + "[" * 5000 + "]" * 5000), "malformed", NOT_YAML),
    ("nested-block-30", fm(nested_block(30)), "malformed", "nested more than 20"),
    ("unclosed-quote", fm('title: "never closed'), "malformed", NOT_YAML),
    ("tab-indent", fm("tags:\n\t- a"), "malformed", NOT_YAML),
    ("bad-mapping", fm("a: b: c"), "malformed", NOT_YAML),
    (
        "python-tag",
        fm("x: !!python/object/apply:os.system [ls]"),
        "malformed",
        "uses the YAML tag !!python/object/apply:os.system at frontmatter line 1, which "
        "memvault never runs",
    ),
    ("custom-tag", fm("x: !vault-secret abc"), "malformed", "uses the YAML tag !vault-secret"),
    ("bad-binary-tag", fm('x: !!binary "a"'), "malformed", NOT_YAML),
    ("unhashable-key", fm("? [a, b]\n: c"), "malformed", NOT_YAML),
    ("impossible-date", fm("created: 2024-13-45"), "malformed", "a value YAML cannot read"),
    ("bad-int-tag", fm("importance: !!int high"), "malformed", "a value YAML cannot read"),
    ("list-not-mapping", fm("- a\n- b"), "malformed", "not a mapping"),
    ("scalar-not-mapping", fm("just a sentence"), "malformed", "not a mapping"),
    ("invalid-id", fm("id: ../../etc/passwd"), "malformed", "is not a valid id"),
    ("id-list", fm("id: [a, b]"), "malformed", "is not a valid id"),
    (
        "binary-png",
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)),
        "binary",
        "looks binary",
    ),
    ("nul-in-body", fm("type: fact", "# A\n\nbody \x00 here\n"), "binary", "looks binary"),
    ("latin-1", "---\ntype: fact\n---\n# Caf\xe9\n".encode("latin-1"), "encoding", "not UTF-8"),
    ("utf-16", "---\ntype: fact\n---\n# Wide\n".encode("utf-16"), "binary", "looks binary"),
    (
        "huge-file",
        fm("type: fact", "# Huge\n\n" + "z" * 1_100_000),
        "too_large",
        "over the 1,000,000-byte limit",
    ),
    # read as they are: no finding
    (
        "crlf-bom",
        "\ufeff---\r\nid: 01JABCDEFGHJKMNP\r\ntype: fact\r\n---\r\n# CRLF\r\n".encode(),
        None,
        "CRLF",
    ),
    ("empty-file", b"", None, "hostile-empty-file"),
    ("only-fence", b"---\n---\n", None, "hostile-only-fence"),
    ("opening-fence-only", b"---\n", None, "hostile-opening-fence-only"),
    ("dots-closer", b"---\ntype: fact\n...\n# Dots\n", None, "Dots"),
    ("tags-not-a-list", fm("tags: 5"), None, "Hand made"),
    (
        "odd-scalars",
        fm("importance: .nan\nconfidence: high\ncreated: []\n1: x\nnull: y"),
        None,
        "Hand made",
    ),
    ("title-and-ampersand", fm("title: R&D *notes*"), None, "R&D *notes*"),
]


@pytest.mark.parametrize(
    ("data", "kind", "phrase"), [pytest.param(*case[1:], id=case[0]) for case in FILE_CASES]
)
def test_a_hostile_hand_made_file_is_reported_or_read_and_the_vault_keeps_working(
    vault: Vault, request: pytest.FixtureRequest, data: bytes, kind: str | None, phrase: str
) -> None:
    rel = f"facts/hostile-{request.node.callspec.id}.md"
    (vault.root / rel).write_bytes(data)
    _commit_all(vault.root, f"hand-made {rel}")
    try:
        before = snapshot(vault.root)
        findings = {p.path: p for p in check_files(vault.service.vault) if p.path == rel}
        status = call(vault.service, "vault_status", {})
        got = call(vault.service, "get_memory", {"id": rel})
        seed = call(vault.service, "get_memory", {"id": vault.seed_id})
        assert not status.is_error and not seed.is_error  # the rest of the vault works
        if kind is None:
            assert rel not in findings and not got.is_error
            assert got.structured_content and not got.structured_content["problems"]
            assert phrase in got.structured_content["title"]
        else:
            assert findings[rel].kind == kind and phrase in findings[rel].message
            assert status.structured_content and status.structured_content["problems"] >= 1
            if kind == "malformed":  # readable, flagged, never rewritten
                assert got.structured_content and phrase in got.structured_content["problems"][0]
            else:
                assert got.is_error and "malformed: " in text_of(got)
        assert_untouched(vault.root, before)
    finally:
        git(vault.root, "rm", "-q", rel)
        _commit_all(vault.root, f"remove {rel}")


# -- CLI arguments ----------------------------------------------------------------------


def jsonl(tmp: Path, *records: Any) -> str:
    path = tmp / "in.jsonl"
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def raw_file(name: str, data: bytes) -> Callable[[Path], str]:
    def make(tmp: Path) -> str:
        (tmp / name).write_bytes(data)
        return str(tmp / name)

    return make


def folder_with(name: str, data: bytes) -> Callable[[Path], str]:
    def make(tmp: Path) -> str:
        (tmp / "src").mkdir()  # only the bad file: a good one beside it would be imported
        (tmp / "src" / name).write_bytes(data)
        return str(tmp / "src")

    return make


GOOD = {"content": "The user prefers tea over coffee."}
CliArgs = Callable[[Path], list[str]]


def add(*extra: str, text: str = "The user cycles to work on Mondays.") -> CliArgs:
    return lambda _tmp: ["add", text, *extra]


def imp(make: Callable[[Path], str]) -> CliArgs:
    return lambda tmp: ["import", make(tmp)]


def records(*items: Any) -> Callable[[Path], str]:
    return lambda tmp: jsonl(tmp, *items)


CLI_CASES: list[tuple[str, CliArgs, str]] = [
    ("add-folder-git", add("--folder", ".git"), "memvault ignores"),
    ("add-folder-git-hooks", add("--folder", ".git/hooks"), "memvault ignores"),
    ("add-folder-memvault", add("--folder", ".memvault"), "memvault ignores"),
    ("add-folder-templates", add("--folder", "_templates"), "memvault ignores"),
    ("add-folder-windows-chars", add("--folder", "a:*?<>|b"), "not allowed in names"),
    ("add-folder-300-chars", add("--folder", "f" * 300), "at most 255 bytes"),
    ("add-folder-absolute", add("--folder", "/tmp"), "absolute path"),
    ("add-title-newline", add("--title", "a\nb"), "one line"),
    ("add-title-too-long", add("--title", "t" * 300), "limit of 200"),
    ("add-51-tags", add("--tags", ",".join(f"t{n}" for n in range(51))), "limit of 50"),
    ("add-control-char", add(text="Escape \x1b codes in text."), "control character"),
    ("add-github-token", add(text=f"Token {GHP} for deploys."), "GitHub token"),
    ("add-private-key", add(text=f"Server key:\n{PEM}"), "private key"),
    ("add-2mb", add(text=big(2 * MB)), "split it"),
    ("show-id-5000-chars", lambda _t: ["show", FIVE_K], "255 bytes"),
    ("show-git-config", lambda _t: ["show", ".git/config"], "not a memory file"),
    ("log-id-5000-chars", lambda _t: ["log", FIVE_K], "255 bytes"),
    ("forget-git-head", lambda _t: ["forget", ".git/HEAD"], "not a memory file"),
    (
        "import-path-into-git",
        imp(records({**GOOD, "path": ".git/hooks/pre-commit.md"})),
        "memvault ignores",
    ),
    (
        "import-path-into-memvault",
        imp(records({**GOOD, "path": ".memvault/x.md"})),
        "memvault ignores",
    ),
    (
        "import-folder-into-obsidian",
        imp(records({**GOOD, "folder": ".obsidian"})),
        "memvault ignores",
    ),
    ("import-path-ignored", imp(records({**GOOD, "path": "private/a.md"})), "memvault ignores"),
    ("import-path-traversal", imp(records({**GOOD, "path": "../../x.md"})), "'..'"),
    ("import-path-absolute", imp(records({**GOOD, "path": "/etc/x.md"})), "absolute path"),
    ("import-path-windows-chars", imp(records({**GOOD, "path": "a|b.md"})), "not allowed in names"),
    (
        "import-path-too-long",
        imp(records({**GOOD, "path": "n" * 300 + ".md"})),
        "at most 255 bytes",
    ),
    ("import-nul-in-content", imp(records({"content": "NUL \u0000 inside"})), "NUL byte"),
    ("import-surrogate", imp(records('{"content": "lone \\ud800 surrogate"}')), "lone surrogate"),
    ("import-newline-in-title", imp(records({**GOOD, "title": "a\nb"})), "one line"),
    ("import-51-tags", imp(records({**GOOD, "tags": [str(n) for n in range(51)]})), "limit of 50"),
    ("import-2mb", imp(records({"content": big(2 * MB)})), "over max_file_bytes"),
    ("import-bad-json", imp(records("{not json")), "is not valid JSON"),
    ("import-not-object", imp(records("[1, 2]")), "must be a JSON object"),
    ("import-no-content", imp(records({"title": "empty"})), "has no content"),
    ("import-second-line-bad", imp(records("", {**GOOD, "path": ".git/x.md"})), ":2:"),
    ("import-jsonl-not-utf8", imp(raw_file("bad.jsonl", b'{"content": "caf\xe9"}\n')), "not UTF-8"),
    ("import-folder-not-utf8", imp(folder_with("bad.md", b"# Caf\xe9\n")), "not UTF-8"),
    ("import-folder-binary", imp(folder_with("bin.md", b"# B\n\x00\x01\x02")), "NUL bytes"),
    (
        "import-folder-bad-name",  # what? is taken in as "what.md"; a control character is not
        imp(folder_with("what\x01.md", b"# Q\n\nA question.\n")),
        "control character",
    ),
]


@pytest.mark.parametrize(("argv", "phrase"), [pytest.param(*c[1:], id=c[0]) for c in CLI_CASES])
def test_a_hostile_command_line_fails_with_one_clear_line_and_leaves_the_vault_untouched(
    vault: Vault, tmp_path: Path, argv: CliArgs, phrase: str
) -> None:
    args = argv(tmp_path)
    before = snapshot(vault.root)
    result = CliRunner().invoke(
        cli, ["--vault", str(vault.root), *args], env={"MEMVAULT_EMBEDDER": "none"}
    )
    assert result.exit_code == 1, (result.stdout, result.stderr)
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.stderr
    line = result.stderr.strip().splitlines()[-1]  # after import's "indexing" label
    assert line.startswith("error: ") and phrase in line, line[:400]
    assert_untouched(vault.root, before)


def test_a_note_whose_name_is_near_the_longest_a_file_may_have_can_be_updated(
    svc: MemoryService,
) -> None:
    """The temporary file of a write is named after the note: `.{name}.XXXXXXXX.tmp` went
    past 255 bytes for a name of 242 or more, so such a note could never be changed."""
    name = "长" * 80 + ".md"  # 243 bytes
    (svc.root / "inbox" / name).write_text("# Long\n\nThe user keeps a long-named note.\n")
    git(svc.root, "add", "-A")
    git(svc.root, "commit", "-qm", "a person's note")
    svc.sync_index()
    done = svc.update(f"inbox/{name}", content="The note is still here, now changed.")
    assert done.commit and "now changed" in (svc.root / "inbox" / name).read_text()
    assert [p.name for p in (svc.root / "inbox").iterdir() if p.suffix == ".tmp"] == []
