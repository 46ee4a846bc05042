"""OCR with Tesseract (Debian's tesseract-ocr package), run from the reader child.

Chosen by measurement against rapidocr (benchmarks/ocr.py prints the figures):
Tesseract keeps the reading order of columns and tables. Which way a page is
turned and how far it leans are decided from the page itself: projection
profiles of its ink say whether its lines run across or down the image and
level them (up to MAX_SKEW degrees); the page is then read upright by its
lines' direction (`--psm 3`), and read another way round (all four ways when
the direction is unclear) while no reading is sure, keeping the reading with
the best confidence over its letters. A large page read poorly is compared
the other ways round at half its resolution, so that it is read whole at most
twice. Lines the layout found but
read as nothing are read again alone. Each page runs under its own time limit,
and Tesseract inherits the child's memory limit.

Lines come back with their boxes as fractions of the image, in the orientation
of the image given (the page image as stored), whichever way it was read. A
line clearly taller than the page's body lines that reads as a heading carries
a heading level as a seventh item, as a PDF's lines in larger type do.
"""

import copy
import csv
import hashlib
import io
import math
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from documents.ingestion.reader import headings
from documents.ingestion.reader.protocol import Request

# Pixels Tesseract is given at most (a 300 dpi A3 page is 17.4 million).
MAX_OCR_PIXELS = 40_000_000
# A reading with at least this mean word confidence (0-100) is kept without
# trying the page another way round (the upright pages of the shared data read
# at 84 to 96).
SURE_CONFIDENCE = 75.0
# Rows of ink must be this much sharper than columns (or the other way) for the
# direction of the lines to be taken as known; otherwise all four ways are tried.
AXIS_MARGIN = 1.5
# Pages over twice this size (pixels) that read poorly are compared the other
# ways round at half their resolution, not read whole each way.
PROBE_PIXELS = 800
# Lines the layout found but read as nothing that are read again on their own,
# at most, per page.
MAX_RECOVERED_LINES = 20
# A line read again is kept if its words' mean confidence is at least this (at
# 40, photo regions of the magazine scan came back as words).
RECOVERED_CONFIDENCE = 70.0
# Share of neighbouring pixels that differ above which a page is noise, not text
# (text pages of the shared data: under 0.1).
NOISE_TRANSITIONS = 0.3
# A page is read in colour when more than COLOUR_SHARE of its pixels have
# channels further apart than COLOUR_CHROMA (the bill's subpixel-smoothed text:
# 9% of its pixels over 30).
COLOUR_CHROMA = 30
COLOUR_SHARE = 0.01
# Skew looked for, in degrees either way.
MAX_SKEW = 12.0
# A line at least this many times as tall as the page's median line is set in
# larger type: a heading, if it reads as one.
TALL_LINE_RATIO = 1.5
# Taller than this is a picture or a logo; every word of a heading is read at
# least this surely (0-100).
TALLEST_LINE_RATIO = 4.0
HEADING_CONFIDENCE = 80.0


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
        grey = _prepared(image, "L")
        if _blank(grey) or _noise(grey):
            return None
        # Pages drawn alike (one scan or form repeated) are read once.
        key = (hashlib.blake2b(grey.tobytes(), digest_size=16).digest(), dpi)
        if key in self.seen:
            return copy.deepcopy(self.seen[key])
        if not self.can_read(number):
            return None
        self.pages_read += 1
        # Text drawn with colour fringes (a screenshot's subpixel smoothing)
        # loses strokes in a grey copy ("01Aug" read "Q1Aug"); Tesseract's own
        # thresholding of each colour channel keeps them.
        page = _prepared(image, "RGB") if _coloured(image) else grey
        self.seen[key] = reading = self._read(grey, page, number=number, dpi=dpi)
        return reading

    def _read(
        self, grey: Image.Image, page: Image.Image, *, number: int, dpi: int
    ) -> Reading | None:
        deadline = time.monotonic() + min(
            self.request.ocr_page_timeout, max(1.0, self.request.seconds_left())
        )
        level = levelling(grey)
        languages = self.request.ocr_languages
        try:
            tries = level.tries()
            best = _read_turned(
                page, tries[0], level.skew_for(tries[0]), languages, dpi, deadline
            )
            if best.confidence < SURE_CONFIDENCE:
                for degrees in self._other_ways(page, level, dpi, deadline):
                    reading = _read_turned(
                        page, degrees, level.skew_for(degrees), languages, dpi, deadline
                    )
                    if reading.score > best.score:
                        best = reading
                    if best.confidence >= SURE_CONFIDENCE:
                        break
        except subprocess.TimeoutExpired:
            self.timed_out.append(number)
            return None
        except (OSError, subprocess.SubprocessError, ValueError):
            self.failed.append(number)
            return None
        return best if best.text.strip() else None

    def _other_ways(
        self, page: Image.Image, level: "Levelling", dpi: int, deadline: float
    ) -> list[int]:
        """The other ways round to read a page whose first reading (upright by
        its lines) was not sure. A small page is read each way until one is
        sure; a large one, where a reading the wrong way round is a long
        reading of noise, is compared each way at half its resolution, and
        only the likeliest is read whole (a large page is read at most twice)."""
        tries = level.tries()
        if max(page.size) <= 2 * PROBE_PIXELS:
            return tries[1:]
        scores = {
            degrees: _probe(
                page,
                degrees,
                level.skew_for(degrees),
                self.request.ocr_languages,
                dpi,
                deadline,
            ).score
            for degrees in tries
        }
        likeliest = max(tries, key=scores.__getitem__)
        return [] if likeliest == tries[0] else [likeliest]

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


