"""The command line, in-process (click's runner) and as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from memvault.cli import cli

from .helpers import commit_count, git, run_memvault


def invoke(vault: Path, *args: str) -> tuple[int, str, str]:
    runner = CliRunner()
    result = runner.invoke(cli, ["--vault", str(vault), *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_add_supersedes_and_says_what_a_new_memory_may_contradict_or_says_again(
    vault_path: Path,
) -> None:
    code, out, _ = invoke(vault_path, "--json", "add", "Dr. Okafor sees me Thursday at 3pm.")
    old = json.loads(out)["id"]
    code, out, _ = invoke(
        vault_path, "add", "Dr. Okafor sees me Thursday at 4pm.", "--supersedes", old
    )
    assert code == 0 and out.count("\n") == 1  # a correction: nothing else to say
    code, out, _ = invoke(vault_path, "--json", "show", old)
    assert json.loads(out)["status"] == "superseded"
    code, out, _ = invoke(vault_path, "add", "Dr. Okafor sees me Thursday at 3pm.")
    said = out.splitlines()
    assert code == 0 and said[0].startswith("created ")
    assert any(
        line.startswith("  says again what a corrected memory said:") and old in line
        for line in said
    )
    assert any(line.startswith("  may contradict ") for line in said)


def test_init_creates_a_vault_with_one_commit(tmp_path: Path) -> None:
    code, out, _ = invoke(tmp_path / "v", "init")
    assert code == 0 and "Created vault" in out
    assert commit_count(tmp_path / "v") == 1
    for folder in ("preferences", "facts", "episodes", "inbox", "archive", "_templates"):
        assert (tmp_path / "v" / folder).is_dir()
    assert ".memvault/" in (tmp_path / "v" / ".gitignore").read_text()
    code, out, _ = invoke(tmp_path / "v", "init")
    assert code == 0 and "already exists" in out and commit_count(tmp_path / "v") == 1


def test_add_show_list_log_search_round_trip(vault_path: Path) -> None:
    code, out, _ = invoke(
        vault_path,
        "--json",
        "add",
        "The user prefers dark mode in every editor.",
        "--type",
        "preference",
        "--tags",
        "ui,editor",
        "--importance",
        "0.8",
    )
    assert code == 0
    added = json.loads(out)
    assert added["action"] == "created" and added["tags"] == ["ui", "editor"]
    code, out, _ = invoke(vault_path, "show", added["id"])
    assert code == 0 and "dark mode" in out and added["path"] in out
    code, out, _ = invoke(vault_path, "--json", "list", "--type", "preference")
    assert [m["id"] for m in json.loads(out)] == [added["id"]]
    code, out, _ = invoke(vault_path, "log", added["id"])
    assert code == 0 and f"remember: {added['path']}" in out
    code, out, _ = invoke(vault_path, "search", "editor theme", "--explain")
    assert code == 0 and "dark mode" in out and "why:" in out


def test_forget_revert_and_status(vault_path: Path) -> None:
    _, out, _ = invoke(
        vault_path, "--json", "add", "The team standup is at 9:30.", "--type", "fact"
    )
    added = json.loads(out)
    code, out, _ = invoke(vault_path, "forget", added["id"], "--reason", "moved")
    assert code == 0 and out.startswith("archived archive/")
    first = git(vault_path, "log", "--format=%H", "-n", "2").split()[1]
    code, out, _ = invoke(vault_path, "revert", added["id"], first)
    assert code == 0 and "reverted" in out
    code, out, _ = invoke(vault_path, "--json", "status")
    status = json.loads(out)
    assert status["memories"] == 1 and status["index"]["state"] == "ready"


def test_errors_are_one_line_on_stderr_with_exit_1(vault_path: Path) -> None:
    proc = run_memvault("--vault", str(vault_path), "show", "../../etc/passwd")
    assert proc.returncode == 1
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "inside the vault" in lines[0]
    proc = run_memvault("--vault", str(vault_path / "missing"), "list")
    assert (
        proc.returncode == 1 and "memvault init" in proc.stderr and "Traceback" not in proc.stderr
    )


def test_doctor_reports_problems_without_crashing(vault_path: Path) -> None:
    (vault_path / "facts" / "bad.md").write_text("---\n: : :\n---\n")
    (vault_path / "facts" / "bin.md").write_bytes(b"\x00\x00")
    (vault_path / "facts" / "a.md").write_text("---\nid: 01DUPLICATEID00\n---\na\n")
    (vault_path / "facts" / "b.md").write_text("---\nid: 01DUPLICATEID00\n---\nb\n")
    code, out, _ = invoke(vault_path, "--json", "doctor")
    assert code == 1
    kinds = sorted(p["kind"] for p in json.loads(out)["problems"])
    assert kinds.count("uncommitted") == 4
    assert {"malformed", "binary", "duplicate_id"} <= set(kinds)


def test_doctor_calls_a_symlinked_folder_unsafe_not_waiting_to_be_committed(
    vault_path: Path, tmp_path: Path
) -> None:
    """git lists a symlinked folder as untracked; memvault never commits it, so doctor must
    not promise that the next write will."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("not the vault's\n")
    (vault_path / "linkdir").symlink_to(outside, target_is_directory=True)
    code, out, _ = invoke(vault_path, "--json", "doctor")
    found = {p["path"]: p for p in json.loads(out)["problems"]}
    assert found["linkdir"]["kind"] == "unsafe"
    assert "never committed by memvault" in found["linkdir"]["message"]
    assert code == 1


