"""Sphinx extension: every page under ``book/`` must be listed in ``_toc.yml``.

The book builds only the files named in the toc (``only_build_toc_files``), so a
chapter left out of it would silently vanish from the website. This turns that into
a build error naming the file.
"""
from __future__ import annotations

from pathlib import Path

import yaml
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError

PAGE_SUFFIXES = {".ipynb", ".md"}


def _toc_entries(node) -> set[str]:
    """All ``file`` entries (and the root) of a jb-book toc, without suffixes."""
    found = set()
    if isinstance(node, dict):
        for key in ("root", "file"):
            if key in node:
                found.add(str(Path(node[key]).with_suffix("")))
        for value in node.values():
            found |= _toc_entries(value)
    elif isinstance(node, list):
        for item in node:
            found |= _toc_entries(item)
    return found


def _check(app: Sphinx) -> None:
    root = Path(app.confdir)
    listed = _toc_entries(yaml.safe_load((root / "_toc.yml").read_text()))
    pages = [
        p.relative_to(root) for p in (root / "book").rglob("*")
        if p.suffix in PAGE_SUFFIXES and not any(part.startswith((".", "_")) for part in p.relative_to(root).parts)
    ]
    missing = sorted(str(p) for p in pages if str(p.with_suffix("")) not in listed)
    if missing:
        raise ExtensionError(f"pages under book/ missing from _toc.yml: {', '.join(missing)}")


def setup(app: Sphinx) -> dict:
    app.connect("builder-inited", _check)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
