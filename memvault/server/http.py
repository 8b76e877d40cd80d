"""Streamable HTTP transport: loopback by default, Origin checked, bearer token enforced."""

from __future__ import annotations

import errno
import hmac
import logging
import socket
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings

from ..binding import LOOPBACK
from ..errors import MemvaultError

log = logging.getLogger(__name__)


class BearerTokenMiddleware:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer <token>``.

    The scheme is case-insensitive (RFC 7235: ``bearer`` and ``BEARER`` are fine);
    the token is compared in constant time.
    """

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = token.strip().encode()
        if not self.expected:
            raise ValueError("a bearer token cannot be blank")

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            scheme, _, given = headers.get(b"authorization", b"").strip().partition(b" ")
            given = given.strip()
            if scheme.lower() != b"bearer" or not hmac.compare_digest(given, self.expected):
                await _reject(send, 401, b"missing or wrong bearer token")
                return
        await self.app(scope, receive, send)


async def _reject(send: Any, status: int, message: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")],
        }
    )
    await send({"type": "http.response.body", "body": message})


def security(host: str, port: int, token: str | None = None) -> TransportSecuritySettings:
    """On loopback only local Origins (and Host headers) are accepted: no DNS-rebinding from
    web pages. On any other address the bearer token (required there) guards every request,
    and clients reach the server by names and addresses it cannot list (``0.0.0.0`` is
    none of them): Host and Origin are not checked."""
    if host not in LOOPBACK and (token or "").strip():
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    hosts = {host, "127.0.0.1", "localhost", "[::1]"}
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{h}:{port}" for h in hosts] + list(hosts),
        allowed_origins=[f"http://{h}:{port}" for h in hosts] + [f"http://{h}" for h in hosts],
    )


def http_app(mcp: MCPServer, host: str, port: int, token: str | None) -> Any:
    """The MCP app; behind the bearer check when ``token`` is not blank."""
    checks = security(host, port, token)
    app: Any = mcp.streamable_http_app(transport_security=checks, host=host)
    token = (token or "").strip()
    return BearerTokenMiddleware(app, token) if token else app


def _listening(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` and listening; a clear error when it cannot be."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        busy = " (another server, perhaps another `memvault serve --http`?)"
        raise MemvaultError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}"
            f"{busy if exc.errno == errno.EADDRINUSE else ''}: "
            "pass another --port, or a --host this machine has"
        ) from exc
    return sock


def run_http(
    mcp: MCPServer,
    host: str,
    port: int,
    token: str | None,
    announce: Callable[[str], None] | None = None,
) -> None:
    """Serve until stopped; ``announce`` gets the URL once the port is bound."""
    import uvicorn

    config = uvicorn.Config(
        http_app(mcp, host, port, token),
        host=host,
        port=port,
        log_level="warning",
        lifespan="on",
    )
    sock = _listening(host, port)
    port = sock.getsockname()[1]  # the one the system chose for --port 0
    url = f"http://{f'[{host}]' if ':' in host else host}:{port}/mcp"

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            # Once this line is out, connections are served and Ctrl-C is uvicorn's
            # (a graceful stop), so callers need not poll.
            (announce or log.info)(url)

    Server(config).run(sockets=[sock])