def _prepared(image: Image.Image, mode: str) -> Image.Image:
    image = image.convert(mode)
    pixels = image.width * image.height
    if pixels > MAX_OCR_PIXELS:
        factor = (MAX_OCR_PIXELS / pixels) ** 0.5
        image = image.resize(
            (int(image.width * factor), int(image.height * factor)),
            Image.Resampling.BILINEAR,
        )
    return image


def _coloured(image: Image.Image) -> bool:
    """Whether a share of the page's pixels are clearly coloured, not grey."""
    if image.mode not in ("RGB", "RGBA", "P", "CMYK", "YCbCr", "LAB", "HSV"):
        return False
    import numpy as np

    thumb = image.convert("RGB")
    thumb.thumbnail((800, 800))
    pixels = np.asarray(thumb, dtype=np.int16)
    chroma = pixels.max(axis=2) - pixels.min(axis=2)
    return float((chroma > COLOUR_CHROMA).mean()) > COLOUR_SHARE


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


@dataclass(frozen=True)
class Levelling:
    """Which way a page's lines run and how far they lean: `vertical` when they
    run up or down the image (a page turned a quarter), `sure` when one
    direction is clearly sharper; `row_skew` and `column_skew` level the lines
    in either case (degrees counter-clockwise)."""

    vertical: bool = False
    sure: bool = False
    row_skew: float = 0.0
    column_skew: float = 0.0

    def tries(self) -> list[int]:
        """The quarter turns (counter-clockwise) to read the page in, likeliest
        first: the lines' direction either way up, then the other direction
        unless it is ruled out."""
        along = [90, 270] if self.vertical else [0, 180]
        across = [0, 180] if self.vertical else [90, 270]
        return along if self.sure else along + across

    def skew_for(self, degrees: int) -> float:
        return self.column_skew if degrees in (90, 270) else self.row_skew


def levelling(image: Image.Image) -> Levelling:
    """How the page's text lines lie, from projection profiles: turned by the
    right angle, a page's rows (or columns) of ink change sharply from line to
    gap, and far more sharply along the lines than across them."""
    import numpy as np  # only here: the reader starts quicker without it

    thumb = image.copy()
    thumb.thumbnail((1000, 1000))
    ink = (np.asarray(thumb) < 128).astype(np.uint8) * 255
    share = ink.mean() / 255
    if not 0.002 < share < 0.4:
        return Levelling()
    inked = Image.fromarray(ink)
    profiles: dict[float, tuple[float, float]] = {}

    def sharpness(angle: float) -> tuple[float, float]:
        angle = round(float(angle), 2)
        if angle not in profiles:
            turned = np.asarray(
                inked.rotate(angle, resample=Image.Resampling.NEAREST),
                dtype=np.float64,
            )
            profiles[angle] = (
                float(np.square(np.diff(turned.sum(axis=1))).sum()),
                float(np.square(np.diff(turned.sum(axis=0))).sum()),
            )
        return profiles[angle]

    def finest(axis: int) -> tuple[float, float]:
        best = max(
            np.arange(-MAX_SKEW, MAX_SKEW + 0.01, 1.0), key=lambda a: sharpness(a)[axis]
        )
        for step, span in ((0.5, 0.5), (0.1, 0.4)):
            best = max(
                np.arange(best - span, best + span + 0.01, step),
                key=lambda a: sharpness(a)[axis],
            )
        angle = round(float(best), 1)
        return (angle if abs(angle) >= 0.3 else 0.0), sharpness(best)[axis]

    row_skew, rows = finest(0)
    column_skew, columns = finest(1)
    vertical = columns > rows
    sure = max(rows, columns) >= AXIS_MARGIN * max(min(rows, columns), 1e-9)
    return Levelling(vertical, sure, row_skew, column_skew)


