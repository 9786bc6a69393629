"""The import graph keeps the layout's promises: no cycles, and the contracts in pyproject hold."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import grimp
import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    # Every import statement counts, also one inside a function or under TYPE_CHECKING.
    return grimp.build_graph("memctl", cache_dir=None)


def test_no_module_imports_itself_in_a_circle(graph):
    cycles = set()
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back:
                cycles.add(" -> ".join((importer, *back)))
    assert not cycles, "import cycles:\n" + "\n".join(sorted(cycles))


def function_level_imports() -> set[tuple[str, tuple[str, ...]]]:
    """(importer, what it may import) for every `from memctl... import` in a function body."""
    found = set()
    for path in (REPO / "memctl").rglob("*.py"):
        parts = path.relative_to(REPO).with_suffix("").parts
        importer = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("memctl."):
                    module = node.module
                    names = (module, *(f"{module}.{alias.name}" for alias in node.names))
                    found.add((importer, names))
    return found


def test_the_graph_sees_function_level_imports(graph):
    """A cycle hidden in a function body would be invisible if the graph missed these."""
    hidden = function_level_imports()
    assert hidden  # e.g. the embedder, imported only where a sync has something to embed
    missed = {
        (importer, names[0])
        for importer, names in hidden
        if not set(names) & graph.find_modules_directly_imported_by(importer)
    }
    assert not missed


def test_the_import_contracts_are_kept(monkeypatch, capsys):
    from importlinter.cli import lint_imports

    monkeypatch.chdir(REPO)
    monkeypatch.setattr(sys, "path", list(sys.path))  # lint_imports prepends the cwd
    status = lint_imports(config_filename=str(REPO / "pyproject.toml"), no_cache=True)
    assert status == 0, capsys.readouterr().out


def test_cli_commands_are_module_level_functions():
    """A command is a function a reader finds at the top of its module, not a closure built
    inside `register(app)` or another function (lambdas as sort keys are fine)."""
    import ast
    from pathlib import Path

    import memctl.cli.commands as commands

    nested = []
    for path in sorted(Path(commands.__file__).parent.glob("*.py")):
        for top in ast.parse(path.read_text(encoding="utf-8")).body:
            if not isinstance(top, ast.FunctionDef):
                continue
            nested += [
                f"{path.name}:{node.lineno} {node.name} inside {top.name}"
                for node in ast.walk(top)
                if node is not top and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            ]
    assert nested == []
