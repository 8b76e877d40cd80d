"""How a tool looks to, and answers, an MCP client: what every host pays for in context.

``MemvaultTool`` is the SDK's ``Tool`` with four differences:
- lean schemas: arguments without generated titles or the ``null`` branch of optional
  ones; no output schema in ``tools/list`` (results still carry ``structuredContent``,
  shaped by ``schemas``, and the same JSON as text: a host's model reads the fields by
  name, while a listed output schema cost a quarter of the whole list, DESIGN section 6);
- unknown arguments are an error, not silently dropped, and so is ``true`` or ``false`` for
  an integer or a number (pydantic's lax mode would take ``true`` as 1);
- argument errors are one sentence that names the argument and what it takes, instead of
  pydantic's multi-line report with its documentation link;
- the text content is the structured content once, as compact JSON, not a pretty copy.
"""

from __future__ import annotations

import json
import types
from collections.abc import Callable
from typing import Any, Union, cast, get_args, get_origin

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.types import CallToolResult, TextContent
from pydantic import ConfigDict, ValidationError, field_validator
from pydantic_core import ErrorDetails

SHOWN_VALUE = 40  # characters of a rejected value quoted back


class MemvaultTool(Tool):
    """A tool with lean schemas, strict arguments, one-sentence argument errors."""

    @classmethod
    def from_function(cls, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> MemvaultTool:
        tool = super().from_function(fn, *args, **kwargs)
        assert isinstance(tool, MemvaultTool)
        loose = tool.fn_metadata.arg_model
        config = {"model_config": ConfigDict(extra="forbid")} | no_booleans(loose)
        strict = cast("type[ArgModelBase]", type(loose.__name__, (loose,), config))
        tool.fn_metadata.arg_model = strict
        tool.parameters = argument_schema(strict.model_json_schema(by_alias=True))
        if tool.fn_metadata.output_schema is not None:
            tool.fn_metadata.output_schema = result_schema(tool.fn_metadata.output_schema)
        return tool

    async def run(
        self, arguments: dict[str, Any], context: Context[Any, Any], convert_result: bool = False
    ) -> Any:
        try:
            result = await super().run(arguments, context, convert_result)
        except ToolError as exc:
            cause = exc.__cause__
            if not isinstance(cause, ValidationError) or cause.title != self._arguments_title:
                raise
            sentence = explain_arguments(cause.errors(), self.parameters)
            raise ToolError(
                f"Error executing tool {self.name}: invalid_input: {sentence}"
            ) from cause
        if isinstance(result, CallToolResult) and result.structured_content is not None:
            text = json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))
            return result.model_copy(update={"content": [TextContent(type="text", text=text)]})
        return result

    @property
    def output_schema(self) -> dict[str, Any] | None:
        """Not listed (see the module docstring); results are still structured by it."""
        return None

    @property
    def _arguments_title(self) -> str:
        return self.fn_metadata.arg_model.__name__


