"""harvest's rooms: no import cycle, no file over 500 lines, and docs/architecture.md true to the code.

Read from the source with `ast`, never imported: an import inside a function counts as much as one at the top.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from conftest import ROOT

HARVEST = ROOT / "harvest"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
MAX_LINES = 500


# -- the import graph ----------------------------------------------------------------------------------------------


def module_name(path: Path, root: Path) -> str:
    """harvest/cli/__init__.py -> harvest.cli; harvest/bench/plan.py -> harvest.bench.plan."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(name: str, path: Path, modules: set[str]) -> set[str]:
    """The modules of `modules` that `name` (the module at `path`) imports anywhere in its source.

    `from P import N` imports the module P.N when there is one (a submodule), else P; `import A.B.C` imports the
    longest of A.B.C, A.B, A that is a module. A package is not counted as imported by its own submodules: Python
    imports it first, but it never asks the submodule for anything."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = alias.name
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target:
                    found.add(target)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the package, one level up per dot after the first
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                if submodule in modules:
                    found.add(submodule)
                elif source in modules:
                    found.add(source)
    found.discard(name)
    return found


def import_graph(root: Path, package: str = "harvest") -> dict[str, set[str]]:
    """Every module of the package under root -> the modules of the package it imports."""
    paths = {module_name(path, root): path for path in sorted((root / package).rglob("*.py"))}
    return {name: imported_modules(name, path, set(paths)) for name, path in paths.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (a -> b -> ... -> a) through each group of modules that import each other (a strongly connected
    component of two or more), shortest first from the group's first module in sorted order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while not group or group[-1] != node:
                group.append(stack.pop())
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [shortest_cycle(graph, group) for group in sorted(groups)]


def shortest_cycle(graph: dict[str, set[str]], group: list[str]) -> list[str]:
    """The shortest path from group[0] back to itself inside the group (breadth first)."""
    start, members = group[0], set(group)
    paths = [[start]]
    while paths:
        path = paths.pop(0)
        for target in sorted(graph[path[-1]] & members):
            if target == start:
                return path + [start]
            if target not in path:
                paths.append(path + [target])
    raise AssertionError(f"{group} is not a cycle")


def test_the_cycle_check_reads_every_import(tmp_path):
    """The checker itself, on a made-up package: relative imports, imports inside functions and `from P import
    submodule` all make edges; a package's __init__ importing its submodule is not a cycle by itself."""
    files = {
        "pkg/__init__.py": "from pkg.a import thing\n",
        "pkg/a.py": "def thing():\n    from . import b\n    return b\n",
        "pkg/b.py": "import pkg.c\n",
        "pkg/c.py": "from pkg import a\n",
        "pkg/d.py": "from pkg.sub import e\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/e.py": "from ..b import x\n",
    }
    for relative, text in files.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text)
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg"] == {"pkg.a"} and graph["pkg.a"] == {"pkg.b"} and graph["pkg.sub.e"] == {"pkg.b"}
    assert graph["pkg.d"] == {"pkg.sub.e"}
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.c", "pkg.a"]]


def test_no_module_imports_a_module_that_imports_it_back():
    found = cycles(import_graph(ROOT))
    assert not found, "import cycles in harvest/ (what both sides share belongs in a module below both):\n" + "\n".join(
        " -> ".join(cycle) for cycle in found)


def test_no_file_in_harvest_is_over_500_lines():
    sizes = {str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines()) for path in HARVEST.rglob("*.py")}
    big = sorted((lines, path) for path, lines in sizes.items() if lines > MAX_LINES)
    assert not big, f"over {MAX_LINES} lines: " + ", ".join(f"{path} ({lines})" for lines, path in reversed(big))


# -- docs/architecture.md, checked against the code ---------------------------------------------------------------

# The rules are written in the doc's own "Names in this document" section.
TYPE_NAME = re.compile(r"[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*")  # CamelCase, not a CONSTANT
SOURCE_PATH = re.compile(r"(?:[a-z_][a-z0-9_]*/)*(?:[a-z_][a-z0-9_]*\.py|[a-z_][a-z0-9_]*/)")


def doc_text() -> str:
    """docs/architecture.md without its fenced blocks (the data-flow drawing names things its own way)."""
    return re.sub(r"```.*?```", "", ARCHITECTURE.read_text(encoding="utf-8"), flags=re.S)


def drawing_paths() -> list[str]:
    """The paths with a slash in the doc's fenced blocks (capture/target.py), which are from harvest/ down."""
    drawings = "\n".join(re.findall(r"```.*?```", ARCHITECTURE.read_text(encoding="utf-8"), flags=re.S))
    return re.findall(r"(?<![\w/<>.-])(?:[a-z_]+/)+[a-z_]+\.py\b", drawings)


def named_paths() -> list[str]:
    """Every harvest path the doc names: code spans that are paths, the files of the table's package rows, and the
    drawing's paths."""
    text = doc_text()
    named = [span for span in code_spans(text) if SOURCE_PATH.fullmatch(span)]
    for package, files in package_rows(text):
        named += [package + name for name in re.findall(r"\b[a-z_][a-z0-9_]*\.py\b", files)]
    return named + drawing_paths()


def code_spans(text: str) -> list[str]:
    return re.findall(r"`([^`\n]+)`", text)


def package_rows(text: str) -> list[tuple[str, str]]:
    """(package, its files cell) for each row of the packages table whose first cell is one `package/`."""
    rows = re.findall(r"^\| `([a-z_]+/)` \| (.*) \|$", text, flags=re.M)
    return [(package, files) for package, files in rows]


def defined_types() -> set[str]:
    """Every class harvest defines, and every CamelCase name given a value at a module's top (a type alias:
    `ProgressEvent = str | Count`, or `type X = ...`)."""
    type_statement = getattr(ast, "TypeAlias", ())  # Python 3.12's `type X = ...`
    names = set()
    for path in HARVEST.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names |= {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
        for node in tree.body:
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AnnAssign):
                targets = [node.target]
            elif isinstance(node, type_statement):
                targets = [node.name]
            else:
                continue
            names |= {t.id for t in targets if isinstance(t, ast.Name) and TYPE_NAME.fullmatch(t.id)}
    return names


def test_every_harvest_path_the_architecture_names_exists():
    named = named_paths()
    assert len(named) > 40, f"the rule found only {len(named)} paths: has the doc's way of naming them changed?"
    missing = sorted({path for path in named if not (HARVEST / path).exists()})
    assert not missing, f"docs/architecture.md names paths harvest/ does not have: {missing}"


def test_every_type_the_architecture_names_is_defined_in_harvest():
    text = doc_text()
    named = set(re.findall(r"\*\*([^*\n]+)\*\*", text)) | set(code_spans(text))
    types = {name for name in named if TYPE_NAME.fullmatch(name)}
    assert len(types) > 25, f"the rule found only {len(types)} types: has the doc's way of naming them changed?"
    missing = sorted(types - defined_types())
    assert not missing, f"docs/architecture.md names types harvest/ does not define: {missing}"


def test_every_file_of_harvest_is_in_the_architecture():
    """The table of packages and modules lists every file, so a newcomer finds each one's room."""
    listed = set(named_paths())
    files = {str(path.relative_to(HARVEST)) for path in HARVEST.rglob("*.py") if path.name != "__init__.py"}
    unlisted = sorted(files - listed)
    assert not unlisted, f"harvest/ files docs/architecture.md does not name: {unlisted}"
