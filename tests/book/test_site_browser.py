"""Open the built website in headless Chromium with networking disabled and check that it works
from its own files: no page asks for anything off the site, the math is typeset by the
vendored MathJax, and on every page with an explorer, moving a control with the keyboard
redraws the plot and shows the package's number for the new setting. The explorers' controls
are labelled, their labels typeset, and they fit a phone's width. Every page is readable at a
phone's width (400 px) and a desktop's (1280 px): nothing is cut off. Chapters, their sections
and what they number are numbered as the book counts (chapters from 0, appendices A, B).

Screenshots of each explorer, at a desktop's and at a phone's width, are saved to
``_build/screenshots/`` for a person to look at.
"""
from __future__ import annotations

import html
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from convnorm_book.chapters.all_pass_filters import allpass_view
from convnorm_book.chapters.convolution_padding_stride import padding_stride_view, padding_weights
from convnorm_book.chapters.intro import kernel_spectrum_view
from convnorm_book.chapters.multichannel_tight_frames import channel_singular_value_pair
from convnorm_book.chapters.two_dimensions import kernel_filter_view, load_photo
from convnorm_book.explorers.shared import condition_number
from convnorm_book.headless_browser import Browser, BrowserError, chromium_binary

pytestmark = [pytest.mark.site, pytest.mark.browser]

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "_build" / "screenshots"

#: Every page with an explorer: the explorer it holds and the slider the test moves.
EXPLORER_PAGES = {
    "book/intro.html": ("kernelSpectrum", "a1"),
    "book/part1/02-all-pass-filters.html": ("allpass", "a3"),
    "book/part1/03-multichannel-tight-frames.html": ("channelSingularValues", "c_in"),
    "book/part2/04-convolution-padding-stride.html": ("paddingStride", "stride"),
    "book/part2/05-two-dimensions.html": ("kernelFilter", "a4"),
}

EXPLORER = """(() => {
  const root = document.querySelector(".cx-explorer");
  const plots = root.querySelector(".cx-plots");
  return {
    count: document.querySelectorAll(".cx-explorer").length,
    id: root.id,
    state: JSON.parse(root.getAttribute("data-state")),
    message: root.querySelector(".cx-message").textContent,
    plot: plots.innerHTML + Array.from(plots.querySelectorAll("canvas"), (c) => c.toDataURL()).join(""),
    readouts: Array.from(root.querySelectorAll(".cx-value"), (v) => [v.dataset.name, v.dataset.value]),
    unlabelled: Array.from(root.querySelectorAll("input, select")).filter((c) => c.labels.length === 0)
      .map((c) => c.id),
  };
})()"""

NEXT_FRAME = "new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 50)))"


#: Widths at which every page must be readable: a phone's and a desktop's.
WIDTHS = {"phone": 400, "desktop": 1280}

WAIT_FOR_MATH = """new Promise((resolve) => {
  const start = Date.now();
  (function wait() {
    if (!document.querySelector("script[src*='mathjax']")) resolve(true);  // a page without formulas
    else if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
      MathJax.startup.promise.then(() => requestAnimationFrame(() => setTimeout(() => resolve(true), 50)));
    } else if (Date.now() - start > 20000) resolve(false);
    else setTimeout(wait, 100);
  })();
})"""

