"""`memvault serve` as a real subprocess: stdio (SDK client and raw pipes) and Streamable HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import filelock
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from .helpers import INITIALIZE, broken_git_index, call_tool, git

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")


def serve_args(vault: Path, *extra: str) -> list[str]:
    return ["-m", "memvault.cli", "--vault", str(vault), "serve", *extra]


async def round_trip(client: Client) -> str:
    made = await call_tool(
        client,
        "remember",
        {
            "content": "Deploys happen from the main branch only.",
            "type": "fact",
        },
    )
    found = await call_tool(client, "recall", {"query": "which branch do we deploy from"})
    assert found["results"][0]["id"] == made["id"]
    got = await call_tool(client, "get_memory", {"id": made["id"]})
    await call_tool(
        client,
        "update_memory",
        {
            "id": made["id"],
            "content": "Deploys happen from release branches.",
            "expected_revision": got["revision"],
        },
    )
    history = await call_tool(client, "memory_history", {"id": made["id"]})
    assert [c["op"] for c in history["commits"]] == ["update", "remember"]
    reverted = await call_tool(client, "revert_memory", {"id": made["id"], "rev": made["commit"]})
    assert reverted["action"] == "reverted"
    again = await call_tool(client, "get_memory", {"id": made["id"]})
    assert "main branch only" in again["body"]
    return str(made["id"])


def test_stdio_round_trip_works_and_pushes_updates(vault_path: Path) -> None:
    """Speed of `initialize` is measured by benchmarks/stdio_latency.py, not asserted here."""
    params = StdioServerParameters(command=sys.executable, args=serve_args(vault_path))
    updates: list[str] = []
    watched: dict[str, asyncio.Event] = {}

    async def on_message(message: Any) -> None:
        root = getattr(message, "root", message)
        if getattr(root, "method", "") == "notifications/resources/updated":
            updates.append(str(root.params.uri))
            if str(root.params.uri) in watched:
                watched[str(root.params.uri)].set()

    async def main() -> None:
        async with Client(params, mode="legacy", message_handler=on_message) as client:
            memory_id = await round_trip(client)
            got = await call_tool(client, "get_memory", {"id": memory_id})
            watched[got["uri"]] = asyncio.Event()
            await client.session.subscribe_resource(got["uri"])
            await call_tool(client, "update_memory", {"id": memory_id, "importance": 0.9})
            await asyncio.wait_for(watched[got["uri"]].wait(), timeout=10)

    asyncio.run(main())
    assert any(u.startswith("memory://note/facts/") for u in updates)
    assert "Memvault-Client: mcp" in git(vault_path, "log", "-1", "--format=%B")


def test_every_byte_on_stdout_is_json_rpc(vault_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, *serve_args(vault_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin and proc.stdout
    messages = [
        INITIALIZE,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {
                "name": "remember",
                "arguments": {"content": "Raw pipes stay clean.", "type": "fact"},
            },
        },
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "recall", "arguments": {"query": "raw pipes"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "get_memory", "arguments": {"id": "../../etc/passwd"}},
        },
    ]
    out: list[str] = []
    for message in messages:
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()
        if "id" in message:
            out.append(proc.stdout.readline())
    rest, err = proc.communicate(timeout=30)  # closes stdin: the server exits
    out.extend(line + "\n" for line in rest.splitlines() if line)
    assert len(out) >= 4
    for line in out:
        assert json.loads(line)["jsonrpc"] == "2.0", line
    assert json.loads(out[-1])["result"]["isError"] is True
    assert "memvault: serving" in err


def test_serve_starts_and_answers_while_another_process_holds_the_write_lock(
    vault_path: Path,
) -> None:
    """An import or purge elsewhere holds the lock for long: the host's server answers at
    once (reads work), and its writes go through once the lock is free."""
    lock = filelock.FileLock(str(vault_path / ".memvault" / "write.lock"))
    lock.acquire()
    env = {**os.environ, "MEMVAULT_LOCK_TIMEOUT": "300", "MEMVAULT_EMBEDDER": "none"}
    params = StdioServerParameters(command=sys.executable, args=serve_args(vault_path), env=env)

    async def main() -> None:
        async with Client(params, mode="legacy") as client:
            listed = await call_tool(client, "list_memories", {})
            assert listed["memories"] == []
            lock.release()
            made = await call_tool(
                client, "remember", {"content": "Lock waits end in a write.", "type": "fact"}
            )
            assert made["action"] == "created"

    try:
        asyncio.run(asyncio.wait_for(main(), timeout=60))
    finally:
        lock.release()


def test_a_start_up_recovery_that_fails_is_logged_and_the_vault_still_served(
    vault_path: Path,
) -> None:
    """Recovery runs behind the server: when git cannot commit what a crash left, stderr
    says so (no traceback of a dead thread) and requests are answered."""
    (vault_path / ".memvault").mkdir(exist_ok=True)
    (vault_path / "facts" / "left.md").write_text("---\ntype: fact\n---\nLeft by a crash.\n")
    (vault_path / ".memvault" / "pending-writes").write_text("facts/left.md\n")
    with broken_git_index(vault_path):
        proc = subprocess.Popen(
            [sys.executable, *serve_args(vault_path, "--no-watch")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stdin and proc.stdout and proc.stderr
        try:
            for line in proc.stderr:
                assert "Traceback" not in line
                if "could not commit what was left uncommitted" in line:
                    break
            request = INITIALIZE
            proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
            answer = json.loads(proc.stdout.readline())
        finally:
            proc.kill()
            proc.communicate(timeout=30)
    assert answer["result"]["serverInfo"]["name"] == "memvault"


def _stdio_server(vault: Path, stderr: int, **env: str) -> subprocess.Popen[str]:
    """``memvault serve`` over pipes, as a host starts it (full text only)."""
    return subprocess.Popen(
        [sys.executable, *serve_args(vault)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        env={**os.environ, "MEMVAULT_EMBEDDER": "none", **env},
    )


def _ask(proc: subprocess.Popen[str], request: dict[str, Any]) -> dict[str, Any]:
    """Send one request on the server's stdin; its answer, the next line of stdout."""
    assert proc.stdin and proc.stdout
    proc.stdin.write(json.dumps(request) + "\n")
    proc.stdin.flush()
    answer: dict[str, Any] = json.loads(proc.stdout.readline())
    return answer


