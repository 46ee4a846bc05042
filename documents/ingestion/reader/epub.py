"""EPUB e-books (2 and 3): the spine's XHTML documents in reading order.

Read with zipfile and lxml: META-INF/container.xml names the package document,
whose manifest and spine give the chapters in order and whose metadata gives
the title. Chapters become Markdown, split into pages at headings by the parent.
"""

import posixpath
import zipfile
from urllib.parse import unquote

from lxml import etree

from documents.ingestion.reader.markup import parse_html, to_markdown
from documents.ingestion.reader.packages import Unpacking, open_package
from documents.ingestion.reader.protocol import Refusal, Request, emit, page_message

OPF = "{http://www.idpf.org/2007/opf}"
DC = "{http://purl.org/dc/elements/1.1/}"
CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"
HTML_TYPES = {"application/xhtml+xml", "text/html", "application/x-dtbook+xml"}


def read_epub(request: Request) -> None:
    """The book's chapters in spine order, every member read counted against
    the unpacking budget (a chapter the spine lists twice counts twice)."""
    unpacking = Unpacking(request)
    try:
        with open_package(request.path) as archive:
            text, title = _book(archive, unpacking)
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise Refusal(
            "corrupt",
            f"The EPUB is corrupt or truncated: its zip structure can't be read "
            f"({exc}).",
        ) from None
    if not text.strip():
        raise Refusal("empty", "The e-book has no text.")
    emit({"kind": "document", "title": title, "title_candidate": ""})
    emit(page_message(1, text, markdown=True, split=True))
    emit({"kind": "end", "notes": []})


def _xml(data: bytes):
    parser = etree.XMLParser(resolve_entities=False, no_network=True, recover=True)
    try:
        return etree.fromstring(data, parser=parser)
    except etree.XMLSyntaxError:
        return None


def _package_path(archive: zipfile.ZipFile, unpacking: Unpacking) -> str:
    names = archive.namelist()
    if "META-INF/container.xml" in names:
        root = _xml(unpacking.read(archive, "META-INF/container.xml"))
        if root is not None:
            for rootfile in root.iter(f"{CONTAINER}rootfile"):
                if rootfile.get("full-path"):
                    return rootfile.get("full-path")
    candidates = [name for name in names if name.lower().endswith(".opf")]
    if not candidates:
        raise Refusal(
            "corrupt", "This is not an EPUB: it has no package document (.opf)."
        )
    return candidates[0]


def _book(archive: zipfile.ZipFile, unpacking: Unpacking) -> tuple[str, str]:
    package_path = _package_path(archive, unpacking)
    try:
        package = _xml(unpacking.read(archive, package_path))
    except KeyError:
        raise Refusal(
            "corrupt", f"The EPUB's package document {package_path} is missing."
        ) from None
    if package is None:
        raise Refusal("corrupt", "The EPUB's package document can't be read.")
    base = posixpath.dirname(package_path)
    title = ""
    for element in package.iter(f"{DC}title"):
        title = " ".join((element.text or "").split())
        break
    # The book's authors and description head its first page, as on a cover.
    about = []
    authors = [
        " ".join((element.text or "").split())
        for element in package.iter(f"{DC}creator")
    ]
    if any(authors):
        about.append("Authors: " + ", ".join(author for author in authors if author))
    for element in package.iter(f"{DC}description"):
        description = " ".join((element.text or "").split())
        if description:
            about.append(description)
    manifest = {
        item.get("id"): item
        for item in package.iter(f"{OPF}item")
        if item.get("id") and item.get("href")
    }
    order = [
        ref.get("idref")
        for ref in package.iter(f"{OPF}itemref")
        if ref.get("linear", "yes") != "no"
    ]
    if not order:  # no spine: every XHTML document, in manifest order
        order = [
            key
            for key, item in manifest.items()
            if item.get("media-type") in HTML_TYPES
        ]
    chapters = []
    for idref in order:
        item = manifest.get(idref)
        if item is None or item.get("media-type") not in HTML_TYPES:
            continue
        name = posixpath.normpath(posixpath.join(base, unquote(item.get("href"))))
        try:
            info = archive.getinfo(name)
        except KeyError:
            continue
        tree = parse_html(unpacking.read(archive, info))
        if tree is None:
            continue
        body = tree.find("body")
        chapter = to_markdown(body if body is not None else tree)
        if chapter.strip():
            chapters.append(chapter)
    if chapters and about:
        chapters[0] = "\n\n".join([*about, chapters[0]])
    return "\n\n".join(chapters), title