#: Everything in the page's article that is cut off: no element hides part of its content sideways,
#: each visible element lies inside the nearest ancestor that clips it, unless that ancestor scrolls
#: sideways (then it scrolls in its own box, which the book's CSS marks), or inside the window when
#: nothing clips it; and the page itself does not scroll sideways. MathJax's hidden copy for screen
#: readers is left out, and a formula is checked as a whole.
CUT_OFF = """(() => {
  const width = document.documentElement.clientWidth, problems = [];
  if (document.documentElement.scrollWidth > width + 1)
    problems.push(`the page scrolls sideways: ${document.documentElement.scrollWidth} px in a ${width} px window`);
  const name = (e) => e.tagName.toLowerCase() + (typeof e.className === "string" && e.className
    ? "." + e.className.trim().split(/\\s+/).slice(0, 2).join(".") : "");
  const article = document.querySelector("article.bd-article") || document.body;
  for (const element of article.querySelectorAll("*")) {
    if (element.closest("mjx-assistive-mml")
        || (element.parentElement && element.parentElement.closest("mjx-container"))) continue;
    if (element.getClientRects().length === 0) continue;
    const style = getComputedStyle(element);
    if (style.visibility === "hidden" || style.position === "fixed") continue;
    const box = element.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) continue;
    if (["hidden", "clip"].includes(style.overflowX) && element.scrollWidth > element.clientWidth + 1)
      problems.push(`${name(element)} hides ${element.scrollWidth - element.clientWidth} px of its content: ` +
        (element.textContent || "").trim().slice(0, 50));
    let clip = element.parentElement;
    while (clip && clip !== document.body && getComputedStyle(clip).overflowX === "visible") clip = clip.parentElement;
    let left = 0, right = width;
    if (clip && clip !== document.body) {
      if (["auto", "scroll"].includes(getComputedStyle(clip).overflowX)) continue;
      ({ left, right } = clip.getBoundingClientRect());
    }
    if (box.right > right + 1 || box.left < left - 1)
      problems.push(`${name(element)} [${Math.round(box.left)}, ${Math.round(box.right)}] outside ` +
        `[${Math.round(left)}, ${Math.round(right)}]: ${(element.textContent || "").trim().slice(0, 50)}`);
  }
  return problems;
})()"""


#: Tables a reader cannot read: one wider than the text column (it would scroll sideways; book/_static/book.js
#: stacks its cells instead), or one with a cell squeezed so narrow (under 7 em, on a phone 10 em) that its text
#: breaks into two or more lines more than it holds (a value over the paper's is two lines by design).
UNREADABLE_TABLES = """(() => {
  const problems = [], em = parseFloat(getComputedStyle(document.documentElement).fontSize);
  const narrow = (innerWidth < 600 ? 10 : 7) * em, lines = window.cxBook.lines;  // lines of text, from book.js
  for (const table of document.querySelectorAll("article.bd-article table")) {
    if (table.closest(".cx-explorer") || table.getClientRects().length === 0) continue;
    const what = (table.textContent || "").trim().replace(/\\s+/g, " ").slice(0, 50);
    if (table.offsetWidth > table.parentElement.clientWidth + 1)
      problems.push(`a table ${table.offsetWidth} px wide in a ${table.parentElement.clientWidth} px column: ${what}`);
    for (const cell of table.querySelectorAll("td, th")) {
      if (cell.getClientRects().length === 0) continue;
      const style = getComputedStyle(cell);
      const width = cell.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
      const held = cell.querySelectorAll("br").length + 1, rendered = lines(cell);
      if (width < narrow && rendered > held + 1)
        problems.push(`a cell ${Math.round(width)} px wide, its text on ${rendered} lines: ` +
          (cell.textContent || "").trim().slice(0, 40));
    }
  }
  return problems;
})()"""

#: Display equations that do not fit their column and must be swiped sideways.
SWIPED_EQUATIONS = """(() => Array.from(document.querySelectorAll("article.bd-article div.math mjx-container"))
  .filter((math) => math.getClientRects().length && math.scrollWidth > math.clientWidth + 1)
  .map((math) => {
    const number = math.closest("div.math").querySelector(".eqno");
    const items = MathJax.startup.document.getMathItemsWithin(math);
    const tex = items.length ? items[0].math.replace(/\\s+/g, " ").slice(0, 60) : "";
    const name = number ? number.textContent.trim() : "unnumbered";
    return `${name} (${tex}): ${math.scrollWidth} px in ${math.clientWidth} px`;
  }))()"""

#: Code and printed output that must be scrolled sideways: at 1280 px a line of about 120 characters fits.
WIDE_CODE = """(() => Array.from(document.querySelectorAll("article div.cell_input pre, article div.cell_output pre"))
  .filter((pre) => pre.getClientRects().length && pre.scrollWidth > pre.clientWidth + 1)
  .map((pre) => pre.textContent.split("\\n").sort((a, b) => b.length - a.length)[0].slice(0, 80)))()"""

