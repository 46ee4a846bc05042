"""The dependency direction, visible in the tree:
project -> {playground, demo, signin} -> mcp_endpoint -> documents.

Outside their tests, no app imports one above it, and no module imports a
private name (`_x`) of another module."""

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# What each app may import of the others (besides itself).
MAY_IMPORT = {
    "documents": set(),
    "mcp_endpoint": {"documents"},
    "signin": {"documents"},
    "playground": {"documents", "mcp_endpoint"},
    "demo": {"documents", "mcp_endpoint"},
}
APPS = {*MAY_IMPORT, "project"}


def modules(app: str):
    for path in (REPO / app).rglob("*.py"):
        if "tests" not in path.relative_to(REPO / app).parts:
            yield path


def imports(path: Path):
    """(module, names) of every absolute import in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module, [alias.name for alias in node.names]


@pytest.mark.parametrize("app", sorted(MAY_IMPORT))
def test_no_app_imports_one_above_it(app):
    offenders = {}
    for path in modules(app):
        above = {
            module
            for module, _ in imports(path)
            if module.split(".")[0] in APPS - {app} - MAY_IMPORT[app]
        }
        if above:
            offenders[str(path.relative_to(REPO))] = sorted(above)
    assert offenders == {}


def test_no_module_imports_another_modules_private_names():
    offenders = []
    for app in sorted(APPS):
        for path in modules(app):
            for module, names in imports(path):
                if module.split(".")[0] not in APPS:
                    continue
                private = [name for name in names if name.startswith("_")]
                if private:
                    offenders.append(f"{path.relative_to(REPO)}: {module} {private}")
    assert offenders == []
