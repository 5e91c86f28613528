"""How the book reads each experiment, one module per experiment as the lab declares them
(:mod:`convnorm_lab.experiments.catalog`): where its claims are made, in a reader's words, the
paper's claims about it, and those tested as primary endpoints
(:class:`~convnorm_book.results.claims.Study`). Adding an experiment to the book is one
module here and one line below."""
from __future__ import annotations

from ..claims import Claim, Endpoint, Study
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

#: every experiment's study, by the experiment's name, in the order of the book
STUDIES: dict[str, Study] = {module.STUDY.experiment.name: module.STUDY for module in (
    convergence, generalization, ablation, adversarial, simba, label_noise, data_scarcity, conditioning, runtime)}
#: the paper's claims, by experiment (the experiments it makes claims about)
CLAIMS: dict[str, tuple[Claim, ...]] = {name: study.claims for name, study in STUDIES.items() if study.claims}
#: the primary endpoints, in the order of the chapters
PRIMARY: tuple[Endpoint, ...] = tuple(endpoint for study in STUDIES.values() for endpoint in study.primary)
