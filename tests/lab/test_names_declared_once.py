"""Each noun is declared once: every normalization's key and every experiment's name is
written as a string literal in the one module that declares it, and nowhere else.

What is searched: every module (``.py``) of the packages ``convnorm`` and ``convnorm_book``
and of the GPU window's scripts (``scripts/``), parsed. What counts is a string constant
whose whole value is the name, matched case-sensitively (``"BN"``, a reader's label, is not
the key ``"bn"``), outside docstrings and ``__all__`` (whose strings are Python names, such as
the attack function ``simba``). A name inside a longer string (the run name
``"noise0.4-convnorm+bn"``) is not searched for: such strings are composed by the
declaration that owns them (an experiment's ``run_name``). Notebooks are pages, not
modules: they are not searched.

Where each name must be: a normalization's key in :mod:`convnorm_lab.models.normalizations`,
the registry; an experiment's name in its module of :mod:`convnorm_lab.experiments.catalog`.
A key composed there from the others (``"oni+bn"``, a method followed by BatchNorm) may
appear nowhere else, and need not appear as a whole at all.

Short keys that are also other words: ``"bn"`` is BatchNorm's key and, after ``"+"``, the
mark of a BatchNorm following another method; both meanings are BatchNorm, written in the
registry alone, so it is held to the rule like any other key. ``"none"``, the vanilla
network's key, is also the English word a table or a status prints for an empty list: that
meaning is written once too, in the book's words (:func:`convnorm_book.results.words.spelled`,
whose ``spelled(0)`` every such table and status prints), so ``"none"`` may be in that module
besides the registry (:data:`EVERYDAY_WORDS`), and in no third.
"""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import convnorm_book.results.words as words
import convnorm_lab.experiments.catalog as catalog
import convnorm_lab.models.normalizations as registry
from convnorm_lab.experiments.catalog import EXPERIMENTS
from convnorm_lab.models.normalizations import NORMALIZATIONS, NORMS

ROOT = Path(__file__).resolve().parents[2]
#: where the names are searched for
SEARCHED = ("convnorm", "lab/convnorm_lab", "book_code/convnorm_book", "scripts")
#: a key that is also an everyday word, and the one module that writes the word in that sense
EVERYDAY_WORDS = {"none": Path(words.__file__)}


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the constants that are docstrings (of the module, a class or a function)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _all_lists(tree: ast.AST) -> set[int]:
    """The ids of the string constants listed in ``__all__``."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            found |= {id(c) for c in ast.walk(node.value) if isinstance(c, ast.Constant)}
    return found


def literal_modules(names: set[str], root: Path = ROOT, packages: tuple[str, ...] = SEARCHED) -> dict[str, set[Path]]:
    """For each of ``names``, the modules under ``root``'s ``packages`` that write it as a
    whole string literal (see the module)."""
    found: dict[str, set[Path]] = defaultdict(set)
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            skipped = _docstrings(tree) | _all_lists(tree)
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and node.value in names and id(node) not in skipped:
                    found[node.value].add(path.resolve())
    return found


def _module(obj) -> Path:
    return Path(obj.__file__).resolve()


def test_each_normalization_key_is_written_in_the_registry_alone():
    found = literal_modules(set(NORMS))
    declared = _module(registry)
    for key in NORMS:
        allowed = {declared} | ({EVERYDAY_WORDS[key].resolve()} if key in EVERYDAY_WORDS else set())
        assert found[key] <= allowed, (key, sorted(str(p.relative_to(ROOT)) for p in found[key] - allowed))
    for key in NORMALIZATIONS:
        assert declared in found[key], f"{key!r} is declared in the registry, but not written there"


def test_each_experiment_name_is_written_in_its_catalog_module_alone():
    modules = {module.EXPERIMENT.name: _module(module) for module in vars(catalog).values()
               if getattr(module, "EXPERIMENT", None) is not None}
    assert set(modules) == set(EXPERIMENTS)
    found = literal_modules(set(EXPERIMENTS))
    for name, declared in modules.items():
        assert found[name] == {declared}, (name, sorted(str(p.relative_to(ROOT)) for p in found[name]))


def test_the_search_finds_a_literal_and_skips_docstrings_and_all(tmp_path):
    """The search itself: a name as a value is found, the same name in a docstring or in
    ``__all__`` is not."""
    package = tmp_path / "convnorm"
    package.mkdir()
    (package / "a.py").write_text('"""ablation"""\n__all__ = ["ablation"]\nX = ("ablation", "oni+bn")\n')
    (package / "b.py").write_text('def f():\n    """oni+bn"""\n    return "other"\n')
    found = literal_modules({"ablation", "oni+bn"}, tmp_path, ("convnorm",))
    assert found == {"ablation": {(package / "a.py").resolve()}, "oni+bn": {(package / "a.py").resolve()}}
