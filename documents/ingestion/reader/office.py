"""Word, PowerPoint and Excel files (Office Open XML) as Markdown pages.

- Word (.docx) through mammoth (text boxes, footnotes, tables, lists, Strict
  OOXML included), then to Markdown; split into pages at headings by the parent.
- PowerPoint (.pptx) through python-pptx: one page per slide, with its title,
  text, tables, chart data, pictures' alt text and speaker notes.
- Excel (.xlsx) through openpyxl (read-only, cached values of formulas): one
  page per worksheet, its used cells as a Markdown table.

Images inside Office files are not read (no OCR there).
"""

import datetime
import zipfile
from collections.abc import Callable

from documents.ingestion.reader.markup import markdown_table, parse_html, to_markdown
from documents.ingestion.reader.packages import Unpacking
from documents.ingestion.reader.protocol import Refusal, Request, emit, page_message

# More cells than this in one workbook are left out (the page says so).
MAX_CELLS = 2_000_000


def read_docx(request: Request) -> None:
    _read_package(request, _read_docx)


def read_pptx(request: Request) -> None:
    _read_package(request, _read_pptx)


def read_xlsx(request: Request) -> None:
    _read_package(request, _read_xlsx)


def _read_package(request: Request, reader: Callable[[Request, str], None]) -> None:
    """Read an Office package within its unpacking budget, a damaged one
    refused with the format's name."""
    unpacking = Unpacking(request)
    unpacking.charge_every_member(request.path)
    try:
        reader(request, core_title(request.path, unpacking))
    except Refusal:
        raise
    except (zipfile.BadZipFile, KeyError, ValueError, TypeError, AttributeError) as e:
        name = request.format_name.split(" (")[0]
        raise Refusal(
            "corrupt",
            f"The file is damaged and can't be read as {name} "
            f"({type(e).__name__}: {str(e)[:200]}).",
        ) from None


def core_title(path: str, unpacking: Unpacking) -> str:
    """dc:title from docProps/core.xml, or ""."""
    from lxml import etree

    try:
        with zipfile.ZipFile(path) as archive:
            data = unpacking.read(archive, "docProps/core.xml")
    except (KeyError, zipfile.BadZipFile, OSError):
        return ""
    parser = etree.XMLParser(resolve_entities=False, no_network=True)
    try:
        root = etree.fromstring(data, parser=parser)
    except etree.XMLSyntaxError:
        return ""
    for element in root.iter("{http://purl.org/dc/elements/1.1/}title"):
        return (element.text or "").strip()
    return ""


# Word


_STYLE_MAP = "\n".join(
    [
        "p[style-name='Title'] => h1:fresh",
        "p[style-name='Subtitle'] => h2:fresh",
        "p[style-name='Heading 1'] => h1:fresh",
        "p[style-name='Heading 2'] => h2:fresh",
        "p[style-name='Heading 3'] => h3:fresh",
    ]
)


def _read_docx(request: Request, title: str) -> None:
    import mammoth

    def keep_alt_text(image) -> dict:
        # The picture itself is not read; its description is kept as text.
        return {"alt": image.alt_text or ""}

    with open(request.path, "rb") as handle:
        result = mammoth.convert_to_html(
            handle,
            style_map=_STYLE_MAP,
            convert_image=mammoth.images.img_element(keep_alt_text),
        )
    tree = parse_html(f"<html><body>{result.value}</body></html>")
    text = to_markdown(tree) if tree is not None else ""
    if not text.strip():
        raise Refusal(
            "empty",
            "The Word document has no text"
            + (
                " (only images, which are not read)." if "<img" in result.value else "."
            ),
        )
    emit({"kind": "document", "title": title, "title_candidate": ""})
    emit(page_message(1, text, markdown=True, split=True))
    emit({"kind": "end", "notes": []})


# PowerPoint


def _read_pptx(request: Request, title: str) -> None:
    from pptx import Presentation

    presentation = Presentation(request.path)
    slides = list(presentation.slides)
    if not slides:
        raise Refusal("empty", "The presentation has no slides.")
    if len(slides) > request.max_pages:
        raise Refusal("too_many_pages", page_count=len(slides))
    texts = [_slide_text(slide) for slide in slides]
    if not any(text.strip() for text in texts):
        raise Refusal("empty", "The presentation has no text on its slides.")
    first_title = next((_title_of(slide) for slide in slides if _title_of(slide)), "")
    emit(
        {
            "kind": "document",
            "title": title,
            "title_candidate": first_title,
            "page_count": len(slides),
        }
    )
    for number, text in enumerate(texts, start=1):
        emit(page_message(number, text, markdown=True, self_contained=True))
    emit({"kind": "end", "notes": []})


def _title_of(slide) -> str:
    try:
        shape = slide.shapes.title
    except (KeyError, AttributeError):
        return ""
    return " ".join(shape.text_frame.text.split()) if shape is not None else ""


