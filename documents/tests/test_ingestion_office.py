"""Every file in ../shared/data/office reaches the end state its SOURCES.md
expects: Office, web and e-book documents are ingested with their text (or
refused with a reason a person understands), images are read by OCR."""

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.core.files import File
from lxml import html as lxml_html

from documents.access import COMMAND_LINE
from documents.ingestion.accuracy import character_error_rate
from documents.models import Chunk, Document, Page
from documents.services.documents import create_document
from documents.services.ingestion import ingest_document

OFFICE = Path(__file__).resolve().parents[3] / "shared" / "data" / "office"
# Upright, turned and skewed copies of one clean English page, and one line.
CLEAN_ENGLISH = {
    "tesseract-test__phototest.tif",
    "tesseract-test__phototest-rotated-R.png",
    "derived__tesseract-test-phototest-skew5deg.png",
    "tesseract.js__simple-180.jpg",
}
# Why a file may be refused, by the outcome SOURCES.md names.
REFUSALS = {
    "encrypted": ("encrypted",),
    "corrupt": ("corrupt", "truncated", "not "),
    "empty": ("empty", "no text", "no slides", "no cells"),
    "wrong type": ("not ", "holds", "97-2003", "no slides"),
}


@dataclass(frozen=True)
class Expected:
    path: str
    outcome: str

    @property
    def ingests(self) -> bool:
        return self.outcome.startswith("ingest") or " or ingest as " in self.outcome

    @property
    def refusal(self) -> str:
        for kind in REFUSALS:
            if kind in self.outcome:
                return kind
        return "empty" if self.outcome.startswith("empty") else ""


def _sources() -> list[Expected]:
    """The tables of SOURCES.md: one row per document, under "## <folder>/"."""
    if not (OFFICE / "SOURCES.md").exists():
        return []
    rows, folder = [], ""
    for line in (OFFICE / "SOURCES.md").read_text().splitlines():
        if heading := re.match(r"^## (\w+)/", line):
            folder = heading.group(1)
        elif folder and (cell := re.match(r"^\| `([^`]+)` \|", line)):
            outcome = line.split("|")[5].strip()
            rows.append(Expected(f"{folder}/{cell.group(1)}", outcome))
    return rows


SOURCES = _sources()


@pytest.fixture(autouse=True)
def _small_images(settings):
    settings.PAGE_IMAGE_WIDTH = 160


def _ingest(channel, relative: str) -> Document | str:
    """The ingested document, or the reason the upload was refused."""
    with (OFFICE / relative).open("rb") as handle:
        try:
            document = create_document(
                actor=COMMAND_LINE,
                channel=channel,
                file=File(handle, name=Path(relative).name),
                enqueue=False,
            )
        except ValidationError as exc:
            return " ".join(exc.messages)
    return ingest_document(document_id=document.pk)


def _words(text: str) -> str:
    """Plain words, for comparing text with Markdown-flavoured expectations."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return " ".join(re.findall(r"\w+", text.lower()))


def _tokens(text: str) -> set[str]:
    return set(re.findall(r"[\u3040-\u30ff\u4e00-\u9fff]|\w+", text.lower()))


def test_sources_table_lists_every_document(shared_data):
    """The expectations below cover every document in the folders (companions
    such as ground truth and expected outputs aside)."""
    on_disk = {
        str(path.relative_to(OFFICE))
        for path in OFFICE.glob("*/*")
        if ".expected" not in path.name and ".groundtruth" not in path.name
    }
    assert on_disk == {row.path for row in SOURCES}
    assert len(SOURCES) == 70


@pytest.mark.django_db
@pytest.mark.parametrize("expected", SOURCES, ids=lambda row: row.path)
def test_document_reaches_its_end_state(expected, make_channel, fake_embedder):
    """Documents SOURCES.md says to ingest end ready with text, chunks and the
    strings their expected outputs require (and none they forbid); those it
    says to refuse fail, or are refused at upload, with the kind of reason it
    names; OCR pages are marked and read close to their ground truth."""
    outcome = _ingest(make_channel(), expected.path)
    if not expected.ingests or (
        isinstance(outcome, str) or outcome.status == Document.Status.FAILED
    ):
        assert expected.refusal, f"{expected.path} should ingest: {outcome}"
        reason = outcome if isinstance(outcome, str) else outcome.status_reason
        if not isinstance(outcome, str):
            assert outcome.status == Document.Status.FAILED
            assert not Page.objects.filter(document=outcome).exists()
        assert any(word in reason for word in REFUSALS[expected.refusal]), reason
        return

    document = outcome
    assert document.status == Document.Status.READY, document.status_reason
    assert document.has_text and document.chunk_count > 0
    assert Chunk.objects.filter(document=document).count() == document.chunk_count
    pages = list(Page.objects.filter(document=document))
    assert [page.number for page in pages] == list(range(1, len(pages) + 1))
    text = "\n".join(page.text for page in pages)
    assert "\x00" not in text and "data:image" not in text
    assert not document.title.lower().endswith(Path(expected.path).suffix)

    source = OFFICE / expected.path
    spec_file = source.with_name(source.stem + ".expected.json")
    if spec_file.exists():
        spec = json.loads(spec_file.read_text())
        for required in spec["must_include"]:
            if "data:image" in required:
                continue  # how markitdown embeds pictures, not text
            assert _words(required) in _words(text), required
        for forbidden in spec["must_not_include"]:
            assert _words(forbidden) not in _words(text), forbidden
    readable = source.with_name(source.stem + ".expected.html")
    if readable.exists():
        main = lxml_html.fromstring(readable.read_bytes().decode()).text_content()
        wanted, found = _tokens(main), _tokens(text)
        assert len(wanted & found) / len(wanted) >= 0.9  # the main text is there
        assert len(wanted & found) / len(found) >= 0.9  # and little besides
    truth = source.with_name(source.stem + ".groundtruth.txt")
    if truth.exists():
        assert all(page.ocr and page.image for page in pages)
        error = character_error_rate(text, truth.read_text())
        assert error <= (0.05 if source.name in CLEAN_ENGLISH else 0.2), error
        for page in pages:
            assert page.lines
            for start, end, *box in page.lines:
                assert 0 <= start < end <= len(page.text)
                assert all(0 <= value <= 1 for value in box)
