"""Helpers shared by the tests of convnorm_book.results: small record files written the
way the harness writes them (``{"provenance", "results"}``), in a temporary results folder."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from convnorm_lab.experiments import PRESETS
from convnorm_lab.training import save_results

REPOSITORY_RESULTS = Path(__file__).resolve().parents[1] / "results"


def provenance(experiment, preset, seed, wall=60.0, device="cpu (x86_64, 1 threads)", commit="abc1234",
               data="cifar10: lossy JPEG-q75 copy", protocol_version=None, choices=None, **settings):
    """A provenance block; ``protocol_version`` None leaves it out, as in records older
    than the versions; ``choices`` the experiment's choices (None: none stated)."""
    block = {"experiment": experiment, "preset": preset, "seed": seed, "device": device,
             "torch_version": "2.x", "git_commit": commit, "data": data, "wall_time_s": wall,
             "finished_utc": "2026-01-01T00:00:00+00:00",
             "preset_settings": {**PRESETS[preset].as_dict(), **settings}}
    if choices is not None:
        block["choices"] = choices
    return block if protocol_version is None else {**block, "protocol_version": protocol_version}


def write(root: Path, experiment: str, preset: str, seed: int, results: dict, **options) -> Path:
    """A result file of ``experiment`` at ``preset`` under ``root/preset``."""
    return save_results(root / preset / f"{experiment}-{preset}-seed{seed}.json",
                        provenance(experiment, preset, seed, **options), results)


def results_root(tmp_path: Path) -> Path:
    """A results folder holding the paper's values and no record."""
    root = tmp_path / "results"
    root.mkdir()
    shutil.copy(REPOSITORY_RESULTS / "paper_reference_values.json", root)
    return root


@pytest.fixture
def root(tmp_path):
    """A fixture: :func:`results_root` in the test's temporary folder."""
    return results_root(tmp_path)


@pytest.fixture(scope="module")
def paper_values():
    """A fixture: the paper's values of the repository."""
    from convnorm_book.results.paper_values import load_paper_values

    return load_paper_values(REPOSITORY_RESULTS)


def record(test_acc, history=(0.1, 0.2, 0.3), max_test_acc=None, diverged=False, **extra):
    """A training record: a history whose test accuracy is ``history`` and a summary."""
    n = len(history)
    return {"diverged": diverged, "ocnn_lambda": None,
            "summary": {"test_acc_at_best_val": test_acc, "max_test_acc": max_test_acc or max(history),
                        "final_test_acc": history[-1], "final_train_acc": history[-1]},
            "history": {"epoch": list(range(1, n + 1)), "steps": [40 * (i + 1) for i in range(n)],
                        "test_acc": list(history), "train_acc": list(history),
                        "train_loss": [2.0 - v for v in history], "epoch_time": [1.0] * n}, **extra}
