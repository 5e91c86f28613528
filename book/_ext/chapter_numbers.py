"""Sphinx extension: the book's chapter numbers and chapter labels.

Numbers. ``_toc.yml`` numbers the parts (``numbered: true``) and Jupyter Book's
sphinx-multitoc-numbering counts chapters on across parts, from 1. The book counts from 0
(chapter 0 is ``book/part1/00-why-normalize``, as in the file names) and letters the appendix
(A, B, ...). After Sphinx has numbered sections and figures, this extension renumbers every
page of a numbered part accordingly: the section numbers (titles, the table of contents,
next/previous links) and the numbers of everything numbered per chapter (figures, tables,
equations, exercises, propositions: ``numfig_secnum_depth = 1`` makes those ``3.2``, the
second of chapter 3, or ``A.1``).

Labels. Every chapter gets a label to link to, without one written in the notebook:
``ch-<file name less its number>`` for the pages under ``book/part*/`` (``ch-all-pass-filters``
for ``book/part1/02-all-pass-filters``) and ``app-<file name>`` for those under
``book/appendix/``. Link with ``{numref}`Chapter %s <ch-all-pass-filters>``` ("Chapter 2") or
``{numref}`Appendix %s <app-engineering-notes>```; a label that does not exist fails the
``-n`` build like any other broken reference.
"""
from __future__ import annotations

import re
import string

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util import logging

logger = logging.getLogger(__name__)

CHAPTER_PAGE = re.compile(r"^book/part\d+/(?:\d+-)?(?P<name>[^/]+)$")
APPENDIX_PAGE = re.compile(r"^book/appendix/(?P<name>[^/]+)$")


def chapter_label(docname: str) -> str | None:
    """The label of the chapter page ``docname`` (``ch-…`` or ``app-…``), or None for other pages."""
    if match := CHAPTER_PAGE.match(docname):
        return f"ch-{match['name']}"
    if match := APPENDIX_PAGE.match(docname):
        return f"app-{match['name']}"
    return None


def _add_chapter_label(app: Sphinx, doctree: nodes.document) -> None:
    docname = app.env.docname
    label = chapter_label(docname)
    section = next(iter(doctree.findall(nodes.section)), None)
    if label is None or section is None or not section["ids"]:
        return
    std = app.env.get_domain("std")
    if label in std.labels and std.labels[label][0] != docname:
        logger.warning("chapter label %r of %s is already defined in %s", label, docname,
                       std.labels[label][0], location=docname)
        return
    title = section.next_node(nodes.title)
    std.anonlabels[label] = (docname, section["ids"][0])
    std.labels[label] = (docname, section["ids"][0], title.astext() if title else docname)


def _book_number(chapters: list[tuple[int, str]]) -> dict[str, object]:
    """Sphinx's chapter number of each numbered page -> the book's: 0, 1, ... for the chapters
    (the book starts at 0), A, B, ... for the appendix, in the order of the table of contents."""
    numbers: dict[str, object] = {}
    appendix = 0
    first = min((number for number, docname in chapters if not APPENDIX_PAGE.match(docname)), default=1)
    for number, docname in sorted(chapters):
        if APPENDIX_PAGE.match(docname):
            numbers[docname] = string.ascii_uppercase[appendix]
            appendix += 1
        else:
            numbers[docname] = number - first
    return numbers


def _renumber(app: Sphinx, env: BuildEnvironment) -> list[str]:
    """Rewrite the chapter component of every section and figure number (see the module docstring).

    Runs after Sphinx's own numbering (``env-get-updated``, which recomputes every number from
    scratch on each build), so it never applies twice to the same numbers."""
    chapters = [(numbers[""][0], docname) for docname, numbers in env.toc_secnumbers.items()
                if numbers.get("") and len(numbers[""]) == 1]
    book = _book_number(chapters)

    def renumbered(docname: str, number):
        return None if number is None else (book[docname], *number[1:])

    for docname, label in book.items():
        env.toc_secnumbers[docname] = {anchor: renumbered(docname, number)
                                       for anchor, number in env.toc_secnumbers[docname].items()}
        for reference in env.tocs[docname].findall(nodes.reference):
            if reference.get("secnumber"):
                reference["secnumber"] = [label, *reference["secnumber"][1:]]
        title = env.titles.get(docname)
        if title is not None and title.get("secnumber"):
            title["secnumber"] = [label, *title["secnumber"][1:]]
        for figtype, numbers in env.toc_fignumbers.get(docname, {}).items():
            env.toc_fignumbers[docname][figtype] = {
                node_id: (label, *number[1:]) if len(number) > 1 else number for node_id, number in numbers.items()}
    return list(book)


def setup(app: Sphinx) -> dict:
    app.connect("doctree-read", _add_chapter_label)
    app.connect("env-get-updated", _renumber, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}

