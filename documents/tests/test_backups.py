"""manage.py backup then restore into a fresh installation (its own database on
the embedded server, its own media folder, a separate process) gives the same
documents, pages, chunks, files and search results."""

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest
from django.conf import settings
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import connection

from documents.access import COMMAND_LINE
from documents.backups import BackupError, backup, restore
from documents.models import Chunk, Document, Page
from documents.search.service import retrieve_chunks
from documents.services.documents import create_document
from documents.services.ingestion import ingest_document
from documents.tests.fixtures import make_pdf

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]
QUERY = "pressure relief valve inspection"


@pytest.fixture(autouse=True)
def _small_images(settings):
    settings.PAGE_IMAGE_WIDTH = 120


def _ready_channel(make_channel):
    channel = make_channel("manuals", fields=[{"name": "year", "type": "number"}])
    for name, pages in {
        "valves.pdf": [
            "Inspect the pressure relief valve every month.",
            "Replace seals.",
        ],
        "pumps.pdf": ["The pump needs priming before use.", ""],
    }.items():
        document = create_document(
            channel=channel,
            file=SimpleUploadedFile(name, make_pdf(pages), "application/pdf"),
            actor=COMMAND_LINE,
            metadata={"year": 2024},
            enqueue=False,
        )
        ingest_document(document_id=document.pk)
    return channel


def _restored_environment(tmp_path: Path) -> dict[str, str]:
    params = connection.get_connection_params()
    environment = dict(os.environ)
    environment.update(
        DJANGO_DEBUG="true",
        QUIRE_DATABASE_NAME=f"restore_{uuid.uuid4().hex[:10]}",
        QUIRE_POSTGRES_DIR=str(settings.DATABASES["default"]["EMBEDDED_DATA_DIR"]),
        MEDIA_ROOT=str(tmp_path / "restored-media"),
    )
    environment.pop("DATABASE_URL", None)
    assert params.get("host"), "the test database is the embedded server"
    return environment


def _manage(environment, *arguments) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *arguments],
        env=environment,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


RESTORED_STATE = """
import json
from django.core.files.storage import default_storage
from documents.models import Channel, Chunk, Document, Page
from documents.search.service import retrieve_chunks
channel = Channel.objects.get(slug="manuals")
print(json.dumps({
    "documents": sorted(
        Document.objects.values_list("pk", "title", "status", "sha256")
    ),
    "pages": Page.objects.count(),
    "chunks": sorted(Chunk.objects.values_list("pk", "text")),
    "files": sorted(
        name for d in Document.objects.all() for name in [d.file.name]
        if default_storage.exists(name)
    ),
    "search": [c.chunk_id for c in retrieve_chunks(channel, %r)],
}))
"""


def test_backup_then_restore_gives_the_same_collection(make_channel, tmp_path, request):
    channel = _ready_channel(make_channel)
    summary = backup(tmp_path / "backup")
    names = {d.file.name for d in Document.objects.all()}
    images = {p.image.name for p in Page.objects.all() if p.image}
    assert images, "page images are part of the backup"
    manifest = json.loads((tmp_path / "backup" / "manifest.json").read_text())
    assert names | images <= {entry["name"] for entry in manifest["files"]}
    assert summary.files == len(manifest["files"])

    environment = _restored_environment(tmp_path)
    request.addfinalizer(lambda: drop_database(environment["QUIRE_DATABASE_NAME"]))
    done = _manage(environment, "restore", str(tmp_path / "backup"))
    assert done.returncode == 0, done.stderr
    assert f"{summary.files} files" in done.stdout
    state = _manage(environment, "shell", "-c", RESTORED_STATE % QUERY)
    assert state.returncode == 0, state.stderr
    restored = json.loads(state.stdout.strip().splitlines()[-1])

    assert restored["documents"] == [
        list(row)
        for row in sorted(
            Document.objects.values_list("pk", "title", "status", "sha256")
        )
    ]
    assert restored["pages"] == Page.objects.count()
    assert restored["chunks"] == [
        list(row) for row in sorted(Chunk.objects.values_list("pk", "text"))
    ]
    assert sorted(restored["files"]) == sorted(names)
    original = [c.chunk_id for c in retrieve_chunks(channel, QUERY)]
    assert original and restored["search"] == original
    for name in images:
        path = Path(environment["MEDIA_ROOT"]) / name
        assert path.read_bytes() == default_storage.open(name).read()

    # The restored installation is no longer empty: a second restore refuses.
    again = _manage(environment, "restore", str(tmp_path / "backup"))
    assert again.returncode != 0 and "has channels or documents" in again.stderr


def _server(conn) -> dict:
    params = conn.get_connection_params()
    return {"host": params["host"], "port": params["port"], "user": params["user"]}


def drop_database(name: str) -> None:
    with psycopg.connect(
        dbname="postgres", autocommit=True, **_server(connection)
    ) as db:
        db.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_restore_refuses_an_installation_that_has_documents(make_channel, tmp_path):
    _ready_channel(make_channel)
    backup(tmp_path / "backup")
    with pytest.raises(BackupError, match="has channels or documents"):
        restore(tmp_path / "backup")
    assert Document.objects.count() == 2


def test_a_backup_needs_an_empty_folder_and_a_manifest_cannot_climb_out(
    make_channel, tmp_path
):
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "x").write_text("x")
    with pytest.raises(BackupError, match="not empty"):
        backup(tmp_path / "used")
    folder = tmp_path / "evil"
    folder.mkdir()
    (folder / "manifest.json").write_text(
        json.dumps(
            {"format": 1, "files": [{"name": "../../etc/x", "size": 1, "sha256": "0"}]}
        )
    )
    with pytest.raises(BackupError, match="not a stored file name"):
        restore(folder)
    with pytest.raises(BackupError, match="not a Quire backup"):
        (folder / "manifest.json").write_text("[]")
        restore(folder)


def test_the_command_prints_what_it_backed_up(make_channel, tmp_path, capsys):
    _ready_channel(make_channel)
    call_command("backup", str(tmp_path / "b"), "--database-only")
    assert "and 0 files" in capsys.readouterr().out
    assert (tmp_path / "b" / "database.dump").stat().st_size > 0
