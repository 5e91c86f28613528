"""How the book reads each experiment, one module per experiment as the lab declares them
(:mod:`convnorm_lab.experiments.catalog`), named as the experiment is (``label-noise`` in
``label_noise``): where its claims are made, in a reader's words, the paper's claims about it, and
those tested as primary endpoints (:class:`~convnorm_book.results.claims.Study`). Adding an
experiment to the book is one module here; the lab's catalog gives the order."""
from __future__ import annotations

from importlib import import_module

from convnorm_lab.experiments import EXPERIMENTS

from ..claims import Claim, Endpoint, Study


def _study(name: str) -> Study:
    """The study of experiment ``name``, from this package's module of the same name; an
    experiment of the lab without one is an error here, not a chapter that silently skips it."""
    study = import_module(f"{__name__}.{name.replace('-', '_')}").STUDY
    if study.experiment.name != name:
        raise ValueError(f"the study in module {name.replace('-', '_')} is of {study.experiment.name!r}, not {name!r}")
    return study


#: every experiment's study, by the experiment's name, in the order of the lab's catalog (the book's)
STUDIES: dict[str, Study] = {name: _study(name) for name in EXPERIMENTS}
#: the paper's claims, by experiment (the experiments it makes claims about)
CLAIMS: dict[str, tuple[Claim, ...]] = {name: study.claims for name, study in STUDIES.items() if study.claims}
#: the primary endpoints, in the order of the chapters
PRIMARY: tuple[Endpoint, ...] = tuple(endpoint for study in STUDIES.values() for endpoint in study.primary)
