"""The paper's experiments at four scales (presets ``smoke``, ``cpu``, ``short-schedule``, ``paper``).

From Python or a notebook::

    from convnorm.experiments import run_experiment
    payload = run_experiment("label-noise", preset="cpu", data_dir="data")
    payload["results"]["0.8"]["convnorm+bn"]["summary"]

From a terminal (``--help`` lists the experiments and presets)::

    python -m convnorm.experiments label-noise --preset cpu --data-dir data

On Colab, add ``--download`` (or ``download=True``) to fetch the official archive,
checked against its published MD5. Results go to ``results/NAME-PRESET-seedN.json``
with their provenance; checkpoints to ``results/checkpoints/`` (``--resume``
continues from them).
"""
from .presets import PRESETS, Preset, get_preset, protocol_deviations
from .runners import (EXPERIMENTS, PROTOCOL_VERSION, Analysis, Context, Experiment, PlannedRun, planned_runs,
                      result_path, run_experiment, run_key, run_record_path)

__all__ = ["EXPERIMENTS", "PRESETS", "PROTOCOL_VERSION", "Analysis", "Context", "Experiment", "PlannedRun", "Preset",
           "get_preset",
           "planned_runs", "protocol_deviations", "result_path", "run_experiment", "run_key", "run_record_path"]
