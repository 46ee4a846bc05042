"""The documentation holds to the code: every setting the code reads is in
docs/configuration.md, the commands table lists exactly the commands that
exist, every relative link resolves, and the README stays a front door."""

import ast
import builtins
import importlib
import re
from pathlib import Path

from django.conf import settings
from django.core.management import get_commands

from documents.ingestion.formats import FORMATS
from project import env

ROOT = Path(settings.BASE_DIR)
DOCS = ROOT / "docs"
README_MAX_LINES = 250
QUIRE_APPS = {"project", "documents", "mcp_endpoint", "playground", "signin", "demo"}
# Every reader project/env.py offers (env_int, env_bool, ...), so a new
# reader is seen without this list being kept by hand.
ENV_READERS = {name for name in dir(env) if name.startswith("env_")}


def names_read_by_settings() -> set[str]:
    """The environment variables project/settings.py reads: the first argument
    of every project.env reader, and of os.environ.get / os.getenv."""
    tree = ast.parse((ROOT / "project" / "settings.py").read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            func = ast.unparse(node.func)
            first = node.args[0]
            if (
                func in ENV_READERS or func in {"os.environ.get", "os.getenv"}
            ) and isinstance(first, ast.Constant):
                names.add(first.value)
        elif isinstance(node, ast.Subscript) and ast.unparse(node.value) == (
            "os.environ"
        ):
            if isinstance(node.slice, ast.Constant):
                names.add(node.slice.value)
    return names


def table_first_column(path: Path) -> list[str]:
    """The backquoted name that opens each row of the file's tables."""
    return re.findall(r"^\| `([^`]+)` \|", path.read_text(), re.MULTILINE)


def test_every_setting_the_code_reads_is_documented():
    read = names_read_by_settings()
    assert len(read) > 60  # the parser sees the settings, not an empty set
    documented = set(table_first_column(DOCS / "configuration.md"))
    assert read - documented == set(), "add these to docs/configuration.md"
    assert documented - read == set(), "docs/configuration.md names unread settings"


def test_the_commands_table_lists_exactly_the_commands_that_exist():
    existing = {
        name for name, app in get_commands().items() if app.split(".")[0] in QUIRE_APPS
    }
    assert {"ingest_worker", "server_json", "runquire"} <= existing
    listed = table_first_column(DOCS / "commands.md")
    assert len(listed) == len(set(listed)), "a command is listed twice"
    assert set(listed) - existing == set(), "docs/commands.md names missing commands"
    assert existing - set(listed) == set(), "add these to docs/commands.md"


def heading_anchors(path: Path) -> set[str]:
    """GitHub's anchors for the file's headings."""
    anchors = set()
    for heading in re.findall(r"^#+ (.+)$", without_code(path.read_text()), re.M):
        text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
        anchors.add(text.replace(" ", "-"))
    return anchors


def without_code(text: str) -> str:
    text = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    return re.sub(r"`[^`\n]*`", "", text)


def documentation() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def relative_links(path: Path) -> list[str]:
    targets = re.findall(r"\]\(([^)\s]+)\)", without_code(path.read_text()))
    return [t for t in targets if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


def test_every_relative_link_resolves():
    broken = []
    for path in documentation():
        for link in relative_links(path):
            target, _, anchor = link.partition("#")
            file = (path.parent / target).resolve() if target else path
            if not file.exists():
                broken.append(f"{path.name}: {link}")
            elif (
                anchor and file.suffix == ".md" and anchor not in heading_anchors(file)
            ):
                broken.append(f"{path.name}: {link} (no such heading)")
    assert broken == []


def test_link_checker_sees_links_and_anchors():
    """The checker finds the README's links into docs/ and the headings they
    point at, so an empty result above means something."""
    assert "docs/configuration.md" in relative_links(ROOT / "README.md")
    assert "ingestion-and-ocr" in heading_anchors(DOCS / "configuration.md")


def test_every_image_in_docs_is_shown_somewhere():
    shown = {
        (path.parent / link).resolve()
        for path in documentation()
        for link in relative_links(path)
    }
    images = sorted(DOCS.glob("*.png"))
    assert images
    assert [image.name for image in images if image not in shown] == []


def test_the_readme_is_a_front_door():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES
    assert (DOCS / "architecture.md").exists()


PRODUCTION_APPS = [
    "project",
    "documents",
    "mcp_endpoint",
    "signin",
    "playground",
    "demo",
]


def production_sources() -> list[Path]:
    return [
        path
        for app in PRODUCTION_APPS
        for path in sorted((ROOT / app).rglob("*.py"))
        if "tests" not in path.parts and "migrations" not in path.parts
    ]


def test_docstrings_and_comments_point_inside_the_repository():
    """A reader of the code can open every file it cites: nothing names a file
    beside the checkout or on the machine it was written on."""
    outside = re.compile(r"\.\./shared|/work/|/home/|/root/")
    cited = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in production_sources()
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if outside.search(line)
    ]
    assert cited == []


def test_every_exception_a_docstring_says_is_raised_exists():
    """`Raises X` names an exception the reader can find: in the module's own
    namespace (imported or defined there) or as a class defined in Quire."""
    classes = {
        node.name
        for path in production_sources()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef)
    }
    unknown = []
    for path in production_sources():
        names = re.findall(r"\bRaises? `?([A-Z]\w*(?:\.\w+)*)", path.read_text())
        if not names:
            continue
        module = importlib.import_module(
            ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(
                ".__init__"
            )
        )
        for name in names:
            head, *rest = name.split(".")
            value = getattr(module, head, getattr(builtins, head, None))
            for part in rest:
                value = getattr(value, part, None)
            if value is None and name.split(".")[-1] not in classes:
                unknown.append(f"{path.relative_to(ROOT)}: {name}")
    assert unknown == []


def test_the_formats_page_names_every_format_of_the_table():
    """docs/formats.md describes formats in prose and tables of its own; each
    format of the one table (documents.ingestion.formats.FORMATS) must appear
    in its recognition table, so a new format can't go undocumented."""
    page = (DOCS / "formats.md").read_text(encoding="utf-8")
    rows = {
        line.split("|")[1].strip()
        for line in page.splitlines()
        if line.startswith("| ") and line.count("|") > 2
    }
    missing = [f.label for f in FORMATS if f.label not in rows]
    assert missing == []
