"""An allow-list sanitiser for HTML shown inside Quire's pages.

Whatever HTML reaches a page view (the page renderer's own output today, a
reader's HTML kept per page tomorrow, an MCP App's page) passes through here
last: only the elements and attributes a document's text needs survive.
Scripts, styles, frames, forms, SVG and MathML go with their content; event
handlers, `style` and every attribute not listed go; a link keeps its href
only when it is http(s), mailto or a fragment, and opens with no opener and no
referrer; images and anything else that would load a resource go (an image
leaves its alt text), so a page never calls out of Quire. Unknown elements are
unwrapped, their text kept.
"""

from html import escape
from urllib.parse import urlsplit

from lxml import etree
from lxml import html as lxml_html

# Element -> attributes it may keep (besides the global ones).
ALLOWED: dict[str, frozenset[str]] = {
    **{
        tag: frozenset()
        for tag in (
            "p br hr h1 h2 h3 h4 h5 h6 ul ol li dl dt dd blockquote pre code "
            "em strong b i u s sub sup small mark span div section article "
            "figure figcaption caption table thead tbody tfoot tr"
        ).split()
    },
    "a": frozenset({"href"}),
    "ol": frozenset({"start"}),
    "td": frozenset({"colspan", "rowspan"}),
    "th": frozenset({"colspan", "rowspan", "scope"}),
}
GLOBAL_ATTRIBUTES = frozenset({"class", "id", "lang", "dir", "title"})
# Dropped with everything inside them.
DROPPED = frozenset(
    "script style template iframe frame frameset object embed applet noscript "
    "svg math form input button select textarea option link meta base head "
    "title audio video canvas picture map portal".split()
)
# Void elements the HTML parser may take for containers (it nests what follows
# an <embed> inside it): removed, but what they seem to hold is kept and
# sanitised in turn.
DROPPED_VOID = frozenset("embed param source track area".split())
LINK_SCHEMES = frozenset({"http", "https", "mailto"})


def sanitise_html(html: str) -> str:
    """`html` (a fragment) with only allow-listed elements and attributes."""
    if not html.strip():
        return ""
    try:
        root = lxml_html.fragment_fromstring(html, create_parent="div")
    except (etree.ParserError, ValueError):
        return ""
    for node in list(root.iter()):
        if node is root or node.getparent() is None:
            continue
        if not isinstance(node.tag, str):  # comments, processing instructions
            node.drop_tree()
            continue
        tag = node.tag.lower()
        if tag in DROPPED_VOID:
            node.attrib.clear()
            node.drop_tag()
        elif tag in DROPPED:
            node.drop_tree()
        elif tag == "img":
            _replace_with_text(node, (node.get("alt") or "").strip())
        elif tag not in ALLOWED:
            node.drop_tag()
        else:
            _keep_allowed_attributes(node, ALLOWED[tag])
    root.attrib.clear()
    return escape(root.text or "", quote=False) + "".join(
        etree.tostring(child, method="html", encoding="unicode") for child in root
    )


def _keep_allowed_attributes(node, allowed: frozenset[str]) -> None:
    for name in list(node.attrib):
        if name.lower() not in allowed | GLOBAL_ATTRIBUTES:
            del node.attrib[name]
    if node.tag.lower() == "a":
        href = node.get("href", "")
        if _safe_href(href):
            node.set("rel", "noopener noreferrer")
        else:
            node.attrib.pop("href", None)


def _safe_href(href: str) -> bool:
    if href.startswith("#"):
        return True
    try:
        parts = urlsplit(href.strip())
    except ValueError:
        return False
    # Browsers ignore control characters and spaces in a scheme ("java\tscript:").
    if any(ord(char) < 33 for char in href):
        return False
    return parts.scheme.lower() in LINK_SCHEMES and bool(parts.netloc or parts.path)


def _replace_with_text(node, text: str) -> None:
    tail = node.tail or ""
    replacement = f" {text} " if text else ""
    previous = node.getprevious()
    parent = node.getparent()
    if previous is not None:
        previous.tail = (previous.tail or "") + replacement + tail
    else:
        parent.text = (parent.text or "") + replacement + tail
    parent.remove(node)
