"""The library stands alone: its wheel, installed by itself into a fresh virtual environment, runs every
example of the API page's library sections, of its own README, and every code cell of the practitioner's page.

The environment has no site-packages of this interpreter, so neither the lab nor the book's code (installed
here in editable mode, by path files that only a site directory's processing reads) can be imported there.
The packages the library depends on (torch, numpy), and the export extra's (onnx, onnxruntime), are taken
from this interpreter's site-packages by a path file that names their folder: nothing is downloaded. The
wheel is built from a copy of the library's files, so the checkout gets no build folder."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import numpy
import pytest
import torch

pytestmark = pytest.mark.docs

ROOT = Path(__file__).resolve().parents[2]
LIBRARY_FILES = ("pyproject.toml", "README-convnorm.md", "LICENSE", "convnorm")
"""What building the wheel reads: the project's metadata, its README and license, and the package."""
LIBRARY_SECTIONS_END = "## The baselines"
"""The API page documents the library up to this heading, the lab from it on."""

RUNNER = r'''
import importlib.util, json, os, re, sys, tempfile
from pathlib import Path

import convnorm

root = Path(sys.argv[1])
assert Path(convnorm.__file__).is_relative_to(sys.prefix), convnorm.__file__  # the wheel's copy
for package in ("convnorm_lab", "convnorm_book"):
    assert importlib.util.find_spec(package) is None, f"{package} is importable"
text = (root / "book" / "api.md").read_text().split(sys.argv[2])[0]
examples = re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)
os.chdir(tempfile.mkdtemp())
for code in examples:
    exec(compile(code, "api.md", "exec"), {"__name__": "api_example"})
print(f"api.md: {len(examples)} examples")
for code in re.findall(r"^```python\n(.*?)^```", (root / "README-convnorm.md").read_text(), re.S | re.M):
    exec(compile(code, "README-convnorm.md", "exec"), {"__name__": "readme_example"})
notebook = json.loads((root / "book" / "practitioner.ipynb").read_text())
cells = ["".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code"]
os.chdir(root / "book")
namespace = {"__name__": "__main__"}
for number, code in enumerate(cells):
    exec(compile(code, f"practitioner.ipynb, code cell {number}", "exec"), namespace)
print(f"practitioner.ipynb: {len(cells)} code cells")
'''


def build_wheel(folder: Path) -> Path:
    """The library's wheel, built without a download from a copy of its files in ``folder``."""
    source = folder / "source"
    source.mkdir()
    for name in LIBRARY_FILES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
                    "-w", str(folder / "dist"), str(source)], check=True)
    (wheel,) = (folder / "dist").glob("convnorm-*.whl")
    return wheel


def fresh_environment(folder: Path) -> Path:
    """A virtual environment without this interpreter's site-packages, whose path file names the folders
    holding torch and numpy; its Python."""
    venv.create(folder, with_pip=False, system_site_packages=False)
    python = folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True).stdout.strip()
    folders = dict.fromkeys(str(Path(module.__file__).resolve().parents[1]) for module in (torch, numpy))
    (Path(site) / "dependencies.pth").write_text("".join(f"{path}\n" for path in folders))
    return python


def test_the_wheel_alone_runs_the_api_pages_library_examples_and_the_practitioners_page(tmp_path):
    assert LIBRARY_SECTIONS_END in (ROOT / "book" / "api.md").read_text(), "the API page's lab sections moved"
    wheel = build_wheel(tmp_path)
    python = fresh_environment(tmp_path / "venv")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q",
                    str(wheel)], check=True)
    environment = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    environment["OMP_NUM_THREADS"] = environment.get("OMP_NUM_THREADS", "1")
    environment.pop("CONVNORM_RESULTS_DIR", None)  # the page finds the records from its own folder
    done = subprocess.run([str(python), "-c", RUNNER, str(ROOT), LIBRARY_SECTIONS_END], cwd=tmp_path,
                          env=environment, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    api = (ROOT / "book" / "api.md").read_text().split(LIBRARY_SECTIONS_END)[0].count("```python")
    cells = sum(cell["cell_type"] == "code" for cell in json.loads((ROOT / "book" / "practitioner.ipynb").read_text())
                ["cells"])
    assert f"api.md: {api} examples" in done.stdout and f"practitioner.ipynb: {cells} code cells" in done.stdout
