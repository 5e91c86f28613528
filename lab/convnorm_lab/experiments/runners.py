"""Running an experiment: training (or finding) its runs and writing its result file.

:func:`run_experiment` runs one experiment of :data:`EXPERIMENTS` (declared in
:mod:`convnorm_lab.experiments.catalog`) at a preset and seed through a
:class:`~convnorm_lab.experiments.context.Context`, and writes
``<output>/<experiment>-<preset>-seed<seed>.json`` with the provenance;
:func:`planned_runs` lists the trainings it asks for without training any.
"""
from __future__ import annotations

import time
from pathlib import Path

import torch

from convnorm.validation import check_choice

from ..models.normalizations import OCNN, ONI
from ..training import distributed, save_results
from .catalog import EXPERIMENTS
from .context import RAMP_FRACTION, Context, PlannedRun, check_seed, provenance_block
from .presets import get_preset


def result_path(name: str, preset: str, seed: int = 0, output: str | Path = "results") -> Path:
    """Where :func:`run_experiment` writes (and a notebook reads) a result file."""
    return Path(output) / f"{name}-{preset}-seed{int(seed)}.json"


def run_experiment(name: str, preset: str = "smoke", data_dir: str | None = None, output: str | Path = "results",
                   seed: int = 0, resume: bool = False, progress: bool = True,
                   device: str | torch.device | None = None, download: bool = False,
                   only: list[str] | None = None, cuda_graph: bool = False,
                   checkpoints: str | Path | None = None) -> dict:
    """Run experiment ``name`` under ``preset`` and write its JSON result file.

    ``only`` names the runs (``planned_runs``) to train in this call; the others
    are taken from stored run records or skipped. Checkpoints go to ``checkpoints``
    (default ``<output>/checkpoints``) and are deleted when their run is stored. The
    result file holds every stored run; a run still to train is ``None`` in it and named
    in the provenance's ``runs_missing`` (so the stored part of an experiment can be
    read before the rest is trained). Nothing is written while no run at all is stored.
    Returns ``{"provenance", "results", "path", "skipped", "keys"}`` (``path`` None when nothing
    was written; ``keys``: the run key of each run the experiment planned, by its name, a
    run whose rate waits on its trials left out).
    """
    check_experiment(name)
    seed = check_seed(seed)
    ctx = Context(name, get_preset(preset), data_dir, Path(output), seed, resume, progress,
                  download=download, cuda_graph=cuda_graph, only=None if only is None else frozenset(only),
                  checkpoints=None if checkpoints is None else Path(checkpoints))
    ctx.device = distributed.setup(device if device is not None else ctx.device)
    if only is not None:
        check_trains(name)
    if only:  # (assembling, with no run named, has nothing to check)
        planned = planned_runs(name, preset, data_dir, output, seed, download=download)
        unknown = sorted(set(only) - {planned_run.run for planned_run in planned})
        if unknown:
            raise ValueError(f"run {unknown[0]!r} is not a run of {name} (see --list-runs)")
    start = time.perf_counter()
    results = EXPERIMENTS[name].conduct(ctx)
    block = provenance_block(name, preset, ctx.seed, "; ".join(sorted(ctx.data_used)) or None,
                             time.perf_counter() - start, ctx.device)
    block["preset_settings"] = ctx.preset.as_dict()
    penalty = OCNN.base.penalty
    block["choices"] = {"oni_lr_divisor": ONI.base.lr_divisor, "ocnn_lambda": penalty.weight,
                        "ocnn_lambda_adversarial": penalty.adversarial_weight, "ramp_fraction": RAMP_FRACTION,
                        "lr_rule": ctx.chosen_reductions()}
    skipped = [planned_run.run for planned_run in ctx.skipped]
    block["runs_missing"] = skipped
    keys = {planned_run.run: planned_run.key for planned_run in ctx.planned if not planned_run.pending}
    path = result_path(name, preset, ctx.seed, ctx.output)
    if len(skipped) == len(ctx.planned) and EXPERIMENTS[name].trains:
        return {"provenance": block, "results": results, "path": None, "skipped": skipped, "keys": keys}
    if distributed.is_main():
        save_results(path, block, results)
    distributed.barrier()  # the file exists when any process returns
    return {"provenance": block, "results": results, "path": str(path), "skipped": skipped, "keys": keys}


def check_experiment(name: str) -> str:
    """``name`` if it names an experiment of :data:`EXPERIMENTS`."""
    check_choice("experiment", name, sorted(EXPERIMENTS))
    return name


def check_trains(name: str) -> None:
    """Refuse to split experiment ``name`` into runs when it trains nothing (the run time
    times steps, and must do so alone on its device)."""
    if not EXPERIMENTS[check_experiment(name)].trains:
        raise ValueError(f"{name} trains nothing (it times steps, alone on its device): run it whole, "
                         "not as runs beside others")


def planned_runs(name: str, preset: str = "smoke", data_dir: str | None = None, output: str | Path = "results",
                 seed: int = 0, missing: bool = False, download: bool = False) -> list[PlannedRun]:
    """Each training experiment ``name`` asks for under ``preset``, in order (the data is
    read, and downloaded if ``download`` and missing; nothing is trained); with
    ``missing``, only those without a stored run record. Two runs with one
    :func:`run_key` are one training."""
    check_experiment(name)
    settings = get_preset(preset)
    if not EXPERIMENTS[name].trains:
        return []
    ctx = Context(name, settings, data_dir, Path(output), check_seed(seed), progress=False, download=download,
                  only=frozenset(), device=torch.device("cpu"))
    EXPERIMENTS[name].conduct(ctx)
    return ctx.skipped if missing else ctx.planned
