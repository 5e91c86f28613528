"""Every example on the API page (book/api.md) runs, each in a fresh namespace, and its asserts hold.

The examples that read CIFAR-10 need ``CONVNORM_DATA_DIR``, like the harness tests (they fail, not skip,
without it): they are of kind ``data`` too."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.docs

API_PAGE = Path(__file__).resolve().parents[2] / "book" / "api.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
DOCUMENTED = re.compile(r"^\.\. auto\w+:: ([\w.]+)", re.M)
READS_CIFAR = re.compile(r"\b(?:prepare_cifar|load_cifar|find_cifar|run_experiment)\(")
"""A call that reads CIFAR-10: a loader's, or an experiment's (which trains on it)."""


def examples() -> list[tuple[str, str]]:
    """``(first object documented before the block, code)`` for every python block; the code is preceded
    by blank lines so that a traceback gives the line number in api.md."""
    text, found = API_PAGE.read_text(), []
    for match in BLOCK.finditer(text):
        names = DOCUMENTED.findall(text[: match.start()].rsplit("```{eval-rst}", 1)[-1])
        offset = text.count("\n", 0, match.start(1))
        found.append((names[0] if names else "intro", "\n" * offset + match.group(1)))
    return found


def test_every_documented_object_exists_and_has_an_example():
    import importlib.util

    text = API_PAGE.read_text()
    for name in DOCUMENTED.findall(text):
        module, _, attribute = name.rpartition(".")
        if importlib.util.find_spec(module) is None or not hasattr(importlib.import_module(module), attribute):
            importlib.import_module(name)  # a module documented with automodule
    sections = text.split("```{eval-rst}")[1:]
    assert all("```python" in section for section in sections), "an autodoc block without an example after it"


@pytest.mark.parametrize("code", [pytest.param(code, marks=[pytest.mark.data] if READS_CIFAR.search(code) else [])
                                  for _, code in examples()], ids=[name for name, _ in examples()])
def test_example_runs(code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(compile(code, str(API_PAGE), "exec"), {"__name__": "api_example"})
