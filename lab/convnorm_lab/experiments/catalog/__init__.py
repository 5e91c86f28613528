"""The paper's experiments, one module each: the function that conducts it, the schema of its
results, its title, seeds, run names and scale
(:class:`convnorm_lab.experiments.experiment.Experiment`). Adding an experiment is one module
here and one line below; everything else names it through the constant below."""
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

#: every experiment, in the order of the book
CONVERGENCE, GENERALIZATION, ABLATION, ADVERSARIAL, SIMBA, LABEL_NOISE, DATA_SCARCITY, CONDITIONING, RUNTIME = (
    module.EXPERIMENT for module in (convergence, generalization, ablation, adversarial, simba, label_noise,
                                     data_scarcity, conditioning, runtime))
#: every experiment, by name, in the order of the book
EXPERIMENTS = {experiment.name: experiment for experiment in (
    CONVERGENCE, GENERALIZATION, ABLATION, ADVERSARIAL, SIMBA, LABEL_NOISE, DATA_SCARCITY, CONDITIONING, RUNTIME)}
