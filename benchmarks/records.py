"""The provenance of a benchmark's record, with the library and torch alone: which processor or
GPU measured it, which commit of the code, when; and the record written whole.

A record is ``{"provenance": {...}, "results": {...}}``, the layout of the lab's result files
(``convnorm_lab.training.results``), which the book reads for both. The benchmarks write their own
so that one runs on ``pip install convnorm`` in a checkout of this repository, without the lab's
dependencies (``benchmarks/test_bench_layer.py`` runs ``bench_layer.py`` so).

The processor matters: the same timing gives ratios that differ several-fold between processors
with different vector instruction sets, so every record taken on a CPU names them.
"""
from __future__ import annotations

import json
import os
import platform
import subprocess
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
"""The checkout the benchmarks run from."""

INSTRUCTION_SETS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16",
                    "avx512_fp16", "avx_vnni", "amx_tile", "amx_bf16", "amx_int8", "asimd", "sve", "sve2")
"""The vector and matrix instruction sets (x86 and ARM names in ``/proc/cpuinfo``) that decide how
fast oneDNN's convolutions and the matrix products run."""


def _proc_cpuinfo() -> dict[str, str]:
    """Each field of ``/proc/cpuinfo`` as its first processor gives it; empty off Linux."""
    path = Path("/proc/cpuinfo")
    lines = path.read_text().splitlines() if path.exists() else []
    fields: dict[str, str] = {}
    for key, _, value in (line.partition(":") for line in lines):
        fields.setdefault(key.strip(), value.strip())
    return fields


def cpu_info() -> dict:
    """The processor: model name, family and model numbers (its generation, where a virtual machine
    hides the name), which of ``INSTRUCTION_SETS`` it has, what torch's CPU kernels dispatch to, the
    logical CPUs and the load average over 1, 5 and 15 minutes (other processes slow the networks of
    a comparison unevenly)."""
    fields = _proc_cpuinfo()
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    return {"model": fields.get("model name") or platform.processor() or platform.machine(),
            "family_and_model_number": [fields.get("cpu family"), fields.get("model")],
            "instruction_sets": [name for name in INSTRUCTION_SETS if name in flags],
            "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "logical_cpus": os.cpu_count(),
            "load_average": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None}


def device_name(device: str) -> str:
    """The GPU's name, or ``"cpu (<processor model>, <n> threads)"``."""
    if torch.device(device).type == "cuda":
        return torch.cuda.get_device_name(device)
    threads = torch.get_num_threads()
    return f"cpu ({cpu_info()['model']}, {threads} thread{'' if threads == 1 else 's'})"


def git_commit() -> str:
    """This checkout's commit, ``+dirty`` where the library or the benchmarks differ from it; outside
    a git checkout ``CONVNORM_GIT_COMMIT`` (set by whoever copied a clean checkout), else ``"unknown"``."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10,
                              check=True).stdout.strip()
    try:
        commit = git("rev-parse", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=all", "--", "convnorm", "benchmarks")
    except (OSError, subprocess.SubprocessError):
        return os.environ.get("CONVNORM_GIT_COMMIT", "unknown")
    return commit + ("+dirty" if dirty else "")


def provenance(experiment: str, preset: str, wall_time_s: float, device: str) -> dict:
    """The provenance block of a benchmark's record (the lab's fields: one process, no seed and no
    data set of its own); on a CPU also the processor (:func:`cpu_info`)."""
    block = {"experiment": experiment, "preset": preset, "seed": 0, "device": device_name(device), "processes": 1,
             "torch_version": torch.__version__, "git_commit": git_commit(), "data": None,
             "wall_time_s": round(wall_time_s, 3),
             "finished_utc": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    return block if torch.device(device).type == "cuda" else {**block, "cpu": cpu_info()}


def save_record(path: Path, provenance_block: dict, results: dict) -> Path:
    """Write ``{"provenance": ..., "results": ...}`` as indented JSON, whole or not at all (into a
    temporary file beside ``path`` that then replaces it), and return ``path``. A value JSON cannot
    hold exactly (NaN, infinity) raises ``ValueError`` rather than being written as something else."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"provenance": provenance_block, "results": results}, indent=1, allow_nan=False)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=f".{path.name}.", suffix=".tmp",
                                     delete=False) as handle:
        handle.write(text)
    os.replace(handle.name, path)
    return path
