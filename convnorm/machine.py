"""The machine that measured a number: the GPU, or the processor (its model and its vector
instruction sets) and the threads torch used.

The same timing gives ratios that differ several-fold between processors with different
instruction sets (oneDNN's convolutions and the matrix products dispatch on them), so a figure
timed on a CPU names them. This module is in the library because the library's own benchmark
(``benchmarks/bench_layer.py``, which runs on ``pip install convnorm`` and torch alone) records
which hardware measured it; the lab's records (``convnorm_lab.training.results``) describe their
machine with the same functions.
"""
from __future__ import annotations

import os
import platform
from pathlib import Path

import torch

INSTRUCTION_SETS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16",
                    "avx512_fp16", "avx_vnni", "amx_tile", "amx_bf16", "amx_int8", "asimd", "sve", "sve2")
"""The vector and matrix instruction sets that decide how fast oneDNN's convolutions and the
matrix products run (x86 and ARM flag names of ``/proc/cpuinfo``)."""


def resolve_device(device: torch.device | str | None = None) -> torch.device:
    """``device``, or where it is None the one the code runs on: CUDA if available, else the CPU."""
    return torch.device(device if device is not None else "cuda" if torch.cuda.is_available() else "cpu")


def device_name(device: torch.device | str | None = None) -> str:
    """A human-readable name of the device that ran the code (:func:`resolve_device`): the GPU's
    name, or the processor's model and the threads torch used (``"cpu (AMD EPYC 9R14, 2 threads)"``)."""
    device = resolve_device(device)
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


def cpu_info() -> dict:
    """The processor a figure was measured on: its model (name, and family and model numbers,
    which tell its generation where a virtual machine hides the name), which of ``INSTRUCTION_SETS`` it
    has, the instruction set PyTorch's CPU kernels dispatch to, the logical CPUs, and the load
    average over 1, 5 and 15 minutes (other processes slow both networks of a comparison, unevenly)."""
    fields = cpuinfo_fields()
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    return {"model": processor_model(),
            "family_and_model_number": [fields.get("cpu family"), fields.get("model")],
            "instruction_sets": [name for name in INSTRUCTION_SETS if name in flags],
            "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "logical_cpus": os.cpu_count(),
            "load_average": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None}