def test_sigterm_stops_a_stdio_server_as_ctrl_c_does_committing_what_the_watcher_saw(
    vault_path: Path,
) -> None:
    """A host ends its server with SIGTERM: status 0, and a person's edit the watcher had
    seen is committed before the exit (not left to the next start's recovery)."""
    note = vault_path / "facts" / "boat.md"
    note.write_text("---\ntype: fact\n---\nThe boat is blue.\n")
    git(vault_path, "add", "facts/boat.md")
    git(vault_path, "commit", "-qm", "a note")
    proc = _stdio_server(vault_path, subprocess.PIPE, MEMVAULT_DEBOUNCE_SECONDS="600")
    assert proc.stdin and proc.stdout
    uri = "memory://note/facts/boat.md"
    try:
        for number, (method, params) in enumerate(
            [("initialize", INITIALIZE["params"]), ("resources/subscribe", {"uri": uri})], 1
        ):
            request = {"jsonrpc": "2.0", "id": number, "method": method, "params": params}
            assert _ask(proc, request)["id"] == number
        note.write_text("---\ntype: fact\n---\nThe boat is green now.\n")
        for line in proc.stdout:  # the watcher indexed the edit and says so
            if json.loads(line).get("params", {}).get("uri") == uri:
                break
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "Memvault-Op: external" in git(vault_path, "log", "-1", "--format=%B")
    assert git(vault_path, "status", "--porcelain") == ""


