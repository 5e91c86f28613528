"""Result files: JSON with the provenance needed to trust a number later.

Every file records the experiment, preset, seed, device name, number of processes
(more than one in data-parallel training), torch version, git commit of the code, wall
time and which copy of the data was used, next to the results themselves.
"""
from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import torch

import convnorm

from .distributed import world_size


def device_name(device: torch.device | str | None = None) -> str:
    """A human-readable name of the device that ran the code: the GPU's name, or the
    processor's model and the threads torch used (``"cpu (AMD EPYC 9R14, 2 threads)"``)."""
    device = (torch.device(device) if device is not None
              else torch.device("cuda" if torch.cuda.is_available() else "cpu"))
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    threads = torch.get_num_threads()
    return f"cpu ({processor_model()}, {threads} thread{'' if threads == 1 else 's'})"


def cpuinfo_fields() -> dict[str, str]:
    """Each field of ``/proc/cpuinfo`` as its first processor states it (empty where there
    is no such file, off Linux)."""
    fields: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    return fields


def processor_model() -> str:
    """The processor's model name (from ``/proc/cpuinfo`` on Linux), else what the
    platform reports."""
    return cpuinfo_fields().get("model name") or platform.processor() or platform.machine()


def git_commit() -> str:
    """The commit of the checkout this package runs from, ``+dirty`` if the files of the packages
    that train (the lab and the library it imports) differ from it (modified or not yet
    committed); outside a git checkout, the environment variable ``CONVNORM_GIT_COMMIT`` (set by
    whoever copied a clean checkout elsewhere, e.g. to a GPU machine), else ``"unknown"``."""
    lab = Path(__file__).resolve().parents[2]  # the folder holding convnorm_lab/
    library = Path(convnorm.__file__).resolve().parent
    checked = [".", *([str(library)] if library.is_relative_to(lab.parent) else [])]  # the library if checked out here
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=lab, capture_output=True,
                                text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "--", *checked],
                               cwd=lab, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return os.environ.get("CONVNORM_GIT_COMMIT", "unknown")
    return commit + ("+dirty" if dirty else "")


def provenance(experiment: str, preset: str, seed: int, data: str | None,
               wall_time_s: float, device: torch.device | str | None = None) -> dict:
    """The provenance block of a result file."""
    return {
        "experiment": experiment,
        "preset": preset,
        "seed": seed,
        "device": device_name(device),
        "processes": world_size(),
        "torch_version": torch.__version__,
        "git_commit": git_commit(),
        "data": data,
        "wall_time_s": round(wall_time_s, 3),
        "finished_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


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
