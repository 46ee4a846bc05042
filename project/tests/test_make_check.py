"""`make check` stops a model change that has no migration."""

import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
from django.conf import settings

PROBE_MODEL = """
from django.db import models


class Shelf(models.Model):
    label = models.CharField(max_length=40)
"""


def check_migrations(settings_module: str, path: Path) -> subprocess.CompletedProcess:
    """`make check-migrations`, the step `make check` runs, with other settings."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": settings_module,
        "PYTHONPATH": os.pathsep.join([str(path), str(settings.BASE_DIR)]),
    }
    return subprocess.run(
        ["make", "--no-print-directory", "check-migrations"],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def probe(tmp_path: Path) -> Path:
    """An app whose model has no migration, and settings that install it."""
    app = tmp_path / "probe_app"
    (app / "migrations").mkdir(parents=True)
    (app / "__init__.py").write_text("")
    (app / "migrations" / "__init__.py").write_text("")
    (app / "models.py").write_text(PROBE_MODEL)
    (tmp_path / "probe_missing.py").write_text(
        textwrap.dedent(
            """
            from project.settings import *  # noqa: F403

            INSTALLED_APPS = [*INSTALLED_APPS, "probe_app"]  # noqa: F405
            """
        )
    )
    return tmp_path


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_check_fails_on_a_model_without_its_migration(probe):
    """The repository's own models all have their migrations; one new model
    without a migration makes the step fail and names it."""
    clean = check_migrations("project.settings", probe)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "No changes detected" in clean.stdout

    missing = check_migrations("probe_missing", probe)
    assert missing.returncode != 0
    assert "Migrations for 'probe_app'" in missing.stdout
    assert "Create model Shelf" in missing.stdout
    assert not (probe / "probe_app" / "migrations" / "0001_initial.py").exists()
