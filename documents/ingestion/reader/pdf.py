"""PDF pages with PDFium: text with a box per line, a PNG, OCR where needed.

Text is built character by character from PDFium's text page, so that each
line's box (the union of its characters' boxes) goes with character offsets
into the text. PDFium marks a hyphen that ends a line with U+0002 and starts the
next line right after it; such a hyphen ends a line here too.

A line set in type larger than the body text's, or wholly in bold type of the
body's size when the body is not bold, is a heading: its line entry carries a
seventh item, the heading's level (1-6, larger type a lower level). The body's
size is the one most characters of the first pages are set in, so a first page
of large type (a cover, a title and authors) doesn't set it. A run of more than
a few such lines is a passage in large type (a cover's blurb), as is a line that
runs on into a line of body text starting in lower case; lines side by side
in one band are a table's header cells, a contents line has dot leaders, and a
line seen on an earlier page (page numbers aside) is a running head, as is a
line in the page's top or bottom margin that one of the next two pages repeats
(a running head's first appearance): none of them is a heading.

Text in type clearly smaller than the body's (footnotes, most often, which
PDFium may read before or between the columns of body text) is set apart from
body text next to it by a blank line, so that a body sentence is never joined
to the footnote read before it; so is each note that starts with a marker in
smaller type still ("5Stall warning indication is …"), from the note before.

A page's text is sent before its image is drawn, so that the parent chunks and
embeds it meanwhile; the image follows in a message of its own. A page whose
text layer is missing or unusable (most characters from fonts without a
Unicode map) is drawn first, then rendered at 300 dpi and read by OCR. Rendering is
progressive: a page that takes longer than the page time limit to draw stops
drawing and is kept without an image, and after a few such pages the rest of
the document is not drawn at all. Past the soft deadline nothing more is drawn
or read by OCR, so the text of every page still comes back in time.
"""

import bisect
import ctypes
import math
import re
import statistics
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from documents.ingestion.reader import headings, ocr
from documents.ingestion.reader.images import MIN_WIDTH, ImageBudget
from documents.ingestion.reader.protocol import Refusal, Request, emit, page_message

# Tall pages (posters, receipts) would make huge bitmaps at a fixed width.
MAX_HEIGHT_FACTOR = 4
OCR_DPI = 300
# After this many pages too slow to draw, the document's other pages aren't drawn.
SLOW_PAGES_BEFORE_GIVING_UP = 3
# Objects looked at to tell whether a page shows images.
MAX_OBJECTS_INSPECTED = 20_000
# Fewer letters or digits than this is no text layer (stray marks, page furniture).
MIN_TEXT_CHARACTERS = 3
# PDFium's end-of-line hyphen: U+0002 per character (FPDFText_GetText: U+FFFE).
HYPHENS = "\x02\ufffe"
UNIT = 10_000  # boxes are computed in ten-thousandths of the page
# Headings: type at least this much larger than the body's, or bold (a weight
# of at least BOLD_WEIGHT) of the body's size (documents.ingestion.reader.headings
# gives the levels and what is no heading).
HEADING_SIZE_RATIO = 1.08
BOLD_WEIGHT = 600
# Running heads and feet: lines within this fraction of the page's height from
# its top or bottom, repeated on one of the next RUNNING_AHEAD pages.
RUNNING_BAND = 0.12
RUNNING_AHEAD = 2
# Footnotes: type at most this fraction of the body's size.
SMALL_TYPE_RATIO = 0.9
# Pages whose characters decide the body's type size.
BODY_SAMPLE_PAGES = 3
BODY_SAMPLE_CHARS = 2_000


