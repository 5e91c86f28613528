"""Bad input to the book build is an error, not a warning: a raising cell (named by
notebook and cell), a chapter missing from the toc, a broken cross-reference and a
missing image each fail ``jupyter-book build -W`` with the project's configuration."""
from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest

from site_build import ROOT, jupyter_book_build

pytestmark = pytest.mark.site


def make_book(tmp_path: Path, chapter_cells: list[nbformat.NotebookNode], extra_md: str = "") -> Path:
    """A two-page book using the real _config.yml, _ext and vendored assets."""
    book = tmp_path / "book_src"
    (book / "book").mkdir(parents=True)
    shutil.copy(ROOT / "_config.yml", book / "_config.yml")
    shutil.copytree(ROOT / "book" / "_ext", book / "book" / "_ext")
    shutil.copytree(ROOT / "book" / "_static", book / "book" / "_static")
    shutil.copy(ROOT / "book" / "references.bib", book / "book" / "references.bib")
    (book / "_vendor").symlink_to(ROOT / "_vendor")
    (book / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n  - file: book/chapter\n")
    (book / "book" / "intro.md").write_text("# Intro\n\nA page.\n" + extra_md)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Chapter"), *chapter_cells])
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nbformat.write(nb, book / "book" / "chapter.ipynb")
    return book


def build(book: Path) -> str:
    result = jupyter_book_build(book)
    assert result.returncode != 0, "the build should have failed"
    return result.stdout + result.stderr


def test_raising_cell_fails_build_naming_notebook_and_cell(tmp_path):
    cells = [nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell("raise RuntimeError('boom-42')")]
    log = build(make_book(tmp_path, cells))
    assert "chapter" in log and "boom-42" in log
    assert "raise RuntimeError('boom-42')" in log, "the failing cell's source should be shown"


def test_chapter_missing_from_toc_fails(tmp_path):
    book = make_book(tmp_path, [nbformat.v4.new_code_cell("x = 1")])
    (book / "book" / "orphan.ipynb").write_text((book / "book" / "chapter.ipynb").read_text())
    log = build(book)
    assert "book/orphan.ipynb" in log and "missing from _toc.yml" in log


@pytest.mark.parametrize("markdown, needle", [
    ("See {ref}`no-such-label`.\n", "no-such-label"),
    ("See {numref}`Chapter %s <ch-no-such-chapter>`.\n", "ch-no-such-chapter"),
    ("![a figure](missing-figure.png)\n", "missing-figure.png"),
])
def test_broken_reference_or_image_fails(tmp_path, markdown, needle):
    log = build(make_book(tmp_path, [nbformat.v4.new_code_cell("x = 1")], extra_md=markdown))
    assert needle in log


def test_output_to_stderr_fails_the_build(tmp_path):
    """A warning printed by a cell (or a display whose formatting raised) would show on the
    page as stray stderr text: the build refuses it."""
    cells = [nbformat.v4.new_code_cell("import warnings\nwarnings.warn('stray-warning-17')")]
    log = build(make_book(tmp_path, cells))
    assert "chapter.ipynb" in log and "stderr was found in the cell outputs" in log


def test_the_same_book_without_bad_input_builds(tmp_path):
    """The control for the tests above: they fail because of what each adds, not the configuration."""
    book = make_book(tmp_path, [nbformat.v4.new_code_cell("x = 1")], extra_md="See {doc}`chapter`.\n")
    result = jupyter_book_build(book)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