#: Every page of the book, as the toc lists it (the intro, the chapters, the appendices, the back matter).
BOOK_PAGES = [f"{entry}.html" for entry in (
    [yaml.safe_load((ROOT / "_toc.yml").read_text())["root"]]
    + [chapter["file"] for part in yaml.safe_load((ROOT / "_toc.yml").read_text())["parts"]
       for chapter in part["chapters"]])]


def reference_readouts(name: str, state: dict) -> dict[str, float]:
    """The numbers an explorer shows for ``state``, computed with the package."""
    if name == "kernelSpectrum":
        before, after = kernel_spectrum_view(state["kernel"], state["n"])
        return {"κ(C_a)": condition_number(before), "κ after ConvNorm": condition_number(after)}
    if name == "allpass":
        view = allpass_view(np.array(state["kernel"]), state["n"], state["eps"])
        return {"κ(C_a)": view["kappa_a"], "κ(Q(a))": view["kappa_q"]}
    if name == "channelSingularValues":
        sigma_a, sigma_q = channel_singular_value_pair(state["c_in"], state["m"], state["n"], state["seed"])
        return {"κ(A_k)": condition_number(sigma_a), "κ(Q_k)": condition_number(sigma_q)}
    if name == "paddingStride":
        view = padding_stride_view(padding_weights()[state["m"]], state["n"], state["padding"],
                                   state["stride"], state["mode"])
        return {f"‖Q_{k} Q_{k}^⊤ − I‖_2": d for k, d in enumerate(view["distances"])}  # channels from 0
    if name == "kernelFilter":
        rows, cols = state["photo_shape"]
        assert rows == cols, "the chapter's photograph is square"
        view = kernel_filter_view(state["kernel"], load_photo(rows, grayscale=True), state["eps"])
        return {"max |â|": view["magnitude"].max(), "min |â|": view["magnitude"].min(),
                "max v̂\u2009|â|": view["normalized"].max()}
    raise ValueError(f"unknown explorer {name!r}")


def assert_readouts_match(explorer: dict, name: str) -> None:
    shown = {label: float(value) for label, value in explorer["readouts"]}
    expected = reference_readouts(name, explorer["state"])
    assert shown.keys() == expected.keys()
    for label, value in expected.items():
        assert math.isclose(shown[label], value, rel_tol=1e-9, abs_tol=1e-12), (
            f"{name} shows {label} = {shown[label]!r}, the package gives {value!r} for {explorer['state']}")


@pytest.fixture(scope="module")
def browser():
    if chromium_binary() is None:
        pytest.fail("Chromium is not installed (Debian: apt-get install -y chromium); .ci/run installs it")
    with Browser(width=1200, height=900) as chromium:
        chromium.call("Network.enable", session=True)
        yield chromium


def page_errors(browser: Browser) -> list[str]:
    """Every error the page's console reported: uncaught exceptions, console.error calls, the browser's own."""
    return browser.console_errors()


def open_page(browser: Browser, page: Path) -> None:
    browser.events.clear()
    browser.resize(1200, 900)
    browser.open(page)
    browser.evaluate(NEXT_FRAME)
    requested = [e["params"]["request"]["url"] for e in browser.events
                 if e.get("method") == "Network.requestWillBeSent"]
    off_site = [url for url in requested if not url.startswith(("file:", "data:", "blob:"))]
    assert not off_site, f"{page.name} asked the network for {off_site}"
    assert not page_errors(browser), f"{page.name} raised {page_errors(browser)}"


@pytest.mark.parametrize("page", ["index.html", *EXPLORER_PAGES])
def test_pages_load_scripts_from_the_site_only(built_site, page):
    scripts = re.findall(r'<script[^>]*src="([^"]+)"', (built_site / page).read_text())
    external = [s for s in scripts if re.match(r"(https?:)?//", s)]
    assert not external, f"{page} loads scripts from the network: {external}"
    if page in EXPLORER_PAGES:  # pages with math
        assert any("_vendor/mathjax" in s for s in scripts)


def test_every_chapter_works_offline(built_site, browser):
    pages = sorted((built_site / "book").rglob("*.html"))
    assert len(pages) >= 10
    for page in pages:
        open_page(browser, page)  # no request off the site, no error