def read_pdf(request: Request) -> None:
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(request.path)
    except pdfium.PdfiumError as exc:
        code = {
            pdfium.raw.FPDF_ERR_PASSWORD: "encrypted",
            pdfium.raw.FPDF_ERR_SECURITY: "encrypted",
            pdfium.raw.FPDF_ERR_FILE: "unreadable",
        }.get(exc.err_code, "corrupt")
        raise Refusal(code, detail=str(exc)) from None
    page_count = len(pdf)
    if page_count == 0:
        raise Refusal("no_pages")
    if page_count > request.max_pages:
        raise Refusal("too_many_pages", page_count=page_count)
    try:
        pdf.init_forms()
    except Exception:
        pass  # forms are a nicety for rendering; the pages still read without
    try:
        metadata = pdf.get_metadata_dict()
    except Exception:
        metadata = {}
    reader = _PageReader(pdf, request, page_count)
    for index in range(page_count):
        message, undrawn = reader.read(index)
        if index == 0:
            emit(
                {
                    "kind": "document",
                    "title": metadata.get("Title", ""),
                    "producer": " ".join(
                        metadata.get(key, "") for key in ("Producer", "Creator")
                    ),
                    "title_candidate": reader.title_candidate,
                    "page_count": page_count,
                }
            )
        emit(message)
        if undrawn is not None:
            emit(reader.image(undrawn, index + 1))
    emit({"kind": "end", "notes": reader.notes()})


