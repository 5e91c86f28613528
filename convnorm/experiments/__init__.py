"""The paper's experiments at several scales (presets ``smoke``, ``cpu``, ``fast``,
``short-schedule``, ``paper``).

From Python or a notebook::

    from convnorm.experiments import run_experiment
    payload = run_experiment("label-noise", preset="cpu", data_dir="data")
    payload["results"]["0.8"]["convnorm+bn"]["summary"]

From a terminal (``--help`` lists the experiments and presets)::

    python -m convnorm.experiments label-noise --preset cpu --data-dir data

On Colab, add ``--download`` (or ``download=True``) to fetch the official archive,
checked against its published MD5. Results go to ``results/NAME-PRESET-seedN.json``
with their provenance; checkpoints to ``results/checkpoints/`` (``--resume``
continues from them), deleted when their run is stored.

The modules: :mod:`~convnorm.experiments.presets` (the scales and their deviations from
the paper), :mod:`~convnorm.experiments.norms` (the normalizations compared),
:mod:`~convnorm.experiments.schema` (the shape of a result), :mod:`~.experiment` and
:mod:`~.catalog` (each experiment declared once), :mod:`~.context` (building, keying,
finding or training and storing one training), :mod:`~.runners` (running an experiment),
:mod:`~.gpu_plan` (what a lent GPU trains and what it costs), :mod:`~.step_timing`
(a training step measured on the device it will run on), :mod:`~.worker` (a training process of the GPU
launcher).
"""
from .catalog import EXPERIMENTS
from .context import (
    FREE_REPLAYS,
    OCNN_LAMBDA,
    OCNN_LAMBDA_ADVERSARIAL,
    ONI_LR_DIVISOR,
    PROTOCOL_VERSION,
    RAMP_FRACTION,
    Analysis,
    Context,
    PlannedRun,
    run_key,
    run_record_path,
)
from .experiment import Experiment
from .norms import Norm
from .presets import PRESETS, Preset, get_preset, protocol_deviations
from .runners import check_experiment, planned_runs, result_path, run_experiment

__all__ = ["EXPERIMENTS", "FREE_REPLAYS", "OCNN_LAMBDA", "OCNN_LAMBDA_ADVERSARIAL", "ONI_LR_DIVISOR", "PRESETS",
           "PROTOCOL_VERSION", "RAMP_FRACTION", "Analysis", "Context", "Experiment", "Norm", "PlannedRun", "Preset",
           "check_experiment",
           "get_preset", "planned_runs", "protocol_deviations", "result_path", "run_experiment", "run_key",
           "run_record_path"]
