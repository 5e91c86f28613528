"""Result files: JSON with the provenance needed to trust a number later.

A record is ``{"provenance": {...}, "results": ...}``. Its provenance names the experiment,
preset, seed, device (:func:`convnorm.machine.device_name`), number of processes (more than one
in data-parallel training), torch version, git commit of the code, which copy of the data was
used, the wall time and when it finished; on a CPU also the processor
(:func:`convnorm.machine.cpu_info`), since a CPU's name alone does not say which instructions
timed or trained the networks.

This module is in the library because the library's own benchmark (``benchmarks/bench_layer.py``,
which runs on ``pip install convnorm`` and torch alone) writes its record with it; the lab's
training and experiments (``convnorm_lab.training.results``) write theirs with the same
functions, and the book reads both.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import torch

from .machine import cpu_info, device_name, resolve_device


def git_commit(*folders: str | Path) -> str:
    """The commit of the git checkout holding ``folders`` (the first one decides; with none, the
    library's own folder), ``+dirty`` if the files in ``folders``, or in the library where this
    checkout holds it too, differ from it (modified or not yet committed); outside a git checkout,
    the environment variable ``CONVNORM_GIT_COMMIT`` (set by whoever copied a clean checkout
    elsewhere, e.g. to a GPU machine), else ``"unknown"``."""
    library = Path(__file__).resolve().parent
    paths = [Path(folder).resolve() for folder in folders]
    where = paths[0] if paths else library

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=where, capture_output=True, text=True, timeout=10,
                              check=True).stdout.strip()
    try:
        top = Path(git("rev-parse", "--show-toplevel")).resolve()
        commit = git("rev-parse", "HEAD")
        checked = [str(path) for path in dict.fromkeys([*paths, library]) if path.is_relative_to(top)]
        dirty = git("status", "--porcelain", "--untracked-files=all", "--", *checked)
    except (OSError, subprocess.SubprocessError):
        return os.environ.get("CONVNORM_GIT_COMMIT", "unknown")
    return commit + ("+dirty" if dirty else "")


def provenance(experiment: str, preset: str, seed: int, data: str | None, wall_time_s: float,
               device: torch.device | str | None = None, *, commit: str, processes: int = 1) -> dict:
    """The provenance block of a result file: ``commit`` is the code's (:func:`git_commit` of the
    folders that ran), ``processes`` how many trained together; on a CPU, also the processor."""
    block = {
        "experiment": experiment,
        "preset": preset,
        "seed": seed,
        "device": device_name(device),
        "processes": processes,
        "torch_version": torch.__version__,
        "git_commit": commit,
        "data": data,
        "wall_time_s": round(wall_time_s, 3),
        "finished_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    return block if resolve_device(device).type == "cuda" else {**block, "cpu": cpu_info()}


def _clean(value):
    """JSON-safe copy: tensors become lists, NaN/inf become None."""
    if isinstance(value, torch.Tensor):
        return _clean(value.tolist())
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def save_results(path: str | Path, provenance_block: dict, results: dict) -> Path:
    """Write ``{"provenance": ..., "results": ...}`` as indented JSON; return the path.

    The file is written whole or not at all: the JSON goes to a temporary file beside
    it, which then replaces ``path`` in one rename (an interruption never leaves half a
    record that a later reader would take for a run)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"provenance": _clean(provenance_block), "results": _clean(results)}, indent=1)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=f".{path.name}.", suffix=".tmp",
                                     delete=False) as handle:
        handle.write(text)
    try:
        os.replace(handle.name, path)
    except BaseException:
        os.unlink(handle.name)
        raise
    return path


def load_results(path: str | Path) -> dict:
    """Read a file written by :func:`save_results`.

    Raises:
        ValueError: naming the file, when it is not valid JSON (a truncated copy) or not
            a ``{"provenance": {...}, "results": ...}`` object.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not valid JSON ({error.msg} at line {error.lineno}, column {error.colno}); "
                         "a truncated copy? Delete it to produce it again") from None
    if not isinstance(data, dict) or not isinstance(data.get("provenance"), dict) or "results" not in data:
        raise ValueError(f"{path}: not a result file (expected an object with 'provenance' and 'results')")
    return data
