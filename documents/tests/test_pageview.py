"""The page view's renderer and sanitiser (documents.pageview)."""

from types import SimpleNamespace

import pytest
from django.test import RequestFactory

from documents.ingestion.formats import DOCX, PDF, PLAIN_TEXT, XLSX
from documents.pageview import PageHeader, back_url, render_page_html, sanitise_html


def page(text: str) -> SimpleNamespace:
    return SimpleNamespace(text=text)


# Sanitiser


@pytest.mark.parametrize(
    "hostile",
    [
        "<script>alert(1)</script>",
        "<SCRIPT SRC=//evil.example/x.js></SCRIPT>",
        "<style>body{background:url(//evil.example/x)}</style>",
        "<iframe src='https://evil.example'></iframe>",
        "<object data='x.swf'></object><embed src='x.swf'>",
        "<svg><script>alert(1)</script></svg>",
        "<math><mi xlink:href='javascript:alert(1)'>x</mi></math>",
        "<form action='https://evil.example'><input name=q></form>",
        "<link rel=stylesheet href='https://evil.example/x.css'>",
        "<meta http-equiv=refresh content='0;url=https://evil.example'>",
        "<base href='https://evil.example/'>",
        "<template><img src=x onerror=alert(1)></template>",
        "<video src=v.mp4><source src=v.webm></video><audio src=a.mp3></audio>",
        "<embed src=x.swf><param name=a value=b>",
    ],
)
def test_the_sanitiser_drops_scripts_and_active_content(hostile):
    """Scripts, styles, frames, plugins, SVG, MathML, forms and document-level
    elements go with their content; the text around them stays."""
    clean = sanitise_html(f"<p>before</p>{hostile}<p>after</p>")
    assert clean == "<p>before</p><p>after</p>"


def test_the_sanitiser_drops_event_handlers_and_styles():
    """Only allow-listed attributes survive: no on* handler, no style (which
    can load a URL), no data attributes; the element and its text stay."""
    clean = sanitise_html(
        '<p onclick="alert(1)" onmouseover=alert(2) style="background:url(//x)" '
        'data-x="1" class="lead" id="intro">Torque <b onload=x>values</b></p>'
    )
    assert clean == '<p class="lead" id="intro">Torque <b>values</b></p>'


@pytest.mark.parametrize(
    "href",
    [
        "javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        " javascript:alert(1)",
        "java\tscript:alert(1)",
        "jav&#x09;ascript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "vbscript:msgbox(1)",
        "file:///etc/passwd",
        "//evil.example/x",
    ],
)
def test_the_sanitiser_keeps_no_script_or_local_links(href):
    """A link whose href is not http(s), mailto or a fragment loses its href
    (its text stays)."""
    clean = sanitise_html(f'<p><a href="{href}">read</a></p>')
    assert clean == "<p><a>read</a></p>"


def test_the_sanitiser_keeps_web_links_without_opener_or_referrer():
    clean = sanitise_html('<a href="https://example.org/a?b=1&amp;c=2">x</a>')
    assert clean == (
        '<a href="https://example.org/a?b=1&amp;c=2" rel="noopener noreferrer">x</a>'
    )
    assert sanitise_html('<a href="#note-1">1</a>') == (
        '<a href="#note-1" rel="noopener noreferrer">1</a>'
    )


def test_the_sanitiser_loads_no_external_resource():
    """Images (any source) become their alt text; unknown elements are
    unwrapped, their text kept; nothing with a src or srcset remains."""
    clean = sanitise_html(
        '<p>See <img src="https://tracker.example/p.gif" alt="the torque chart">'
        ' and <img srcset="https://x.example/a.png 2x"> <video src="v.mp4">v</video>'
        "<custom-tag>kept</custom-tag> <font color=red>too</font></p>"
    )
    assert "src" not in clean and "tracker" not in clean
    assert clean == "<p>See  the torque chart  and  kept too</p>"


def test_the_sanitiser_escapes_text():
    assert sanitise_html("a &lt; b &amp; <i>c</i>") == "a &lt; b &amp; <i>c</i>"


# Rendering text formats as the document looks

MARKDOWN_PAGE = "\n".join(
    [
        "# Landing gear",
        "",
        "Check the <script>alert(1)</script> torque.",
        "Then the pins.",
        "",
        "- first",
        "  - nested",
        "- second",
        "",
        "1. one",
        "2. two",
        "",
        "| Part | Torque \\| Nm |",
        "| --- | --- |",
        "| Nut | 40 |",
        "",
        "```",
        "x < y",
        "```",
        "",
        "> quoted line",
    ]
)


def test_a_text_format_page_is_rendered_as_its_structure():
    """A Word (or other text-format) page's Markdown comes out as headings,
    paragraphs with their line breaks, nested lists, a table with its header
    row (escaped bars unescaped), code and quotes; markup in the text is text."""
    html = render_page_html(page(MARKDOWN_PAGE), content_type=DOCX)
    assert html == (
        "<h1>Landing gear</h1>"
        "<p>Check the &lt;script&gt;alert(1)&lt;/script&gt; torque.<br>"
        "Then the pins.</p>"
        "<ul><li>first<ul><li>nested</li></ul></li><li>second</li></ul>"
        "<ol><li>one</li><li>two</li></ol>"
        '<div class="quire-table"><table><thead><tr><th>Part</th>'
        "<th>Torque | Nm</th></tr></thead><tbody><tr><td>Nut</td><td>40</td></tr>"
        "</tbody></table></div>"
        "<pre><code>x &lt; y</code></pre>"
        "<blockquote><p>quoted line</p></blockquote>"
    )