class _PageReader:
    def __init__(self, pdf, request: Request, page_count: int):
        import pypdfium2 as pdfium

        self.pdfium = pdfium
        self.raw = pdfium.raw
        self.pdf = pdf
        self.request = request
        self.budget = ImageBudget(
            request.image_budget_bytes,
            page_count,
            min_width=min(MIN_WIDTH, request.image_width),
        )
        self.engine = ocr.Engine.for_request(request)
        self.slow_pages: list[int] = []  # too slow to draw
        self.slow_reads: list[int] = []  # too slow to load and read
        self.unread: list[int] = []
        self.unrendered_for_time: list[int] = []
        self.unusable_text: list[int] = []
        self.title_candidate = ""
        self.body: _BodyType | None = None
        self.running: set[str] = set()  # heading-like lines of earlier pages
        self.line_keys: dict[int, frozenset[str]] = {}  # of pages read ahead

    def read(self, index: int) -> tuple[dict, object | None]:
        """The page's message, and the page when its image is still to be
        drawn (see image)."""
        number = index + 1
        message = page_message(number)
        errors = message["notes"]
        if len(self.slow_reads) >= SLOW_PAGES_BEFORE_GIVING_UP:
            self.unread.append(number)
            return message, None
        started = self.request.clock()
        try:
            page = self.pdf[index]
        except Exception as exc:
            errors.append(f"page could not be loaded ({exc})")
            return message, None
        text, lines, unusable = "", [], False
        try:
            text, lines, unusable = self._text(page, index)
        except Exception as exc:
            errors.append(f"text could not be extracted ({exc})")
        message["has_images"] = self._has_images(page)
        if self.request.clock() - started > self.request.page_render_timeout:
            self.slow_reads.append(number)
        needs_ocr = unusable or _letters(text) < MIN_TEXT_CHARACTERS
        if unusable:
            text, lines = "", []
            self.unusable_text.append(number)
        message["text"], message["lines"] = text, lines
        if not needs_ocr:
            return message, page
        rendered = self._render_image(page, number, message)
        reading = self._ocr(page, number, rendered)
        if reading is not None:
            message["text"], message["lines"] = reading.text, reading.lines
            message["ocr"] = True
            if index == 0 and reading.confidence >= 80:
                self.title_candidate = reading.tallest
        return message, None

    def image(self, page, number: int) -> dict:
        """The image message of a page whose text was sent already."""
        message = {
            "kind": "image",
            "number": number,
            "image": None,
            "width": None,
            "height": None,
            "notes": [],
        }
        self._render_image(page, number, message)
        return message

    def _gave_up_drawing(self) -> bool:
        return (
            len(self.slow_pages) >= SLOW_PAGES_BEFORE_GIVING_UP
            or self.request.past_deadline()
        )

    # Text and line boxes

    def _text(self, page, index: int) -> tuple[str, list, bool]:
        first = index == 0
        raw = self.raw
        textpage = page.get_textpage()
        count = raw.FPDFText_CountChars(textpage)
        if count <= 0:
            return "", [], False
        text = _page_text(raw, textpage, count)
        to_device = _DeviceMapper(page, raw)
        rect = raw.FS_RECTF()
        style = _Style(raw, textpage)
        lines: list[list] = []
        styles: list[tuple[float, bool] | None] = []
        sized_lines: list[tuple[float, int, int]] = []  # page 1: type size per line
        notes: set[int] = set()  # lines opening with a note's marker
        sizes: list[float] = []  # type size per line, vertical lines too
        start = 0
        for match in _LINE_END.finditer(text + "\n"):
            end = match.end() if match.group() in HYPHENS else match.start()
            if text[start:end].strip():
                box = _line_box(raw, textpage, text, start, end, rect, to_device)
                if box is not None:
                    lines.append([start, end, *box])
                    # Vertical lines (an arXiv stamp in the margin) are no title
                    # and no heading.
                    line_style = None
                    if box[2] - box[0] > box[3] - box[1]:
                        line_style = style.of_line(text, start, end)
                        if style.opens_with_marker(text, start, end):
                            notes.add(len(lines) - 1)
                    styles.append(line_style)
                    # A lone footnote marker ("7") is narrower than it is tall.
                    sizes.append((line_style or style.of_line(text, start, end))[0])
                    if first and line_style and line_style[0]:
                        sized_lines.append((line_style[0], start, end))
            start = match.end()
        unusable = _mostly_unmapped(raw, textpage, text)
        lines = [_clamped(line) for line in lines]
        if first and not unusable and not _inner_page(text, lines):
            self.title_candidate = _largest_line(text, sized_lines)
        if not unusable:
            try:
                if self.body is None:
                    self.body = _BodyType.of_document(self.pdf, style, index)
                _mark_headings(
                    text,
                    lines,
                    styles,
                    self.body,
                    self.running,
                    lambda: self._keys_ahead(index),
                )
            except Exception:
                # Headings are a nicety: a page whose marks fail keeps its text.
                lines = [line[:6] for line in lines]
            if self.body is not None:
                breaks = _small_type_breaks(text, lines, sizes, notes, self.body)
                text, lines = _with_breaks(text, lines, breaks)
        return text, lines, unusable

    def _keys_ahead(self, index: int) -> frozenset[str]:
        """The running keys of the lines of the two pages after page `index`."""
        for old in [i for i in self.line_keys if i <= index]:
            del self.line_keys[old]
        keys: set[str] = set()
        for ahead in range(index + 1, min(len(self.pdf), index + 1 + RUNNING_AHEAD)):
            if ahead not in self.line_keys:
                try:
                    text = self.pdf[ahead].get_textpage().get_text_range()
                except Exception:
                    text = ""
                self.line_keys[ahead] = frozenset(
                    _running_key(line) for line in _LINE_END.split(text)
                )
            keys |= self.line_keys[ahead]
        return frozenset(keys)

    def _has_images(self, page) -> bool:
        try:
            for seen, obj in enumerate(page.get_objects(max_depth=4)):
                if obj.type == self.raw.FPDF_PAGEOBJ_IMAGE:
                    return True
                if seen >= MAX_OBJECTS_INSPECTED:
                    return False
        except Exception:
            return False
        return False

    # Rendering

    def _render_image(self, page, number: int, message: dict):
        """Draw the page at the image width and store it within the budget;
        returns the drawn PIL image (or None)."""
        if self._gave_up_drawing():
            self.unrendered_for_time.append(number)
            return None
        width, height = page.get_size()  # already rotated as displayed
        scale = min(
            self.request.image_width / max(width, 1),
            self.request.image_width * MAX_HEIGHT_FACTOR / max(height, 1),
        )
        try:
            image = self._draw(page, scale, number)
        except Exception as exc:
            message["notes"].append(f"page could not be rendered ({exc})")
            return None
        if image is None:
            return None
        name = f"page-{number:05d}.png"
        size = self.budget.save(image, Path(self.request.out_dir) / name, number)
        if size is not None:
            message.update(image=name, width=size[0], height=size[1])
        return image

    def _draw(self, page, scale: float, number: int, *, grey: bool = False):
        """The page drawn at `scale`, or None when drawing took longer than the
        page time limit (then the page is counted as slow)."""
        raw = self.raw
        width, height = page.get_size()
        pixel_width = max(1, round(width * scale))
        pixel_height = max(1, round(height * scale))
        bitmap = self.pdfium.PdfBitmap.new_native(
            pixel_width,
            pixel_height,
            format=raw.FPDFBitmap_Gray if grey else raw.FPDFBitmap_BGR,
        )
        bitmap.fill_rect((255, 255, 255, 255), 0, 0, pixel_width, pixel_height)
        limit = min(self.request.page_render_timeout, self.request.seconds_left())
        deadline = self.request.clock() + max(limit, 0.0)

        def need_to_pause(_pause) -> bool:
            return self.request.clock() > deadline

        pause = raw.IFSDK_PAUSE(version=1)
        pause.NeedToPauseNow = type(pause.NeedToPauseNow)(need_to_pause)
        flags = raw.FPDF_ANNOT | (raw.FPDF_GRAYSCALE if grey else 0)
        status = raw.FPDF_RenderPageBitmap_Start(
            bitmap, page, 0, 0, pixel_width, pixel_height, 0, flags, ctypes.byref(pause)
        )
        while (
            status == raw.FPDF_RENDER_TOBECONTINUED and self.request.clock() <= deadline
        ):
            status = raw.FPDF_RenderPage_Continue(page, ctypes.byref(pause))
        raw.FPDF_RenderPage_Close(page)
        if status == raw.FPDF_RENDER_TOBECONTINUED:
            self.slow_pages.append(number)
            return None
        if status == raw.FPDF_RENDER_FAILED:
            raise ValueError("PDFium could not draw it")
        if page.formenv:
            raw.FPDF_FFLDraw(
                page.formenv, bitmap, page, 0, 0, pixel_width, pixel_height, 0, flags
            )
        return bitmap.to_pil()

    def _ocr(self, page, number: int, rendered):
        if rendered is None and (number in self.slow_pages or self._gave_up_drawing()):
            return None  # a page too slow to draw is too slow to draw again
        if not self.engine.can_read(number):
            return None
        width, _height = page.get_size()
        scale = min(OCR_DPI / 72, 6000 / max(width, 1))  # posters: text, not pixels
        try:
            image = self._draw(page, scale, number, grey=True)
        except Exception:
            image = None
        if image is None:
            return None
        return self.engine.read(image, number=number, dpi=round(scale * 72))

    def notes(self) -> list[str]:
        notes = []
        if self.unusable_text:
            notes.append(
                f"{_pages(self.unusable_text)}: the text layer can't be read "
                "(fonts without a Unicode map), so it was left out."
            )
        if self.slow_pages:
            notes.append(
                f"{_pages(self.slow_pages)}: drawing took longer than "
                f"{self.request.page_render_timeout:g} s, so the page has no "
                "image (setting PAGE_RENDER_TIMEOUT)."
            )
        if self.unrendered_for_time:
            notes.append(
                f"{_pages(self.unrendered_for_time)}: not drawn, because earlier "
                "pages were too slow to draw or the reading time ran out."
            )
        if self.unread:
            notes.append(
                f"{_pages(self.unread)}: not read, because "
                f"{_pages(self.slow_reads).lower()} each took longer than "
                f"{self.request.page_render_timeout:g} s to read (setting "
                "PAGE_RENDER_TIMEOUT)."
            )
        notes.extend(self.engine.notes())
        notes.extend(self.budget.notes())
        return notes


