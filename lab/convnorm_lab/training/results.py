"""Result files of the lab's trainings and experiments: the library's records
(:mod:`convnorm.records`, the layout the book reads; :mod:`convnorm.machine`, the device and
processor), with the lab's commit and the processes that trained together.

The commit is the lab's checkout, ``+dirty`` where the lab's files (or the library's, where the
same checkout holds it) differ from it; the processes are those of a ``torchrun`` launch (1
outside one).
"""
from __future__ import annotations

from pathlib import Path

import torch

from convnorm import records
from convnorm.machine import INSTRUCTION_SETS, cpu_info, device_name
from convnorm.records import load_results, save_results

from .distributed import world_size

__all__ = ["INSTRUCTION_SETS", "cpu_info", "device_name", "git_commit", "load_results", "provenance", "save_results"]


def git_commit() -> str:
    """The commit of the checkout this package runs from (:func:`convnorm.records.git_commit` of
    the folder holding ``convnorm_lab``), ``+dirty`` if the packages that train (the lab, and the
    library where this checkout holds it) differ from it."""
    return records.git_commit(Path(__file__).resolve().parents[2])


def provenance(experiment: str, preset: str, seed: int, data: str | None,
               wall_time_s: float, device: torch.device | str | None = None) -> dict:
    """The provenance block of a result file (:func:`convnorm.records.provenance`) with this
    checkout's :func:`git_commit` and the processes training together."""
    return records.provenance(experiment, preset, seed, data, wall_time_s, device, commit=git_commit(),
                              processes=world_size())