def test_doctor_reports_a_folder_that_is_not_a_git_repository(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    code, out, _ = invoke(tmp_path / "plain", "doctor")
    assert code == 1 and "not a git repository" in out


def test_import_jsonl_and_export(vault_path: Path, tmp_path: Path) -> None:
    source = tmp_path / "memories.jsonl"
    rows = [
        {"content": "Alice leads the payments team.", "type": "fact", "tags": ["people"]},
        {"content": "用户喜欢简洁的回答", "type": "preference", "created": "2025-01-02T10:00:00"},
    ]
    source.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n")
    before = commit_count(vault_path)
    code, out, _ = invoke(vault_path, "--json", "import", str(source))
    assert code == 0 and json.loads(out)["imported"] == 2
    assert commit_count(vault_path) == before + 1
    out_file = tmp_path / "export.json"
    code, _, _ = invoke(vault_path, "export", "--out", str(out_file))
    data = json.loads(out_file.read_text())
    assert {m["type"] for m in data["memories"]} == {"fact", "preference"}
    assert all(m["history"][0]["op"] == "import" for m in data["memories"])


def test_import_a_folder_keeps_relative_paths(vault_path: Path, tmp_path: Path) -> None:
    src = tmp_path / "notes"
    (src / "projects" / "shop").mkdir(parents=True)
    (src / "projects" / "shop" / "stack.md").write_text("# Stack\n\nThe shop runs on Django.\n")
    code, out, _ = invoke(vault_path, "--json", "import", str(src))
    assert code == 0 and json.loads(out)["paths"] == ["projects/shop/stack.md"]
    text = (vault_path / "projects" / "shop" / "stack.md").read_text()
    assert text.startswith("---\nid: ") and text.endswith("# Stack\n\nThe shop runs on Django.\n")


def test_reindex_full_rebuilds_from_the_files(vault_path: Path) -> None:
    invoke(vault_path, "add", "Reindexing keeps this memory findable.", "--type", "fact")
    code, out, _ = invoke(vault_path, "--json", "reindex", "--full")
    assert code == 0 and json.loads(out)["indexed"] == 1
    _, out, _ = invoke(vault_path, "--json", "search", "findable")
    assert json.loads(out)[0]["title"].startswith("Reindexing")


def test_doctor_says_when_recall_is_full_text_only(vault_path: Path) -> None:
    (vault_path / ".memvault.toml").write_text('embedder = "st:/no/such/model"\n')
    code, out, _ = invoke(vault_path, "doctor")
    assert code == 1 and "embedder" in out and "full text only" in out
    # said before importing sentence-transformers (5-20 s) only to learn the folder is missing
    assert "no model folder at /no/such/model" in out


def test_a_reader_that_stops_early_ends_the_listing_quietly(vault_path: Path) -> None:
    """`memvault list | head -1`: the listing stops as git's does (SIGPIPE's status 141,
    nothing on stderr), not with an error telling the person to check their vault."""
    source = vault_path.parent / "many.jsonl"
    lines = (
        json.dumps({"content": f"Note {n}: the shed key hangs by the back door, hook {n}."})
        for n in range(1200)
    )
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    env = {**os.environ, "MEMVAULT_EMBEDDER": "none"}
    assert run_memvault("--vault", str(vault_path), "import", str(source), env=env).returncode == 0
    command = [sys.executable, "-m", "memvault.cli", "--vault", str(vault_path), "list"]
    with subprocess.Popen(
        [*command, "--limit", "1200"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    ) as listing:
        assert listing.stdout is not None and listing.stderr is not None
        first = listing.stdout.readline()
        listing.stdout.close()  # the reader leaves after one line; the listing is ~100 KB
        said = listing.stderr.read()
        assert listing.wait(timeout=120) == 141
    assert first.strip() and said == b""


def test_a_listing_limit_below_one_is_refused(vault_path: Path) -> None:
    for limit in ("0", "-5"):
        done = run_memvault("--vault", str(vault_path), "list", "--limit", limit)
        assert done.returncode == 2 and "--limit" in done.stderr


def test_list_warns_once_about_a_file_it_cannot_read(vault_path: Path) -> None:
    (vault_path / "scan.md").write_bytes(b"\x89PNG\x00\x00")
    done = run_memvault("--vault", str(vault_path), "list", env={"MEMVAULT_EMBEDDER": "none"})
    assert done.returncode == 0
    assert [line for line in done.stderr.splitlines() if "scan.md" in line] == [
        "warning: scan.md looks binary (NUL bytes): it is left untouched"
    ]


def test_list_shows_a_note_without_any_date_as_such(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "plain.md").write_text("# Plain\nA note written before memvault.\n")
    env = {"MEMVAULT_EMBEDDER": "none"}
    assert run_memvault("init", str(root), env=env).returncode == 0
    done = run_memvault("--vault", str(root), "list", env=env)
    (line,) = [x for x in done.stdout.splitlines() if x.endswith("plain.md")]
    assert line.startswith("no date     note")


def test_doctor_names_dates_memvault_cannot_read(vault_path: Path) -> None:
    (vault_path / "facts" / "odd.md").write_text(
        "---\ncreated: 12/03/2024\nupdated: yesterday\n---\nThe shed was painted.\n"
    )
    (vault_path / "facts" / "fine.md").write_text("---\ncreated: 2024-03-12\n---\nFine.\n")
    code, out, _ = invoke(vault_path, "--json", "doctor")
    bad = [p for p in json.loads(out)["problems"] if p["kind"] == "bad_date"]
    assert [(p["path"], p["message"].split(" is not")[0]) for p in bad] == [
        ("facts/odd.md", "facts/odd.md: created: '12/03/2024'"),
        ("facts/odd.md", "facts/odd.md: updated: 'yesterday'"),
    ]
    assert code == 1