class _DeviceMapper:
    """Page space to ten-thousandths of the page as displayed (rotation and
    crop box included), origin top left."""

    def __init__(self, page, raw):
        self.page = page
        self.raw = raw
        self.x = ctypes.c_int()
        self.y = ctypes.c_int()

    def __call__(self, x: float, y: float) -> tuple[int, int]:
        self.raw.FPDF_PageToDevice(self.page, 0, 0, UNIT, UNIT, 0, x, y, self.x, self.y)
        return self.x.value, self.y.value


_LINE_END = re.compile("\r\n|[\r\n]|[" + HYPHENS + "]")
_FIGURES = re.compile(r"\d[\d,.%]*")
# A note's marker: a figure or one of these, in type at most this fraction of
# the size of the text it opens.
NOTE_SYMBOLS = "*†‡§¶"
MARKER_SIZE_RATIO = 0.85
# PDF font descriptor flag (PDF 32000-1, table 123).
FORCE_BOLD = 1 << 18
# Characters looked at to tell an unusable text layer, and per line for its size.
MAP_ERROR_SAMPLE = 400
SIZE_SAMPLE = 12


def _page_text(raw, textpage, count: int) -> str:
    """The page's text, one character per PDFium character index: an astral
    character (a UTF-16 pair) is joined, and its second index becomes a NUL
    that the clean-up drops, so offsets still line up."""
    buffer = (ctypes.c_ushort * (count + 1))()
    written = raw.FPDFText_GetText(textpage, 0, count, buffer)
    units = list(buffer[: max(0, min(written - 1, count))])
    chars = [chr(unit) for unit in units]
    for index, unit in enumerate(units):
        if 0xD800 <= unit < 0xDC00:
            following = units[index + 1] if index + 1 < len(units) else 0
            if 0xDC00 <= following < 0xE000:
                code = 0x10000 + ((unit - 0xD800) << 10) + (following - 0xDC00)
                chars[index], chars[index + 1] = chr(code), "\x00"
            else:
                chars[index] = "\ufffd"
        elif 0xDC00 <= unit < 0xE000 and chars[index] != "\x00":
            chars[index] = "\ufffd"
    return "".join(chars)


