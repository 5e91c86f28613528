"""The import graph of the three packages, read from their source (no module is imported).

The library ``convnorm`` (the layer and its maths), the lab ``convnorm_lab`` (data, models,
training, experiments) and the book's code ``convnorm_book`` point one way::

    convnorm  <-  convnorm_lab  <-  convnorm_book

A package never imports a later one, nor another package's private module (a module or a name
starting with ``_``); no module imports another's private name (within a package, a private
module's public names are what the package's modules share); an import between the project's
modules is written at module level, where a cycle would show, not inside a function body; no
package's modules import each other in a cycle; and the maths the book teaches never reaches the
layer's computation policy.
"""
from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: each package's folder, in the order of the arrows: a package may import those before it only
PACKAGES = {
    "convnorm": ROOT / "convnorm",
    "convnorm_lab": ROOT / "lab" / "convnorm_lab",
    "convnorm_book": ROOT / "book_code" / "convnorm_book",
}
RANK = {name: rank for rank, name in enumerate(PACKAGES)}
#: what the library imports beyond the standard library: torch and numpy, and triton for the fused GPU
#: kernels where it is installed (their launch refuses without it)
LIBRARY_NEEDS = {"torch", "numpy", "triton"}
#: imports between the project's modules inside a function body, with the reason each has to wait
IN_FUNCTION = {
    ("convnorm._fused_filter", "convnorm._fused_filter_kernels"):
        "triton reads TRITON_INTERPRET when it decorates the kernels, so the kernels module is imported "
        "when a kernel is first launched",
}


@dataclass(frozen=True)
class Import:
    """One imported module: who imports it, on which line, the names taken from it, and whether
    the statement sits in a function body or under ``if TYPE_CHECKING:``."""

    importer: str
    target: str
    names: tuple[str, ...]
    line: int
    in_function: bool
    type_checking: bool

    @property
    def where(self) -> str:
        return f"{self.importer}:{self.line} imports {self.target}"


def package_of(module: str) -> str:
    return module.split(".")[0]