def no_booleans(model: type[ArgModelBase]) -> dict[str, Any]:
    """A validator refusing ``true`` and ``false`` for ``model``'s integer and number
    arguments (a bool is an int to Python and to pydantic's lax mode), as a class namespace
    entry; none if it has no such argument."""
    names = [name for name, field in model.model_fields.items() if _numeric(field.annotation)]
    if not names:
        return {}

    def refuse(cls: type[ArgModelBase], value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError("a boolean is not a number")  # worded by explain_arguments
        return value

    return {"_no_booleans": field_validator(*names, mode="before")(refuse)}


def _numeric(annotation: Any) -> bool:
    """``int``, ``float``, or either of them or ``None``."""
    if get_origin(annotation) in (Union, types.UnionType):
        kinds = [a for a in get_args(annotation) if a is not type(None)]
        return bool(kinds) and all(_numeric(a) for a in kinds)
    return annotation in (int, float)


# -- lean schemas -------------------------------------------------------------------------
SCALARS = frozenset({"string", "number", "integer", "boolean", "null"})


def argument_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The arguments' schema without what a model does not need: generated titles, the
    ``null`` branch and ``default: null`` of optional arguments, ``default: false`` of flags,
    ``additionalProperties`` (unknown arguments are refused with a clear error all the same)."""
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "properties":
            out[key] = {name: argument_schema(sub) for name, sub in value.items()}
        elif key in ("title", "additionalProperties") or (
            key == "default" and (value is None or value is False)
        ):
            continue
        elif key == "anyOf" and {"type": "null"} in value and len(value) == 2:
            (other,) = [branch for branch in value if branch != {"type": "null"}]
            out |= argument_schema(other)
        elif isinstance(value, dict):
            out[key] = argument_schema(value)
        else:
            out[key] = value
    return out


def result_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A result's schema as its structure: every field by name, nested objects and enums, but
    no titles, defaults or ``required`` (every field is always there) and no types where the
    name says enough (scalars, free-form maps, lists of those) or the structure implies them
    (but at the top, where MCP asks for it). Valid JSON Schema that accepts what the tool
    returns, at a third of the size."""
    return {**_structure(_inline_refs(schema, schema.get("$defs", {}))), "type": "object"}


def _structure(node: dict[str, Any]) -> dict[str, Any]:
    if "enum" in node:
        return {"enum": node["enum"]}
    branches = node.get("anyOf", [node])
    kinds = {branch.get("type") for branch in branches}
    if kinds <= SCALARS and all(set(b) <= {"type", "default", "title"} for b in branches):
        return {}  # a scalar: the name says enough
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties":
            out[key] = {name: _structure(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            if inner := _structure(value):
                out[key] = inner
        elif key in ("type", "anyOf"):
            out[key] = value
    if "properties" in out or "items" in out or out.get("type") in ("object", "array"):
        out.pop("type", None)  # implied by the structure, or the name says enough
    return out


def _inline_refs(node: Any, defs: dict[str, Any]) -> Any:
    """``node`` with each ``$ref`` into ``$defs`` replaced by its definition (none of ours
    refers to itself)."""
    if isinstance(node, list):
        return [_inline_refs(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _inline_refs(defs[ref.removeprefix("#/$defs/")], defs)
    return {k: _inline_refs(v, defs) for k, v in node.items() if k != "$defs"}


# -- argument errors ------------------------------------------------------------------------
def explain_arguments(errors: list[ErrorDetails], schema: dict[str, Any]) -> str:
    """pydantic's argument errors as one sentence, e.g. ``k must be an integer between 1
    and 100, got 'abc'`` or ``missing required argument 'content' (the text to remember)``."""
    properties: dict[str, Any] = schema.get("properties", {})
    parts = [_explain(error, properties) for error in errors]
    return "; ".join(dict.fromkeys(parts))


def _explain(error: ErrorDetails, properties: dict[str, Any]) -> str:
    loc = [str(part) for part in error["loc"]]
    name = loc[0] if loc else "arguments"
    if error["type"] == "missing":
        description = properties.get(name, {}).get("description")
        return f"missing required argument '{name}'" + (f" ({description})" if description else "")
    if error["type"] == "extra_forbidden":
        return f"unknown argument '{name}' (this tool takes: {', '.join(properties) or 'none'})"
    node = properties.get(name, {})
    for part in loc[1:]:  # a list item: tags[0]
        name, node = f"{name}[{part}]", node.get("items", {})
    return f"{name} must be {expected(node)}, got {_shown(error['input'])}"


def expected(node: dict[str, Any]) -> str:
    """What a schema node accepts, in words: 'an integer between 1 and 100'."""
    if "enum" in node:
        return "one of " + ", ".join(repr(v) for v in node["enum"])
    kind = node.get("type")
    if kind in ("integer", "number"):
        noun = "an integer" if kind == "integer" else "a number"
        low, high = node.get("minimum"), node.get("maximum")
        if low is not None and high is not None:
            return f"{noun} between {low} and {high}"
        return noun + (f" of at least {low}" if low is not None else "")
    if kind == "array":
        item = node.get("items", {}).get("type")
        return "a list of strings" if item == "string" else "a list"
    return {"string": "a string", "boolean": "true or false", "object": "an object"}.get(
        str(kind), "a valid value"
    )


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= SHOWN_VALUE else text[: SHOWN_VALUE - 3] + "..."
