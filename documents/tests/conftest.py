"""Fixtures of the documents app's tests beyond the project-wide ones."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def folder(tmp_path, settings) -> Path:
    """A folder under a declared SOURCE_FOLDERS root, for folder sources."""
    root = tmp_path / "shared"
    (root / "manuals").mkdir(parents=True)
    settings.SOURCE_FOLDERS = [str(root)]
    return root / "manuals"
