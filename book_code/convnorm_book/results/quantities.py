r"""The numbers a comparison reads from each seed's record, in three kinds:

* :class:`Measured`: a number the experiment's schema declares
  (:class:`~convnorm_lab.experiments.schema.Measure`), the only kind the paper's tables
  report, so the only one with a paper's difference;
* :class:`AtEpoch`: a training-history metric after the first or the last epoch (the
  paper's convergence figure, which tabulates nothing);
* :class:`LayerMean`: the mean over a trained network's conv layers of a per-layer
  number (the paper's layer-profile figure);

and one that is not a number of a method but of a pair:

* :class:`SpeedUp`: how many times fewer images one network needs than another to reach
  the other's accuracy (the paper's "1000 iterations of ConvNorm match 8000 of BN").

Each of the first three gives per-seed values as :func:`~convnorm_book.results.stats.per_seed`
does, with a failed training entered as its kind says (``failure_rule``): an accuracy as
measured (at chance where the training diverged), any other number left out and counted.
Each also gives one row or column name per concrete number, its facets (name, value) for
grids and labels, its unit, its range and the resolution of the data behind it (for
what an interval can say, :mod:`~convnorm_book.results.sizes`), and what the paper
reports.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from convnorm_lab.experiments import EXPERIMENTS, PRESETS
from convnorm_lab.experiments.catalog import CONVERGENCE
from convnorm_lab.experiments.catalog.convergence import SPEED_UP_TABLE
from convnorm_lab.experiments.catalog.simba import FINDINGS as SIMBA_FINDINGS
from convnorm_lab.experiments.schema import Measure
from convnorm_lab.models.normalizations import BN, CONVNORM_BN

from .paper_values import paper_difference
from .records import FAILED, Records, classes, failure, lookup, measured, simba_iterations
from .stats import Paired, per_seed
from .words import METRIC_NAMES, method_label

#: how a failed training enters a number that it measured as an accuracy, and one it does not give
ENTERS_AS_MEASURED = ("a training that failed to train enters with the accuracy it measured (chance, 1/K, where it "
                      "diverged), so that a failure counts against its method")
LEFT_OUT = ("a training that failed to train has no such number (it is about a network that trained): its seed is "
            "left out of the difference and counted")


def _images(records: Records, group: str | None, method: str, measure: Measure) -> int | None:
    """The images an accuracy or a rate of ``measure`` was computed on, from the first
    seed's record: the images attacked (``robust.n_test``), the SimBA images, or the
    test images."""
    record = lookup(records.files[0].results, records.schema.record_path(group, method)) or {}
    if measure.path[0] == "robust":
        return lookup(record, ("robust", "n_test"))
    if measure.path[0] == SIMBA_FINDINGS:
        return records.settings.simba_samples
    return lookup(record, ("data", "n_test"))


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

    def _declared(self, experiment: str) -> Measure:
        return next(m for m in EXPERIMENTS[experiment].schema.measures
                    if m.name == self.name or re.fullmatch(re.escape(m.name).replace(r"\{\}", r"\d+"), self.name))

    def describe(self, experiment: str) -> str:
        """The measure in words, at any preset ("accuracy under PGD-k")."""
        return self._declared(experiment).label.format("k").split(" (")[0]

    def failure_rule(self, experiment: str) -> str:
        """How a failed training enters this number (:data:`ENTERS_AS_MEASURED` or :data:`LEFT_OUT`)."""
        return LEFT_OUT if self._declared(experiment).analysis else ENTERS_AS_MEASURED

    def values(self, records: Records, group: str | None, method: str) -> list:
        chosen = self.measure(records)
        return per_seed(records, records.schema.path(group, method, chosen), 100.0 if chosen.percent else 1.0,
                        accuracy=not chosen.analysis)

    def facets(self, records: Records) -> tuple[tuple[str, str], ...]:
        """The measure's label without its explanation in brackets ("R_κ" for "R_κ (mean over
        layers of ...)"), an attack's accuracy by the attack alone ("FGSM" for "accuracy
        under FGSM", "clean" for "clean accuracy")."""
        label = self.measure(records).label.split(" (")[0]
        return (("measure", "clean" if label == "clean accuracy" else label.removeprefix("accuracy under ")),)

    def unit_of(self, records: Records) -> str:
        return "points" if self.measure(records).percent else self.unit

    def range_of(self, records: Records) -> float | None:
        """How wide the quantity itself can range: 100 points for an accuracy or a rate,
        twice the SimBA iterations for its queries (the most an image can cost), else
        ``None`` (no bound)."""
        chosen = self.measure(records)
        if chosen.percent:
            return 100.0
        if chosen.path[0] == SIMBA_FINDINGS and chosen.path[-1].startswith("average_queries"):
            return 2.0 * simba_iterations(records.settings)
        return None

    def resolution(self, records: Records, group: str | None, method: str) -> float | None:
        """The step of the data: one image in points (``100 / images``) for an accuracy or
        a rate; ``None`` for any other number."""
        chosen = self.measure(records)
        images = _images(records, group, method, chosen) if chosen.percent else None
        return 100.0 / images if images else None

    def paper(self, paper_values: dict | None, records: Records, group: str | None, a: str, b: str) -> float | None:
        if paper_values is None:
            return None
        return paper_difference(paper_values, records.experiment, a, b, self.measure(records), group)


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

    @property
    def is_accuracy(self) -> bool:
        return self.metric.endswith("_acc")

    def failure_rule(self, experiment: str) -> str:
        return ENTERS_AS_MEASURED if self.is_accuracy else LEFT_OUT

    def epoch_number(self, records: Records) -> int:
        return 1 if self.epoch == "first" else records.settings.epochs

    def values(self, records: Records, group: str | None, method: str) -> list:
        index = self.epoch_number(records) - 1
        path = records.schema.record_path(group, method) + ("history", self.metric, index)
        return per_seed(records, path, 100.0 if self.is_accuracy else 1.0, accuracy=self.is_accuracy)

    def facets(self, records: Records) -> tuple[tuple[str, str], ...]:
        return ("measure", METRIC_NAMES.get(self.metric, self.metric)), ("epoch", f"epoch {self.epoch_number(records)}")

    def unit_of(self, records: Records) -> str:
        return "points" if self.is_accuracy else ""

    def range_of(self, records: Records) -> float | None:
        return 100.0 if self.is_accuracy else None

    def resolution(self, records: Records, group: str | None, method: str) -> float | None:
        if not self.is_accuracy:
            return None
        images = lookup(records.files[0].results, records.schema.record_path(group, method) + ("data", "n_test"))
        return 100.0 / images if images else None

    def paper(self, paper_values, records, group, a, b) -> None:
        return None


