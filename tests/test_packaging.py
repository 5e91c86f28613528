"""Each of the three packages installs on its own: the root's project ships the library alone, the
lab's and the book's projects ship theirs and depend on the packages before them, and
requirements.txt installs all three (what the book's build and CI use)."""
from __future__ import annotations

from pathlib import Path

import pytest
from setuptools import find_packages

tomllib = pytest.importorskip("tomllib")  # Python 3.11 on

ROOT = Path(__file__).resolve().parents[1]
#: each project's folder, the distribution it builds, its package, and the distributions it needs
PROJECTS = [(ROOT, "convnorm", "convnorm", set()),
            (ROOT / "lab", "convnorm-lab", "convnorm_lab", {"convnorm"}),
            (ROOT / "book_code", "convnorm-book", "convnorm_book", {"convnorm", "convnorm-lab"})]


@pytest.mark.parametrize("folder, name, package, needs", PROJECTS, ids=[p[1] for p in PROJECTS])
def test_a_project_ships_its_package_alone_and_needs_the_ones_before_it(folder, name, package, needs):
    project = tomllib.loads((folder / "pyproject.toml").read_text())
    found = find_packages(folder, include=project["tool"]["setuptools"]["packages"]["find"]["include"])
    assert project["project"]["name"] == name
    assert found and all(found_name.split(".")[0] == package for found_name in found), found
    assert {dependency.split("[")[0].split(">")[0] for dependency in project["project"]["dependencies"]
            if dependency.startswith("convnorm")} == needs


def test_requirements_install_the_three_projects_editable():
    lines = [line.split("[")[0] for line in (ROOT / "requirements.txt").read_text().splitlines()
             if line.startswith("-e ")]
    assert lines == ["-e .", "-e ./lab", "-e ./book_code"]


def test_the_install_brings_triton_so_the_kernels_tests_run_everywhere():
    """requirements.txt installs the library with its ``fused`` extra, which pins triton (the
    fused filter's tests run under its interpreter on CI's CPU, never skipped), and it is here."""
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    (library,) = [line for line in lines if line.startswith("-e .[")]
    assert "fused" in library.split("[")[1].rstrip("]").split(",")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    (pin,) = project["optional-dependencies"]["fused"]
    assert pin.startswith("triton==")
    import triton

    assert triton.__version__ == pin.split("==")[1].split(";")[0].strip()
