"""convnorm_book.chapters: one module per page, named after its notebook, which imports it in one line and
uses exactly the names its ``__all__`` lists; no page's module imports another's."""
from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import nbformat
import pytest

import convnorm_book.chapters

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted(path.stem for path in Path(convnorm_book.chapters.__file__).parent.glob("[a-z]*.py"))
NOTEBOOKS = {re.sub(r"^\d+-", "", path.stem).replace("-", "_"): path
             for path in sorted((ROOT / "book").rglob("*.ipynb")) if ".ipynb_checkpoints" not in path.parts}


def code(path: Path) -> ast.Module:
    """The notebook's code cells as one module."""
    cells = nbformat.read(path, as_version=4).cells
    return ast.parse("\n".join(cell.source for cell in cells if cell.cell_type == "code"))


def book_imports(tree: ast.Module) -> list[str]:
    """Each import of the book's package, written out."""
    return [ast.unparse(node) for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
            and any(name.startswith("convnorm_book") for name in
                    ([node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]))]


@pytest.mark.parametrize("module", MODULES)
def test_each_module_serves_one_notebook_that_imports_it_in_one_line_and_uses_all_it_lists(module):
    assert module in NOTEBOOKS, f"book_code/convnorm_book/chapters/{module}.py names no notebook of the book"
    tree = code(NOTEBOOKS[module])
    assert book_imports(tree) == [f"from convnorm_book.chapters import {module} as book"]
    used = {node.attr for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "book"}
    listed = set(importlib.import_module(f"convnorm_book.chapters.{module}").__all__)
    assert used == listed, f"used but not listed: {sorted(used - listed)}; listed but not used: {sorted(listed - used)}"


@pytest.mark.parametrize("module", MODULES)
def test_no_module_imports_another_pages_module(module):
    tree = ast.parse((Path(convnorm_book.chapters.__file__).parent / f"{module}.py").read_text())
    imported = [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    imported += [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    assert not [name for name in imported if name.startswith("convnorm_book.chapters")], imported
    assert not any(isinstance(node, ast.ImportFrom) and node.level for node in ast.walk(tree)), "a relative import"
