"""A hostile look at review, the profile and context: a person's notes in a field file,
a proposal whose memory the person moved or deleted, an acceptance git could not record on
the branch, a topic no one could read. Real vaults, real git, the real command line."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from memvault import profile, proposals
from memvault.cli import cli
from memvault.config import Settings
from memvault.context import build_context
from memvault.errors import (
    InvalidInputError,
    MemvaultError,
    SchemaError,
    StaleRevisionError,
    UnsafePathError,
)
from memvault.models import ChangeEvent
from memvault.service import MemoryService, current_client

from .helpers import commit_count, git, run_memvault

PERSON = "Ada Person"
BRANCH = "memvault/proposals/cursor"


@pytest.fixture
def vault(vault_path: Path) -> Iterator[MemoryService]:
    """A text-only vault in proposal mode whose repository names a person."""
    git(vault_path, "config", "user.name", PERSON)
    git(vault_path, "config", "user.email", "ada@example.org")
    service = MemoryService.open(vault_path, Settings(embedder="none", agent_writes="propose"))
    yield service
    service.close()


def commit_by_hand(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", message)


def propose_update(service: MemoryService, memory_id: str, content: str) -> proposals.Pending:
    """``cursor`` proposes ``content`` for the memory: its one pending proposal."""
    asking = current_client.set("cursor/2.0")
    try:
        with proposals.writer(service) as drafts:
            assert drafts.update(memory_id, content=content).action == "proposed"
    finally:
        current_client.reset(asking)
    (found,) = proposals.pending(service)
    return found


# -- review -----------------------------------------------------------------------------
def test_an_acceptance_git_cannot_mark_on_the_branch_is_indexed_and_says_how_to_finish(
    vault: MemoryService,
) -> None:
    made = vault.remember("The user owns a grey cat named Miso.", type="fact").memory
    assert made is not None
    waiting = propose_update(vault, made.id, "The user owns a grey cat named Tofu.")
    events: list[ChangeEvent] = []
    vault.listeners.append(events.append)
    lock = vault.root / ".git" / "refs" / "heads" / f"{BRANCH}.lock"  # another git's, live
    lock.write_text("")
    vault.history.lock_retry_seconds = 0.0
    try:
        with pytest.raises(MemvaultError) as caught:
            proposals.accept(vault, waiting.id)
    finally:
        lock.unlink()
    message = str(caught.value)
    assert f"proposal {waiting.id} is in the vault" in message
    assert f"`memvault review accept {waiting.id}` marks it" in message
    assert "Tofu" in vault.get(made.id).body  # the vault took it: one commit, as the person
    assert git(vault.root, "log", "-1", "--format=%an %s").startswith(f"{PERSON} accept:")
    assert [h.id for h in vault.recall("Tofu")] == [made.id]  # indexed, and announced
    assert [e.changed for e in events] == [(made.path,)]
    assert [p.id for p in proposals.pending(vault)] == [waiting.id]

    again = proposals.accept(vault, waiting.id)  # now git can: marked, nothing to write

    assert (again.action, again.commit, again.paths) == ("accepted", None, ())
    assert proposals.pending(vault) == []
    assert git(vault.root, "status", "--porcelain") == ""


@pytest.mark.parametrize("by_hand", ["moved", "deleted"])
def test_accepting_a_change_to_a_memory_the_person_moved_or_deleted_says_which_and_where(
    vault: MemoryService, by_hand: str
) -> None:
    made = vault.remember("The user lives in Lisbon near the river.", type="fact").memory
    assert made is not None
    waiting = propose_update(vault, made.id, "The user lives in Porto near the river.")
    if by_hand == "moved":
        git(vault.root, "mv", made.path, "facts/home.md")
    else:
        git(vault.root, "rm", "--quiet", made.path)
    commit_by_hand(vault.root, f"{by_hand} by hand")
    before = commit_count(vault.root), sorted(vault.memory_paths())

    with pytest.raises(StaleRevisionError) as caught:
        proposals.accept(vault, waiting.id)

    message = str(caught.value)
    if by_hand == "moved":
        assert f"{made.path} (memory {made.id}) was moved to facts/home.md" in message
        assert "change it at facts/home.md by hand" in message
    else:
        assert f"{made.path} (memory {made.id}) was deleted from the vault" in message
    assert f"`memvault review reject {waiting.id}`" in message
    assert (commit_count(vault.root), sorted(vault.memory_paths())) == before
    assert git(vault.root, "status", "--porcelain", "--untracked-files=all") == ""
    assert [p.id for p in proposals.pending(vault)] == [waiting.id]


@pytest.mark.parametrize("by_hand", ["branch deleted", "checkout replaced by a file"])
def test_a_client_proposes_again_after_a_person_deleted_its_branch_or_checkout(
    vault: MemoryService, by_hand: str
) -> None:
    made = vault.remember("The user owns a grey cat named Miso.", type="fact").memory
    assert made is not None
    propose_update(vault, made.id, "The user owns a grey cat named Tofu.")
    checkout = vault.root / ".memvault" / "proposals" / "cursor"
    if by_hand == "branch deleted":  # git branch -D refuses a checked-out branch; this does not
        git(vault.root, "update-ref", "-d", f"refs/heads/{BRANCH}")
        assert proposals.pending(vault) == []
    else:
        shutil.rmtree(checkout)
        checkout.write_text("not a checkout", encoding="utf-8")
    before = commit_count(vault.root)

    asking = current_client.set("cursor/2.0")
    try:
        with proposals.writer(vault) as drafts:
            made_now = drafts.remember("The user likes oolong tea a lot.", type="preference")
    finally:
        current_client.reset(asking)

    assert made_now.action == "proposed"
    subjects = [p.subject for p in proposals.pending(vault)]
    if by_hand == "branch deleted":  # its proposals went with it; no "recover" of the vault
        assert subjects == [f"remember: {made_now.memory.path}"]  # type: ignore[union-attr]
    else:
        assert subjects[-1] == f"remember: {made_now.memory.path}"  # type: ignore[union-attr]
        assert len(subjects) == 2
    assert (checkout / ".git").is_file()
    assert commit_count(vault.root) == before
    assert git(vault.root, "status", "--porcelain", "--untracked-files=all") == ""


def propose_field(service: MemoryService, field: str, value: str) -> proposals.Pending:
    asking = current_client.set("cursor/2.0")
    try:
        with proposals.writer(service) as drafts:
            assert profile.set_field(drafts, field, value, source="agent").commit
    finally:
        current_client.reset(asking)
    (found,) = proposals.pending(service)
    return found


def test_accepting_a_field_the_person_set_meanwhile_is_refused_not_written_beside_it(
    vault: MemoryService,
) -> None:
    waiting = propose_field(vault, "location", "Porto")
    profile.set_field(vault, "location", "Lisbon")  # the person, meanwhile
    before = commit_count(vault.root), sorted(vault.memory_paths())

    with pytest.raises(StaleRevisionError) as caught:
        proposals.accept(vault, waiting.id)

    message = str(caught.value)
    assert f"profile/location.md was set in the vault since proposal {waiting.id}" in message
    assert "`memvault profile location VALUE`" in message
    assert (commit_count(vault.root), sorted(vault.memory_paths())) == before  # no location-2
    assert profile.get_field(vault, "location").value == "Lisbon"  # type: ignore[union-attr]
    assert [p.id for p in proposals.pending(vault)] == [waiting.id]


def test_accepting_a_field_the_schema_refuses_since_is_refused_with_what_to_do(
    vault: MemoryService,
) -> None:
    waiting = propose_field(vault, "units", "metric")
    schema = vault.root / "_schemas" / "profile.yaml"
    text = schema.read_text(encoding="utf-8")
    schema.write_text(text.replace("[metric, imperial]", "[si, imperial]"), encoding="utf-8")
    commit_by_hand(vault.root, "units renamed by hand")
    before = commit_count(vault.root)

    with pytest.raises(InvalidInputError) as caught:
        proposals.accept(vault, waiting.id)

    message = str(caught.value)
    assert "sets a profile field the vault's schema refuses now" in message
    assert "units must be one of si, imperial, got 'metric'" in message
    assert f"`memvault review reject {waiting.id}`" in message
    assert commit_count(vault.root) == before
    assert not (vault.root / "profile" / "units.md").exists()


@pytest.mark.parametrize("decision", ["accept", "reject"])
def test_deciding_a_proposal_twice_says_it_was_decided_already(
    vault: MemoryService, decision: str
) -> None:
    made = vault.remember("The user owns a grey cat named Miso.", type="fact").memory
    assert made is not None
    waiting = propose_update(vault, made.id, "The user owns a grey cat named Tofu.")
    decide = proposals.accept if decision == "accept" else proposals.reject
    decide(vault, waiting.id)
    before = commit_count(vault.root)

    shown = CliRunner().invoke(cli, ["--vault", str(vault.root), "review", decision, waiting.id])

    assert shown.exit_code == 1
    assert f"no pending proposal '{waiting.id}' (it was {decision}ed already)" in shown.stderr
    assert commit_count(vault.root) == before


def test_two_clients_with_names_a_slug_cannot_spell_never_share_a_branch(
    vault: MemoryService,
) -> None:
    said = {}
    for client, text in (
        ("克劳德/1.0", "The user likes oolong tea."),
        ("光标/2.0", "The user rows."),
    ):
        asking = current_client.set(client)
        try:
            with proposals.writer(vault) as drafts:
                said[client] = drafts.remember(text, type="fact")
        finally:
            current_client.reset(asking)
    for client, made in said.items():
        asking = current_client.set(client)
        try:
            proposing, mine = proposals.mine(vault)
        finally:
            current_client.reset(asking)
        assert proposing and [p.memory for p in mine] == [made.memory.id]  # type: ignore[union-attr]
    assert len(proposals.clients(vault)) == 2


def test_accept_all_in_json_reports_what_it_accepted_before_one_was_refused(
    vault: MemoryService,
) -> None:
    cat = vault.remember("The user owns a grey cat named Miso.", type="fact").memory
    desk = vault.remember("The user's desk is by the window.", type="fact").memory
    assert cat is not None and desk is not None
    first = propose_update(vault, cat.id, "The user owns a grey cat named Tofu.")
    asking = current_client.set("cursor/2.0")
    try:
        with proposals.writer(vault) as drafts:
            drafts.update(desk.id, content="The user's desk is by the door.")
    finally:
        current_client.reset(asking)
    vault.update(desk.id, content="The user's desk is in the attic.")  # the person, meanwhile

    shown = CliRunner().invoke(
        cli, ["--vault", str(vault.root), "--json", "review", "accept", "--all"]
    )

    assert shown.exit_code == 1
    assert "is not what proposal" in shown.stderr
    done = json.loads(shown.stdout)
    assert [(d["id"], d["action"], d["paths"]) for d in done] == [
        (first.id, "accepted", [cat.path])
    ]
    assert "Tofu" in vault.get(cat.id).body


GIT_SHIM = """#!/bin/sh
# git, but the commit whose message holds $SHIM_MATCH says so, then waits until it is killed
prev=""
for arg in "$@"; do
  if [ "$prev" = "-F" ] && grep -q "$SHIM_MATCH" "$arg" 2>/dev/null; then hit=1; fi
  case "$arg" in *"$SHIM_MATCH"*) hit=1 ;; esac
  prev="$arg"
