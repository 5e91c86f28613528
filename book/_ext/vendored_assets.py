"""Sphinx extension: serve MathJax and the ipywidgets JavaScript from the book itself.

Reads ``vendored_assets.json`` (beside this file), points ``mathjax_path`` and
myst-nb's ``nb_ipywidgets_js`` at the vendored copies, checks that every file is
there (a missing one stops the build with the command that fetches it), and copies
``_vendor/`` into the built site (``_build/html/_static/_vendor``: Sphinx resolves
relative script paths against ``_static``). The source folder is deliberately not
``_static``: Jupyter Book adds every script under a source ``_static`` to every page.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.errors import ExtensionError

MANIFEST = json.loads((Path(__file__).with_name("vendored_assets.json")).read_text())
FOLDER = "_vendor"


def _vendor_dir(app: Sphinx) -> Path:
    return Path(app.confdir) / FOLDER


def _configure(app: Sphinx, config: Config) -> None:
    missing = [
        MANIFEST[key] for key in ("mathjax", "requirejs", "widgets")
        if not (_vendor_dir(app) / MANIFEST[key]).is_file()
    ]
    if missing:
        raise ExtensionError(
            f"vendored JavaScript missing from {_vendor_dir(app)}: {', '.join(missing)}. "
            "Fetch it with: python scripts/vendor_assets.py"
        )
    config.mathjax_path = f"{FOLDER}/{MANIFEST['mathjax']}"
    config.nb_ipywidgets_js = {
        f"{FOLDER}/{MANIFEST['requirejs']}": {},
        f"{FOLDER}/{MANIFEST['widgets']}": {},
    }


def _copy(app: Sphinx, exception: Exception | None) -> None:
    if exception is None and app.builder.format == "html":
        shutil.copytree(_vendor_dir(app), Path(app.outdir) / "_static" / FOLDER, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(".stamps"))


def setup(app: Sphinx) -> dict:
    app.connect("config-inited", _configure, priority=900)
    app.connect("build-finished", _copy)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
