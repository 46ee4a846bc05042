"""OCR with Tesseract (Debian's tesseract-ocr package), run from the reader child.

Chosen by measurement against rapidocr (benchmarks/ocr.py prints the figures):
Tesseract keeps the reading order of columns and tables and reads pages turned
by 90 degrees (its orientation detection, `--psm 1`); upside-down pages, where
that detection gives up on little text, are read again turned by 180 degrees
when the first reading is poor. Each page runs under its own time limit, and
Tesseract inherits the child's memory limit.

Lines come back with their boxes as fractions of the image, in the orientation
of the image given (the page image as stored), whichever way it was read.
"""

import copy
import csv
import hashlib
import io
import math
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from documents.ingestion.reader.protocol import Request

# Pixels Tesseract is given at most (a 300 dpi A3 page is 17.4 million).
MAX_OCR_PIXELS = 40_000_000
# A reading below this mean word confidence (0-100) is tried the other way up.
POOR_CONFIDENCE = 55.0
# Share of neighbouring pixels that differ above which a page is noise, not text
# (text pages of the shared data: under 0.1).
NOISE_TRANSITIONS = 0.3
# Skew looked for, in degrees either way.
MAX_SKEW = 8.0


@dataclass
class Reading:
    """Text of one page with its lines ([start, end, x0, y0, x1, y1]) and the
    mean word confidence; `tallest` is the text of the tallest line."""

    text: str
    lines: list[list]
    confidence: float
    words: int
    tallest: str = ""

    @property
    def score(self) -> float:
        return self.confidence * len(self.text.replace(" ", ""))


def _tesseract_env() -> dict:
    # OpenMP threads spin while they wait; on a few shared cores one thread is
    # faster (and leaves the web server alone).
    return {**os.environ, "OMP_THREAD_LIMIT": "1"}


def missing_reason(languages: str) -> str | None:
    """Why OCR can't run here (Tesseract or a language missing), or None."""
    if shutil.which("tesseract") is None:
        return (
            "OCR is not available: Tesseract is not installed (Debian package "
            "tesseract-ocr; `make run` installs it)."
        )
    try:
        listed = subprocess.run(
            ["tesseract", "--list-langs"],
            capture_output=True,
            text=True,
            timeout=30,
            env=_tesseract_env(),
        ).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return "OCR is not available: Tesseract could not be started."
    wanted = [lang for lang in languages.split("+") if lang]
    absent = [lang for lang in wanted if lang not in listed]
    if absent:
        return (
            "OCR is not available: Tesseract has no data for "
            f"{', '.join(absent)} (Debian packages tesseract-ocr-<language>; "
            "setting OCR_LANGUAGES)."
        )
    return None


class Engine:
    """Reads pages within the document's OCR limits and records why it didn't."""

    def __init__(self, request: Request, unavailable: str | None):
        self.request = request
        self.unavailable = unavailable
        self.pages_read = 0
        self.skipped_quota: list[int] = []
        self.skipped_time: list[int] = []
        self.timed_out: list[int] = []
        self.failed: list[int] = []
        self.wanted = False
        self.seen: dict[tuple, Reading | None] = {}

    @classmethod
    def for_request(cls, request: Request) -> "Engine":
        if not request.ocr_enabled:
            return cls(request, "OCR is turned off (setting OCR_ENABLED).")
        return cls(request, missing_reason(request.ocr_languages))

    def can_read(self, number: int) -> bool:
        """Whether page `number` may be read by OCR; if not, the reason is noted
        for notes()."""
        self.wanted = True
        if self.unavailable:
            return False
        if self.pages_read >= self.request.ocr_max_pages:
            self.skipped_quota.append(number)
            return False
        if self.request.past_deadline():
            self.skipped_time.append(number)
            return False
        return True

    def read(self, image: Image.Image, *, number: int, dpi: int) -> Reading | None:
        """The page's text read from `image`, or None (nothing read, or OCR not
        possible within the limits: the reason goes into notes())."""
        image = _prepared(image)
        if _blank(image) or _noise(image):
            return None
        # Pages drawn alike (one scan or form repeated) are read once.
        key = (hashlib.blake2b(image.tobytes(), digest_size=16).digest(), dpi)
        if key in self.seen:
            return copy.deepcopy(self.seen[key])
        if not self.can_read(number):
            return None
        self.pages_read += 1
        self.seen[key] = reading = self._read(image, number=number, dpi=dpi)
        return reading

    def _read(self, image: Image.Image, *, number: int, dpi: int) -> Reading | None:
        deadline = time.monotonic() + min(
            self.request.ocr_page_timeout, max(1.0, self.request.seconds_left())
        )
        angle = skew_angle(image)
        try:
            best = _read_turned(
                image, 0, angle, self.request.ocr_languages, dpi, deadline
            )
            if best.confidence < POOR_CONFIDENCE:
                turned = _read_turned(
                    image, 180, angle, self.request.ocr_languages, dpi, deadline
                )
                if turned.score > best.score:
                    best = turned
        except subprocess.TimeoutExpired:
            self.timed_out.append(number)
            return None
        except (OSError, subprocess.SubprocessError, ValueError):
            self.failed.append(number)
            return None
        return best if best.text.strip() else None

    def notes(self) -> list[str]:
        notes = []
        if self.wanted and self.unavailable:
            notes.append(self.unavailable)
        if self.skipped_quota:
            notes.append(
                f"{_count(self.skipped_quota)} not read by OCR: at most "
                f"{self.request.ocr_max_pages} pages per document are "
                "(setting OCR_MAX_PAGES)."
            )
        if self.skipped_time:
            notes.append(
                f"{_count(self.skipped_time)} not read by OCR: the document's "
                "reading time ran out (setting PDF_PARSE_TIMEOUT)."
            )
        if self.timed_out:
            notes.append(
                f"OCR of {_count(self.timed_out, 'page')} took longer than "
                f"{self.request.ocr_page_timeout:g} s and was stopped (setting "
                "OCR_PAGE_TIMEOUT)."
            )
        if self.failed:
            notes.append(f"OCR failed on {_count(self.failed, 'page')}.")
        return notes


