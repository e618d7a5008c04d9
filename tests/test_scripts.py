"""The newcomer's two commands agree on what .venv holds (scripts/lib-venv.sh).

./scripts/demo installs the dev extra only; ./scripts/test needs the judge extra too. Whichever runs
first, the other must see what is missing and install it (issue: the test command failed after the
demo command because it reused the demo's .venv without torch).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
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


# --- scripts/lib-services.sh: what ./scripts/test sets up on a machine with only Python -------

SERVICES = ROOT / "scripts" / "lib-services.sh"


def test_missing_programs_are_installed_with_apt_in_one_call(tmp_path: Path) -> None:
    """With chromium, LibreOffice and Redis absent from PATH, one apt-get install names them all
    (PostgreSQL's server programs are found where Debian keeps them, outside PATH)."""
    shims = tmp_path / "bin"
    shims.mkdir()
    for tool in ("ls", "sort", "tail", "id", "env", "cat", "dirname", "basename"):
        found = shutil.which(tool)
        assert found, tool
        (shims / tool).symlink_to(found)
    log = tmp_path / "apt.log"
    (shims / "apt-get").write_text(f'#!/bin/bash\necho "$@" >> {log}\n')
    (shims / "apt-get").chmod(0o755)
    (shims / "sudo").write_text('#!/bin/bash\n[ "$1" = -n ] && shift; "$@"\n')
    (shims / "sudo").chmod(0o755)
    done = subprocess.run(
        ["/bin/bash", "-c", f". {SERVICES}; services_install_missing"],
        env={"PATH": str(shims), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    calls = log.read_text().splitlines()
    assert calls[0] == "update -qq"
    installed = calls[1].split()
    assert installed[:3] == ["install", "-y", "-qq"]
    expected = {"redis-server", "chromium", "libreoffice-calc-nogui"}
    if not list(Path("/usr/lib/postgresql").glob("*/bin/initdb")):
        expected.add("postgresql")
    assert set(installed[3:]) == expected


def test_a_private_postgres_cluster_is_made_and_started_where_none_answers() -> None:
    """The branch a fresh machine takes: initdb with trust authentication, started on the port
    asked for (or the next free one), DATABASE_URL pointing at it; a second call reuses it."""
    from tests.ports import free_port

    # Not pytest's tmp_path (private to this user): PostgreSQL runs as `postgres` under root.
    tmp = Path(tempfile.mkdtemp(prefix="pollux-pg-script-"))
    tmp.chmod(0o777)
    data, port = tmp / "pg", free_port()
    script = (
        f"export POLLUX_TEST_PGDATA={data} POLLUX_TEST_PGPORT={port}; . {SERVICES}; "
        "pg_private_cluster && pg_lets_postgres_in $PG_PORT && echo $DATABASE_URL"
    )
    try:
        first = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120)
        assert first.returncode == 0, first.stderr
        assert first.stdout.split()[-1] == f"postgres://postgres@127.0.0.1:{port}/pollux"
        again = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
        assert again.returncode == 0 and "starting" not in again.stdout, again.stdout
        assert again.stdout.split()[-1] == first.stdout.split()[-1]
    finally:
        pg_ctl = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))[-1]
        as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run(
            [*as_postgres, str(pg_ctl), "-D", str(data), "-m", "immediate", "stop"],
            capture_output=True, check=False, timeout=60,
        )  # fmt: skip
        shutil.rmtree(tmp, ignore_errors=True)


def test_the_demo_command_s_help_names_every_setting_it_reads() -> None:
    # --help answers before any set-up; every variable the script reads is in it.
    script = ROOT / "scripts" / "demo"
    done = subprocess.run(
        ["bash", str(script), "--help"], capture_output=True, text=True, timeout=30, check=True
    )
    read = set(re.findall(r"\$\{([A-Z_]+):-", script.read_text()))
    assert read, "the script reads no setting?"
    assert {"DEMO_JUDGE_PORT", "PORT", "HOST"} <= read
    missing = sorted(name for name in read if name not in done.stdout)
    assert not missing, (missing, done.stdout)
