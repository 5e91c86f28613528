r"""Sphinx extension: every figure's image says in words what its caption says.

A notebook's figure is an image output that myst-nb wraps in a figure with the caption of the
cell's metadata; the image itself gets no ``alt`` attribute, so the HTML writer falls back to
the image's file name (a hash), which is what a screen reader reads and what a browser shows when
the image does not load. Once the references are resolved (``{numref}`` in a caption has become
"Fig. 2.1"), this extension gives every image of a figure the caption's text as its alt text, with
the caption's formulas written in plain symbols (``$\hat v = |\hat a|^{-1}$`` becomes
"v̂ = |â|^(−1)"). It does the same for an ``<img alt="">`` in the HTML of a figure's output (the
figures that show another drawing at a phone's width, :class:`convnorm_book.phone_and_desktop.
PhoneAndDesktopFigure`). An image that is not in a figure keeps what its author gave it.

``tests/book/test_site_browser.py`` fails on any image of the site whose alt text is empty or a file name.
"""
from __future__ import annotations

import html
import re

from docutils import nodes
from sphinx.application import Sphinx

#: LaTeX commands of the book's captions and their plain symbols.
SYMBOLS = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "varepsilon": "ε", "epsilon": "ε", "eta": "η",
    "theta": "θ", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν", "rho": "ρ", "sigma": "σ", "tau": "τ",
    "phi": "φ", "omega": "ω", "Omega": "Ω", "Delta": "Δ", "Sigma": "Σ", "pi": "π", "ell": "ℓ",
    "top": "ᵀ", "times": "×", "cdot": "·", "cdots": "⋯", "dots": "…", "ldots": "…", "le": "≤", "leq": "≤",
    "ge": "≥", "geq": "≥", "ne": "≠", "neq": "≠", "approx": "≈", "to": "→", "infty": "∞", "sum": "Σ",
    "odot": "⊙", "star": "⋆", "ast": "∗", "circledast": "⊛", "otimes": "⊗", "in": "∈", "partial": "∂",
    "nabla": "∇", "sqrt": "√", "|": "‖", "lVert": "‖", "rVert": "‖", "Vert": "‖", "lvert": "|", "rvert": "|",
    "angle": "∠", "pm": "±", "propto": "∝", "langle": "⟨", "rangle": "⟩", "max": "max", "min": "min",
    "log": "log", "ln": "ln", "cos": "cos", "sin": "sin", "exp": "exp", ",": " ", ";": " ", "quad": " ",
    "qquad": " ", " ": " ", "!": "",
}
#: Commands that only style their argument (the argument is kept).
STYLES = ("mathrm", "mathbf", "mathit", "mathcal", "operatorname", "text", "textrm", "mathbb", "boldsymbol")
#: Sizes of delimiters, dropped.
SIZES = re.compile(r"\\(?:big|Big|bigg|Bigg)[lrm]?|\\left|\\right")
#: Accents and the combining character that draws them.
ACCENTS = {"hat": "\u0302", "widehat": "\u0302", "tilde": "\u0303", "widetilde": "\u0303", "bar": "\u0304",
           "overline": "\u0304", "check": "\u030c", "vec": "\u20d7"}
GROUP = r"\{((?:[^{}]|\{[^{}]*\})*)\}"


def _grouped(text: str) -> str:
    return text if len(text) == 1 else f"({text})"


def plain_math(latex: str) -> str:
    """A LaTeX formula in plain symbols: Greek letters and operators as characters, accents as combining
    marks, fractions as ``a/b``, sub- and superscripts inline (``x_k``, ``|â|^(−1)``)."""
    text = SIZES.sub("", latex)
    text = re.sub(r"\\frac" + GROUP + GROUP, lambda m: f"{_grouped(plain_math(m[1]))}/{_grouped(plain_math(m[2]))}",
                  text)
    for name, mark in ACCENTS.items():
        text = re.sub(rf"\\{name}\s*(?:{GROUP}|(\\?[A-Za-z]))",
                      lambda m, mark=mark: "".join(c + mark for c in plain_math(m[1] or m[2])), text)
    for style in STYLES:
        text = re.sub(rf"\\{style}\s*{GROUP}", lambda m: plain_math(m[1]), text)
    text = re.sub(r"\\([A-Za-z]+|.)", lambda m: SYMBOLS.get(m[1], m[1]), text)
    text = re.sub(r"\^\{?ᵀ\}?", "ᵀ", text)
    text = re.sub(r"([_^])" + GROUP, lambda m: f"{m[1]}({m[2]})" if len(m[2]) > 1 else m[1] + m[2], text)
    text = text.replace("{", "").replace("}", "").replace("-", "−")
    return re.sub(r"\s+", " ", text).strip()


def plain_text(node: nodes.Node) -> str:
    """The text of ``node`` as a reader sees it, formulas in plain symbols."""
    if isinstance(node, nodes.math):
        return plain_math(node.astext())
    if isinstance(node, nodes.Text):
        return str(node)
    return "".join(plain_text(child) for child in node.children)


def _caption_text(figure: nodes.figure) -> str | None:
    caption = next(iter(figure.findall(nodes.caption)), None)
    return re.sub(r"\s+", " ", plain_text(caption)).strip() if caption is not None else None


def _give_alt_text(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    for figure in doctree.findall(nodes.figure):
        text = _caption_text(figure)
        if not text:
            continue
        for image in figure.findall(nodes.image):
            if not image.get("alt"):
                image["alt"] = text
        for raw in figure.findall(nodes.raw):
            if "html" in raw.get("format", "").split() and 'alt=""' in raw.astext():
                replaced = raw.astext().replace('alt=""', f'alt="{html.escape(text)}"')
                raw.replace(raw.children[0], nodes.Text(replaced))


def setup(app: Sphinx) -> dict:
    app.connect("doctree-resolved", _give_alt_text, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
