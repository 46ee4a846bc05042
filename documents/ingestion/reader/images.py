"""Page images: compact PNGs held to a byte budget, and image files as pages.

A page image is a palette PNG (256 colours, the look of the page kept, about a
quarter of the bytes of a true-colour PNG of a text page) or a greyscale PNG.
The whole document's images share a budget proportional to the input file, so
a small file can't turn into hundreds of megabytes of PNGs (a 316 kB PDF
drawing one noise image on 100 pages did, at 4 MB a page): a page that needs
more than its share is stored smaller, and past the budget without an image.
"""

import io
import math
from pathlib import Path

from PIL import Image, ImageOps, ImageSequence

from documents.ingestion.reader import ocr
from documents.ingestion.reader.protocol import Refusal, Request, emit, page_message

# A page may take up to this many times its even share of what is left.
SHARE_FACTOR = 4
MIN_WIDTH = 200
# Larger images are refused before they are decoded (Pillow's bomb guard).
MAX_IMAGE_PIXELS = 150_000_000


def compact_png(image: Image.Image) -> bytes:
    """The image as a small PNG: greyscale stays greyscale, colour becomes a
    256-colour palette."""
    if image.mode in ("1", "L", "LA", "I", "I;16", "F"):
        image = image.convert("L")
    else:
        image = image.convert("RGB").quantize(256, method=Image.Quantize.FASTOCTREE)
    buffer = io.BytesIO()
    # Level 3: a tenth larger than level 6, a third quicker to write.
    image.save(buffer, "PNG", compress_level=3)
    return buffer.getvalue()


class ImageBudget:
    """Bytes of page images one document may still store."""

    def __init__(self, total_bytes: int, pages: int, *, min_width: int):
        self.left = total_bytes
        self.pages_left = max(1, pages)
        self.min_width = min_width
        self.reduced: list[int] = []
        self.dropped: list[int] = []

    def save(
        self, image: Image.Image, path: Path, number: int
    ) -> tuple[int, int] | None:
        """Write the page's PNG within its share; its size, or None if no image
        fits. Counts the page as done either way."""
        share = min(self.left, SHARE_FACTOR * self.left / self.pages_left)
        self.pages_left = max(1, self.pages_left - 1)
        data = compact_png(image)
        while len(data) > share:
            factor = math.sqrt(share / len(data)) * 0.9
            width = int(image.width * factor)
            if width < self.min_width:
                self.dropped.append(number)
                return None
            image = image.resize(
                (width, max(1, int(image.height * factor))), Image.Resampling.BILINEAR
            )
            data = compact_png(image)
            if number not in self.reduced:
                self.reduced.append(number)
        path.write_bytes(data)
        self.left -= len(data)
        return image.width, image.height

    def notes(self) -> list[str]:
        notes = []
        if self.reduced:
            notes.append(
                f"{_pages(self.reduced)} stored at a lower resolution: the page "
                "images would have taken far more space than the file itself."
            )
        if self.dropped:
            notes.append(
                f"{_pages(self.dropped)} kept without an image: the document's "
                "budget for page images was used up."
            )
        return notes


def _pages(numbers: list[int]) -> str:
    if len(numbers) == 1:
        return f"Page {numbers[0]} was"
    shown = ", ".join(str(n) for n in numbers[:10])
    more = f" and {len(numbers) - 10} more" if len(numbers) > 10 else ""
    return f"Pages {shown}{more} were"


def fit_width(image: Image.Image, width: int) -> Image.Image:
    if image.width <= width:
        return image
    height = max(1, round(image.height * width / image.width))
    return image.resize((width, height), Image.Resampling.LANCZOS)


def read_image_file(request: Request) -> None:
    """A PNG, JPEG or TIFF (every frame of a multi-page TIFF a page): the image
    is the page image, and its text is read by OCR."""
    Image.MAX_IMAGE_PIXELS = MAX_IMAGE_PIXELS
    try:
        source = Image.open(request.path)
        source.load()
    except Image.DecompressionBombError:
        raise Refusal(
            "too_large",
            f"The image is larger than {MAX_IMAGE_PIXELS // 1_000_000} million "
            "pixels; scale it down and upload it again.",
        ) from None
    except (OSError, ValueError, SyntaxError, EOFError) as exc:
        raise Refusal("corrupt", f"The image is damaged and can't be read ({exc}).")
    frames = getattr(source, "n_frames", 1)
    if frames > request.max_pages:
        raise Refusal("too_many_pages", page_count=frames)
    emit({"kind": "document", "title": "", "title_candidate": "", "page_count": frames})
    engine = ocr.Engine.for_request(request)
    budget = ImageBudget(
        request.image_budget_bytes,
        frames,
        min_width=min(MIN_WIDTH, request.image_width),
    )
    notes: list[str] = []
    for number, frame in enumerate(ImageSequence.Iterator(source), start=1):
        notes_here: list[str] = []
        try:
            frame = ImageOps.exif_transpose(frame.copy())
        except (OSError, ValueError, SyntaxError) as exc:
            emit(
                page_message(number, notes=[f"the image could not be decoded ({exc})"])
            )
            continue
        text, lines = "", []
        result = engine.read(frame, number=number, dpi=_dpi(frame))
        if result is not None:
            text, lines = result.text, result.lines
        shown = fit_width(frame, request.image_width)
        name = f"page-{number:05d}.png"
        size = budget.save(shown, Path(request.out_dir) / name, number)
        emit(
            page_message(
                number,
                text,
                lines=lines,
                image=name if size else None,
                width=size[0] if size else None,
                height=size[1] if size else None,
                has_images=True,
                ocr=result is not None,
                notes=notes_here,
            )
        )
    notes.extend(engine.notes())
    notes.extend(budget.notes())
    emit({"kind": "end", "notes": notes})


def _dpi(image: Image.Image) -> int:
    dpi = image.info.get("dpi")
    try:
        value = int(round(float(dpi[0]))) if dpi else 0
    except (TypeError, ValueError, IndexError):
        value = 0
    return value if 70 <= value <= 1200 else 300
