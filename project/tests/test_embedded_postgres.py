"""The embedded PostgreSQL backend after a crash: lock files left behind must
not make Quire join a server that isn't there, or stop PostgreSQL starting."""

import os

import pytest
from django.conf import settings

from project.embedded_postgres.base import clear_stale_lock_files


def write_pid_file(data_dir, pid: int) -> None:
    data_dir.mkdir(exist_ok=True)
    (data_dir / "postmaster.pid").write_text(f"{pid}\n{data_dir}\n1764500000\n5432\n")


def test_lock_files_naming_another_program_are_removed(tmp_path):
    """After a reboot the old pid may belong to anything (here: this test)."""
    data_dir = tmp_path / "postgres"
    write_pid_file(data_dir, os.getpid())
    socket_lock = data_dir / ".s.PGSQL.5432.lock"
    socket_lock.write_text(f"{os.getpid()}\n{data_dir}\n")
    clear_stale_lock_files(data_dir)
    assert not (data_dir / "postmaster.pid").exists()
    assert not socket_lock.exists()


def test_a_pid_file_naming_no_process_is_removed(tmp_path):
    data_dir = tmp_path / "postgres"
    write_pid_file(data_dir, 2**22 + 12345)  # above the kernel's pid_max
    clear_stale_lock_files(data_dir)
    assert not (data_dir / "postmaster.pid").exists()


def test_a_missing_or_garbled_pid_file_is_left_alone(tmp_path):
    clear_stale_lock_files(tmp_path)  # no file: nothing to do
    (tmp_path / "postmaster.pid").write_text("not a pid\n")
    clear_stale_lock_files(tmp_path)
    assert (tmp_path / "postmaster.pid").exists()


@pytest.mark.skipif(
    "EMBEDDED_DATA_DIR" not in settings.DATABASES["default"],
    reason="DATABASE_URL points at another PostgreSQL",
)
def test_the_running_servers_pid_file_is_kept():
    """The file of the server these tests run on names its live postmaster."""
    from pathlib import Path

    data_dir = Path(settings.DATABASES["default"]["EMBEDDED_DATA_DIR"]).resolve()
    files = [data_dir / "postmaster.pid", *data_dir.glob(".s.PGSQL.*.lock")]
    before = [path.read_text() for path in files]
    clear_stale_lock_files(data_dir)
    assert [path.read_text() for path in files] == before
