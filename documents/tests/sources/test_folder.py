"""The folder source on a real folder under a declared root: listings see
added, modified, removed, renamed files and sidecar changes; paths outside the
roots are refused; a folder that vanishes mid-listing cuts the listing short."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from documents.sources.base import (
    Entry,
    EntryGone,
    EntryTooLarge,
    Skipped,
    SourceConfigError,
    SourceError,
)
from documents.sources.folder import FolderSource
from documents.sources.registry import build_source


@pytest.fixture
def root(tmp_path, settings) -> Path:
    declared = tmp_path / "declared"
    (declared / "manuals" / "2026").mkdir(parents=True)
    settings.SOURCE_FOLDERS = [str(declared)]
    return declared


def listing(source: FolderSource, known=None) -> dict[str, Entry]:
    found = {}
    for item in source.list(known):
        assert isinstance(item, Entry), item
        found[item.key] = item
    return found


def touch(path: Path, text: str, mtime_ns: int) -> None:
    path.write_text(text)
    os.utime(path, ns=(mtime_ns, mtime_ns))


def test_listings_follow_adds_changes_removals_renames_and_sidecars(root):
    """Keys are paths under the folder; the version moves with the file's
    mtime and size and with its sidecar; path segments and the sidecar's
    fields are the metadata; hidden files and sidecars are not entries."""
    manuals = root / "manuals"
    touch(manuals / "2026" / "pump.txt", "Pump manual r1", 1_000)
    touch(manuals / "valve.txt", "Valve", 1_000)
    touch(manuals / ".draft.txt", "hidden", 1_000)
    (manuals / "orphan.txt.meta.json").write_text("{}")
    (manuals / "2026" / "pump.txt.meta.json").write_text(json.dumps({"model": "P-1"}))
    source = build_source("folder", {"path": str(manuals)})
    first = listing(source)
    assert set(first) == {"2026/pump.txt", "valve.txt"}
    pump = first["2026/pump.txt"]
    assert pump.metadata == {"path_segments": ["2026"], "model": "P-1"}
    assert pump.size == 14 and pump.content_type == "text/plain"
    assert source.open(pump).read() == b"Pump manual r1"

    touch(manuals / "2026" / "pump.txt", "Pump manual r2", 2_000)
    touch(manuals / "new.txt", "New", 1_000)
    (manuals / "valve.txt").rename(manuals / "valve-v2.txt")
    again = listing(source)
    assert set(again) == {"2026/pump.txt", "valve-v2.txt", "new.txt"}
    assert again["2026/pump.txt"].version != pump.version
    assert again["valve-v2.txt"].version == first["valve.txt"].version

    sidecar = manuals / "2026" / "pump.txt.meta.json"
    sidecar.write_text(json.dumps({"model": "P-2", "year": 2026}))
    os.utime(sidecar, ns=(9_000, 9_000))
    third = listing(source)
    assert third["2026/pump.txt"].version != again["2026/pump.txt"].version
    assert third["2026/pump.txt"].metadata["model"] == "P-2"
    (manuals / "new.txt").unlink()
    assert "new.txt" not in listing(source)


def test_a_bad_sidecar_fails_its_entry_not_the_listing(root):
    """A sidecar that is not a JSON object makes its entry Skipped with the
    reason; the other entries are listed."""
    touch(root / "a.txt", "a", 1)
    touch(root / "b.txt", "b", 1)
    (root / "a.txt.meta.json").write_text("[1, 2")
    items = list(FolderSource.from_config({"path": str(root)}, max_bytes=100).list())
    skipped = [i for i in items if isinstance(i, Skipped)]
    assert [s.key for s in skipped] == ["a.txt"]
    assert "a.txt.meta.json is not valid JSON" in skipped[0].reason
    assert [i.key for i in items if isinstance(i, Entry)] == ["b.txt"]


def test_paths_outside_the_declared_roots_are_refused(root, tmp_path, settings):
    """``..``, a symlink out of the root, a relative path, a missing folder and
    any path when no root is declared are refused before anything is read."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "escape").symlink_to(outside)
    for path, reason in [
        (str(root / ".." / "outside"), "not under a folder the operator declared"),
        (str(root / "escape"), "not under a folder the operator declared"),
        ("declared/manuals", "not an absolute path"),
        (str(root / "missing"), "does not exist"),
        ("/etc", "not under a folder the operator declared"),
    ]:
        with pytest.raises(SourceConfigError, match=reason):
            build_source("folder", {"path": path})
    settings.SOURCE_FOLDERS = []
    with pytest.raises(SourceConfigError, match="no SOURCE_FOLDERS"):
        build_source("folder", {"path": str(root)})


def test_a_link_to_a_file_outside_the_folder_is_not_read(root, tmp_path):
    """A symlinked file pointing out of the folder is Skipped, never opened."""
    secret = tmp_path / "secret.txt"
    secret.write_text("secret")
    (root / "innocent.txt").symlink_to(secret)
    items = list(build_source("folder", {"path": str(root)}).list())
    assert items == [
        Skipped("innocent.txt", f"innocent.txt is a link to a file outside {root}.")
    ]


def test_opening_is_bounded_and_knows_removed_entries(root):
    """An entry over max_bytes is refused; one removed since the listing is
    EntryGone; one that grew past max_bytes after the listing is cut off."""
    touch(root / "small.txt", "x" * 10, 1)
    touch(root / "big.txt", "x" * 101, 1)
    source = FolderSource.from_config({"path": str(root)}, max_bytes=100)
    found = listing(source)
    with pytest.raises(EntryTooLarge, match="larger than the 100 bytes"):
        source.open(found["big.txt"])
    (root / "small.txt").unlink()
    with pytest.raises(EntryGone):
        source.open(found["small.txt"])


def test_a_folder_that_disappears_mid_listing_cuts_the_listing_short(root):
    """Removing the folder while it is listed ends the listing with
    SourceError, never with a shorter listing a caller would take as
    complete."""
    for n in range(3):
        touch(root / f"f{n}.txt", "x", 1)
    (root / "sub").mkdir()
    touch(root / "sub" / "g.txt", "x", 1)
    listing_ = build_source("folder", {"path": str(root)}).list()
    next(listing_)
    shutil.rmtree(root)
    with pytest.raises(SourceError, match="disappeared during the listing"):
        list(listing_)