def _slide_text(slide) -> str:
    blocks: list[str] = []
    title = _title_of(slide)
    if title:
        blocks.append(f"# {title}")
    try:
        title_id = slide.shapes.title.shape_id if slide.shapes.title else None
    except (KeyError, AttributeError):
        title_id = None
    for shape in _reading_order(slide.shapes):
        if getattr(shape, "shape_id", None) == title_id:
            continue
        blocks.extend(_shape_blocks(shape))
    notes = _notes(slide)
    if notes:
        blocks.append(f"Notes: {notes}")
    return "\n\n".join(block for block in blocks if block.strip())


def _reading_order(shapes) -> list:
    def position(shape) -> tuple[int, int]:
        return (shape.top or 0, shape.left or 0)

    try:
        return sorted(shapes, key=position)
    except (TypeError, ValueError):
        return list(shapes)


def _shape_blocks(shape) -> list[str]:
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    blocks: list[str] = []
    try:
        kind = shape.shape_type
    except (NotImplementedError, KeyError, ValueError):
        kind = None
    if kind == MSO_SHAPE_TYPE.GROUP:
        for child in _reading_order(shape.shapes):
            blocks.extend(_shape_blocks(child))
        return blocks
    if getattr(shape, "has_table", False):
        rows = [
            [" ".join(cell.text.split()).replace("|", "\\|") for cell in row.cells]
            for row in shape.table.rows
        ]
        blocks.append(markdown_table(rows))
    if getattr(shape, "has_chart", False):
        blocks.append(_chart_text(shape.chart))
    if getattr(shape, "has_text_frame", False) and shape.has_text_frame:
        lines = []
        for paragraph in shape.text_frame.paragraphs:
            text = " ".join(paragraph.text.split())
            if text:
                indent = "  " * (paragraph.level or 0)
                lines.append(f"{indent}{text}")
        if lines:
            blocks.append("\n".join(lines))
    alt = _alt_text(shape)
    if alt and kind == MSO_SHAPE_TYPE.PICTURE:
        blocks.append(f"Picture: {alt}")
    return blocks


def _alt_text(shape) -> str:
    try:
        properties = shape._element.xpath(".//p:cNvPr")
    except Exception:
        return ""
    for element in properties:
        return " ".join((element.get("descr") or "").split())
    return ""


def _chart_text(chart) -> str:
    lines = []
    try:
        if chart.has_title and chart.chart_title.has_text_frame:
            title = " ".join(chart.chart_title.text_frame.text.split())
            if title:
                lines.append(f"Chart: {title}")
        plot = chart.plots[0]
        categories = [str(c) for c in plot.categories]
        series = list(plot.series)
        rows = [["", *[s.name or "" for s in series]]]
        for index, category in enumerate(categories):
            rows.append(
                [category, *[_cell(_value_at(s.values, index)) for s in series]]
            )
        if len(rows) > 1:
            lines.append(markdown_table(rows))
    except (IndexError, KeyError, ValueError, TypeError, AttributeError):
        pass
    return "\n\n".join(lines)


def _value_at(values, index: int):
    try:
        return values[index]
    except IndexError:
        return None


def _notes(slide) -> str:
    try:
        if not slide.has_notes_slide:
            return ""
        frame = slide.notes_slide.notes_text_frame
    except (KeyError, AttributeError):
        return ""
    return " ".join(frame.text.split()) if frame is not None else ""


# Excel


def _read_xlsx(request: Request, title: str) -> None:
    from openpyxl import load_workbook

    workbook = load_workbook(
        request.path, read_only=True, data_only=True, keep_links=False
    )
    try:
        sheets = list(workbook.worksheets)
        cells = 0
        pages: list[tuple[str, str]] = []
        truncated = False
        for sheet in sheets:
            rows: list[list[str]] = []
            for values in sheet.iter_rows(values_only=True):
                cells += len(values)
                if cells > MAX_CELLS:
                    truncated = True
                    break
                row = [_cell(value) for value in values]
                while row and not row[-1]:
                    row.pop()
                if row:
                    rows.append(row)
            table = markdown_table(rows)
            pages.append((sheet.title, table))
            if truncated:
                break
    finally:
        workbook.close()
    if not any(table for _, table in pages):
        raise Refusal("empty", "The workbook has no cells with values.")
    emit(
        {
            "kind": "document",
            "title": title,
            "title_candidate": "",
            "page_count": len(pages),
        }
    )
    for number, (name, table) in enumerate(pages, start=1):
        text = f"# {name}\n\n{table}" if table else f"# {name}"
        emit(page_message(number, text, markdown=True, self_contained=True))
    notes = []
    if truncated:
        notes.append(
            f"Only the first {MAX_CELLS:,} cells of the workbook were read; "
            "the sheets after that are left out."
        )
    emit({"kind": "end", "notes": notes})


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, datetime.datetime):
        if value.time() == datetime.time(0, 0):
            return value.date().isoformat()
        return value.isoformat(sep=" ", timespec="seconds")
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.10g}"
    text = " ".join(str(value).split())
    return text.replace("|", "\\|")