@dataclass(frozen=True)
class LayerMean:
    """The mean over a network's conv layers of each layer's ``key`` (e.g. its spectral
    norm), from the record's ``"layers"`` list; with ``log``, the mean of its natural
    logarithm (for ratios such as condition numbers: a difference of two is then the log
    of a ratio of geometric means)."""

    key: str
    log: bool = False

    def expand(self, records: Records) -> tuple[LayerMean, ...]:
        return (self,)

    def failure_rule(self, experiment: str) -> str:
        return LEFT_OUT

    def values(self, records: Records, group: str | None, method: str) -> list:
        path = records.schema.record_path(group, method) + ("layers",)
        layers = [measured(file.results, path) for file in records.files]
        def value(layer) -> float:
            return math.log(layer[self.key]) if self.log else layer[self.key]
        return [v if v is FAILED else None if not v else sum(map(value, v)) / len(v) for v in layers]

    def describe(self, experiment: str) -> str:
        return f"mean {'log ' if self.log else ''}{self.key.replace('_', ' ')} over the conv layers"

    def facets(self, records: Records) -> tuple[tuple[str, str], ...]:
        return (("measure", self.describe("")),)

    def unit_of(self, records: Records | None = None) -> str:
        return "log units" if self.log else ""

    def range_of(self, records: Records) -> None:
        return None

    def resolution(self, records: Records, group: str | None, method: str) -> None:
        return None

    def paper(self, paper_values, records, group, a, b) -> None:
        return None


def _paper_iterations(paper_values: dict) -> dict[str, int]:
    """The paper's iterations to a comparable test accuracy, by its method name."""
    table = paper_values["tables"][SPEED_UP_TABLE]
    return dict(zip(table["columns"], table["rows"]["iterations_to_comparable_test_accuracy"]))


