"""An explorer as one self-contained HTML output: its data and its JavaScript travel with it.

Displayed in Jupyter or Colab (``_repr_html_``), or written into the website by the book
build, the output needs no kernel, no server and no network: moving a control runs the
JavaScript in the reader's browser, which recomputes and redraws. The JavaScript lives in
``js/`` beside this file: the shared ``spectra.js`` (the numbers), ``plot.js`` (drawing) and
``controls.js`` (labelled controls), then one file per explorer, which registers
``CX.explorers[name] = {view, mount}``; ``mount(root, config)`` builds the explorer in the
element ``root`` from the JSON ``config``.
"""
from __future__ import annotations

import base64
import html
import json
import secrets
from functools import cache
from pathlib import Path

import numpy as np

SOURCES = Path(__file__).with_name("js")
LIBRARY = ("spectra.js", "plot.js", "controls.js")


@cache
def source(name: str) -> str:
    """The text of ``js/<name>``, checked to be safe inside an HTML <script> or <style> element."""
    text = (SOURCES / name).read_text()
    if "</script" in text.lower() or "</style" in text.lower() or "<!--" in text:
        raise ValueError(f"{name} contains '</script', '</style' or '<!--', which would break the page")
    return text


def encode_float64(values) -> str:
    """``values`` as base64 of little-endian float64 bytes (``CX.decodeFloat64`` reads it back exactly)."""
    return base64.b64encode(np.ascontiguousarray(values, dtype="<f8").tobytes()).decode("ascii")


def encode_bytes(values) -> str:
    """``values`` (integers 0..255) as base64 of one byte each."""
    array = np.asarray(values)
    if array.size and (array.min() < 0 or array.max() > 255):
        raise ValueError("values must lie in 0..255")
    return base64.b64encode(array.astype(np.uint8).tobytes()).decode("ascii")


def script_json(value) -> str:
    """JSON that is safe inside a <script> element: every ``<`` written ``\\u003c``, so no
    ``</script>`` or ``<!--`` can end or change the element."""
    return json.dumps(value, allow_nan=False).replace("<", "\\u003c")


class Explorer:
    """A live explorer: ``name`` is the key its script (``js/<script>``) registers in ``CX.explorers``.

    Args:
        name: the explorer's key in ``CX.explorers``.
        script: the file in ``js/`` that defines it.
        title: a heading shown above the controls (and the group's accessible name).
        config: JSON-serialisable settings and data handed to ``mount``.
    """

    def __init__(self, name: str, script: str, title: str, config: dict):
        if not (SOURCES / script).is_file():
            raise ValueError(f"script must name a file in {SOURCES}, got {script!r}")
        self.name, self.script, self.title, self.config = name, script, title, {**config, "title": title}

    def __repr__(self) -> str:
        return f"<{self.title}: an explorer that runs in the browser (JavaScript)>"

    def _repr_html_(self) -> str:
        return self.html()

    def html(self) -> str:
        """The HTML fragment: the explorer's element, its stylesheet and its script."""
        element_id = f"cx-{self.name}-{secrets.token_hex(4)}"
        code = "\n".join(source(name) for name in (*LIBRARY, self.script))
        return (
            f'<div class="cx-explorer" id="{element_id}" role="group" aria-label="{html.escape(self.title)}">'
            "<noscript>This explorer needs JavaScript.</noscript></div>\n"
            f"<style>{source('explorer.css')}</style>\n"
            "<script>\n(function () {\n\"use strict\";\nconst CX = { explorers: {} };\n"
            f"{code}\n"
            # Some front ends run an output's scripts before they attach it to the page (the
            # classic notebook does): then wait for the element, for at most five seconds.
            "let tries = 0;\n"
            "(function start() {\n"
            f"  const root = document.getElementById({script_json(element_id)});\n"
            "  if (!root) { if (++tries < 200) setTimeout(start, 25); return; }\n"
            f"  try {{ CX.explorers[{script_json(self.name)}].mount(root, {script_json(self.config)}); }}\n"
            '  catch (error) { root.textContent = "The explorer could not start: " + error.message; throw error; }\n'
            "})();\n"
            "})();\n</script>"
        )