def test_sigterm_stops_a_stdio_server_whose_host_keeps_stdin_open(vault_path: Path) -> None:
    """After SIGTERM the server cleaned up and then never exited: the interpreter waited
    at exit for the worker thread blocked reading stdin, which the host held open."""
    proc = _stdio_server(vault_path, subprocess.DEVNULL)
    assert proc.stdin and proc.stdout
    try:
        assert _ask(proc, INITIALIZE)["id"] == 1
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0  # stdin still open: nothing else ends it
    finally:
        proc.kill()
        proc.stdin.close()
        proc.stdout.close()
        proc.wait()


def test_serve_on_a_missing_vault_fails_without_first_saying_it_serves(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "vault"
    proc = subprocess.run(
        [sys.executable, *serve_args(missing, "--no-init")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1 and proc.stdout == ""
    assert "no vault at" in proc.stderr and "serving" not in proc.stderr


def test_ctrl_c_stops_an_http_server_quietly(vault_path: Path) -> None:
    """A person stops `memvault serve --http` in a terminal on purpose: no "Aborted!", status
    0; the line that says where it serves comes once it serves (port 0: the port chosen)."""
    proc = subprocess.Popen(
        [sys.executable, *serve_args(vault_path, "--http", "--port", "0")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    said = proc.stderr.readline()  # once the vault is open
    assert "memvault: serving" in said and ":0/" not in said
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert (proc.returncode, out) == (0, ""), err
    assert "Aborted" not in err and "Traceback" not in err


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until_listening(proc: subprocess.Popen[str]) -> None:
    """Read the server's stderr until it says it serves HTTP (printed once bound)."""
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if "memvault: serving" in line and "http://" in line:
            return
    raise AssertionError("server exited before listening: " + "".join(seen))


@contextmanager
def http_server(vault: Path, token: str) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, *serve_args(vault, "--http", "--port", str(port), "--token", token)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until_listening(proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.communicate(timeout=15)


def post(url: str, headers: dict[str, str]) -> int:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **headers,
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_http_round_trip_with_token_and_refusals(vault_path: Path) -> None:
    token = "s3cret-token"
    with http_server(vault_path, token) as url:

        @asynccontextmanager
        async def client() -> Any:
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
            async with http, Client(streamable_http_client(url, http_client=http)) as c:
                yield c

        async def main() -> None:
            async with client() as c:
                await round_trip(c)

        asyncio.run(main())
        assert post(url, {}) == 401
        assert post(url, {"Authorization": "Bearer wrong"}) == 401
        foreign = {"Authorization": f"Bearer {token}", "Origin": "http://evil.example"}
        assert post(url, foreign) == 403


def test_http_refuses_a_public_bind_without_a_token(vault_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, *serve_args(vault_path, "--http", "--host", "0.0.0.0")],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert proc.returncode == 1
    assert "without a token" in proc.stderr and "Traceback" not in proc.stderr


def test_http_on_a_port_in_use_or_out_of_range_says_what_to_do(vault_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        busy = subprocess.run(
            [sys.executable, *serve_args(vault_path, "--http", "--port", port)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert busy.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in busy.stderr
    assert "pass another --port" in busy.stderr and "bug" not in busy.stderr
    wrong = subprocess.run(
        [sys.executable, *serve_args(vault_path, "--http", "--port", "99999")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert wrong.returncode == 2 and "--port" in wrong.stderr and "bug" not in wrong.stderr


def test_serve_says_when_it_creates_the_vault(tmp_path: Path) -> None:
    """A mistyped --vault in a host's config silently served a new, empty vault."""
    typo = tmp_path / "valut"
    proc = subprocess.run(
        [sys.executable, *serve_args(typo, "--no-watch")],
        input="",  # the host went away at once: the server ends
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    assert f"memvault: created a new vault at {typo}" in proc.stderr
    assert (typo / ".git").is_dir()