def _count(numbers: list[int], noun: str = "Page") -> str:
    if len(numbers) == 1:
        return f"{noun} {numbers[0]}"
    shown = ", ".join(str(n) for n in numbers[:10])
    more = f" and {len(numbers) - 10} more" if len(numbers) > 10 else ""
    return f"{noun}s {shown}{more}" if noun == "Page" else f"{len(numbers)} pages"


def _prepared(image: Image.Image) -> Image.Image:
    image = image.convert("L")
    pixels = image.width * image.height
    if pixels > MAX_OCR_PIXELS:
        factor = (MAX_OCR_PIXELS / pixels) ** 0.5
        image = image.resize(
            (int(image.width * factor), int(image.height * factor)),
            Image.Resampling.BILINEAR,
        )
    return image


def _blank(image: Image.Image) -> bool:
    low, high = image.getextrema()
    return high - low < 24


def _noise(image: Image.Image) -> bool:
    """Whether the page looks like noise rather than writing: ink changes
    between neighbouring pixels far more often than along lines of text
    (Tesseract spends tens of seconds on such a page and finds nothing)."""
    import numpy as np

    thumb = image.copy()
    thumb.thumbnail((800, 800))
    ink = np.asarray(thumb) < 128
    if ink.shape[1] < 2:
        return False
    return float((ink[:, 1:] != ink[:, :-1]).mean()) > NOISE_TRANSITIONS


def skew_angle(image: Image.Image) -> float:
    """Degrees to turn the page (counter-clockwise) so that its text lines are
    level: the angle whose rows of ink are the most sharply separated."""
    import numpy as np  # only here: the reader starts quicker without it

    thumb = image.copy()
    thumb.thumbnail((1000, 1000))
    ink = (np.asarray(thumb) < 128).astype(np.uint8) * 255
    share = ink.mean() / 255
    if not 0.002 < share < 0.4:
        return 0.0
    inked = Image.fromarray(ink)

    def sharpness(angle: float) -> float:
        rows = np.asarray(
            inked.rotate(angle, resample=Image.Resampling.NEAREST), dtype=np.float64
        ).sum(axis=1)
        return float(np.square(np.diff(rows)).sum())

    coarse = max(np.arange(-MAX_SKEW, MAX_SKEW + 0.01, 0.5), key=sharpness)
    fine = max(np.arange(coarse - 0.4, coarse + 0.41, 0.1), key=sharpness)
    return round(float(fine), 1) if abs(fine) >= 0.3 else 0.0


def _read_turned(
    image: Image.Image,
    degrees: int,
    skew: float,
    languages: str,
    dpi: int,
    deadline: float,
) -> Reading:
    """Read the image turned by `degrees` (a right angle) and levelled by
    `skew`; the boxes come back in the fractions of the image as given."""
    turned = image.rotate(degrees, expand=True) if degrees else image
    if skew:
        turned = turned.rotate(
            skew, expand=True, fillcolor=255, resample=Image.Resampling.BICUBIC
        )
    reading = _tesseract(turned, languages, dpi, deadline)
    if skew:
        upright = image.size if degrees in (0, 180) else image.size[::-1]
        reading.lines = [
            [start, end, *_unskew(box, skew, upright, turned.size)]
            for start, end, *box in reading.lines
        ]
    if degrees:
        reading.lines = [
            [start, end, *_unturn(box, degrees)] for start, end, *box in reading.lines
        ]
    return reading


