"""The dependency direction: documents (the domain) imports nothing above it."""

import ast
from pathlib import Path

import documents

ABOVE = ("mcp_endpoint", "playground", "demo", "project")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_documents_imports_nothing_from_the_apps_above_it():
    """Outside its tests, no module of documents imports mcp_endpoint, the
    playground, the demo or the project package (the REST API included)."""
    root = Path(documents.__file__).parent
    offenders = {}
    for path in root.rglob("*.py"):
        if "tests" in path.relative_to(root).parts:
            continue
        bad = {name for name in imported_modules(path) if name.split(".")[0] in ABOVE}
        if bad:
            offenders[str(path.relative_to(root))] = sorted(bad)
    assert offenders == {}
