"""Reads one PDF with PDFium in a child process: text per page and a PNG per page.

Run as a script by documents.ingestion.pdf (never imported by the web or worker
process): PDFium is C code, so a hostile or damaged file may hang it, exhaust
memory or crash it. In a child with CPU and memory limits, that costs only the
child. Imports nothing from Django.

Usage: python pdf_reader.py <pdf> <out-dir> <image-width> <max-pages> <memory-mb>
Prints one JSON object on stdout: either {"error": <code>, ...} or
{"page_count", "title", "pages": [{"number", "text", "image", "width",
"height", "has_images", "errors"}]}.
"""

import json
import resource
import signal
import sys
from pathlib import Path

# Tall pages (posters, receipts) would make huge bitmaps at a fixed width.
MAX_HEIGHT_FACTOR = 4


def _limit_memory(megabytes: int) -> None:
    if megabytes > 0:
        limit = megabytes * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _has_images(page, pdfium) -> bool:
    try:
        return any(
            obj.type == pdfium.raw.FPDF_PAGEOBJ_IMAGE
            for obj in page.get_objects(max_depth=4)
        )
    except Exception:
        return False


def _read_page(pdf, index: int, out_dir: Path, image_width: int, pdfium) -> dict:
    number = index + 1
    result = {
        "number": number,
        "text": "",
        "image": None,
        "width": None,
        "height": None,
        "has_images": False,
        "errors": [],
    }
    try:
        page = pdf[index]
    except Exception as exc:
        result["errors"].append(f"page could not be loaded ({exc})")
        return result
    try:
        textpage = page.get_textpage()
        result["text"] = textpage.get_text_bounded()
    except Exception as exc:
        result["errors"].append(f"text could not be extracted ({exc})")
    result["has_images"] = _has_images(page, pdfium)
    try:
        width, height = page.get_size()  # already rotated as displayed
        scale = min(
            image_width / width, image_width * MAX_HEIGHT_FACTOR / max(height, 1)
        )
        image = page.render(scale=scale, may_draw_forms=True).to_pil()
        path = out_dir / f"page-{number:05d}.png"
        image.save(path, "PNG", compress_level=1)
        result.update(image=path.name, width=image.width, height=image.height)
    except Exception as exc:
        result["errors"].append(f"page could not be rendered ({exc})")
    return result


def read_pdf(path: Path, out_dir: Path, image_width: int, max_pages: int) -> dict:
    """Open the PDF and read every page; errors come back as {"error": code}."""
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        code = {
            pdfium.raw.FPDF_ERR_PASSWORD: "encrypted",
            pdfium.raw.FPDF_ERR_SECURITY: "encrypted",
            pdfium.raw.FPDF_ERR_FILE: "unreadable",
        }.get(exc.err_code, "corrupt")
        return {"error": code, "detail": str(exc)}
    page_count = len(pdf)
    if page_count == 0:
        return {"error": "no_pages"}
    if page_count > max_pages:
        return {"error": "too_many_pages", "page_count": page_count}
    try:
        pdf.init_forms()
    except Exception:
        pass  # forms are a nicety for rendering; the pages still read without
    try:
        title = pdf.get_metadata_dict().get("Title", "")
    except Exception:
        title = ""
    pages = [
        _read_page(pdf, index, out_dir, image_width, pdfium)
        for index in range(page_count)
    ]
    return {"page_count": page_count, "title": title, "pages": pages}


def main(argv: list[str]) -> int:
    source, out_dir, image_width, max_pages, memory_mb = argv
    # Ctrl-C reaches the whole process group; the worker decides whether to
    # stop, and a reader killed by it would report a healthy PDF as corrupt.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _limit_memory(int(memory_mb))
    result = read_pdf(Path(source), Path(out_dir), int(image_width), int(max_pages))
    sys.stdout.write(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