done
if [ -n "$hit" ]; then echo ready > "$SHIM_READY"; read never < "$SHIM_BLOCK"; fi
exec {git} "$@"
"""


def killed_in_commit(root: Path, tmp: Path, match: str, *args: str) -> None:
    """The command line run with ``args``, SIGKILLed inside the git commit whose message
    holds ``match`` (a git on PATH that blocks on a FIFO there)."""
    shim = tmp / "shim"
    shim.mkdir()
    real_git = shutil.which("git")
    assert real_git is not None
    (shim / "git").write_text(GIT_SHIM.format(git=real_git))
    (shim / "git").chmod(0o755)
    ready, block = tmp / "ready", tmp / "block"
    os.mkfifo(ready)
    os.mkfifo(block)
    env = {**os.environ, "PATH": f"{shim}:{os.environ['PATH']}", "MEMVAULT_EMBEDDER": "none"}
    env |= {"SHIM_READY": str(ready), "SHIM_BLOCK": str(block), "SHIM_MATCH": match}
    command = [sys.executable, "-m", "memvault.cli", "--vault", str(root), *args]
    process = subprocess.Popen(command, env=env, start_new_session=True, stderr=subprocess.PIPE)
    said: list[str] = []
    waiting = threading.Thread(target=lambda: said.append(ready.read_text()), daemon=True)
    waiting.start()
    waiting.join(timeout=120)
    if not said:  # never reached that commit: let the reader go and say why
        process.kill()
        ready.write_text("")
        pytest.fail(f"never reached the commit: {process.communicate()[1]!r}")
    os.killpg(process.pid, signal.SIGKILL)
    process.communicate()


@pytest.mark.parametrize("match", ["Memvault-Proposal:", "Memvault-Accepted:"])
def test_an_accept_killed_in_its_vault_or_branch_commit_is_finished_by_accepting_again(
    vault: MemoryService, tmp_path: Path, match: str
) -> None:
    made = vault.remember("The user lives in Lisbon.", type="fact").memory
    assert made is not None
    asking = current_client.set("cursor/2.0")
    try:
        with proposals.writer(vault) as drafts:
            assert drafts.forget(made.id).action == "proposed"  # two files: a move
    finally:
        current_client.reset(asking)
    (waiting,) = proposals.pending(vault)
    vault.close()

    killed_in_commit(vault.root, tmp_path, match, "review", "accept", waiting.id)
    env = {"MEMVAULT_EMBEDDER": "none"}
    again = run_memvault("--vault", str(vault.root), "review", "accept", waiting.id, env=env)

    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(f"accepted {waiting.id} (forget: {made.path} (archive)): ")
    assert "None" not in again.stdout
    assert not (vault.root / made.path).exists()
    assert (vault.root / "archive" / made.path).is_file()
    assert git(vault.root, "status", "--porcelain", "--untracked-files=all") == ""
    listed = run_memvault("--vault", str(vault.root), "--json", "review", env=env)
    assert listed.returncode == 0 and listed.stdout.strip() == "[]", listed.stderr


def test_a_reject_killed_in_its_commit_leaves_no_phantom_proposal_and_rejecting_again_works(
    vault: MemoryService, tmp_path: Path
) -> None:
    made = vault.remember("The user owns a grey cat named Miso.", type="fact").memory
    assert made is not None
    waiting = propose_update(vault, made.id, "The user owns a grey cat named Tofu.")
    vault.close()

    killed_in_commit(vault.root, tmp_path, "Memvault-Rejected:", "review", "reject", waiting.id)
    env = {"MEMVAULT_EMBEDDER": "none"}
    again = run_memvault("--vault", str(vault.root), "review", "reject", waiting.id, env=env)

    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(f"rejected {waiting.id} ")
    listed = run_memvault("--vault", str(vault.root), "--json", "review", env=env)
    assert listed.returncode == 0 and listed.stdout.strip() == "[]", listed.stdout
    assert "Miso" in (vault.root / made.path).read_text(encoding="utf-8")
    checkout = vault.root / ".memvault" / "proposals" / "cursor"
    assert git(checkout, "status", "--porcelain") == ""


# -- the profile ------------------------------------------------------------------------
def test_setting_a_field_keeps_the_notes_a_person_wrote_below_its_value(
    vault: MemoryService,
) -> None:
    profile.set_field(vault, "location", "Lisbon")
    path = vault.root / "profile" / "location.md"
    note = "Moving to Porto in May; ask before booking anything."
    path.write_text(path.read_text(encoding="utf-8") + f"\n{note}\n", encoding="utf-8")
    commit_by_hand(vault.root, "a note by hand")

    result = profile.set_field(vault, "location", "Madrid")

    assert result.action == "updated"
    text = path.read_text(encoding="utf-8")
    assert text.endswith(f"---\n# Location\n\nMadrid\n\n{note}\n")
    assert "Lisbon" not in text  # the old value's line is the value, not a note
    assert profile.get_field(vault, "location").value == "Madrid"  # type: ignore[union-attr]
    assert git(vault.root, "status", "--porcelain") == ""
    assert commit_count(vault.root) == 4  # init, the first set, the note, this set


def test_a_list_fields_notes_survive_and_its_items_are_replaced(vault: MemoryService) -> None:
    profile.set_field(vault, "health.allergies", ["penicillin", "peanuts"])
    path = vault.root / "profile" / "health.allergies.md"
    text = path.read_text(encoding="utf-8") + "\nThe peanut one is severe: EpiPen in the bag.\n"
    path.write_text(text, encoding="utf-8")
    commit_by_hand(vault.root, "a note by hand")

    profile.set_field(vault, "health.allergies", ["penicillin", "peanuts", "latex"])

    body = path.read_text(encoding="utf-8").split("---\n", 2)[2]
    assert body == (
        "# Allergies\n\n- penicillin\n- peanuts\n- latex\n\n"
        "The peanut one is severe: EpiPen in the bag.\n"
    )


def test_a_note_a_person_wrote_above_the_value_is_kept_and_the_old_value_is_not(
    vault: MemoryService,
) -> None:
    profile.set_field(vault, "location", "Lisbon")
    path = vault.root / "profile" / "location.md"
    text = path.read_text(encoding="utf-8")
    note = "Note: moving to Porto in May."
    path.write_text(text.replace("# Location\n\n", f"# Location\n\n{note}\n\n"), "utf-8")
    commit_by_hand(vault.root, "a note above the value")

    profile.set_field(vault, "location", "Madrid")

    body = path.read_text(encoding="utf-8").split("---\n", 2)[2]
    assert body == f"# Location\n\nMadrid\n\n{note}\n"


def test_a_note_typed_right_under_the_value_is_kept(vault: MemoryService) -> None:
    """No blank line between value and note: the paragraph was not the value as written,
    so the first paragraph was taken for it, and the note went with it."""
    profile.set_field(vault, "location", "Lisbon")
    path = vault.root / "profile" / "location.md"
    note = "Near the river, third floor."
    path.write_text(path.read_text(encoding="utf-8") + f"{note}\n", "utf-8")
    commit_by_hand(vault.root, "a note under the value")

    profile.set_field(vault, "location", "Madrid")

    body = path.read_text(encoding="utf-8").split("---\n", 2)[2]
    assert body == f"# Location\n\nMadrid\n\n{note}\n"


def test_a_value_changed_by_hand_in_the_frontmatter_loses_no_paragraph(
    vault: MemoryService,
) -> None:
    """The body still reads the value before the hand edit: no paragraph is the old value,
    and the note above was taken for the value and dropped (the stale value kept)."""
    profile.set_field(vault, "location", "Lisbon")
    path = vault.root / "profile" / "location.md"
    note = "Ask before changing: I travel a lot."
    text = path.read_text(encoding="utf-8").replace("value: Lisbon", "value: Porto")
    path.write_text(text.replace("# Location\n\n", f"# Location\n\n{note}\n\n"), "utf-8")
    commit_by_hand(vault.root, "value changed by hand, a note above")

    profile.set_field(vault, "location", "Madrid")

    body = path.read_text(encoding="utf-8").split("---\n", 2)[2]
    assert body == f"# Location\n\nMadrid\n\n{note}\n\nLisbon\n"


def test_notes_in_a_crlf_field_file_keep_their_line_separators_and_form_feeds(
    vault: MemoryService,
) -> None:
    profile.set_field(vault, "location", "Lisbon")
    path = vault.root / "profile" / "location.md"
    notes = "Old town\u2028near the river\x0cpage two\n\nSecond note\n"
    text = path.read_text(encoding="utf-8") + "\n" + notes
    path.write_bytes(text.replace("\n", "\r\n").encode("utf-8"))
    commit_by_hand(vault.root, "notes by hand, on Windows")

    profile.set_field(vault, "location", "Madrid")

    wanted = "# Location\n\nMadrid\n\n" + notes
    assert path.read_bytes().endswith(wanted.replace("\n", "\r\n").encode("utf-8"))


def test_showing_one_field_whose_file_holds_a_refused_value_says_why_not_just_unset(
    vault: MemoryService,
) -> None:
    profile.set_field(vault, "units", "metric")
    path = vault.root / "profile" / "units.md"
    path.write_text(
        path.read_text(encoding="utf-8").replace("value: metric", "value: metrik"),
        encoding="utf-8",
    )
    commit_by_hand(vault.root, "a typo by hand")

    shown = CliRunner().invoke(cli, ["--vault", str(vault.root), "profile", "units"])

    assert shown.exit_code == 0 and shown.stdout == ""
    assert "profile/units.md holds a value the schema refuses" in shown.stderr
    assert "got 'metrik'" in shown.stderr and "correct the file by hand" in shown.stderr
    assert "units is not set: set it with" not in shown.stderr


def test_a_schema_that_names_a_field_twice_is_refused_with_the_line_not_half_read(
    vault: MemoryService,
) -> None:
    schema = vault.root / "_schemas" / "profile.yaml"
    schema.write_text(
        "fields:\n"
        "  units:\n    type: enum\n    values: [metric, imperial]\n    description: units\n"
        "  height_cm:\n    type: number\n    description: height\n"
        "  units:\n    type: string\n    description: units, pasted again\n",
        encoding="utf-8",
    )
    commit_by_hand(vault.root, "a schema by hand")
    before = commit_count(vault.root)

    with pytest.raises(SchemaError) as caught:
        profile.set_field(vault, "units", "furlongs")  # the second `units` would take it

    assert "names 'units' twice (again at line 9)" in str(caught.value)
    assert commit_count(vault.root) == before and not (vault.root / "profile" / "units.md").exists()
    assert "names 'units' twice" in profile.read(vault).problems[0]


def test_setting_a_field_whose_file_is_a_folder_says_it_is_a_folder(
    vault: MemoryService,
) -> None:
    (vault.root / "profile" / "location.md").mkdir(parents=True)
    before = commit_count(vault.root)
    with pytest.raises(UnsafePathError) as caught:
        profile.set_field(vault, "location", "Lisbon")
    assert "profile/location.md is not a regular file (a folder)" in str(caught.value)
    assert "FIFO" not in str(caught.value)
    assert commit_count(vault.root) == before
    assert not any((vault.root / "profile" / "location.md").iterdir())


@pytest.mark.parametrize("typed", ["", " ", ", ;", "，、"])
def test_list_text_with_no_items_is_refused_and_does_not_replace_the_list_with_none(
    vault: MemoryService, typed: str
) -> None:
    profile.set_field(vault, "health.allergies", "penicillin, peanuts")
    path = vault.root / "profile" / "health.allergies.md"
    was, before = path.read_bytes(), commit_count(vault.root)

    shown = CliRunner().invoke(  # `memvault profile health.allergies "$UNSET_VARIABLE"`
        cli, ["--vault", str(vault.root), "profile", "health.allergies", typed]
    )

    assert shown.exit_code == 1, shown.stdout
    assert "health.allergies got no items" in shown.stderr
    assert "forget profile/health.allergies.md" in shown.stderr
    assert path.read_bytes() == was and commit_count(vault.root) == before
    kept = profile.get_field(vault, "health.allergies")
    assert kept is not None and kept.value == ["penicillin", "peanuts"]
    assert profile.set_field(vault, "health.allergies", []).memory.meta["value"] == []


def test_a_number_too_large_for_a_float_is_refused_and_a_hand_written_one_leaves_the_rest(
    vault: MemoryService,
) -> None:
    schema = vault.root / "_schemas" / "profile.yaml"
    schema.write_text(
        "fields:\n  height_cm:\n    type: number\n    description: height\n"
        "  location:\n    type: string\n    description: where\n",
        encoding="utf-8",
    )
    commit_by_hand(vault.root, "a schema by hand")
    before = commit_count(vault.root)
    for huge in (10**400, "9" * 400, 10**5000):  # JSON gives ints of any size
        with pytest.raises(InvalidInputError, match="height_cm takes a number within"):
            profile.set_field(vault, "height_cm", huge)
    assert commit_count(vault.root) == before
    assert not (vault.root / "profile" / "height_cm.md").exists()

    profile.set_field(vault, "height_cm", "180")
    profile.set_field(vault, "location", "Lisbon")
    path = vault.root / "profile" / "height_cm.md"
    path.write_text(
        path.read_text(encoding="utf-8").replace("value: 180", "value: " + "9" * 400),
        encoding="utf-8",
    )
    commit_by_hand(vault.root, "a typo by hand")

    found = profile.read(vault)  # the typo unsets its field; the others stay
    assert [(e.field, e.value) for e in found.fields] == [("location", "Lisbon")]
    assert "height_cm is unset: profile/height_cm.md holds a value" in found.problems[0]
    assert "- location: Lisbon" in build_context(vault, "travel").text


# -- context ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("topic", "said"),
    [
        ("tra\x00vel", "a NUL byte"),
        ("tra\x1bvel", "control character"),
        ("tra\udcffvel", "a lone surrogate"),
    ],
)
def test_a_context_topic_with_a_character_no_one_could_read_is_refused_not_echoed(
    vault: MemoryService, topic: str, said: str
) -> None:
    profile.set_field(vault, "location", "Lisbon")
    with pytest.raises(InvalidInputError, match=f"topic contains {said}"):
        build_context(vault, topic)
    result = CliRunner().invoke(cli, ["--vault", str(vault.root), "context", topic])
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.startswith("error: topic contains ")


def test_context_names_a_profile_field_a_typo_unset_so_no_allergy_reads_as_none(
    vault: MemoryService,
) -> None:
    profile.set_field(vault, "health.allergies", "penicillin, peanuts")
    profile.set_field(vault, "location", "Lisbon")
    path = vault.root / "profile" / "health.allergies.md"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("peanuts]", "peanuts"), encoding="utf-8")  # YAML broken
    commit_by_hand(vault.root, "a typo by hand")

    found = build_context(vault, "dinner plans", budget_tokens=200)

    assert "Profile fields not read, their files in profile/ need fixing by hand" in found.text
    assert "(`memvault doctor` says why): health.allergies. Ask the user" in found.text
    assert "- location: Lisbon" in found.text
    assert not found.over_budget and found.used_tokens <= 200
