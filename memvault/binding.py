"""Where ``serve`` may listen: loopback alone needs nothing, any other address a bearer
token (checked before a vault is created or opened, and before the MCP server's modules
load: a refusal is immediate and leaves nothing behind)."""

from __future__ import annotations

from .errors import MemvaultError

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def serving_token(http: bool, host: str, token: str | None) -> str | None:
    """The bearer token to serve with (blank or whitespace is none; one no HTTP header can
    carry is refused). HTTP on any address but loopback is refused without one: checked
    before anything is opened or created."""
    token = (token or "").strip() or None
    if token is not None and not (token.isascii() and token.isprintable()):
        raise MemvaultError(
            "the token has a character an HTTP header cannot carry (an accent, a symbol "
            "beyond ASCII, a control character): no client could send it; use letters, "
            "digits and - . _ ~ + /"
        )
    if http and host not in LOOPBACK and not token:
        raise MemvaultError(
            f"refusing to serve HTTP on {host} without a token: pass --token or set "
            "MEMVAULT_TOKEN (loopback addresses need none)"
        )
    return token
