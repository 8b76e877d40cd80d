"""The tool surface every host pays for in context: its size, its parameter descriptions,
one name for the memory reference, argument errors as one sentence, compact text results."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client
from mcp.types import CallToolResult, Tool

from memvault.server.surface import expected
from memvault.service import MemoryService

from .helpers import commit_count, git
from .helpers import in_process as run

BUDGET = 9_000  # characters of tools/list as JSON (issue 9; DESIGN.md section 6)


def tools(service: MemoryService) -> list[Tool]:
    async def body(client: Client) -> list[Tool]:
        return (await client.list_tools()).tools

    result: list[Tool] = run(service, body)
    return result


def call(service: MemoryService, name: str, args: dict[str, Any]) -> CallToolResult:
    async def body(client: Client) -> CallToolResult:
        return await client.call_tool(name, args)

    result: CallToolResult = run(service, body)
    return result


def error_text(result: CallToolResult) -> str:
    assert result.is_error and len(result.content) == 1
    return str(result.content[0].text)  # type: ignore[union-attr]


def test_the_whole_tools_list_stays_within_its_budget(text_only: MemoryService) -> None:
    listed = [t.model_dump(mode="json", exclude_none=True, by_alias=True) for t in tools(text_only)]
    size = len(json.dumps(listed))
    assert size <= BUDGET, f"tools/list is {size} characters: trim it back under {BUDGET}"


def test_every_parameter_has_a_one_line_description(text_only: MemoryService) -> None:
    for tool in tools(text_only):
        for name, schema in tool.input_schema["properties"].items():
            description = schema.get("description", "")
            assert description and "\n" not in description, f"{tool.name}.{name}"
            assert "title" not in schema, f"{tool.name}.{name} carries a generated title"


def test_every_tool_names_the_memory_reference_id(text_only: MemoryService) -> None:
    found = {t.name: set(t.input_schema["properties"]) for t in tools(text_only)}
    takes_id = {name for name, params in found.items() if "id" in params}
    assert takes_id == {
        "get_memory",
        "update_memory",
        "forget",
        "memory_history",
        "memory_diff",
        "revert_memory",
        "related",
    }
    assert not any("id_or_path" in params or "path" in params for params in found.values())


def test_get_memory_takes_an_id_or_a_vault_path(text_only: MemoryService) -> None:
    made = text_only.remember("The user reads on the train.", type="fact")
    assert made.memory is not None
    for reference in (made.memory.id, made.memory.path):
        result = call(text_only, "get_memory", {"id": reference})
        assert not result.is_error and result.structured_content is not None
        assert result.structured_content["id"] == made.memory.id


def test_a_missing_argument_is_one_sentence_that_names_it(text_only: MemoryService) -> None:
    before = commit_count(text_only.root)
    text = error_text(call(text_only, "remember", {"type": "fact"}))
    assert text == (
        "Error executing tool remember: invalid_input: "
        "missing required argument 'content' (the text to remember)"
    )
    assert commit_count(text_only.root) == before


@pytest.mark.parametrize(
    ("tool", "args", "sentence"),
    [
        ("recall", {"query": "x", "k": "abc"}, "k must be an integer between 1 and 100, got 'abc'"),
        ("recall", {"query": "x", "k": 500}, "k must be an integer between 1 and 100, got 500"),
        ("forget", {"id": "x", "mode": "shred"}, "mode must be one of 'archive', 'delete', "),
        ("remember", {"content": "Tea.", "tags": ["a", 7]}, "tags[1] must be a string, got 7"),
        ("remember", {"content": 42}, "content must be a string, got 42"),
        ("consolidate", {"dry_run": "perhaps"}, "dry_run must be true or false, got 'perhaps'"),
    ],
)
def test_a_wrong_type_is_one_sentence_that_says_what_the_argument_takes(
    text_only: MemoryService, tool: str, args: dict[str, Any], sentence: str
) -> None:
    before = commit_count(text_only.root)
    text = error_text(call(text_only, tool, args))
    assert text.startswith(f"Error executing tool {tool}: invalid_input: "), text
    assert sentence in text
    assert "\n" not in text and "pydantic" not in text and "http" not in text
    assert commit_count(text_only.root) == before


def test_true_or_false_is_refused_for_every_integer_or_number_argument(
    text_only: MemoryService,
) -> None:
    """JSON's true is not 1: k, depth, budget_tokens, importance, confidence... say what
    they take, as for any other wrong type, and nothing is written."""
    before = commit_count(text_only.root)

    async def body(client: Client) -> dict[str, str]:
        refused = {}
        for listed in (await client.list_tools()).tools:
            for name, node in listed.input_schema["properties"].items():
                if node.get("type") in ("integer", "number"):
                    flag = name != "k"  # false as well as true
                    result = await client.call_tool(listed.name, {name: flag})
                    refused[f"{listed.name}.{name}"] = f"{error_text(result)} ({flag})"
        return refused

    refused = run(text_only, body)
    assert {"recall.k", "related.depth", "build_context.budget_tokens"} <= set(refused)
    assert {"remember.importance", "remember.confidence"} <= set(refused)
    for key, text in refused.items():
        name, flag = key.split(".")[1], text.rsplit(" (", 1)[1].rstrip(")")
        assert f"{name} must be an integer" in text or f"{name} must be a number" in text, key
        assert f"got {flag}" in text and "\n" not in text, key
    assert commit_count(text_only.root) == before


def test_an_unknown_argument_is_an_error_and_nothing_is_written(
    text_only: MemoryService,
) -> None:
    before = commit_count(text_only.root)
    tree = git(text_only.root, "status", "--porcelain", "--untracked-files=all")
    args = {"content": "The user likes rain.", "importance_level": 0.9}
    text = error_text(call(text_only, "remember", args))
    assert "unknown argument 'importance_level'" in text and "importance" in text
    assert commit_count(text_only.root) == before
    assert git(text_only.root, "status", "--porcelain", "--untracked-files=all") == tree
    text = error_text(call(text_only, "get_memory", {"id_or_path": "anything"}))
    assert "unknown argument 'id_or_path'" in text and "missing required argument 'id'" in text


def test_a_result_is_the_structured_content_once_as_compact_json(
    text_only: MemoryService,
) -> None:
    made = text_only.remember("以后的周报都用表格。 Weekly reports as tables.", type="preference")
    assert made.memory is not None
    result = call(text_only, "get_memory", {"id": made.memory.id})
    assert not result.is_error and len(result.content) == 1
    text = result.content[0].text  # type: ignore[union-attr]
    assert json.loads(text) == result.structured_content
    assert text == json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))
    assert "周报" in text and "\n  " not in text


def test_what_an_argument_takes_is_said_in_words() -> None:
    assert expected({"type": "integer", "minimum": 1, "maximum": 9}) == "an integer between 1 and 9"
    assert expected({"type": "number"}) == "a number"
    assert expected({"type": "array", "items": {"type": "string"}}) == "a list of strings"
    assert expected({"enum": ["a", "b"], "type": "string"}) == "one of 'a', 'b'"
    assert expected({"type": "boolean"}) == "true or false"