def _unskew(
    box: list[float], angle: float, size: tuple[int, int], turned: tuple[int, int]
) -> list[float]:
    """A box found on the image levelled by `angle` degrees (grown to `turned`
    pixels), as the bounding box of its corners on the unlevelled image."""
    width, height = size
    turned_width, turned_height = turned
    radians = math.radians(angle)
    cos, sin = math.cos(radians), math.sin(radians)
    xs, ys = [], []
    corners = ((box[0], box[1]), (box[2], box[1]), (box[0], box[3]), (box[2], box[3]))
    for fx, fy in corners:
        dx = fx * turned_width - turned_width / 2
        dy = fy * turned_height - turned_height / 2
        # PIL turns counter-clockwise on screen (y down); undo it.
        xs.append((dx * cos - dy * sin + width / 2) / width)
        ys.append((dx * sin + dy * cos + height / 2) / height)
    return [
        round(min(max(value, 0.0), 1.0), 4)
        for value in (min(xs), min(ys), max(xs), max(ys))
    ]


def _unturn(box: list[float], degrees: int) -> list[float]:
    """A box read on the image turned counter-clockwise by `degrees`, in the
    fractions of the image as given."""
    x0, y0, x1, y1 = box
    if degrees == 180:
        x0, y0, x1, y1 = 1 - x1, 1 - y1, 1 - x0, 1 - y0
    elif degrees == 90:
        x0, y0, x1, y1 = 1 - y1, x0, 1 - y0, x1
    elif degrees == 270:
        x0, y0, x1, y1 = y0, 1 - x1, y1, 1 - x0
    return [round(value, 4) for value in (x0, y0, x1, y1)]


def _tesseract(
    image: Image.Image, languages: str, dpi: int, deadline: float
) -> Reading:
    timeout = deadline - time.monotonic()
    if timeout <= 0:
        raise subprocess.TimeoutExpired("tesseract", 0)
    with tempfile.TemporaryDirectory(prefix="quire-ocr-") as tmp:
        source = Path(tmp) / "page.pgm"
        image.save(source)  # uncompressed: quickest to write and to read
        process = subprocess.Popen(
            [
                "tesseract",
                str(source),
                "stdout",
                "-l",
                languages,
                "--psm",
                "1",
                "--dpi",
                str(dpi),
                "tsv",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=_tesseract_env(),
        )
        try:
            output, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise
    if process.returncode != 0:
        raise OSError(f"tesseract exited with {process.returncode}")
    return parse_tsv(output.decode("utf-8", errors="replace"), image.size)


def parse_tsv(tsv: str, size: tuple[int, int]) -> Reading:
    """Text and line boxes from Tesseract's TSV output: words joined by spaces,
    lines by newlines, paragraphs and blocks by a blank line."""
    width, height = size
    rows = csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE)
    lines: dict[tuple, dict] = {}
    order: list[tuple] = []
    for row in rows:
        try:
            level = int(row["level"])
            key = (int(row["block_num"]), int(row["par_num"]), int(row["line_num"]))
            box = [int(row[k]) for k in ("left", "top", "width", "height")]
            confidence = float(row["conf"])
        except (KeyError, TypeError, ValueError):
            continue
        if level == 4:
            lines[key] = {"box": box, "words": []}
            order.append(key)
        elif level == 5 and (word := (row.get("text") or "").strip()):
            line = lines.setdefault(key, {"box": box, "words": []})
            if key not in order:
                order.append(key)
            line["words"].append((word, confidence))
    text = ""
    out_lines: list[list] = []
    weighted = letters = 0.0
    words = 0
    previous: tuple | None = None
    heights: list[tuple[int, int, str]] = []  # (height, words, text) per line
    for key in order:
        line = lines[key]
        if not line["words"]:
            continue
        if previous is not None:
            text += "\n" if previous[:2] == key[:2] else "\n\n"
        start = len(text)
        text += " ".join(word for word, _ in line["words"])
        left, top, box_width, box_height = line["box"]
        out_lines.append(
            [
                start,
                len(text),
                round(min(max(left / width, 0), 1), 4),
                round(min(max(top / height, 0), 1), 4),
                round(min(max((left + box_width) / width, 0), 1), 4),
                round(min(max((top + box_height) / height, 0), 1), 4),
            ]
        )
        for word, confidence in line["words"]:
            weighted += max(confidence, 0) * len(word)
            letters += len(word)
            words += 1
        heights.append((box_height, len(line["words"]), text[start:]))
        previous = key
    confidence = weighted / letters if letters else 0.0
    return Reading(text, out_lines, confidence, words, _display_line(heights))


def _display_line(heights: list[tuple[int, int, str]]) -> str:
    """The first short line set clearly taller than the page's body text (a
    heading), or ""."""
    if len(heights) < 3:
        return ""
    body = sorted(height for height, _, _ in heights)[len(heights) // 2]
    for height, words, line in heights[: max(3, len(heights) // 3)]:
        if height >= 1.5 * body and words <= 12 and sum(map(str.isalpha, line)) >= 4:
            return line
    return ""