def test_math_is_typeset(built_site, browser):
    open_page(browser, built_site / "book" / "intro.html")
    typeset = browser.evaluate("""new Promise((resolve) => {
      const start = Date.now();
      (function wait() {
        if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
          MathJax.startup.promise.then(() => resolve(document.querySelectorAll("mjx-container").length));
        } else if (Date.now() - start > 20000) resolve(-1);
        else setTimeout(wait, 100);
      })();
    })""")
    assert typeset >= 5, "MathJax did not typeset the page"


def test_landing_page_opens_the_book(built_site, browser):
    browser.events.clear()
    browser.open(built_site / "index.html")
    try:
        here = browser.evaluate("location.pathname")
    except BrowserError:  # asked while the redirect replaced the page
        here = ""
    if not here.endswith("book/intro.html"):
        browser.wait_for_event("Page.loadEventFired")  # the landing page redirects to the intro
    browser.evaluate(NEXT_FRAME)
    assert browser.evaluate("location.pathname").endswith("book/intro.html")
    assert browser.evaluate("document.querySelectorAll('.cx-explorer').length") == 1, (
        "the landing page does not show the intro's explorer")
    assert not page_errors(browser)


@pytest.mark.parametrize("page", EXPLORER_PAGES)
def test_moving_a_control_recomputes_the_plot(built_site, browser, page):
    name, control = EXPLORER_PAGES[page]
    open_page(browser, built_site / page)
    before = browser.evaluate(EXPLORER)
    assert before["count"] == 1 and before["id"].startswith(f"cx-{name}-"), before["id"]
    assert not before["unlabelled"], f"controls without a label: {before['unlabelled']}"
    assert_readouts_match(before, name)
    browser.evaluate(f"document.getElementById({json.dumps(before['id'] + '-' + control)}).focus()")
    browser.press("ArrowRight", 39)  # a trusted key press, as from a reader's keyboard
    browser.evaluate(NEXT_FRAME)
    after = browser.evaluate(EXPLORER)
    assert after["state"] != before["state"], f"the arrow key did not move {control}"
    assert after["plot"] != before["plot"], "the plot did not change"
    assert_readouts_match(after, name)
    assert not page_errors(browser)
    raw = browser.evaluate("""(() => {
      const root = document.querySelector(".cx-explorer"), texts = [];
      for (const node of root.querySelectorAll("p, label, text, .cx-readout")) texts.push(node.textContent);
      return texts.filter((t) => /[_^ᵀ₀-₉]|\\|\\|/.test(t));
    })()""")
    assert not raw, f"labels not typeset (a raw _, ^, ᵀ, subscript digit or ASCII norm): {raw}"


@pytest.mark.parametrize("page", EXPLORER_PAGES)
def test_explorer_fits_a_phone(built_site, browser, page):
    open_page(browser, built_site / page)
    stem = EXPLORER_PAGES[page][0]
    browser.evaluate("document.querySelector('.cx-explorer').scrollIntoView()")
    browser.screenshot(SCREENSHOTS / f"{stem}-desktop.png", ".cx-explorer")
    browser.resize(390, 844, mobile=True)
    browser.evaluate(NEXT_FRAME)
    layout = browser.evaluate("""(() => {
      const root = document.querySelector(".cx-explorer"), box = root.getBoundingClientRect();
      const inside = Array.from(root.querySelectorAll("svg, canvas, input, select"))
        .filter((e) => e.getBoundingClientRect().right > box.right + 1).length;
      return {right: box.right, width: innerWidth, overflow: root.scrollWidth - root.clientWidth, outside: inside};
    })()""")
    browser.screenshot(SCREENSHOTS / f"{stem}-phone.png", ".cx-explorer")
    assert layout["right"] <= layout["width"] + 1, f"the explorer is wider than the phone: {layout}"
    assert layout["overflow"] <= 1 and layout["outside"] == 0, f"plots or controls stick out: {layout}"


