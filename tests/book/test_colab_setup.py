"""The Colab setup cell: it clones and installs without replacing what Colab has, and a
failed clone or install stops it with the URL and the reason."""
from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from notebook_setup_cell import setup_source  # noqa: E402


def _run_cell(monkeypatch, fail_on: str | None) -> list[list[str]]:
    """Execute the setup cell as in Colab, with git and pip replaced by a recorder that
    fails the command containing ``fail_on``."""
    calls = []

    def fake_run(command, capture_output, text):
        calls.append(command)
        failed = fail_on is not None and fail_on in command
        return subprocess.CompletedProcess(command, 128 if failed else 0, "",
                                           "fatal: unable to access" if failed else "")

    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    monkeypatch.setattr(subprocess, "run", fake_run)
    monkeypatch.setattr("os.path.isdir", lambda path: False)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(os, "environ", {})  # the variables the cell sets stay in this test
    exec(compile(setup_source(), "setup-cell", "exec"), {})
    return calls


def test_the_setup_cell_installs_without_dependencies(monkeypatch):
    calls = _run_cell(monkeypatch, None)
    clone, install = calls
    assert os.environ["CONVNORM_DOWNLOAD"] == "1" and os.environ["CONVNORM_DATA_DIR"] == "/content/data"
    assert clone[:2] == ["git", "clone"] and clone[-1] == "/content/convnorm-book"
    assert "--no-deps" in install and "--quiet" not in install  # nothing Colab has is replaced
    assert not any("vision" in part for part in install)
    assert install[-3:] == ["/content/convnorm-book", "/content/convnorm-book/lab",
                            "/content/convnorm-book/book_code"]  # the library, the lab, the book's code


@pytest.mark.parametrize("failing, message", [("clone", "cloning https://"), ("install", "installing convnorm")])
def test_a_failed_clone_or_install_stops_the_cell_with_the_reason(monkeypatch, failing, message):
    with pytest.raises(RuntimeError, match=message) as raised:
        _run_cell(monkeypatch, failing)
    assert "exit 128" in str(raised.value) and "unable to access" in str(raised.value)
