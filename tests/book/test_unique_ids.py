"""book/_ext/unique_ids.py: the bodies of a page's exercises and solutions get ids of their own, and no id
of a page repeats another."""
from __future__ import annotations

import importlib.util
from pathlib import Path

from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document

EXTENSION = Path(__file__).resolve().parents[2] / "book" / "_ext" / "unique_ids.py"
spec = importlib.util.spec_from_file_location("unique_ids", EXTENSION)
unique_ids = importlib.util.module_from_spec(spec)
spec.loader.exec_module(unique_ids)


def page(*labels: str) -> nodes.document:
    """A page with one admonition per label, each holding a body with sphinx-exercise's shared id."""
    document = new_document("page", get_default_settings(Parser))
    for label in labels:
        box = nodes.admonition(ids=[label], label=label)
        shared = "solution-content" if label.startswith("sol") else "exercise-content"
        box += nodes.section("", nodes.paragraph(text=label), ids=[shared])
        document += box
    return document


def all_ids(document: nodes.document) -> list[str]:
    return [name for element in document.findall(nodes.Element) for name in element.get("ids", [])]


def test_exercise_and_solution_bodies_are_named_after_their_labels():
    document = page("ex-one", "sol-one", "ex-two", "ex-three")
    assert all_ids(document).count("exercise-content") == 3  # as sphinx-exercise writes the page
    unique_ids.unique_ids(document)
    assert all_ids(document) == ["ex-one", "ex-one-content", "sol-one", "sol-one-content", "ex-two", "ex-two-content",
                                 "ex-three", "ex-three-content"]


def test_any_id_that_still_repeats_gets_a_number():
    document = page("ex-one")
    document += nodes.section("", ids=["ex-one-content"])  # a heading whose id the renaming would repeat
    document += nodes.section("", ids=["ex-one-content"])
    unique_ids.unique_ids(document)
    ids = all_ids(document)
    assert len(ids) == len(set(ids)) and ids[-2:] == ["ex-one-content-2", "ex-one-content-3"]
