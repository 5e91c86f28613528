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

ROOT = Path(__file__).resolve().parents[2]
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
    assert "google.colab" in source and '"git", "clone"' in source and "CONVNORM_DOWNLOAD" in source
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
    from convnorm_lab.experiments.presets import PRESETS

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


#: Pages whose prose follows the book's cross-reference convention (CONTRIBUTING.md, "Numbers and
#: links"): every page of the book.
LINKED_PAGES = [ROOT / "book" / "intro.ipynb", *sorted((ROOT / "book").glob("part[1234]/*.ipynb")),
                *sorted((ROOT / "book" / "appendix").glob("*.ipynb")),
                ROOT / "book" / "practitioner.ipynb", ROOT / "book" / "notation.md", ROOT / "book" / "api.md"]

#: What a reader does not see as text: labels ((name)= lines, :label: options, an equation's label),
#: the fences of directives, then roles with their text ({numref}`Chapter %s <ch-...>`; a citation
#: becomes CITE), code spans and math.
LABELS = re.compile(r"^\(\S+\)=$|^:label: .*$|^:class: .*$|^```.*$|\$\$\s*\([a-z0-9-]+\)", re.M)
MARKUP = re.compile(r"\{[a-z:-]+\}`[^`]*`|`[^`]*`|\$\$.*?\$\$|\$[^$]*\$", re.S)
#: "chapter 3", "Section 4.2", "Fig. 3", "Exercise 2", "equation (5)", "Proposition 3.1", "appendix A",
#: "the appendix" (the book's, unlinked), "the next chapter", an equation number "(3.4)".
PLAIN_REFERENCE = re.compile(
    r"\b(?:chapters?|sections?|fig(?:ure)?s?\.?|exercises?|equations?|propositions?)\s+\(?[0-9]"
    r"|\bappendix\s+[A-B0-9]\b|\bthe appendix\b|\b(?:next|previous) chapter\b|\bthe end of this chapter\b"
    r"|\([0-9]{1,2}\.[0-9]{1,2}\)", re.IGNORECASE)
#: A {doc} link to a chapter or an appendix, which prints no number: those are linked with {numref}.
DOC_LINK_TO_CHAPTER = re.compile(r"\{doc\}`[^`]*(?:part\d|appendix)/[^`]*`")
#: A reference to the paper's own numbering is not a link: "the paper's Figure 2", "its Table 8",
#: "Proposition 3.1 of {cite}`...`", "({cite}`...`, appendix B)".
PAPERS = re.compile(r"(?:paper's|its|their|CITE,)\s*$", re.IGNORECASE)


def reader_text(text: str) -> str:
    """``text`` without labels and markup, whitespace collapsed (see LABELS and MARKUP)."""
    text = re.sub(r"\{cite(?::[a-z]+)?\}`[^`]*`", "CITE", LABELS.sub(" ", text))
    return re.sub(r"\s+", " ", MARKUP.sub(" ", text))
#: Words for developers, not readers, and what a page must not show: record files, commit hashes
#: and the labels behind the links.
DEVELOPER_WORDS = re.compile(r"at hand|this machine|harness|benchmarks/results|\.json\b|\b[0-9a-f]{7,40}\b"
                             r"|\b(?:eq|fig|ex|sec|ch|app|prop)-[a-z0-9]+(?:-[a-z0-9]+)*\b", re.IGNORECASE)


def page_texts(path: Path) -> list[tuple[str, str]]:
    """(where, text) for every piece of a page a reader sees as prose: markdown cells and figure
    captions of a notebook, or a Markdown page (less its code blocks)."""
    if path.suffix == ".md":
        return [("page", re.sub(r"```.*?```", "", path.read_text(), flags=re.S))]
    texts = []
    for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
        if cell.cell_type == "markdown":
            texts.append((f"cell {index}", cell.source))
        caption = cell.metadata.get("mystnb", {}).get("figure", {}).get("caption")
        if caption:
            texts.append((f"caption of cell {index}", caption))
    return texts


@pytest.mark.parametrize("path", LINKED_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_reference_to_a_chapter_section_figure_equation_or_exercise_is_a_link(path):
    plain = []
    for where, text in page_texts(path):
        bare = reader_text(text)
        for match in PLAIN_REFERENCE.finditer(bare):
            if PAPERS.search(bare[max(0, match.start() - 12):match.start()]) or bare[match.end():].startswith(
                    (" of CITE", ".1 of CITE", " of the paper")):
                continue
            plain.append(f"{where}: ...{bare[max(0, match.start() - 30):match.end() + 20]!r}")
        plain += [f"{where}: {link!r} (a chapter or appendix: {{numref}})"
                  for link in DOC_LINK_TO_CHAPTER.findall(text)]
    assert not plain, f"{path.name}: write these as links ({{numref}}, {{eq}}, {{prf:ref}}):\n" + "\n".join(plain)


@pytest.mark.parametrize("path", LINKED_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_pages_have_no_developer_words(path):
    found = []
    for where, text in page_texts(path):
        found += [f"{where}: {m.group(0)!r}" for m in DEVELOPER_WORDS.finditer(reader_text(text))]
    if path.suffix == ".ipynb":  # code a reader sees: no labels of equations or figures in comments or output
        for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
            if cell.cell_type == "code" and "remove-cell" not in cell.metadata.get("tags", []):
                labels = re.findall(r"\b(?:eq|fig|ex|sec|ch|app|prop)-[a-z0-9]+(?:-[a-z0-9]+)*\b", cell.source)
                found += [f"code cell {index}: {label!r}" for label in labels]
    assert not found, f"{path.name}:\n" + "\n".join(found)
