"""Sphinx extension: no two elements of a page share an HTML id.

sphinx-exercise gives the body of every exercise the id ``exercise-content`` and the body of every
solution ``solution-content``, so a page with three exercises had each id three times, and a link to
one of them landed on the first. Once the references are resolved, this extension renames each such
body after the exercise or solution it belongs to (``ex-why-better-step-content``), and gives any id
that still repeats an earlier one of the page a number (``-2``, ``-3``, ...).

``tests/book/test_unique_ids.py`` checks the renaming on a page's tree.
"""
from __future__ import annotations

from docutils import nodes
from sphinx.application import Sphinx

#: the ids that sphinx-exercise gives every exercise's and every solution's body
SHARED_IDS = ("exercise-content", "solution-content")


def _owner_label(node: nodes.Element) -> str | None:
    """The label of the exercise or solution that holds ``node``: the nearest ancestor with one."""
    parent = node.parent
    while parent is not None:
        label = parent.get("label") if isinstance(parent, nodes.Element) else None
        if label:
            return str(label)
        parent = parent.parent
    return None


def unique_ids(doctree: nodes.document) -> None:
    """Give the exercise and solution bodies of ``doctree`` ids of their own, then number any id that
    repeats an earlier one, so that every id of the page is unique."""
    for section in doctree.findall(nodes.section):
        ids = section.get("ids", [])
        for i, name in enumerate(ids):
            label = _owner_label(section) if name in SHARED_IDS else None
            if label:
                ids[i] = nodes.make_id(f"{label}-content")
    seen: set[str] = set()
    for element in doctree.findall(nodes.Element):
        ids = element.get("ids", [])
        for i, name in enumerate(ids):
            unique, n = name, 1
            while unique in seen:
                n += 1
                unique = f"{name}-{n}"
            ids[i] = unique
            seen.add(unique)


def _doctree_resolved(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    unique_ids(doctree)


def setup(app: Sphinx) -> dict:
    app.connect("doctree-resolved", _doctree_resolved)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
