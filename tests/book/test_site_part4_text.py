"""Part IV read as a reader reads it, on the built site: each page of Part IV and Appendix B
at most :data:`MOST_WORDS` words of main text (printed tables and outputs included, code
left out), no phrase that says the opposite of what it means or tells the project's history,
at most :data:`MOST_RULES_OUT` "rules out" a page, and the glance page's table with a column
on what this scale can test."""
from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.site

ROOT = Path(__file__).resolve().parents[2]
#: the pages of Part IV (from the table of contents) and Appendix B
PAGES = [f"{chapter['file']}.html" for part in yaml.safe_load((ROOT / "_toc.yml").read_text())["parts"]
         for chapter in part["chapters"] if chapter["file"].startswith("book/part4/")] \
    + ["book/appendix/how-results-were-produced.html"]
#: a textbook chapter's length: the chapters of Part I have about half of it
MOST_WORDS = 4_500
MOST_RULES_OUT = 6
#: phrases no page may hold: "compare directly" said "the same image files"
MISLEADING = ("compare directly", "gpu window")
#: project history, which a chapter never tells (Appendix B may name the version a record was made at)
HISTORY = ("before a correction", "has been lengthened since", "protocol version", "version of the experiments",
           "in which order the gpu")
#: void elements, which have no end tag
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"}


class MainText(HTMLParser):
    """The text of a page's article (``<article class="bd-article">``), without scripts,
    styles and the source of code cells (``cell_input``): what a reader reads."""

    def __init__(self):
        super().__init__()
        self.open: list[str] = []
        self.article: int | None = None
        self.skipped: int | None = None
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in VOID:
            return
        self.open.append(tag)
        classes = (dict(attrs).get("class") or "").split()
        if tag == "article" and "bd-article" in classes and self.article is None:
            self.article = len(self.open)
        if self.article is not None and self.skipped is None and (tag in ("script", "style")
                                                                   or "cell_input" in classes):
            self.skipped = len(self.open)

    def handle_endtag(self, tag):
        if tag in VOID or tag not in self.open:
            return
        while self.open[-1] != tag:
            self.open.pop()
        if self.skipped == len(self.open):
            self.skipped = None
        if self.article == len(self.open):
            self.article = None
        self.open.pop()

    def handle_data(self, data):
        if self.article is not None and self.skipped is None:
            self.text.append(data)


def main_text(page: Path) -> str:
    parser = MainText()
    parser.feed(page.read_text())
    return " ".join(" ".join(parser.text).split())


def test_main_text_leaves_out_code_and_keeps_outputs():
    page = ("<html><body><nav>menu words</nav><article class='bd-article'><p>One two</p>"
            "<div class='cell docutils container'><div class='cell_input docutils container'><pre>x = 1</pre></div>"
            "<div class='cell_output docutils container'><pre>three<br>four</pre></div></div>"
            "<script>var a;</script></article></body></html>")
    parser = MainText()
    parser.feed(page)
    assert " ".join(" ".join(parser.text).split()) == "One two three four"


@pytest.mark.parametrize("page", PAGES)
def test_part4_pages_read_as_a_textbook(built_site, page):
    text = main_text(built_site / page)
    words = len(text.split())
    assert words <= MOST_WORDS, f"{page}: {words:,} words of main text, more than {MOST_WORDS:,}"
    forbidden = MISLEADING + (HISTORY if page.startswith("book/part4/") else ())
    found = [phrase for phrase in forbidden if phrase in text.lower()]
    assert not found, f"{page}: {found}"
    assert len(re.findall(r"\brules? out\b", text)) <= MOST_RULES_OUT, page


def test_part4_opens_with_the_glance_table(built_site):
    assert PAGES[0] == "book/part4/results-at-a-glance.html"
    text = main_text(built_site / PAGES[0])
    assert "can this scale test it?" in text and "the paper's claim" in text and "our result" in text


#: the chapter of Part IV that shows each experiment of the glance table
CHAPTER_OF = {"generalization": "08-training-and-generalization", "convergence": "08-training-and-generalization",
              "ablation": "08-training-and-generalization", "adversarial": "09-robustness", "simba": "09-robustness",
              "label-noise": "09-robustness", "data-scarcity": "09-robustness",
              "conditioning": "10-conditioning-lipschitz-and-cost", "runtime": "10-conditioning-lipschitz-and-cost"}


def test_the_glance_page_and_the_chapters_give_one_answer_on_scale(built_site):
    """Where the scale cannot test a claim, the glance table and the chapter that shows the
    experiment give the same reason, the one :mod:`convnorm_book.results.scope` decides."""
    from convnorm_book.results import glance, paper_values

    rows = glance.rows(paper_values.load_paper_values())
    assert {row.experiment for row in rows} == set(CHAPTER_OF)
    glance_page = main_text(built_site / PAGES[0]).replace("’", "'")
    for row in rows:
        if row.testable:
            continue
        chapter = main_text(built_site / f"book/part4/{CHAPTER_OF[row.experiment]}.html").replace("’", "'")
        reason = " ".join(row.blocked.split())
        assert reason in glance_page, row.experiment
        assert f"{glance.NOT_TESTABLE}: {reason}" in chapter, (row.experiment, reason)
