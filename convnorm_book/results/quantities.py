"""The numbers a comparison reads from each seed's record, in three kinds:

* :class:`Measured`: a number the experiment's schema declares
  (:class:`~convnorm.experiments.schema.Measure`), the only kind the paper's tables
  report, so the only one with a paper's difference;
* :class:`AtEpoch`: a training-history metric after the first or the last epoch (the
  paper's convergence figure, which tabulates nothing);
* :class:`LayerMean`: the mean over a trained network's conv layers of a per-layer
  number (the paper's layer-profile figure).

Each gives per-seed values as :func:`~convnorm_book.results.stats.per_seed` does (a
diverged training is ``DIVERGED`` for every number), one row or column name per
concrete number, its facets (name, value) for grids and labels, its unit, and what the
paper reports.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from convnorm.experiments import EXPERIMENTS
from convnorm.experiments.schema import Measure

from .records import DIVERGED, Records, measured
from .reference import paper_difference
from .stats import per_seed
from .words import METRIC_NAMES


@dataclass(frozen=True)
class Measured:
    """A measure of the schema by ``name``; a name with ``{}`` (``"pgd{}"``) stands for
    every measure the preset makes of it (PGD-10 and PGD-20). ``unit`` names the unit
    of a measure that is not an accuracy (accuracies are in percentage points)."""

    name: str
    unit: str = ""

    def expand(self, records: Records) -> tuple[Measured, ...]:
        """One :class:`Measured` per concrete measure of the records' preset."""
        pattern = re.escape(self.name).replace(r"\{\}", r"\d+")
        names = [m.name for m in records.schema.measures_at(records.settings) if re.fullmatch(pattern, m.name)]
        if not names:
            raise ValueError(f"{records.experiment!r} has no measure {self.name!r}")
        return tuple(Measured(name, self.unit) for name in names)

    def measure(self, records: Records) -> Measure:
        return records.schema.measure(self.name, records.settings)

    def describe(self, experiment: str) -> str:
        """The measure in words, at any preset ("accuracy under PGD-k")."""
        declared = next(m for m in EXPERIMENTS[experiment].schema.measures if m.name == self.name)
        return declared.label.format("k").split(" (")[0]

    def values(self, records: Records, group: str | None, method: str) -> list:
        chosen = self.measure(records)
        return per_seed(records, records.schema.path(group, method, chosen), 100.0 if chosen.percent else 1.0)

    def facets(self, records: Records) -> tuple[tuple[str, str], ...]:
        """The measure's label without its explanation in brackets ("ρ" for "ρ (mean over
        layers of ...)"), an attack's accuracy by the attack alone ("FGSM" for "accuracy
        under FGSM", "clean" for "clean accuracy")."""
        label = self.measure(records).label.split(" (")[0]
        return (("measure", "clean" if label == "clean accuracy" else label.removeprefix("accuracy under ")),)

    def unit_of(self, records: Records) -> str:
        return "points" if self.measure(records).percent else self.unit

    def paper(self, reference: dict | None, records: Records, group: str | None, a: str, b: str) -> float | None:
        if reference is None:
            return None
        return paper_difference(reference, records.experiment, a, b, self.measure(records), group)


@dataclass(frozen=True)
class AtEpoch:
    """``history[metric]`` after the ``"first"`` or the ``"last"`` epoch of the preset."""

    metric: str
    epoch: str

    def __post_init__(self):
        if self.epoch not in ("first", "last"):
            raise ValueError(f"epoch must be 'first' or 'last', got {self.epoch!r}")

    def expand(self, records: Records) -> tuple[AtEpoch, ...]:
        return (self,)

    def describe(self, experiment: str) -> str:
        return f"{METRIC_NAMES.get(self.metric, self.metric)} after the {self.epoch} epoch"

    def epoch_number(self, records: Records) -> int:
        return 1 if self.epoch == "first" else records.settings.epochs

    def values(self, records: Records, group: str | None, method: str) -> list:
        index = self.epoch_number(records) - 1
        path = records.schema.record_path(group, method) + ("history", self.metric, index)
        return per_seed(records, path, 100.0 if self.metric.endswith("_acc") else 1.0)

    def facets(self, records: Records) -> tuple[tuple[str, str], ...]:
        return ("measure", METRIC_NAMES.get(self.metric, self.metric)), ("epoch", f"epoch {self.epoch_number(records)}")

    def unit_of(self, records: Records) -> str:
        return "points" if self.metric.endswith("_acc") else ""

    def paper(self, reference, records, group, a, b) -> None:
        return None


@dataclass(frozen=True)
class LayerMean:
    """The mean over a network's conv layers of each layer's ``key`` (e.g. its spectral
    norm), from the record's ``"layers"`` list."""

    key: str

    def expand(self, records: Records) -> tuple[LayerMean, ...]:
        return (self,)

    def values(self, records: Records, group: str | None, method: str) -> list:
        path = records.schema.record_path(group, method) + ("layers",)
        layers = [measured(run.results, path) for run in records.runs]
        return [v if v is DIVERGED else None if not v else sum(layer[self.key] for layer in v) / len(v)
                for v in layers]

    def describe(self, experiment: str) -> str:
        return f"mean {self.key.replace('_', ' ')} over the conv layers"

    def facets(self, records: Records) -> tuple[tuple[str, str], ...]:
        return (("measure", self.describe("")),)

    def unit_of(self, records: Records) -> str:
        return ""

    def paper(self, reference, records, group, a, b) -> None:
        return None


Quantity = Measured | AtEpoch | LayerMean
