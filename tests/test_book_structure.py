"""The book's structure: every notebook starts with the Colab setup cell and a title,
is committed without outputs and with unique cell ids, Part IV describes the `cpu` preset as
defined, and the toc names only files that exist. (A page missing
from the toc is a build error: see test_book_build_errors.py.)"""
from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from notebook_setup_cell import is_current, setup_source  # noqa: E402

NOTEBOOKS = sorted(p for p in (ROOT / "book").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [chapter["file"] for chapter in part["chapters"]]
    return files


def test_toc_files_exist():
    for entry in toc_files():
        candidates = [ROOT / f"{entry}{ext}" for ext in (".ipynb", ".md")]
        assert any(c.exists() for c in candidates), f"_toc.yml names {entry}, which does not exist"


def test_setup_cell_is_generated_from_config():
    source = setup_source()
    assert "google.colab" in source and "git clone" in source and "CONVNORM_DOWNLOAD" in source
    url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
    assert url in source


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_notebook_conventions(path):
    nb = nbformat.read(path, as_version=4)
    assert is_current(nb, setup_source()), (
        f"{path}: first cell must be the Colab setup cell and the kernel python3; "
        "run python scripts/notebook_setup_cell.py"
    )
    with_outputs = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.outputs]
    assert not with_outputs, f"{path}: cells {with_outputs} have stored outputs; clear them before committing"
    assert nb.cells[1].cell_type == "markdown" and nb.cells[1].source.startswith("# "), (
        f"{path}: the cell after the setup cell must start with the chapter title"
    )
    # Read the raw file: nbformat.read renames a repeated cell id with only a warning.
    ids = Counter(cell.get("id") for cell in json.loads(path.read_text())["cells"])
    repeated = [cell_id for cell_id, count in ids.items() if count > 1]
    assert not repeated, f"{path}: cell ids {repeated} occur more than once"


def prose(path: Path) -> str:
    """A notebook's markdown and cell metadata (figure captions), as one text."""
    cells = nbformat.read(path, as_version=4).cells
    return "\n".join((c.source if c.cell_type == "markdown" else "") + json.dumps(c.metadata) for c in cells)


@pytest.mark.parametrize("path", sorted((ROOT / "book" / "part4").glob("*.ipynb")), ids=lambda p: p.name)
def test_part4_prose_states_the_cpu_preset_as_defined(path):
    """The experiment chapters describe the stored ``cpu`` results' scale in words: those
    words must say what ``PRESETS["cpu"]`` does (numbers that are the paper's are allowed)."""
    from convnorm.experiments.presets import PRESETS

    cpu, paper = PRESETS["cpu"], PRESETS["paper"]
    text = prose(path)

    def numbers(pattern):
        found = [m.group(m.lastindex) for m in re.finditer(pattern, text)]
        return {int(n.replace(",", "")) for n in found}

    assert numbers(r"width[ -](\d+)") <= {cpu.width}
    assert numbers(r"(\d+) epochs") <= {cpu.epochs, cpu.adv_epochs, paper.epochs}
    assert numbers(r"(\d+) epochs of adversarial|\((\d+) of adversarial") <= {cpu.adv_epochs}
    paper_split = 45_000  # the paper's training split (45k of the 50k training images)
    assert numbers(r"(\d[\d,]*) training images") <= {cpu.max_train, cpu.max_train // 10, paper_split}
    assert numbers(r"on (\d[\d,]*) images of the") <= {cpu.max_train}
