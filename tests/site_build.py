"""Helpers that build the website (the same command as the README's Quick start)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD_ARGS = ["-W", "-n", "--keep-going"]


def jupyter_book_build(source: Path, output: Path | None = None) -> subprocess.CompletedProcess:
    """Run ``jupyter-book build SOURCE -W -n --keep-going`` and return the finished process
    (killed with ``subprocess.TimeoutExpired`` after 15 minutes, well above a full build).

    The build runs without the tests' ``MPLBACKEND=Agg`` (conftest.py): its kernels must use
    the inline backend, or no figure reaches the pages and every figure label is undefined."""
    environment = {key: value for key, value in os.environ.items() if key != "MPLBACKEND"}
    command = [sys.executable, "-c", "from jupyter_book.cli.main import main; main()",
               "build", str(source), *BUILD_ARGS]
    if output is not None:
        command += ["--path-output", str(output)]
    return subprocess.run(command, cwd=source, capture_output=True, text=True, timeout=900,
                          env=environment)


def build_site() -> Path:
    """Build the book (incremental: cached notebooks are not re-run); return ``_build/html``.

    With the environment variable ``CONVNORM_BUILT_SITE`` set to an HTML folder already built
    with the same command (e.g. ``jupyter-book build . -W -n --keep-going --path-output DIR``
    gives ``DIR/_build/html``), return that folder instead of building."""
    built = os.environ.get("CONVNORM_BUILT_SITE")
    if built:
        if not (Path(built) / "book" / "intro.html").is_file():
            raise AssertionError(f"CONVNORM_BUILT_SITE={built} holds no built book (no book/intro.html)")
        return Path(built)
    result = jupyter_book_build(ROOT)
    if result.returncode != 0:
        raise AssertionError(f"book build failed:\n{result.stdout[-6000:]}\n{result.stderr[-6000:]}")
    return ROOT / "_build" / "html"
