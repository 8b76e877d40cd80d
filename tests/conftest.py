"""Shared fixtures: real vaults in tmp_path (real git, real Whoosh, real embeddings)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memvault.config import Settings
from memvault.service import MemoryService
from memvault.template import create_vault

from .helpers import PERSON, Clock, git


@pytest.fixture
def vault_path(tmp_path: Path) -> Path:
    path = tmp_path / "vault"
    create_vault(path)
    return path


@pytest.fixture
def service(vault_path: Path) -> Iterator[MemoryService]:
    svc = MemoryService.open(vault_path, Settings())
    yield svc
    svc.close()


@pytest.fixture
def text_only(vault_path: Path) -> Iterator[MemoryService]:
    """A service without an embedder (full text only)."""
    svc = MemoryService.open(vault_path, Settings(embedder="none"))
    yield svc
    svc.close()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def svc(vault_path: Path, clock: Clock) -> Iterator[MemoryService]:
    """Full text only (no model needed) with the test's clock."""
    service = MemoryService.open(vault_path, Settings(embedder="none"))
    service.clock = clock
    yield service
    service.close()


@pytest.fixture
def person_vault(vault_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MemoryService]:
    """A text-only vault whose repository names a person (who edits files by hand)."""
    git(vault_path, "config", "user.name", PERSON)
    git(vault_path, "config", "user.email", "ada@example.org")
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "none")  # the command line's service too
    service = MemoryService.open(vault_path, Settings(embedder="none"))
    yield service
    service.close()
