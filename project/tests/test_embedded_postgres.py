"""The embedded PostgreSQL backend after a crash: lock files left behind must
not make Quire join a server that isn't there, or stop PostgreSQL starting;
users that died must not keep the server running after the last one leaves."""

import json
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from django.conf import settings

from project.embedded_postgres.base import (
    HANDLE_FILE,
    clear_stale_lock_files,
    forget_departed_users,
)

REPO = Path(__file__).resolve().parents[2]


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
def test_the_running_servers_pid_file_is_kept(db):
    """The file of the server these tests run on names its live postmaster."""
    data_dir = Path(settings.DATABASES["default"]["EMBEDDED_DATA_DIR"]).resolve()
    files = [data_dir / "postmaster.pid", *data_dir.glob(".s.PGSQL.*.lock")]
    before = [path.read_text() for path in files]
    clear_stale_lock_files(data_dir)
    assert [path.read_text() for path in files] == before


# A process using an embedded server: joins it, says so, and stays until its
# stdin closes.
SERVER_USER = """
import sys
from project.embedded_postgres.base import ensure_server
ensure_server(sys.argv[1], "quire")
print("joined", flush=True)
sys.stdin.read()
"""


def join_server(data_dir) -> subprocess.Popen:
    user = subprocess.Popen(
        [sys.executable, "-c", SERVER_USER, str(data_dir)],
        cwd=REPO,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "project.settings"},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert user.stdout.readline().strip() == "joined"
    return user


def handle_pids(data_dir) -> list[int]:
    return json.loads((data_dir / HANDLE_FILE).read_text())


@pytest.mark.slow
def test_the_server_stops_when_its_last_user_leaves_after_others_died(tmp_path):
    """Users killed without running their exit hooks (SIGKILL; SIGTERM, as
    uvicorn re-raises it) no longer keep the server alive: when the last live
    user leaves, PostgreSQL stops and the handle file lists nobody."""
    data_dir = tmp_path / "postgres"
    killed, terminated, last = (join_server(data_dir) for _ in range(3))
    postmaster = psutil.Process(
        int((data_dir / "postmaster.pid").read_text().split()[0])
    )
    try:
        assert sorted(handle_pids(data_dir)) == sorted(
            [killed.pid, terminated.pid, last.pid]
        )
        killed.kill()
        terminated.terminate()
        for user in (killed, terminated):
            user.wait(timeout=30)
        assert postmaster.is_running()
        last.stdin.close()
        assert last.wait(timeout=60) == 0
        postmaster.wait(timeout=60)
        assert handle_pids(data_dir) == []
    finally:
        for user in (killed, terminated, last):
            user.kill()
            user.wait()
        if postmaster.is_running():
            postmaster.terminate()


def test_a_joining_process_forgets_users_that_are_gone(tmp_path):
    """Pids of processes that died, or that now belong to another program (not
    Python), are dropped from the handle file; live Python users stay."""
    stranger = subprocess.Popen(["sleep", "30"])
    try:
        gone = subprocess.Popen([sys.executable, "-c", "pass"])
        gone.wait()
        (tmp_path / HANDLE_FILE).write_text(
            json.dumps([gone.pid, os.getpid(), stranger.pid])
        )
        departed = forget_departed_users(tmp_path)
    finally:
        stranger.kill()
        stranger.wait()
    assert sorted(departed) == sorted([gone.pid, stranger.pid])
    assert handle_pids(tmp_path) == [os.getpid()]


def test_a_missing_or_garbled_handle_file_is_left_alone(tmp_path):
    assert forget_departed_users(tmp_path) == []
    (tmp_path / HANDLE_FILE).write_text("not json")
    assert forget_departed_users(tmp_path) == []
    assert (tmp_path / HANDLE_FILE).read_text() == "not json"
