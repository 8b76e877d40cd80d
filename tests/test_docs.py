"""Docs that cannot drift: every command, tool, resource, prompt and setting is in the README."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from mcp import Client

from memvault.cli import cli
from memvault.config import SETTINGS_TABLE, Setting
from memvault.server import build_server
from memvault.service import MemoryService

from .helpers import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("command", sorted(cli.commands))
def test_every_cli_command_is_in_the_readme(command: str) -> None:
    assert f"`memvault {command}" in README, f"README lacks `memvault {command}`"


@pytest.mark.parametrize("setting", SETTINGS_TABLE, ids=lambda s: s.name)
def test_every_setting_is_in_the_readme_with_its_real_default(setting: Setting) -> None:
    default = setting.default
    if isinstance(default, bool):
        default = str(default).lower()
    elif isinstance(default, tuple):
        default = "[" + ", ".join(default) + "]"
    assert f"| `{setting.name}` | `{default}` |" in README, f"README's row for {setting.name}"


def test_the_readme_names_both_setup_commands_and_ci_runs_the_test_one() -> None:
    assert "scripts/serve.sh" in README and "scripts/test.sh" in README
    assert "scripts/test.sh" in (REPO / ".ci" / "run").read_text()


def test_every_mcp_tool_resource_and_prompt_is_in_the_readme(service: MemoryService) -> None:
    server, _ = build_server(service)

    async def names() -> list[str]:
        async with Client(server) as client:
            tools = [t.name for t in (await client.list_tools()).tools]
            resources = [str(r.uri) for r in (await client.list_resources()).resources]
            templates = [
                t.uri_template.replace("{+path}", "{path}")
                for t in (await client.list_resource_templates()).resource_templates
            ]
            prompts = [p.name for p in (await client.list_prompts()).prompts]
            return tools + resources + templates + prompts

    found = asyncio.run(names())
    assert len(found) == 18 + 5 + 1 + 3
    missing = [name for name in found if f"`{name}" not in README]
    assert not missing, f"README lacks {missing}"


def test_docs_benchmarks_exists_when_benchmarks_do() -> None:
    if list((REPO / "benchmarks").glob("*.py")):
        assert Path(REPO / "docs" / "benchmarks.md").is_file()
