"""scripts/: the shell scripts a person runs (serve.sh installs through setup-venv.sh)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def checkout(tmp_path: Path) -> Path:
    """A copy of what setup-venv.sh reads, with a venv whose python records each call
    (pip itself would need the network)."""
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    shutil.copy(REPO / "scripts" / "setup-venv.sh", root / "scripts" / "setup-venv.sh")
    python = root / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text('#!/bin/sh\necho "$@" >> "$(dirname "$0")/calls.log"\n', encoding="utf-8")
    python.chmod(0o755)
    return root


def installs(root: Path, extras: str = "") -> list[str]:
    """The pip commands one run of setup-venv.sh made."""
    log = root / ".venv" / "bin" / "calls.log"
    log.unlink(missing_ok=True)
    subprocess.run(["bash", "scripts/setup-venv.sh", extras], cwd=root, check=True)
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def test_setup_venv_installs_once_and_again_only_when_the_project_changed(
    tmp_path: Path,
) -> None:
    root = checkout(tmp_path)
    assert installs(root) == ["-m pip install --quiet -e ."]
    assert installs(root) == []  # serve.sh's every start: nothing changed, no pip
    with (root / "pyproject.toml").open("a", encoding="utf-8") as handle:
        handle.write("\n# a new dependency would go here\n")
    assert installs(root) == ["-m pip install --quiet -e ."]
    assert installs(root) == []


def test_setup_venv_installs_an_extra_not_installed_yet_but_not_a_subset(
    tmp_path: Path,
) -> None:
    root = checkout(tmp_path)
    assert installs(root, "st,dev")[-1] == "-m pip install --quiet -e .[st,dev]"
    assert installs(root, "") == []  # serve.sh after test.sh
    assert installs(root, "dev") == []
    assert installs(root, "eval") == ["-m pip install --quiet -e .[eval]"]