def skew_angle(image: Image.Image) -> float:
    """Degrees to turn the page (counter-clockwise) so that its text lines are
    level."""
    level = levelling(image)
    return level.column_skew if level.vertical else level.row_skew


def _turned(image: Image.Image, degrees: int, skew: float) -> Image.Image:
    turned = image.rotate(degrees, expand=True) if degrees else image
    if skew:
        turned = turned.rotate(
            skew, expand=True, fillcolor="white", resample=Image.Resampling.BICUBIC
        )
    return turned


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
    turned = _turned(image, degrees, skew)
    reading = _tesseract(turned, languages, dpi, deadline)
    if skew:
        upright = image.size if degrees in (0, 180) else image.size[::-1]
        reading.lines = [
            [start, end, *_unskew(box[:4], skew, upright, turned.size), *box[4:]]
            for start, end, *box in reading.lines
        ]
    if degrees:
        reading.lines = [
            [start, end, *_unturn(box[:4], degrees), *box[4:]]
            for start, end, *box in reading.lines
        ]
    return reading


def _probe(
    image: Image.Image,
    degrees: int,
    skew: float,
    languages: str,
    dpi: int,
    deadline: float,
) -> Reading:
    """A quick reading of the page turned by `degrees` at half its resolution
    (a quarter of the pixels): enough to tell which way is up."""
    turned = _turned(image, degrees, skew)
    small = turned.resize(
        (max(1, turned.width // 2), max(1, turned.height // 2)),
        Image.Resampling.BILINEAR,
    )
    tsv = _run_tesseract(
        small, ["-l", languages, "--psm", "3", "--dpi", str(max(1, dpi // 2))], deadline
    )
    return parse_tsv(tsv, small.size)


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
    """The page read as laid out (`--psm 3`: blocks, then lines, no orientation
    detection: the page is upright by now). Lines the layout found whose words
    came back empty (a table row under a dashed rule, say) are read again, each
    across its block, stacked in one image (`--psm 6`: one Tesseract run however
    many), so that no row is lost silently."""
    tsv = _run_tesseract(
        image, ["-l", languages, "--psm", "3", "--dpi", str(dpi)], deadline
    )

    def recover(
        blanks: list[tuple[list[int], list[int] | None]],
    ) -> list[list[tuple[str, float]]]:
        crops: list[tuple[int, Image.Image]] = []  # (index in blanks, band)
        for index, (line, block) in enumerate(blanks):
            left, top, width, height = line
            if height < 6 or width < 8 or len(crops) >= MAX_RECOVERED_LINES:
                continue
            if block is not None:
                left, width = block[0], block[2]
            pad = max(2, height // 6)
            crops.append(
                (
                    index,
                    image.crop(
                        (
                            max(0, left - pad),
                            max(0, top - pad),
                            min(image.width, left + width + pad),
                            min(image.height, top + height + pad),
                        )
                    ),
                )
            )
        found: list[list[tuple[str, float]]] = [[] for _ in blanks]
        if not crops:
            return found
        gap = max(20, max(band.height for _, band in crops))
        sheet = Image.new(
            image.mode,
            (
                max(band.width for _, band in crops),
                gap + sum(band.height + gap for _, band in crops),
            ),
            "white",
        )
        spans: list[tuple[int, int, int]] = []  # (top, bottom, index)
        top = gap
        for index, band in crops:
            sheet.paste(band, (0, top))
            spans.append((top, top + band.height, index))
            top += band.height + gap
        read = _run_tesseract(
            sheet, ["-l", languages, "--psm", "6", "--dpi", str(dpi)], deadline
        )
        for level, _key, box, confidence, word in _rows(read):
            middle = box[1] + box[3] / 2
            if level != 5 or not word or confidence < 0:
                continue
            for span_top, span_bottom, index in spans:
                if span_top <= middle <= span_bottom:
                    found[index].append((word, confidence))
                    break
        for index, words in enumerate(found):
            letters = sum(ch.isalnum() for word, _ in words for ch in word)
            mean = sum(c for _, c in words) / len(words) if words else 0.0
            if letters < 2 or mean < RECOVERED_CONFIDENCE:
                found[index] = []
        return found

    return parse_tsv(tsv, image.size, recover=recover)


def _run_tesseract(image: Image.Image, options: list[str], deadline: float) -> str:
    """Tesseract's TSV for the image, within the page's deadline."""
    timeout = deadline - time.monotonic()
    if timeout <= 0:
        raise subprocess.TimeoutExpired("tesseract", 0)
    with tempfile.TemporaryDirectory(prefix="quire-ocr-") as tmp:
        source = Path(tmp) / "page.pnm"
        image.save(source)  # uncompressed: quickest to write and to read
        process = subprocess.Popen(
            ["tesseract", str(source), "stdout", *options, "tsv"],
            # A serving reader's stdin carries the parent's requests.
            stdin=subprocess.DEVNULL,
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
    return output.decode("utf-8", errors="replace")


def _rows(tsv: str):
    for row in csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE):
        try:
            level = int(row["level"])
            key = (int(row["block_num"]), int(row["par_num"]), int(row["line_num"]))
            box = [int(row[k]) for k in ("left", "top", "width", "height")]
            confidence = float(row["conf"])
        except (KeyError, TypeError, ValueError):
            continue
        yield level, key, box, confidence, (row.get("text") or "").strip()


def _words(tsv: str) -> list[tuple[str, float]]:
    return [
        (text, confidence)
        for level, _key, _box, confidence, text in _rows(tsv)
        if level == 5 and text
    ]


def parse_tsv(
    tsv: str,
    size: tuple[int, int],
    recover: Callable[
        [list[tuple[list[int], list[int] | None]]], list[list[tuple[str, float]]]
    ]
    | None = None,
) -> Reading:
    """Text and line boxes from Tesseract's TSV output: words joined by spaces,
    lines by newlines, paragraphs and blocks by a blank line. Lines whose words
    all came back empty are handed to `recover` together (each line's box and
    its block's, in pixels), whose words, if any, take their places."""
    width, height = size
    lines: dict[tuple, dict] = {}
    blocks: dict[int, list[int]] = {}
    order: list[tuple] = []
    for level, key, box, confidence, word in _rows(tsv):
        if level == 2:
            blocks[key[0]] = box
        elif level == 4:
            lines[key] = {"box": box, "words": [], "blank": False}
            order.append(key)
        elif level == 5:
            line = lines.setdefault(key, {"box": box, "words": [], "blank": False})
            if key not in order:
                order.append(key)
            if word:
                line["words"].append((word, confidence))
            else:
                line["blank"] = True
    blank = [key for key in order if lines[key]["blank"] and not lines[key]["words"]]
    if blank and recover is not None:
        found = recover([(lines[key]["box"], blocks.get(key[0])) for key in blank])
        for key, words in zip(blank, found, strict=True):
            lines[key]["words"] = words
    text = ""
    out_lines: list[list] = []
    weighted = letters = 0.0
    words = 0
    previous: tuple | None = None
    heights: list[tuple[int, int, str]] = []  # (height, words, text) per line
    sure: list[float] = []  # the least confidence of a word, per line
    for key in order:
        line = lines[key]
        if not line["words"]:
            continue
        if previous is not None:
            text += "\n" if previous[:2] == key[:2] else "\n\n"
        start = len(text)
        text += " ".join(word for word, _ in line["words"])
        left, top, box_width, box_height = line["box"]
        if line["blank"] and key[0] in blocks:  # read again across its block
            left, box_width = blocks[key[0]][0], blocks[key[0]][2]
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
        sure.append(min(confidence for _, confidence in line["words"]))
        previous = key
    confidence = weighted / letters if letters else 0.0
    _mark_tall_lines(text, out_lines, [height for height, _, _ in heights], sure)
    return Reading(text, out_lines, confidence, words, _display_line(heights))


def _mark_tall_lines(
    text: str, lines: list[list], heights: list[int], sure: list[float]
) -> None:
    """Append a heading level to the entries of the lines set clearly taller
    than the page's body text (its median line) that read as headings (as a
    PDF's larger type does, documents.ingestion.reader.headings) and were read
    surely (`sure`: each line's least word confidence); a line far taller than
    the body's is a picture or a logo read as letters."""
    if len(heights) < 3:
        return
    body = statistics.median(heights)
    if body <= 0:
        return
    levels = [
        headings.size_level(height / body)
        if TALL_LINE_RATIO * body <= height <= TALLEST_LINE_RATIO * body
        and least >= HEADING_CONFIDENCE
        else None
        for height, least in zip(heights, sure, strict=True)
    ]
    for line, level in zip(lines, headings.plausible(text, lines, levels), strict=True):
        if level is not None:
            line.append(level)


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
