"""The paper's experiments, one module each: the function that runs it, the schema of its
results, its title, seeds and scale (:class:`convnorm.experiments.experiment.Experiment`).
Adding an experiment is one module here and one line below."""
from __future__ import annotations

from . import (
    ablation,
    adversarial,
    conditioning,
    convergence,
    data_scarcity,
    generalization,
    label_noise,
    runtime,
    simba,
)

#: every experiment, by name, in the order of the book
EXPERIMENTS = {module.EXPERIMENT.name: module.EXPERIMENT for module in (
    convergence, generalization, ablation, adversarial, simba, label_noise, data_scarcity, conditioning, runtime)}
