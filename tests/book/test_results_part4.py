"""The Part IV notebooks as the issue asks them to read: no page text with LaTeX labels,
"+-", harness or machine words, or bare chapter numbers; no functions beyond the one
teaching cell of chapter 8, a training loop of at most 25 lines on real CIFAR-10 with
ConvNorm2d beside a BatchNorm twin; and every "Train it yourself" cell off by default,
printing what it would do."""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
PART4 = sorted((ROOT / "book" / "part4").glob("*.ipynb"))
#: the chapters, each with a "Train it yourself" section (the glance page that opens Part IV has none)
CHAPTERS = [path for path in PART4 if path.name[:2].isdigit()]
PAGES = PART4 + [ROOT / "book" / "appendix" / "how-results-were-produced.ipynb"]
FORBIDDEN = ("+-", "(tab:", "(table:", "(fig:", "harness", "at hand", "this machine", "git_commit")


def cells(path):
    return nbformat.read(path, as_version=4).cells[1:]  # after the generated setup cell


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_page_text_has_no_labels_harness_words_or_bare_chapter_numbers(path):
    text = "\n".join(c.source + json.dumps(c.metadata) for c in cells(path))
    found = [form for form in FORBIDDEN if form in text]
    assert not found, f"{path.name}: {found}"
    markdown = "\n".join(c.source for c in cells(path) if c.cell_type == "markdown")
    assert not re.search(r"\b[Cc]hapter \d", markdown), (f"{path.name}: write numbered links ({{numref}}), "
                                                         "not chapter numbers")


@pytest.mark.parametrize("path", PART4, ids=lambda p: p.name)
def test_part4_defines_no_functions_beyond_the_teaching_loop(path):
    defined = []
    for cell in cells(path):
        if cell.cell_type != "code":
            continue
        tree = ast.parse(cell.source)
        names = [n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
        if names:
            defined.append((names, cell.source))
    if path.name.startswith("08-"):
        assert len(defined) == 1, [names for names, _ in defined]
        names, source = defined[0]
        assert set(names) == {"network", "block", "train"}
        assert len(source.splitlines()) <= 25
        assert "prepare_cifar(" in source and "ConvNorm2d" in source and "nn.Conv2d" in source
        assert ".backward()" in source and ".step()" in source
    else:
        assert defined == [], [names for names, _ in defined]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_train_it_yourself_is_off_by_default_and_describes_itself(path):
    source = next(c.source for c in cells(path) if c.cell_type == "code" and "TRAIN =" in c.source)
    assert re.search(r"^TRAIN = False\b", source, re.M) and "BUDGET_MINUTES = " in source
    assert "live.CHAPTER_RUNS[" in source and "live.train(" in source and "live.describe(" in source
    if path.name.startswith("08-"):  # the core comparison: on a GPU the airbench network, within a T4's budget
        assert "preset=colab.reader_preset(" in source and "gpu_preset=colab.COLAB_PRESET" in source
        assert "colab.colab_estimate(" in source and "<= colab.BUDGET_MINUTES" in source
