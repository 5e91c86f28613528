"""Sphinx extension: pages whose scripts log no error.

Each script once. Jupyter Book 1 registers sphinx-thebe's configuration script
(``const THEBE_JS_URL = ...``) twice, so every page declared the same constant twice and the browser
logged a SyntaxError on every page. This drops a script element that repeats an earlier one exactly
(same file, or the same inline body, and the same attributes) from the page's list before the page is written.

The theme's mode. The theme reads its light or dark mode from the browser's storage, else from the
page's ``default_mode`` (``html_context``), which Jupyter Book leaves empty: the theme then logged
"Got invalid theme mode" on the first page a browser opened. Unless the configuration names a mode,
it is ``auto`` (the system's), which is what the theme fell back to.

``tests/book/test_site_browser.py`` fails on any error the browser's console reports.
"""
from __future__ import annotations

from sphinx.application import Sphinx


def _identity(script) -> tuple:
    attributes = getattr(script, "attributes", {}) or {}
    filename = getattr(script, "filename", script) or ""  # an inline script's is "" or None
    return str(filename), tuple(sorted((key, str(value)) for key, value in attributes.items()))


def _drop_repeated_scripts(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, kept = set(), []
    for script in scripts:
        identity = _identity(script)
        if identity not in seen:
            seen.add(identity)
            kept.append(script)
    scripts[:] = kept  # in place: the list the builder renders


def _default_mode(app: Sphinx, config) -> None:
    if not config.html_context.get("default_mode"):
        config.html_context["default_mode"] = "auto"


def setup(app: Sphinx) -> dict:
    app.connect("config-inited", _default_mode)
    app.connect("html-page-context", _drop_repeated_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