@pytest.mark.parametrize("device", WIDTHS)
def test_every_page_is_readable_at_a_phone_and_a_desktop_width(built_site, browser, device):
    """Nothing cut off at 400 px or 1280 px, on every page: wide equations, code and output scroll in their
    own box, figures scale, long names break; a table too wide for the column stacks its cells, and no cell
    is squeezed into a narrow column of broken lines."""
    width, failures = WIDTHS[device], {}
    for page in sorted((built_site / "book").rglob("*.html")):
        browser.resize(width, 900, mobile=device == "phone")
        browser.open(page)
        assert browser.evaluate(WAIT_FOR_MATH), f"{page.name}: MathJax did not finish"
        problems = browser.evaluate(CUT_OFF) + browser.evaluate(UNREADABLE_TABLES)
        if problems:
            failures[str(page.relative_to(built_site))] = problems[:6]
    browser.resize(1200, 900)
    assert not failures, f"cut off at {width} px:\n" + json.dumps(failures, indent=1, ensure_ascii=False)


#: Pages whose tables have few columns and fit a phone as tables: shown as cards they would be several times taller.
TABLES_NOT_CARDS = ["book/notation.html", "book/appendix/engineering-notes.html"]


@pytest.mark.parametrize("page", TABLES_NOT_CARDS)
def test_narrow_tables_stay_tables_on_a_phone(built_site, browser, page):
    """At 400 px the Notation page's tables and Appendix A's benchmark tables are tables, not cards
    (book/_static/book.js stacks a table that is wider than the column or squeezes a cell)."""
    browser.resize(WIDTHS["phone"], 900, mobile=True)
    browser.open(built_site / page)
    assert browser.evaluate(WAIT_FOR_MATH), f"{page}: MathJax did not finish"
    browser.evaluate(NEXT_FRAME)
    tables = browser.evaluate("""Array.from(document.querySelectorAll("article.bd-article table"), (table) => [
      table.classList.contains("cx-stacked"), table.textContent.trim().replace(/\\s+/g, " ").slice(0, 50)])""")
    browser.resize(1200, 900)
    assert len(tables) >= 2, f"{page}: only {len(tables)} tables"
    stacked = [text for is_stacked, text in tables if is_stacked]
    assert not stacked, f"{page}: tables shown as cards at {WIDTHS['phone']} px: {stacked}"


def test_the_page_contents_stay_reachable_on_a_desktop(built_site, browser):
    """At 1280 px the list of a page's sections gives its room to the text; the header's button shows it."""
    browser.resize(WIDTHS["desktop"], 900)
    browser.open(built_site / "book" / "part1" / "02-all-pass-filters.html")
    browser.evaluate(NEXT_FRAME)
    assert browser.evaluate("document.querySelector('.bd-sidebar-secondary').getBoundingClientRect().left "
                            ">= innerWidth || getComputedStyle(document.querySelector('.bd-sidebar-secondary'))"
                            ".visibility === 'hidden'"), "the section list still takes room beside the text"
    browser.evaluate("document.querySelector('.bd-header button.secondary-toggle').click()")
    browser.evaluate(NEXT_FRAME)
    shown = browser.evaluate("(() => { const d = document.getElementById('pst-secondary-sidebar-modal');"
                             " return d && d.open ? d.innerText : ''; })()")
    assert "2.1. The preconditioner, densely" in shown
    browser.resize(1200, 900)


def test_chapters_sections_and_what_they_number_are_numbered_as_the_book_counts(built_site):
    """Chapters from 0 (as the file names), appendices A, B; sections, figures, equations, exercises
    and propositions per chapter; the back matter unnumbered. Read from the built pages."""
    text = (built_site / "book" / "part1" / "03-multichannel-tight-frames.html").read_text()
    toc = re.findall(r'<a class="[^"]*reference internal[^"]*" href="[^"]*">([0-9A-Z]+\.) ', text)
    assert toc[:11] == [f"{number}." for number in range(11)] and toc[11:13] == ["A.", "B."], toc
    assert re.search(r"<title>3\. Many channels: tight frames", text)
    assert '<span class="section-number">3.1. </span>One output channel is a wide matrix' in text
    captions = re.findall(r'class="caption-number">([^<]*)<', text)
    for expected in ("Fig. 3.1 ", "Proposition 3.1 ", "Exercise 3.1 "):
        assert expected in captions, (expected, captions)
    assert '<span class="eqno">(3.1)' in text
    appendix = (built_site / "book" / "appendix" / "engineering-notes.html").read_text()
    assert re.search(r"<title>A\. ", appendix)
    notation = (built_site / "book" / "notation.html").read_text()
    assert re.search(r"<title>Notation", notation)
    intro = (built_site / "book" / "intro.html").read_text()
    assert '<span class="std std-numref">Chapter 0</span>' in intro  # the chapter labels resolve to numbers


