"""One reader child reads file after file, and keeps every sandbox property of
a child per file (documents.ingestion.reader_child)."""

import os
import signal
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from documents.ingestion import formats, reader_child
from documents.ingestion.parsed import UnreadableFile
from documents.ingestion.parsers import parse_file, reader_limits, start_reader
from documents.ingestion.reader_child import CHILDREN, ReaderChild, ReaderTimedOut
from documents.ingestion.reading import child_request, read_in_child

TEXT = "text/plain"


@pytest.fixture(autouse=True)
def _fresh_children():
    """Each test starts without an idle child and leaves none behind."""
    CHILDREN.close()
    yield
    CHILDREN.close()


def _text_file(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _read(path: Path, tmp_path: Path, **limits):
    work_dir = tmp_path / f"work-{path.name}"
    work_dir.mkdir(exist_ok=True)
    return parse_file(
        path,
        TEXT,
        work_dir=work_dir,
        limits=replace(reader_limits(path.stat().st_size), **limits),
    )


def _idle_pid(memory_mb: int | None = None) -> int | None:
    return CHILDREN.idle_pid(memory_mb or reader_limits(0).memory_mb)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_one_child_reads_file_after_file_without_mixing_them(tmp_path):
    """Files read one after another go to the same child, and each parse holds
    its own file's text and nothing of the one before."""
    first = _read(_text_file(tmp_path, "a.txt", "Apples grow on trees."), tmp_path)
    child = _idle_pid()
    second = _read(_text_file(tmp_path, "b.txt", "Bananas are yellow."), tmp_path)
    assert _idle_pid() == child is not None
    assert [page.text for page in first.pages] == ["Apples grow on trees."]
    assert [page.text for page in second.pages] == ["Bananas are yellow."]


def test_a_started_reader_reads_the_first_file(tmp_path):
    """start_reader (a worker's boot) leaves an idle child that the first file
    is given, instead of one started for it; starting again keeps that one."""
    assert _idle_pid() is None
    start_reader()
    child = _idle_pid()
    start_reader()
    assert _idle_pid() == child is not None
    parsed = _read(_text_file(tmp_path, "a.txt", "Cherries are red."), tmp_path)
    assert [page.text for page in parsed.pages] == ["Cherries are red."]
    assert _idle_pid() == child


def test_a_refused_file_fails_alone_and_keeps_the_child(tmp_path):
    """A file the reader refuses fails with its reason; the child was not
    harmed by it and reads the next file."""
    _read(_text_file(tmp_path, "a.txt", "Some text."), tmp_path)
    child = _idle_pid()
    with pytest.raises(UnreadableFile) as excinfo:
        _read(_text_file(tmp_path, "blank.txt", " \n\t\n"), tmp_path)
    assert "whitespace" in excinfo.value.reason
    after = _read(_text_file(tmp_path, "c.txt", "More text."), tmp_path)
    assert after.pages[0].text == "More text."
    assert _idle_pid() == child


def test_a_crash_fails_only_its_file_and_the_child_is_replaced(tmp_path):
    """A reader that dies on a file (here: an unexpected exception, as a
    parser's bug would raise) fails that file as a crash; the child is not used
    again, and the next file is read by a new one."""
    good = _text_file(tmp_path, "a.txt", "Before the crash.")
    _read(good, tmp_path)
    child = _idle_pid()
    limits = reader_limits(good.stat().st_size)
    request = child_request(good, TEXT, work_dir=tmp_path, limits=limits)
    with pytest.raises(UnreadableFile) as excinfo:
        list(
            CHILDREN.read(
                request | {"reader": "text.no_such_reader"},
                size=1,
                memory_mb=limits.memory_mb,
                timeout=limits.timeout,
                timeout_setting=limits.timeout_setting,
                max_files=limits.child_max_files,
                max_bytes=limits.child_max_bytes,
            )
        )
    assert "crashed" in excinfo.value.reason
    assert _gone(child)
    after = _read(_text_file(tmp_path, "b.txt", "After the crash."), tmp_path)
    assert after.pages[0].text == "After the crash."
    assert _idle_pid() not in (None, child)


def test_a_child_past_its_time_limit_is_killed_and_replaced(tmp_path):
    """A file that never finishes (a pipe nobody writes to) is stopped at its
    own time limit, killing the child; the next file gets a new child."""
    _read(_text_file(tmp_path, "a.txt", "Quick."), tmp_path)
    child = _idle_pid()
    never = tmp_path / "never.txt"
    os.mkfifo(never)
    limits = replace(reader_limits(0), timeout=1.0)
    with pytest.raises(ReaderTimedOut):
        list(read_in_child(never, TEXT, work_dir=tmp_path, limits=limits))
    assert _gone(child)
    after = _read(_text_file(tmp_path, "b.txt", "Still quick."), tmp_path)
    assert after.pages[0].text == "Still quick."
    assert _idle_pid() not in (None, child)


class _Clock:
    """The reader's timers, under the test's control: a timer fires only when
    the test lets its time pass (`expire`), and only if it was started."""

    def __init__(self):
        self.timers = []
        self.made = threading.Condition()

    def timer(self, interval, function):
        clock = self

        class Timer:
            def __init__(self):
                self.interval, self.started, self.cancelled = interval, False, False

            def start(self):
                with clock.made:
                    self.started = True
                    clock.made.notify_all()

            def cancel(self):
                self.cancelled = True

        timer = Timer()
        with self.made:
            self.timers.append(timer)
            self.made.notify_all()
        timer.fire = function
        return timer

    def wait_for(self, interval, *, started=False):
        """Until a timer of `interval` was made (and started, if asked)."""
        with self.made:
            assert self.made.wait_for(
                lambda: any(
                    t.interval == interval and (t.started or not started)
                    for t in self.timers
                ),
                timeout=60,
            ), f"no timer of {interval} s"

    def expire(self, interval):
        for timer in list(self.timers):
            if timer.interval == interval and timer.started and not timer.cancelled:
                timer.fire()


def _read_in_thread(path, tmp_path, **limits):
    result = {}

    def run():
        try:
            result["parsed"] = _read(path, tmp_path, **limits)
        except Exception as error:  # the test reports it
            result["error"] = error

    thread = threading.Thread(target=run)
    thread.start()
    return thread, result


def test_a_child_slow_to_start_does_not_use_up_the_files_time(tmp_path, monkeypatch):
    """A file's time limit runs from the moment a child takes it: a child still
    starting (stopped here, as on a machine too busy to run it) when the file's
    limit has passed is not killed, and reads the file once it runs."""
    start_reader()
    child = _idle_pid()
    clock = _Clock()
    monkeypatch.setattr(reader_child.threading, "Timer", clock.timer)
    os.kill(child, signal.SIGSTOP)
    try:
        thread, result = _read_in_thread(
            _text_file(tmp_path, "a.txt", "Slow start."), tmp_path, timeout=1.0
        )
        clock.wait_for(1.0)
        clock.expire(1.0)  # the file's second passes while the child can't run
    finally:
        os.kill(child, signal.SIGCONT)
    thread.join(60)
    assert "error" not in result, result
    assert result["parsed"].pages[0].text == "Slow start."
    assert _idle_pid() == child  # not killed


def test_a_child_that_never_takes_the_file_is_replaced(tmp_path, monkeypatch):
    """A child stuck before it takes the file is killed at the start limit
    (reader_child.START_SECONDS), and the file is read by a new child."""
    start_reader()
    child = _idle_pid()
    clock = _Clock()
    monkeypatch.setattr(reader_child.threading, "Timer", clock.timer)
    os.kill(child, signal.SIGSTOP)
    thread, result = _read_in_thread(
        _text_file(tmp_path, "a.txt", "Stuck start."), tmp_path, timeout=1.0
    )
    try:
        clock.wait_for(reader_child.START_SECONDS, started=True)
    except AssertionError:
        os.kill(child, signal.SIGCONT)
        raise
    clock.expire(reader_child.START_SECONDS)
    thread.join(60)
    assert "error" not in result, result
    assert result["parsed"].pages[0].text == "Stuck start."
    assert _gone(child)
    assert _idle_pid() not in (None, child)


def test_a_reading_given_up_midway_kills_its_child(tmp_path):
    """When the parent stops listening during a file (its deadline or chunk
    budget ran out), the child, which may still be reading, is killed rather
    than lent again."""
    path = _text_file(tmp_path, "long.txt", "A line of words.\n\n" * 20_000)
    limits = replace(reader_limits(path.stat().st_size), text_page_chars=1000)
    _read(_text_file(tmp_path, "a.txt", "Warm-up."), tmp_path)
    child = _idle_pid()
    messages = read_in_child(path, TEXT, work_dir=tmp_path, limits=limits)
    assert next(messages)["kind"] == "document"
    assert _idle_pid() is None  # lent out while the file is read
    messages.close()
    assert _gone(child)
    after = _read(_text_file(tmp_path, "b.txt", "Next file."), tmp_path)
    assert after.pages[0].text == "Next file."


def test_a_child_that_died_while_idle_is_replaced_without_failing_a_file(
    tmp_path, monkeypatch
):
    """A child that dies between two files (the OOM killer, an operator), even
    just after it was found alive, never saw the next file: that file is read
    by a new child, not failed."""
    _read(_text_file(tmp_path, "a.txt", "First."), tmp_path)
    child = _idle_pid()
    os.kill(child, signal.SIGKILL)
    while Path(f"/proc/{child}/stat").read_text().split()[2] != "Z":
        pass  # killed, not yet reaped: as if it died after the check
    monkeypatch.setattr(ReaderChild, "alive", lambda self: True)
    after = _read(_text_file(tmp_path, "b.txt", "Second."), tmp_path)
    assert after.pages[0].text == "Second."
    assert _idle_pid() != child


def test_a_child_is_retired_after_its_files_or_bytes(tmp_path, settings):
    """A child reads READER_CHILD_MAX_FILES files, or files of
    READER_CHILD_MAX_BYTES bytes in all, then it is replaced."""
    settings.READER_CHILD_MAX_FILES = 2
    pids = []
    for number in range(4):
        _read(_text_file(tmp_path, f"{number}.txt", f"File {number}."), tmp_path)
        pids.append(_idle_pid())
    assert pids[0] != pids[1] == pids[2] != pids[3]
    settings.READER_CHILD_MAX_FILES = 100
    settings.READER_CHILD_MAX_BYTES = 20
    pids = []
    for number in range(3):
        _read(_text_file(tmp_path, f"s{number}.txt", "Twelve bytes"), tmp_path)
        pids.append(_idle_pid())
    assert pids[0] != pids[1] == pids[2]


def test_a_child_has_the_memory_limit_of_its_file(tmp_path):
    """A file read under another memory limit than the idle child's gets a
    child started with that limit."""
    path = _text_file(tmp_path, "a.txt", "Some text.")
    _read(path, tmp_path, memory_mb=1024)
    _read(path, tmp_path, memory_mb=2048)
    assert _idle_pid(1024) != _idle_pid(2048)
    for megabytes in (1024, 2048):
        limits = Path(f"/proc/{_idle_pid(megabytes)}/limits").read_text()
        assert f"{megabytes * 1024 * 1024} " in limits


def test_office_files_share_a_child(shared_data, tmp_path):
    """Word, PowerPoint and Excel files are read one after another by one
    child (the cost they paid for a child each was more than the reading)."""
    office = shared_data / "office"
    pids = set()
    for path, content_type in (
        (office / "docx" / "mammoth__tables.docx", formats.DOCX),
        (office / "pptx" / "markitdown__test.pptx", formats.PPTX),
        (office / "docx" / "markitdown__test.docx", formats.DOCX),
    ):
        work_dir = tmp_path / path.name
        work_dir.mkdir()
        assert parse_file(path, content_type, work_dir=work_dir).pages
        pids.add(_idle_pid())
    assert len(pids) == 1