def test_the_quoted_passage_is_marked_in_place():
    """The span (offsets into the page text) is wrapped in <mark> where it
    sits, across a line break and into the next block; the first mark carries
    the id the page scrolls to."""
    text = MARKDOWN_PAGE
    start = text.index("torque.")
    end = text.index("first") + len("fi")
    html = render_page_html(page(text), [(start, end)], content_type=DOCX)
    assert (
        '<mark class="quire-mark" id="quote">torque.</mark><br>'
        '<mark class="quire-mark">Then the pins.</mark></p>'
        '<ul><li><mark class="quire-mark">fi</mark>rst'
    ) in html
    assert html.count('id="quote"') == 1


def test_a_quote_inside_a_table_cell_is_marked_in_the_cell():
    text = "# Sheet1\n\n| Part | Torque |\n| --- | --- |\n| Nut | 40 Nm |"
    start = text.index("40 Nm")
    html = render_page_html(page(text), [(start, start + 5)], content_type=XLSX)
    assert '<td><mark class="quire-mark" id="quote">40 Nm</mark></td>' in html


def test_a_plain_page_keeps_its_lines_and_marks_the_quote():
    """A PDF's or text file's page is its paragraphs (line breaks kept by the
    stylesheet), not Markdown: a "#" line stays a line."""
    text = "# not a heading\nline two\n\nsecond paragraph"
    start = text.index("line two")
    html = render_page_html(page(text), [(start, start + 4)], content_type=PDF)
    assert html == (
        '<p class="quire-plain"># not a heading\n'
        '<mark class="quire-mark" id="quote">line</mark> two</p>'
        '<p class="quire-plain">second paragraph</p>'
    )
    assert "<h1>" not in render_page_html(page(text), content_type=PLAIN_TEXT)


def test_a_pdf_pages_marked_lines_are_headings():
    """A PDF page's lines marked as headings (a seventh item in its line
    entry, the level) are headings of that level, set small like the text
    around them; two marked lines of one level in a row are one heading; the
    quote is still marked inside the body under them."""
    text = (
        "Proposed Design Changes\nThe FAA proposes\nfour changes.\nCosts of\nCompliance"
    )

    def box(phrase: str, *level: int) -> list:
        start = text.index(phrase)
        return [start, start + len(phrase), 0.1, 0.1, 0.9, 0.12, *level]

    lines = [
        box("Proposed Design Changes", 6),
        box("The FAA proposes"),
        box("four changes."),
        box("Costs of", 4),
        box("Compliance", 4),
    ]
    start = text.index("four")
    html = render_page_html(
        SimpleNamespace(text=text, lines=lines), [(start, start + 4)], content_type=PDF
    )
    assert html == (
        '<h6 class="quire-plain">Proposed Design Changes</h6>'
        '<p class="quire-plain">The FAA proposes\n'
        '<mark class="quire-mark" id="quote">four</mark> changes.</p>'
        '<h4 class="quire-plain">Costs of\nCompliance</h4>'
    )


def test_a_stale_or_empty_span_marks_nothing():
    for span in [(500, 900), (3, 3), (-1, 2), (5, 2)]:
        html = render_page_html(page("short text"), [span], content_type=DOCX)
        assert html == "<p>short text</p>"


def test_no_mark_id_when_the_caller_scrolls_elsewhere():
    html = render_page_html(page("abc"), [(0, 1)], content_type=DOCX, mark_id="")
    assert html == '<p><mark class="quire-mark">a</mark>bc</p>'


# The way back


@pytest.mark.parametrize(
    ("referer", "expected"),
    [
        ("http://testserver/playground/?q=1", "http://testserver/playground/?q=1"),
        ("https://evil.example/phish", "/fallback/"),
        ("//evil.example/phish", "/fallback/"),
        ("javascript:alert(1)", "/fallback/"),
        ("", "/fallback/"),
        ("http://testserver/admin/documents/document/7/pages/2/", "/fallback/"),
    ],
)
def test_the_back_link_only_leads_to_this_site(referer, expected):
    """The Referer becomes the back link only when it is a page of this site
    (and not one of the pages the view pages through)."""
    request = RequestFactory().get("/citations/x/page", HTTP_REFERER=referer)
    assert (
        back_url(
            request,
            fallback="/fallback/",
            unless_under="/admin/documents/document/7/pages/",
        )
        == expected
    )


# The header


class _Doc(SimpleNamespace):
    def __str__(self) -> str:
        return self.title


def doc(content_type: str, **fields) -> _Doc:
    values = dict(title="Manual", page_count=12, revision=3, source_id=None)
    values.update(source_url="", **fields)
    return _Doc(content_type=content_type, **values)


def test_a_pdf_header_opens_the_original_at_the_page():
    header = PageHeader.for_page(doc(PDF), 7, original_url="/o/1", back_url="/b")
    assert (header.original_url, header.original_at_page) == ("/o/1#page=7", True)
    assert (header.title, header.number, header.page_count) == ("Manual", 7, 12)
    assert (header.revision, header.back_url, header.source) == (3, "/b", None)


def test_other_formats_open_the_original_itself():
    header = PageHeader.for_page(doc(DOCX), 2, original_url="/o/1")
    assert (header.original_url, header.original_at_page) == ("/o/1", False)


def test_an_older_revisions_header_names_the_newer_and_no_page_count():
    header = PageHeader.for_page(
        doc(PDF), 2, original_url="/o/1", revision=1, newer_revision=3
    )
    assert (header.revision, header.newer_revision, header.page_count) == (1, 3, None)
