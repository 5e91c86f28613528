"""Write (or check) the Colab setup cell at the top of every book notebook.

It also gives each notebook the standard ``python3`` kernel and drops authoring
metadata (jupytext), so every chapter runs on a fresh kernel the same way.

The repository URL and branch live once, in ``_config.yml`` (``repository:``); the
first cell of each notebook is generated from them, so a move of the repository is
one edit plus ``python scripts/notebook_setup_cell.py``.

Usage::

    python scripts/notebook_setup_cell.py            # rewrite every notebook under book/
    python scripts/notebook_setup_cell.py --check    # exit 1 if any notebook is out of date
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
SETUP_TAG = "colab-setup"


def setup_source(config_path: Path = ROOT / "_config.yml") -> str:
    """The source of the setup cell, built from the repository URL and branch.

    In Colab it clones the repository and installs its three packages from it (the library,
    ``lab/`` and ``book_code/``) without their dependencies (Colab has torch, numpy and what the
    book's figures need, so nothing it already has is replaced and no restart is asked for). A
    failed clone or install stops the cell with the URL or folder and the tool's own message."""
    repo = yaml.safe_load(config_path.read_text())["repository"]
    url, branch = repo["url"].rstrip("/"), repo.get("branch", "main")
    return (
        "# Setup: in Google Colab, fetch the book's repository (packages and recorded results) and install the\n"
        "# convnorm library, its lab and the book's code from it; the data loader downloads CIFAR-10 when a\n"
        "# chapter needs it.\n"
        "# Anywhere else (your machine, the book build, the tests) this cell does nothing.\n"
        "import os\n"
        "import subprocess\n"
        "import sys\n"
        "\n"
        'if "google.colab" in sys.modules:\n'
        "    def _run(command, what):\n"
        "        done = subprocess.run(command, capture_output=True, text=True)\n"
        "        if done.returncode:\n"
        '            raise RuntimeError(f"{what} failed (exit {done.returncode}):'
        '\\n{(done.stderr or done.stdout).strip()}")\n'
        "\n"
        f'    url = "{url}"\n'
        '    if not os.path.isdir("/content/convnorm-book"):\n'
        f'        _run(["git", "clone", "--depth", "1", "--branch", "{branch}", url, "/content/convnorm-book"],\n'
        '             f"cloning {url}")\n'
        '    packages = ["/content/convnorm-book", "/content/convnorm-book/lab", "/content/convnorm-book/book_code"]\n'
        '    _run([sys.executable, "-m", "pip", "install", "--no-deps", *packages],\n'
        '         "installing convnorm, convnorm_lab and convnorm_book from /content/convnorm-book")\n'
        '    sys.path[:0] = packages\n'
        '    os.environ.setdefault("CONVNORM_DATA_DIR", "/content/data")\n'
        '    os.environ.setdefault("CONVNORM_RESULTS_DIR", "/content/convnorm-book/results")\n'
        '    os.environ.setdefault("CONVNORM_DOWNLOAD", "1")'
    )


def setup_cell(source: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_code_cell(source, metadata={"tags": [SETUP_TAG, "remove-cell"]})


def is_setup_cell(cell: nbformat.NotebookNode) -> bool:
    return cell.cell_type == "code" and SETUP_TAG in cell.get("metadata", {}).get("tags", [])


KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}


def is_current(nb: nbformat.NotebookNode, source: str) -> bool:
    cells = nb.cells
    return bool(cells and is_setup_cell(cells[0]) and cells[0].source == source
                and nb.metadata.get("kernelspec") == KERNELSPEC and "jupytext" not in nb.metadata)


def sync(path: Path, source: str) -> bool:
    """Make the notebook's first cell the setup cell; return True if it changed."""
    nb = nbformat.read(path, as_version=4)
    if is_current(nb, source):
        return False
    if nb.cells and is_setup_cell(nb.cells[0]):
        nb.cells[0].source = source
    else:
        nb.cells.insert(0, setup_cell(source))
    nb.metadata.pop("jupytext", None)
    nb.metadata["kernelspec"] = KERNELSPEC
    nbformat.write(nb, path)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every notebook under book/")
    parser.add_argument("--check", action="store_true", help="only report notebooks that are out of date")
    args = parser.parse_args(argv)
    notebooks = args.notebooks or sorted((ROOT / "book").rglob("*.ipynb"))
    source = setup_source()
    stale = []
    for path in notebooks:
        if ".ipynb_checkpoints" in path.parts:
            continue
        if args.check:
            if not is_current(nbformat.read(path, as_version=4), source):
                stale.append(path)
        elif sync(path, source):
            print(f"updated {path}")
    for path in stale:
        print(f"{path}: first cell is not the Colab setup cell; run python scripts/notebook_setup_cell.py")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
