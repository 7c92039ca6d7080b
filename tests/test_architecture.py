"""The layers stay put: import-linter contracts, no import cycles, no private imports."""

import ast
import re
import sys
from pathlib import Path

import pytest

grimp = pytest.importorskip("grimp")
pytest.importorskip("importlinter")

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "goldenal"

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")


def _config():
    with open(ROOT / "pyproject.toml", "rb") as fh:
        return tomllib.load(fh)["tool"]["importlinter"]


def test_import_linter_contracts_hold():
    from importlinter.cli import lint_imports

    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True,
                        no_logo=True) == 0


def test_every_top_level_module_has_a_layer():
    (layers,) = [c["layers"] for c in _config()["contracts"] if c["id"] == "layers"]
    named = {name.strip() for layer in layers for name in re.split(r"[|:]", layer)}
    present = {f"goldenal.{p.stem}" for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    present |= {f"goldenal.{p.parent.name}" for p in PACKAGE.glob("*/__init__.py")}
    assert present - named == set(), "place the new module in a layer of pyproject.toml"


def _cycles(graph):
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(
                        graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_import_graph_has_no_cycles():
    graph = grimp.build_graph("goldenal", cache_dir=None)
    assert _cycles(graph) == []


def test_cycle_finder_finds_a_cycle():
    graph = grimp.ImportGraph()
    for name in ("p", "p.a", "p.b", "p.c"):
        graph.add_module(name)
    graph.add_import(importer="p.a", imported="p.b")
    graph.add_import(importer="p.b", imported="p.a")
    graph.add_import(importer="p.c", imported="p.a")
    assert _cycles(graph) == [["p.a", "p.b"]]


def _package_of(module, path):
    return module if path.name == "__init__.py" else module.rsplit(".", 1)[0]


def test_no_module_imports_a_private_name_of_another_package():
    """``_name`` is private to its package; a name two packages need is public."""
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        module = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        importer = _package_of(module, path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or not node.module or node.level:
                continue
            if not node.module.startswith("goldenal"):
                continue
            for alias in node.names:
                parts = f"{node.module}.{alias.name}".split(".")
                private = [i for i, p in enumerate(parts) if p.startswith("_")
                           and not p.startswith("__")]
                if not private:
                    continue
                owner = ".".join(parts[:private[0]])
                owner_path = ROOT.joinpath(*owner.split("."))
                package = owner if owner_path.is_dir() else owner.rsplit(".", 1)[0]
                if package != importer:
                    bad.append(f"{module}: from {node.module} import {alias.name}")
    assert bad == []