@dataclass(frozen=True)
class SpeedUp:
    r"""How many times fewer training images network ``a`` needs than network ``b`` to
    reach ``b``'s accuracy, as :math:`\log_2` of the ratio (the paper's "1000 iterations of
    training with ConvNorm lead to generalization performance comparable to 8000
    iterations of training using BatchNorm" is a ratio of 8, :math:`\log_2 8 = 3`),
    counted in images seen (steps times the batch), so that studies at other batches
    compare:

    .. math::

        S = \log_2 \frac{I_b(L)}{I_a(L)}, \qquad
        L = \max_{e:\ I(e) \le I_{\mathrm{paper}}} a^{\mathrm{test}}_{b,e},

    with :math:`I(e)` the images seen after epoch :math:`e`, :math:`I_x(L)` the images
    network :math:`x` has seen at the first epoch its test accuracy reaches :math:`L`, and
    :math:`I_{\mathrm{paper}}` the images of the paper's 8,000 iterations at its batch
    (all epochs where the study is shorter): :math:`L` is the best accuracy ``b`` reaches
    within the paper's budget. A network that never reaches :math:`L` counts as reaching it
    one epoch after the study ends (a lower bound on its images, so the ratio counts
    against it). A training that failed to train enters with the curve it recorded (a
    diverged one with its partial curve), so that its failure counts against it; where
    ``b`` recorded no epoch, :math:`L` is chance. A single number per seed, so not a
    :data:`Quantity` of a method: :meth:`paired` gives it as the comparison of the two.
    """

    a: str = CONVNORM_BN
    b: str = BN
    unit = "doublings"

    def describe(self, experiment: str = CONVERGENCE.name) -> str:
        return (f"speed-up: log2 of the images {method_label(self.b)} needs over those {method_label(self.a)} needs "
                f"to reach {method_label(self.b)}'s accuracy")

    def failure_rule(self, experiment: str = CONVERGENCE.name) -> str:
        """How a failed training enters :math:`S`."""
        return ("a training that failed to train enters with the curve it recorded: a level it never reaches counts "
                "as reached one epoch after the study ends, so that a failure counts against it")

    @staticmethod
    def budget(paper_values: dict) -> int:
        """:math:`I_{\\mathrm{paper}}`: the images of the paper's BN iterations at its batch."""
        return _paper_iterations(paper_values)["BN"] * PRESETS["paper"].batch_size

    @staticmethod
    def paper_effect(paper_values: dict) -> float:
        """The paper's :math:`S`: :math:`\\log_2` of its BN iterations over its ConvNorm ones."""
        iterations = _paper_iterations(paper_values)
        return math.log2(iterations["BN"] / iterations["ConvNorm"])

    @staticmethod
    def _seen(record: dict) -> list[int]:
        """The images ``record`` has seen after each epoch."""
        return [steps * record["batch_size"] for steps in record["history"]["steps"]]

    @classmethod
    def level(cls, b: dict, budget: int, k: int = 10) -> float:
        """:math:`L`: the best test accuracy of the training record ``b`` within ``budget`` images
        (over all its epochs where none lies within; chance, :math:`1/K`, where it recorded none)."""
        within = [acc for acc, images in zip(b["history"]["test_acc"], cls._seen(b)) if images <= budget]
        return max(within or b["history"]["test_acc"] or [1 / k])

    @classmethod
    def _reach(cls, record: dict, level: float, epochs: int) -> int:
        """:math:`I_x(L)`: the images ``record`` had seen when its test accuracy first reached
        ``level``; one epoch after the study of ``epochs`` epochs ends where it never did."""
        images = cls._seen(record)
        first = next((i for i, acc in enumerate(record["history"]["test_acc"]) if acc >= level), None)
        if first is not None:
            return images[first]
        per_epoch = images[0] if images else record["batch_size"] * math.ceil(
            record["data"]["n_train"] / record["batch_size"])
        return (epochs + 1) * per_epoch

    def value(self, a: dict, b: dict, epochs: int, budget: int, k: int = 10) -> float:
        """:math:`S` of one seed, from the training records of ``a`` and ``b`` (a study of
        ``epochs`` epochs, the paper's budget of ``budget`` images, ``k`` classes)."""
        level = self.level(b, budget, k)
        return math.log2(self._reach(b, level, epochs) / self._reach(a, level, epochs))

    @classmethod
    def bound(cls, b: dict, budget: int) -> float:
        r"""The largest :math:`S` a seed can give, from ``b``'s training record that has trained
        at least an epoch: :math:`\log_2` of :math:`I_b(L)` over the images of one epoch, since
        ``a`` needs at least one epoch to reach :math:`L`."""
        return math.log2(cls._reach(b, cls.level(b, budget), 0) / cls._seen(b)[0])

    def range_of(self, epochs: int) -> float:
        """From one epoch against one after the end, and back: :math:`2\\log_2(E+1)`."""
        return 2 * math.log2(epochs + 1)

    def paired(self, records: Records, group: str | None, paper_values: dict) -> Paired:
        """:math:`S` of every seed as a :class:`~convnorm_book.results.stats.Paired` of
        ``a`` against ``b`` (a seed missing either training is left out), with how many
        of each side's trainings failed to train and the paper's :math:`S`."""
        schema, k = records.schema, classes((group,))
        trainings = [[lookup(file.results, schema.record_path(group, m)) for m in (self.a, self.b)]
                     for file in records.files]
        complete = [(a, b) for a, b in trainings if a is not None and b is not None]
        values = tuple(self.value(a, b, records.settings.epochs, self.budget(paper_values), k) for a, b in complete)
        failed = [sum(failure(pair[i], k) is not None for pair in complete) for i in (0, 1)]
        return Paired(method_label(self.a), method_label(self.b), values, self.paper_effect(paper_values), self.unit,
                      "speed-up to the same accuracy", len(trainings), failed[0], failed[1])


Quantity = Measured | AtEpoch | LayerMean
