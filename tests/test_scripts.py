"""The newcomer's two commands agree on what .venv holds (scripts/lib-venv.sh).

./scripts/demo installs the dev extra only; ./scripts/test needs the judge extra too. Whichever runs
first, the other must see what is missing and install it (issue: the test command failed after the
demo command because it reused the demo's .venv without torch).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "lib-venv.sh", tmp_path / "scripts" / "lib-venv.sh")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").write_text("#!/bin/sh\n")
    (bin_dir / "python").chmod(0o755)
    return tmp_path


def _sh(project: Path, script: str) -> int:
    done = subprocess.run(
        ["bash", "-c", f". scripts/lib-venv.sh; {script}"], cwd=project, check=False
    )
    return done.returncode


def test_a_venv_without_a_record_is_incomplete(project: Path) -> None:
    assert _sh(project, "venv_has dev") == 1


def test_the_demo_install_lacks_what_the_tests_need(project: Path) -> None:
    assert _sh(project, "venv_stamp_write dev") == 0
    assert _sh(project, "venv_has dev") == 0
    assert _sh(project, "venv_has dev judge") == 1


def test_the_test_install_serves_the_demo_too(project: Path) -> None:
    assert _sh(project, "venv_stamp_write dev,judge") == 0
    assert _sh(project, "venv_has dev") == 0
    assert _sh(project, "venv_has dev judge") == 0


def test_a_changed_pyproject_makes_the_venv_stale(project: Path) -> None:
    assert _sh(project, "venv_stamp_write dev,judge") == 0
    (project / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "2"\n')
    assert _sh(project, "venv_has dev") == 1
