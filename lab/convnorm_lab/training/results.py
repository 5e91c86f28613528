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


def _resolved(device: torch.device | str | None) -> torch.device:
    """``device``, or where it is None the one the code runs on: CUDA if available, else the CPU."""
    return torch.device(device if device is not None else "cuda" if torch.cuda.is_available() else "cpu")


def device_name(device: torch.device | str | None = None) -> str:
    """A human-readable name of the device that ran the code: the GPU's name, or the
    processor's model and the threads torch used (``"cpu (AMD EPYC 9R14, 2 threads)"``)."""
    device = _resolved(device)
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


INSTRUCTION_SETS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16",
                    "avx512_fp16", "avx_vnni", "amx_tile", "amx_bf16", "amx_int8", "asimd", "sve", "sve2")
"""The vector and matrix instruction sets that decide how fast oneDNN's convolutions and the
matrix products run (x86 and ARM flag names of ``/proc/cpuinfo``)."""


def cpu_info() -> dict:
    """The processor a figure was measured on: its model (name, and family and model numbers,
    which tell its generation where a virtual machine hides the name), which of ``INSTRUCTION_SETS`` it
    has, the instruction set PyTorch's CPU kernels dispatch to, the logical CPUs, and the load
    average over 1, 5 and 15 minutes (other processes slow both networks of a comparison, unevenly).
    The same timing gives very different ratios on processors with different instruction
    sets, so every record timed on a CPU carries these."""
    fields = cpuinfo_fields()
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    return {"model": processor_model(),
            "family_and_model_number": [fields.get("cpu family"), fields.get("model")],
            "instruction_sets": [name for name in INSTRUCTION_SETS if name in flags],
            "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "logical_cpus": os.cpu_count(),
            "load_average": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None}


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
    """The provenance block of a result file; on a CPU, also the processor (:func:`cpu_info`),
    since a CPU's name alone does not say which instructions timed or trained the networks."""
    block = {
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
    return block if _resolved(device).type == "cuda" else {**block, "cpu": cpu_info()}


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
