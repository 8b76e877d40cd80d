"""The stdio transport: the SDK's, but a line that is no JSON-RPC message is answered.

The SDK drops such a line (logged at debug level), so a host whose request was garbled
(cut short, not JSON, no method, params that are no object) waits for its answer forever.
JSON-RPC 2.0 answers it: -32700 (parse error) for what is no JSON, -32600 (invalid
request) for the rest, with the request's id when it has one and ``null`` otherwise; a
notification (a method, no id) is never answered.
"""

from __future__ import annotations

import contextvars
import logging
from types import TracebackType
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import ValidationError

log = logging.getLogger(__name__)


def run_stdio(mcp: MCPServer) -> None:
    """Serve ``mcp`` over stdin and stdout until stdin closes."""
    anyio.run(_serve, mcp)


async def _serve(mcp: MCPServer) -> None:
    lowlevel = mcp._lowlevel_server  # as MCPServer.run_stdio_async does
    async with stdio_server() as (read_stream, write_stream):
        answering = Answering(read_stream, write_stream)
        await lowlevel.run(answering, write_stream, lowlevel.create_initialization_options())


def refusal(exc: Exception) -> JSONRPCError | None:
    """The error that answers a line the SDK could not read (``exc``, its validation
    error); None for a blank line or a notification, which are not answered."""
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    unparsed = [e["input"] for e in errors if e["type"] == "json_invalid"]
    if unparsed and not str(unparsed[0]).strip():
        return None  # a blank line: no message at all
    if unparsed or not errors:
        return _error(None, PARSE_ERROR, "Parse error: not JSON")
    message = next((e["input"] for e in errors if isinstance(e["input"], dict)), None)
    if message is None:
        return _error(None, INVALID_REQUEST, "Invalid request: a message is a JSON object")
    request_id = message.get("id")
    if "method" in message and request_id is None:
        return None
    if "method" not in message or isinstance(request_id, bool):
        request_id = None  # a response of the client's (its id is not ours), or no id
    wrong = dict.fromkeys(
        f"{where}: {e['msg']}"
        for e in errors
        if (where := ".".join(map(str, e["loc"][1:])) or "message") not in ("result", "error")
    )
    return _error(request_id, INVALID_REQUEST, f"Invalid request: {'; '.join(wrong)}"[:300])


def _error(request_id: Any, code: int, message: str) -> JSONRPCError:
    valid = isinstance(request_id, str | int) and not isinstance(request_id, bool)
    return JSONRPCError(
        jsonrpc="2.0",
        id=request_id if valid else None,
        error=ErrorData(code=code, message=message),
    )


class Answering:
    """The read stream of stdio, answering each unreadable line on the write stream instead
    of passing it on (as an exception, which the server drops)."""

    def __init__(self, inner: Any, write: Any) -> None:
        self.inner, self.write = inner, write

    @property
    def last_context(self) -> contextvars.Context | None:
        return getattr(self.inner, "last_context", None)

    async def receive(self) -> SessionMessage:
        while True:
            item = await self.inner.receive()
            if not isinstance(item, Exception):
                return item  # type: ignore[no-any-return]
            answer = refusal(item)
            log.warning("unreadable message on stdin (%s)", "answered" if answer else "dropped")
            if answer is not None:
                await self.write.send(SessionMessage(answer))

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __aiter__(self) -> Answering:
        return self

    async def __anext__(self) -> SessionMessage:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Answering:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
