"""The paper's experiments at several scales (presets ``smoke``, ``cpu``, ``fast``,
``short-schedule``, ``paper``).

From Python or a notebook::

    from convnorm_lab.experiments import run_experiment
    payload = run_experiment("label-noise", preset="cpu", data_dir="data")
    payload["results"]["0.8"]["convnorm+bn"]["summary"]

From a terminal (``--help`` lists the experiments and presets)::

    python -m convnorm_lab.experiments label-noise --preset cpu --data-dir data

On Colab, add ``--download`` (or ``download=True``) to fetch the official archive,
checked against its published MD5. Results go to ``results/NAME-PRESET-seedN.json``
with their provenance; checkpoints to ``results/checkpoints/`` (``--resume``
continues from them), deleted when their run is stored.

The modules: :mod:`~convnorm_lab.experiments.presets` (the scales),
:mod:`~convnorm_lab.experiments.schema` (the shape of a result), :mod:`~.experiment` and
:mod:`~.catalog` (each experiment declared once), :mod:`~.context` (building, keying,
finding or training and storing one training), :mod:`~.learning_rate` (the rule that chooses each
network's learning rate on validation data), :mod:`~.runners` (running an experiment),
:mod:`~.gpu_queue` (what a lent GPU trains, in order, and what it costs), :mod:`~.step_timing`
(a training step measured on the device it will run on), :mod:`~.worker` (a training process of the GPU
launcher). The normalizations the experiments compare are declared in :mod:`convnorm_lab.models.normalizations`.
"""
from .catalog import EXPERIMENTS
from .context import (
    FREE_REPLAYS,
    PROTOCOL_VERSION,
    RAMP_FRACTION,
    Analysis,
    Context,
    PlannedRun,
    run_key,
    run_record_path,
)
from .experiment import Experiment
from .presets import PRESETS, Preset, get_preset
from .runners import check_experiment, planned_runs, result_path, run_experiment

__all__ = ["EXPERIMENTS", "FREE_REPLAYS", "PRESETS", "PROTOCOL_VERSION", "RAMP_FRACTION", "Analysis", "Context",
           "Experiment", "PlannedRun", "Preset", "check_experiment", "get_preset", "planned_runs", "result_path",
           "run_experiment", "run_key", "run_record_path"]
