"""PDF pages with PDFium: text with a box per line, a PNG, OCR where needed.

Text is built character by character from PDFium's text page, so that each
line's box (the union of its characters' boxes) goes with character offsets
into the text. PDFium marks a hyphen that ends a line with U+0002 and starts the
next line right after it; such a hyphen ends a line here too.

A page's text is sent before its image is drawn, so that the parent chunks and
embeds it meanwhile; the image follows in a message of its own. A page whose
text layer is missing or unusable (most characters from fonts without a
Unicode map) is drawn first, then rendered at 300 dpi and read by OCR. Rendering is
progressive: a page that takes longer than the page time limit to draw stops
drawing and is kept without an image, and after a few such pages the rest of
the document is not drawn at all. Past the soft deadline nothing more is drawn
or read by OCR, so the text of every page still comes back in time.
"""

import ctypes
import re
import statistics
from pathlib import Path

from documents.ingestion.reader import ocr
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
            text, lines, unusable = self._text(page, first=index == 0)
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

    def _text(self, page, *, first: bool) -> tuple[str, list, bool]:
        raw = self.raw
        textpage = page.get_textpage()
        count = raw.FPDFText_CountChars(textpage)
        if count <= 0:
            return "", [], False
        text = _page_text(raw, textpage, count)
        to_device = _DeviceMapper(page, raw)
        rect = raw.FS_RECTF()
        lines: list[list] = []
        sized_lines: list[tuple[float, int, int]] = []  # page 1: type size per line
        start = 0
        for match in _LINE_END.finditer(text + "\n"):
            end = match.end() if match.group() in HYPHENS else match.start()
            if text[start:end].strip():
                box = _line_box(raw, textpage, text, start, end, rect, to_device)
                if box is not None:
                    lines.append([start, end, *box])
                    # Vertical lines (an arXiv stamp in the margin) are no title.
                    if first and box[2] - box[0] > box[3] - box[1]:
                        size = _type_size(raw, textpage, text, start, end)
                        if size:
                            sized_lines.append((size, start, end))
            start = match.end()
        unusable = _mostly_unmapped(raw, textpage, text)
        if first and not unusable:
            self.title_candidate = _largest_line(text, sized_lines)
        return text, [_clamped(line) for line in lines], unusable

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


def _type_size(raw, textpage, text: str, start: int, end: int) -> float:
    """The median type size of a line, from a sample of its characters."""
    indices = [i for i in range(start, end) if not text[i].isspace()]
    step = max(1, len(indices) // SIZE_SAMPLE)
    sizes = [raw.FPDFText_GetFontSize(textpage, i) for i in indices[::step]]
    return statistics.median(sizes) if sizes else 0.0


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
