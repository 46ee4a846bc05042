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


def module_name(path: Path, root: Path = REPO) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path, known: set[str], root: Path = REPO):
    """The modules of `known` the file imports, anywhere in it (function-level
    and TYPE_CHECKING imports too: hiding an import in a function does not
    remove the dependency)."""
    package = module_name(path, root)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            # `from package import module` imports the module.
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target:
                yield target
                break


def import_graph(app: str, root: Path = REPO) -> dict[str, set[str]]:
    paths = [
        path
        for path in (root / app).rglob("*.py")
        if "tests" not in path.relative_to(root / app).parts
    ]
    known = {module_name(path, root) for path in paths}
    graph = {}
    for path in paths:
        name = module_name(path, root)
        graph[name] = set(imported_modules(path, known, root)) - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph.get(node, ())):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


@pytest.mark.parametrize("app", sorted(APPS))
def test_no_import_cycle_inside_an_app(app):
    """No module of an app imports, directly or through others, one that
    imports it back, not even from inside a function."""
    assert [sorted(component) for component in cycles(import_graph(app))] == []


def test_the_cycle_check_finds_a_cycle_hidden_in_a_function(tmp_path):
    """The checker sees a cycle closed by a function-level or relative import,
    and leaves a module that only imports into the cycle out of it."""
    package = tmp_path / "documents"
    (package / "services").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "services" / "__init__.py").write_text("")
    (package / "a.py").write_text("from documents.services import b\n")
    (package / "services" / "b.py").write_text("from .c import f\n")
    (package / "services" / "c.py").write_text(
        "def f():\n    from documents import a\n"
    )
    (package / "d.py").write_text("import documents.a\n")
    assert cycles(import_graph("documents", tmp_path)) == [
        frozenset({"documents.a", "documents.services.b", "documents.services.c"})
    ]