@pytest.mark.parametrize("page", BOOK_PAGES)
def test_display_equations_fit_a_phone(built_site, browser, page):
    """At a phone's width no display equation needs a sideways swipe: a long one is written on several
    aligned lines."""
    browser.resize(WIDTHS["phone"], 900, mobile=True)
    browser.open(built_site / page)
    assert browser.evaluate(WAIT_FOR_MATH), f"{page}: MathJax did not finish"
    swiped = browser.evaluate(SWIPED_EQUATIONS)
    browser.resize(1200, 900)
    assert not swiped, f"{page}: display equations wider than a phone's column:\n" + "\n".join(swiped)


@pytest.mark.parametrize("page", BOOK_PAGES)
def test_code_and_output_fit_a_desktop(built_site, browser, page):
    """At a desktop's width every line of code and of printed output is read without scrolling sideways."""
    browser.resize(WIDTHS["desktop"], 900)
    browser.open(built_site / page)
    browser.evaluate(NEXT_FRAME)
    wide = browser.evaluate(WIDE_CODE)
    browser.resize(1200, 900)
    assert not wide, f"{page}: lines wider than a desktop's column:\n" + "\n".join(wide)


#: Printed output that must be scrolled sideways (at 400 px a line of about 42 characters fits).
WIDE_OUTPUT = """(() => Array.from(document.querySelectorAll("article div.cell_output pre"))
  .filter((pre) => pre.getClientRects().length && pre.scrollWidth > pre.clientWidth + 1)
  .map((pre) => pre.textContent.split("\\n").sort((a, b) => b.length - a.length)[0].slice(0, 80)))()"""


def test_printed_output_fits_a_phone_outside_the_experiments(built_site, browser):
    """At a phone's width the pages outside Part IV show their numbers as tables and short printed lines: at
    most five printed outputs in all need a sideways scroll. (Part IV's outputs are its own.)"""
    browser.resize(WIDTHS["phone"], 900, mobile=True)
    wide = []
    for page in BOOK_PAGES:
        if page.startswith("book/part4/"):
            continue
        browser.open(built_site / page)
        browser.evaluate(NEXT_FRAME)
        wide += [f"{page}: {line}" for line in browser.evaluate(WIDE_OUTPUT)]
    browser.resize(1200, 900)
    assert len(wide) <= 5, "printed outputs wider than a phone's column:\n" + "\n".join(wide)


#: An alt text that is a file name (what the HTML writer falls back to) or nothing at all.
FILE_NAME = re.compile(r"^$|^\S*\.(?:png|jpe?g|svg|gif|webp)$", re.IGNORECASE)


def test_every_figure_image_says_what_its_caption_says(built_site):
    """Every image of the site has an alt text, never a file name; an image in a figure has its caption's
    text (book/_ext/figure_alt_text.py), so a reader who cannot see it, or whose browser did not load it,
    reads what the figure shows."""
    problems, figures = [], 0
    for page in sorted((built_site / "book").rglob("*.html")):
        text = page.read_text()
        for figure in re.findall(r"<figure\b.*?</figure>", text, re.S):
            caption = re.search(r'<span class="caption-text">(.*?)</span>\s*<a class="headerlink"', figure, re.S)
            caption_words = re.sub(r"<[^>]+>|\\\(.*?\\\)", " ", caption.group(1) if caption else "").split()
            for alt in re.findall(r'<img\b[^>]*?\balt="([^"]*)"', figure):
                figures += 1
                words = alt.split()
                if not caption_words or not words or words[0] != caption_words[0]:
                    problems.append(f"{page.name}: alt text {alt[:60]!r} is not the caption {caption_words[:6]}")
        for image in re.findall(r"<img\b[^>]*>", text):
            alt = re.search(r'\balt="([^"]*)"', image)
            if alt is None or FILE_NAME.match(html.unescape(alt.group(1)).strip()):
                problems.append(f"{page.name}: {image[:120]}")
    assert figures >= 20, f"only {figures} figure images found"
    assert not problems, "images without a text of their own:\n" + "\n".join(problems)
