"""The library as a package: its own README (whose examples run), a license, a changelog, the marker
of its type information, metadata that names its authors and addresses, a torch floor that is the
oldest version it ran with, and a clean type check."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11 on

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def test_the_readme_is_the_librarys_own_and_its_examples_run(tmp_path, monkeypatch):
    readme = ROOT / PROJECT["readme"]
    assert readme.name != "README.md", "README.md is the book's"
    text = readme.read_text()
    assert "pip install torch --index-url https://download.pytorch.org/whl/cpu" in text  # the CPU build first
    blocks = BLOCK.findall(text)
    assert blocks
    monkeypatch.chdir(tmp_path)
    for code in blocks:
        exec(compile(code, str(readme), "exec"), {"__name__": "readme_example"})


def test_license_changelog_type_marker_and_metadata():
    assert PROJECT["license"] == {"text": "MIT"} and (ROOT / "LICENSE").read_text().startswith("MIT License")
    import convnorm

    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"## {convnorm.__version__}" in changelog
    assert (ROOT / "convnorm" / "py.typed").exists()
    assert PROJECT["authors"] and {"Homepage", "Repository", "Issues", "Changelog"} <= set(PROJECT["urls"])


def test_the_torch_floor_is_the_oldest_torch_the_records_ran_with():
    versions = set()
    for path in (ROOT / "results").rglob("*.json"):
        versions.update(re.findall(r'"torch_version": "(\d+)\.(\d+)', path.read_text()))
    oldest = min((int(major), int(minor)) for major, minor in versions)
    (floor,) = [d for d in PROJECT["dependencies"] if d.startswith("torch")]
    assert floor == f"torch>={oldest[0]}.{oldest[1]}"


@pytest.mark.typecheck
def test_mypy_finds_nothing_in_the_library(monkeypatch):
    """``python -m mypy`` (configured in pyproject.toml: the package convnorm/) reports no error."""
    api = pytest.importorskip("mypy.api")
    monkeypatch.chdir(ROOT)
    report, errors, status = api.run([])
    assert status == 0, report + errors