def _line_box(
    raw, textpage, text: str, start: int, end: int, rect, to_device
) -> list[float] | None:
    """The union of the loose boxes (the font's ascent to descent) of the
    line's characters, in fractions of the page as displayed."""
    left = bottom = float("inf")
    right = top = float("-inf")
    for index in range(start, end):
        if text[index].isspace() or text[index] == "\x00":
            continue
        if raw.FPDFText_GetLooseCharBox(textpage, index, rect):
            left, right = min(left, rect.left), max(right, rect.right)
            bottom, top = min(bottom, rect.bottom), max(top, rect.top)
    if left > right or bottom > top:
        return None
    # The page's rotation is a multiple of 90 degrees: the corners' bounding
    # box on the displayed page is the line's box there.
    x0, y0 = to_device(left, top)
    x1, y1 = to_device(right, bottom)
    box = [min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)]
    return [value / UNIT for value in box]


class _Style:
    """Type size (as set, text matrix included: a font set at 1 pt and scaled
    by the matrix is as large as it looks) and boldness of a text page's
    characters."""

    def __init__(self, raw, textpage):
        self.raw = raw
        self.textpage = textpage
        self.matrix = raw.FS_MATRIX()
        self.name = ctypes.create_string_buffer(64)
        self.flags = ctypes.c_int()

    def size(self, index: int) -> float:
        raw = self.raw
        size = raw.FPDFText_GetFontSize(self.textpage, index)
        if raw.FPDFText_GetMatrix(self.textpage, index, self.matrix):
            m = self.matrix
            size *= math.sqrt(abs(m.a * m.d - m.b * m.c))
        return round(size, 1)

    def bold(self, index: int) -> bool:
        raw = self.raw
        weight = raw.FPDFText_GetFontWeight(self.textpage, index)
        if weight > 0:
            return weight >= BOLD_WEIGHT
        # No weight given (simple fonts without a descriptor): the font's
        # ForceBold flag or its name ("Helvetica-Bold").
        written = raw.FPDFText_GetFontInfo(
            self.textpage, index, self.name, len(self.name), ctypes.byref(self.flags)
        )
        # A name longer than the buffer is not written (nor looked at).
        name = self.name.raw[: written - 1] if 0 < written <= len(self.name) else b""
        return bool(self.flags.value & FORCE_BOLD) or b"bold" in name.lower()

    def opens_with_marker(self, text: str, start: int, end: int) -> bool:
        """Whether the line opens with a note's marker: a figure or a symbol
        (1-3 of them) in type smaller than the word right after it."""
        first = start
        while first < end and text[first].isspace():
            first += 1
        after = first
        while after < end and (text[after].isdigit() or text[after] in NOTE_SYMBOLS):
            after += 1
        if not 0 < after - first <= 3 or after >= end or text[after].isspace():
            return False
        return self.size(first) < self.size(after) * MARKER_SIZE_RATIO

    def of_line(self, text: str, start: int, end: int) -> tuple[float, bool]:
        """The median type size of a line and whether it is all bold, from a
        sample of its characters."""
        indices = [i for i in range(start, end) if not text[i].isspace()]
        step = max(1, len(indices) // SIZE_SAMPLE)
        sample = indices[::step]
        if not sample:
            return 0.0, False
        sizes = [self.size(i) for i in sample]
        return statistics.median(sizes), all(self.bold(i) for i in sample)


class _BodyType:
    """The type size most characters of the document's first pages are set
    in, and whether that type is bold."""

    def __init__(self, size: float, bold: bool):
        self.size = size
        self.bold = bold

    @classmethod
    def of_document(cls, pdf, style: _Style, first: int) -> "_BodyType":
        """From the page `first` (the first with a text layer, whose `style`
        is given) and the pages after it."""
        sizes: Counter[float] = Counter()
        bold: Counter[float] = Counter()
        for index in range(first, min(len(pdf), first + BODY_SAMPLE_PAGES)):
            if index == first:
                page_style = style
            else:
                try:
                    page_style = _Style(style.raw, pdf[index].get_textpage())
                except Exception:
                    continue
            textpage = page_style.textpage
            count = style.raw.FPDFText_CountChars(textpage)
            step = max(1, count // BODY_SAMPLE_CHARS)
            for i in range(0, max(count, 0), step):
                if not chr(style.raw.FPDFText_GetUnicode(textpage, i)).isalnum():
                    continue
                # Each sampled character stands for `step` of its page's.
                size = round(page_style.size(i) * 2) / 2
                sizes[size] += step
                bold[size] += step * page_style.bold(i)
        if not sizes:
            return cls(0.0, False)
        size, count = sizes.most_common(1)[0]
        return cls(size, bold[size] > count / 2)


def _mark_headings(
    text: str,
    lines: list[list],
    styles: list,
    body: _BodyType,
    running: set[str],
    ahead: Callable[[], frozenset[str]] = frozenset,
) -> None:
    """Append the heading level to the entries of the lines that are headings
    (see the module docstring); `running` holds the heading-like lines of the
    pages before, and takes this page's; `ahead` gives the lines of the next
    pages (read only when a candidate sits in a margin)."""
    if body.size <= 0:
        return
    levels: list[int | None] = []
    for style in styles:
        level = None
        if style is not None:
            size, bold = style
            ratio = size / body.size
            if ratio >= HEADING_SIZE_RATIO:
                level = headings.size_level(ratio)
            elif bold and not body.bold and ratio >= 1 / HEADING_SIZE_RATIO:
                level = headings.LOWEST_LEVEL
        levels.append(level)
    levels = headings.plausible(text, lines, levels)
    candidates = [i for i, level in enumerate(levels) if level is not None]
    keys = {i: _running_key(text[lines[i][0] : lines[i][1]]) for i in candidates}
    later: frozenset[str] | None = None
    for i in candidates:
        if keys[i] in running or any(
            j != i and _side_by_side(lines[i], lines[j]) for j in candidates
        ):
            continue
        if lines[i][5] <= RUNNING_BAND or lines[i][3] >= 1 - RUNNING_BAND:
            later = ahead() if later is None else later
            if keys[i] in later:
                continue
        lines[i].append(levels[i])
    running.update(keys.values())


def _small_type_breaks(
    text: str, lines: list[list], sizes: list[float], notes: set[int], body: _BodyType
) -> list[int]:
    """Offsets of the lines that start a run of small type after body type,
    body type after small type, or a note in small type (its line in `notes`),
    where no blank line parts them from the line before already."""
    if body.size <= 0:
        return []
    small = [
        None if size <= 0 else size <= body.size * SMALL_TYPE_RATIO for size in sizes
    ]
    breaks = []
    for i in range(1, len(lines)):
        before, after = small[i - 1], small[i]
        if before is None or after is None:
            continue
        if before == after and not (after and i in notes):
            continue
        gap = text[lines[i - 1][1] : lines[i][0]]
        if gap.count("\n") == 1:  # a line break, not a word broken at a hyphen
            breaks.append(lines[i][0])
    return breaks


def _with_breaks(text: str, lines: list[list], breaks: list[int]) -> tuple[str, list]:
    """The text with a newline put before each offset of `breaks` (ascending),
    and the lines' offsets moved with it."""
    if not breaks:
        return text, lines
    pieces, last = [], 0
    for offset in breaks:
        pieces += [text[last:offset], "\n"]
        last = offset
    pieces.append(text[last:])
    moved = [
        [
            start + bisect.bisect_right(breaks, start),
            end + bisect.bisect_left(breaks, end),
            *rest,
        ]
        for start, end, *rest in lines
    ]
    return "".join(pieces), moved


def _running_key(line: str) -> str:
    return " ".join(_FIGURES.sub(" ", line).split()).casefold()


def _side_by_side(line: list, other: list) -> bool:
    """Whether two line boxes share one band of the page, apart."""
    top, bottom = max(line[3], other[3]), min(line[5], other[5])
    height = min(line[5] - line[3], other[5] - other[3])
    apart = line[4] <= other[2] or other[4] <= line[2]
    return apart and height > 0 and bottom - top > height / 2


def _mostly_unmapped(raw, textpage, text: str) -> bool:
    """Whether most characters (of a sample) come from fonts without a Unicode
    map, or are replacement characters: the text layer is then unusable."""
    indices = [
        i for i, char in enumerate(text) if not char.isspace() and char != "\x00"
    ]
    if not indices:
        return False
    step = max(1, len(indices) // MAP_ERROR_SAMPLE)
    sample = indices[::step]
    bad = sum(
        text[i] == "\ufffd" or bool(raw.FPDFText_HasUnicodeMapError(textpage, i))
        for i in sample
    )
    return bad / len(sample) > 0.5


def _clamped(line: list) -> list:
    start, end, *box = line
    return [start, end, *(round(min(max(v, 0.0), 1.0), 4) for v in box)]


def _letters(text: str) -> int:
    return sum(char.isalnum() for char in text)


# A page's first or last line: no other line starts above or ends below it
# by more than this fraction of the page.
EDGE_TOLERANCE = 0.005
_PAGE_NUMBER = re.compile(r"(?:page\s+)?[-–]?\s*(\d{1,4})\s*[-–]?", re.IGNORECASE)


def _inner_page(text: str, lines: list[list]) -> bool:
    """Whether the page is printed with a page number other than 1 (a line of
    its own, the page's first or last, in its top or bottom margin): a page
    from inside a longer work, whose largest type is a section's heading there
    ("MAIN GAME" over page 6 of a game manual), not the document's title. A
    footnote's marker on a line of its own has text below it."""
    if not lines:
        return False
    top = min(line[3] for line in lines)
    bottom = max(line[5] for line in lines)
    for start, end, _x0, y0, _x1, y1, *_ in lines:
        first = y1 <= RUNNING_BAND and y0 <= top + EDGE_TOLERANCE
        last = y0 >= 1 - RUNNING_BAND and y1 >= bottom - EDGE_TOLERANCE
        if not (first or last) or y1 <= y0:  # off the page: clamped to its edge
            continue
        number = _PAGE_NUMBER.fullmatch(text[start:end].strip())
        if number and int(number.group(1)) > 1:
            return True
    return False


def _largest_line(text: str, sized_lines: list[tuple[float, int, int]]) -> str:
    """The text of the first page's line(s) set in the largest type, when that
    type stands out from the body text; "" otherwise."""
    if len(sized_lines) < 2:
        return ""
    body = statistics.median(size for size, _, _ in sized_lines)
    largest = max(size for size, _, _ in sized_lines)
    if largest < body * 1.2:
        return ""
    parts = []
    for size, start, end in sized_lines:
        if abs(size - largest) < 0.5:
            parts.append(text[start:end].strip(HYPHENS))
        elif parts:
            break
    title = " ".join(" ".join(parts).split())
    return title if sum(c.isalpha() for c in title) >= 3 else ""


def _pages(numbers: list[int]) -> str:
    if len(numbers) == 1:
        return f"Page {numbers[0]}"
    shown = ", ".join(str(n) for n in numbers[:10])
    more = f" and {len(numbers) - 10} more" if len(numbers) > 10 else ""
    return f"Pages {shown}{more}"