def module_files(packages: dict[str, Path] = PACKAGES) -> dict[str, Path]:
    """Every module of ``packages`` by its dotted name (a package by its own name, for its ``__init__``)."""
    found = {}
    for name, folder in packages.items():
        for path in sorted(folder.rglob("*.py")):
            parts = [name, *path.relative_to(folder).with_suffix("").parts]
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _statements(tree: ast.AST, in_function: bool = False, type_checking: bool = False):
    """Each import statement under ``tree`` with whether it is in a function body or a
    ``TYPE_CHECKING`` block."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, in_function, type_checking
        inner = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        checking = type_checking or (isinstance(node, ast.If) and _is_type_checking(node))
        yield from _statements(node, inner, checking)


def project_imports(module: str, path: Path, modules: dict[str, Path]) -> list[Import]:
    """The imports of ``module`` (source ``path``) that name a module of the project: ``from x
    import y`` names ``x.y`` when that is a module, else ``x``."""
    is_package = path.name == "__init__.py"
    roots = {package_of(name) for name in modules}
    found = []
    for node, in_function, type_checking in _statements(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [(alias.name, ()) for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                parts = module.split(".")
                anchor = parts if is_package else parts[:-1]
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            submodules = [alias.name for alias in node.names if f"{base}.{alias.name}" in modules]
            names = tuple(alias.name for alias in node.names if alias.name not in submodules)
            targets = [(f"{base}.{name}", ()) for name in submodules] + ([(base, names)] if names else [])
        found += [Import(module, target, names, node.lineno, in_function, type_checking)
                  for target, names in targets if package_of(target) in roots]
    return found


def all_imports(packages: dict[str, Path] = PACKAGES) -> list[Import]:
    modules = module_files(packages)
    return [found for module, path in modules.items() for found in project_imports(module, path, modules)]


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each strongly connected group of more than one module (or a module
    importing itself), by a depth-first search."""
    found, state = [], {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                found.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            visit(node)
    return found


IMPORTS = all_imports()
#: the maths the book teaches, which computes from its arguments alone
MATHS = ("convnorm.dft", "convnorm.fourier", "convnorm.circulant", "convnorm.allpass", "convnorm.tightframe",
         "convnorm.padding", "convnorm.algorithm1", "convnorm.reference")


def reached(module: str) -> set[str]:
    """The project's modules that importing ``module`` runs (its module-level imports, followed)."""
    seen, todo = set(), [module]
    while todo:
        current = todo.pop()
        for found in IMPORTS:
            if found.importer == current and not found.in_function and found.target not in seen:
                seen.add(found.target)
                todo.append(found.target)
    return seen


def test_every_package_is_read():
    modules = module_files()
    assert {package_of(name) for name in modules} == set(PACKAGES)
    assert "convnorm_lab.experiments.context" in modules and "convnorm_book.results.records" in modules


def test_the_arrows_point_from_the_book_to_the_lab_to_the_library():
    wrong = [found.where for found in IMPORTS if RANK[package_of(found.target)] > RANK[package_of(found.importer)]]
    assert not wrong, wrong


def test_no_package_imports_another_packages_private_module_or_name():
    wrong = [found.where for found in IMPORTS if package_of(found.target) != package_of(found.importer)
             and any(part.startswith("_") for part in [*found.target.split(".")[1:], *found.names])]
    assert not wrong, wrong


@pytest.mark.parametrize("module", MATHS)
def test_the_maths_never_reads_the_engines_policy(module):
    """No maths module reaches the computation policy (which chooses how a layer computes) or the
    layer itself: what it computes depends on its arguments only."""
    assert not reached(module) & {"convnorm._policy", "convnorm._engine", "convnorm.functional", "convnorm.layers"}


def test_a_modules_private_names_are_its_own():
    wrong = [f"{found.where}: {name}" for found in IMPORTS for name in found.names
             if name.startswith("_") and not name.startswith("__")]
    assert not wrong, wrong


def test_the_projects_imports_are_at_module_level():
    wrong = [found.where for found in IMPORTS
             if found.in_function and (found.importer, found.target) not in IN_FUNCTION]
    assert not wrong, wrong
    used = {(found.importer, found.target) for found in IMPORTS if found.in_function}
    assert set(IN_FUNCTION) <= used, "an allowed exception no longer exists: remove it"


def test_the_library_needs_torch_and_numpy_alone():
    imported = set()
    for path in PACKAGES["convnorm"].rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level:
                imported.add(node.module.split(".")[0])
    assert imported - set(sys.stdlib_module_names) - {"convnorm"} <= LIBRARY_NEEDS


@pytest.mark.parametrize("package", list(PACKAGES))
def test_no_cycle_among_a_packages_modules(package):
    edges: dict[str, set[str]] = {}
    for found in IMPORTS:
        if package_of(found.importer) == package_of(found.target) == package and not found.type_checking:
            edges.setdefault(found.importer, set()).add(found.target)
    assert not cycles(edges), cycles(edges)


def test_the_checks_see_a_cycle_a_hidden_import_and_a_private_import(tmp_path):
    """The reading itself, on a made-up package: relative imports resolve, an import in a function
    is marked, and a cycle is found."""
    folder = tmp_path / "pkg"
    (folder / "sub").mkdir(parents=True)
    (folder / "__init__.py").write_text("from .a import A\n")
    (folder / "a.py").write_text("from .sub import b\nA = 1\n")
    (folder / "sub" / "__init__.py").write_text("")
    (folder / "sub" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nfrom ..a import A\nif TYPE_CHECKING:\n    from .. import c\n"
        "def f():\n    from .._hidden import x\n")
    (folder / "c.py").write_text("")
    (folder / "_hidden.py").write_text("")
    found = {(i.importer, i.target): i for i in all_imports({"pkg": folder})}
    assert set(found) == {("pkg", "pkg.a"), ("pkg.a", "pkg.sub.b"), ("pkg.sub.b", "pkg.a"),
                          ("pkg.sub.b", "pkg.c"), ("pkg.sub.b", "pkg._hidden")}
    assert found[("pkg.sub.b", "pkg._hidden")].in_function and found[("pkg.sub.b", "pkg.c")].type_checking
    assert found[("pkg", "pkg.a")].names == ("A",)
    assert cycles({"pkg.a": {"pkg.sub.b"}, "pkg.sub.b": {"pkg.a"}}) == [["pkg.a", "pkg.sub.b", "pkg.a"]]
