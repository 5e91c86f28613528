"""What the paper claims, as the book tests it: a :class:`Claim` for every comparison Part IV
makes, with the size its words give the claim, and an :class:`Endpoint` for each claim tested
as primary; each experiment's own are declared in :mod:`~convnorm_book.results.studies`.

A :class:`Claim` names a comparison ``a - b`` of one quantity
(:mod:`~convnorm_book.results.quantities`) and what the paper says of it:

* ``DIFFERENCE``: ``a`` and ``b`` differ, in the direction of the paper's own number
  wherever its tables report both (ConvNorm − vanilla at 80 % label noise is negative
  in the paper), else in the direction its text states (``sign``);
* ``PARITY``: "on par": the difference lies within ``±margin``;
* ``NON_INFERIOR``: "maintaining": ``a`` is not worse than ``b`` by more than ``margin``;
* ``SLIGHT``: "slightly worse" (``sign`` -1): ``a`` is below ``b``, by at most ``margin``;
* ``NO_CLAIM``: shown beside the others (a number the paper does not report, such as
  the DCT basis of SimBA).

None of these comparisons is tested: only the primary endpoints are
(:class:`Endpoint`, tested by :mod:`~convnorm_book.results.endpoints`). Each is described by its interval and what
that interval rules in and out against the claim (:mod:`~convnorm_book.results.sizes`),
so a claim with a size ("slightly", "maintaining", "on par") carries its margin, declared
here with the reason for its value. Every number of the paper is read from
``paper_reference_values.json``, never typed here. A claim covers every group (noise
rate, training fraction, data set, network) of the records' preset, or only the groups
from ``at_least`` up.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from convnorm_lab.experiments import EXPERIMENTS, Preset, get_preset
from convnorm_lab.experiments.catalog import CONVERGENCE, DATA_SCARCITY, GENERALIZATION
from convnorm_lab.experiments.experiment import Experiment
from convnorm_lab.experiments.gpu_queue import Request
from convnorm_lab.models.normalizations import BN, CONVNORM

from .paper_values import paper_mean, paper_value
from .quantities import LayerMean, Measured, Quantity, SpeedUp
from .records import Records
from .stats import Paired, paired_values
from .words import method_label

DIFFERENCE, PARITY, NON_INFERIOR, SLIGHT, NO_CLAIM = "difference", "parity", "non-inferiority", "slight", "no claim"
#: the kinds whose claim has a size, given by a margin
SIZED = (PARITY, NON_INFERIOR, SLIGHT)

#: The margin of the paper's "on par" and "maintaining", in points of accuracy. The paper's data-scarcity
#: runs vary from seed to seed by a median standard deviation of about 0.35 points (its
#: Table 7, which :func:`parity_margin_basis` recomputes), so the difference of two of
#: its runs varies by about √2 · 0.35 ≈ 0.5 points; differences within twice that are
#: what its own runs could not tell from zero. A smaller margin could never be shown
#: with a few seeds; a larger one would call "on par" differences as large as the gains
#: the paper reports elsewhere (about 1.2 points for adding BN, its Table 5).
PARITY_MARGIN = 1.0
#: How far below "slightly worse" may lie, in points of accuracy: twice the paper's own
#: difference that its text calls slight (ConvNorm alone against BN in its Table 4, 1.06
#: points, which :func:`slight_margin_basis` reads), rounded to a whole point. A drop
#: beyond it is no longer slight by the paper's own measure.
SLIGHT_MARGIN = 2.0


def parity_margin_basis(paper_values: dict) -> float:
    """Twice the standard deviation of a difference of two of the paper's data-scarcity
    runs, :math:`2\\sqrt2\\,\\tilde s` with :math:`\\tilde s` the median standard deviation
    of its Table 7: the basis of :data:`PARITY_MARGIN`."""
    cells = [cell for row in paper_values["tables"][DATA_SCARCITY.schema.paper_table]["rows"].values() for cell in row]
    return 2 * 2 ** 0.5 * statistics.median(cell[1] for cell in cells)


def slight_margin_basis(paper_values: dict) -> float:
    """Twice the paper's ConvNorm − BN of its Table 4 (the difference its text calls
    "slightly worse"), in points: the basis of :data:`SLIGHT_MARGIN`."""
    schema = GENERALIZATION.schema
    table = paper_values["tables"][schema.paper_table]
    row = table["rows"]["cifar10"]
    a, b = (paper_mean(row[table["columns"].index(schema.paper_names[m])]) for m in (CONVNORM, BN))
    return 2 * abs(a - b)


@dataclass(frozen=True)
class Claim:
    """The paper's claim about ``a - b`` of ``quantity`` in ``experiment``.

    ``sign``: the direction the paper's text states where its tables give no number
    (``None``: no claim there); ``margin``: the size of a ``PARITY``, ``NON_INFERIOR``
    or ``SLIGHT`` claim, in the quantity's unit;
    ``at_least``: the claim covers only the groups (rates, fractions) from this value
    up; ``source``: where the paper says it; ``reason``: why it is tested so;
    ``size_check``: given the records' preset, why our size cannot be set against the
    paper's (an attack's budget other than the paper's), or ``None``; ``note``: a remark
    on the paper's own number, computed from the paper's values (``None`` when there is
    none); ``label``: a short name of the comparison for tables and figures (default
    ``"A − B"``).
    """

    experiment: str
    a: str
    b: str
    quantity: Quantity
    kind: str
    source: str
    reason: str
    sign: int | None = None
    margin: float | None = None
    at_least: float | None = None
    size_check: Callable[[Preset], str | None] | None = None
    note: Callable[[dict], str | None] | None = None
    label: str | None = None

    def __post_init__(self):
        if self.kind not in (DIFFERENCE, *SIZED, NO_CLAIM):
            raise ValueError(f"kind must be one of {(DIFFERENCE, *SIZED, NO_CLAIM)}, got {self.kind!r}")
        if (self.kind in SIZED) != (self.margin is not None):
            raise ValueError(f"a claim with a size ({', '.join(SIZED)}), and only one, needs a margin")
        if self.kind == SLIGHT and self.sign != -1:
            raise ValueError("'slightly worse' is a claim of sign -1")
        if self.sign not in (None, -1, 1):
            raise ValueError(f"sign must be -1, +1 or None, got {self.sign!r}")

    @property
    def name(self) -> str:
        """:attr:`label`, else ``"A − B"`` in a reader's names."""
        return self.label or f"{method_label(self.a)} − {method_label(self.b)}"

    def covers(self, group: str | None) -> bool:
        """Whether the claim is made at ``group``."""
        return self.at_least is None or group is None or float(group) >= self.at_least


#: the quantities most claims compare: the test accuracy at the best validation epoch, and its maximum over the epochs
TEST_ACCURACY, MAXIMUM_ACCURACY = Measured("test_acc"), Measured("max_test_acc")
#: why a claim whose numbers the paper tabulates is tested in the direction of its difference
FROM_THE_TABLE = "the paper's table gives both numbers; the direction is that of its difference"


@dataclass(frozen=True)
class Endpoint:
    """One primary endpoint: ``a`` − ``b`` of ``quantity`` in ``experiment`` at ``group``
    (``None`` for an experiment without groups; ``resnet18`` in the convergence study stands
    for the preset's only network where it trains a smaller one), claimed in
    ``direction``, as the paper says in ``claim``; ``effect``: the paper's effect where its
    tables do not give it as a difference of two of their cells (with the reason in ``claim``);
    ``paper_quantity``: the quantity the paper reports for this comparison where ours differs
    from it (under label noise the paper reports the maximum test accuracy over the epochs,
    which chooses its epoch by the test images; ours chooses by the noisy validation images).
    Its effect and spread are the paper's numbers of that quantity, and it is shown beside
    ours (:meth:`beside`), never tested."""

    name: str
    experiment: str
    group: str | None
    a: str
    b: str
    quantity: Measured | SpeedUp | LayerMean
    claim: str
    direction: int = +1
    effect: Callable[[dict, str | Path | None], float] | None = None
    paper_quantity: Measured | None = None

    @property
    def reported(self) -> Measured | SpeedUp | LayerMean:
        """The quantity the paper's number is of: :attr:`paper_quantity`, else :attr:`quantity`."""
        return self.paper_quantity or self.quantity

    def runs_at(self, settings: Preset) -> bool:
        """Whether the preset runs this endpoint's group."""
        keys = EXPERIMENTS[self.experiment].schema.group_keys(settings)
        return self.group in keys or (self.experiment == CONVERGENCE.name and settings.arch is not None)

    def group_at(self, settings: Preset) -> str | None:
        """The group key this endpoint is measured at under ``settings`` (where :meth:`runs_at`)."""
        keys = EXPERIMENTS[self.experiment].schema.group_keys(settings)
        return self.group if self.group in keys else keys[0]

    @property
    def statistic(self) -> str:
        return ("paired t-test on the per-seed differences, two-sided at 5 %, Holm's correction over the primary "
                "endpoints")

    @property
    def failure_rule(self) -> str:
        return self.quantity.failure_rule(self.experiment)

    @property
    def unit(self) -> str:
        if isinstance(self.quantity, SpeedUp):
            return self.quantity.unit
        return self.quantity.unit_of() if isinstance(self.quantity, LayerMean) else "points"

    def paper_effect(self, paper_values: dict, root: str | Path | None = None) -> float:
        """The paper's ``a`` − ``b``, read from its tables (or :attr:`effect`, which may read the
        results folder ``root``: default as :func:`~convnorm_book.results.records.results_dir`)."""
        if self.effect is not None:
            return self.effect(paper_values, root)
        if isinstance(self.quantity, SpeedUp):
            return self.quantity.paper_effect(paper_values)
        measure = EXPERIMENTS[self.experiment].schema.measure(self.reported.name, get_preset("paper"))
        cells = [paper_value(paper_values, self.experiment, m, measure, self.group) for m in (self.a, self.b)]
        return cells[0][0] - cells[1][0]

    def paper_spread(self, paper_values: dict) -> float | None:
        """The standard deviation of a difference of the paper's two runs, as if unpaired,
        :math:`\\sqrt{s_a^2 + s_b^2}` from its tables; ``None`` where it reports none."""
        if not isinstance(self.reported, Measured):
            return None
        measure = EXPERIMENTS[self.experiment].schema.measure(self.reported.name, get_preset("paper"))
        cells = [paper_value(paper_values, self.experiment, m, measure, self.group) for m in (self.a, self.b)]
        return math.hypot(cells[0][1], cells[1][1])

    def paired(self, records: Records, paper_values: dict, group: str | None = None,
               root: str | Path | None = None) -> Paired | None:
        """Our per-seed differences at ``group`` (default: :meth:`group_at` the records'
        preset), failures entered as :attr:`failure_rule` declares; ``None`` where the
        preset does not run the group."""
        if group is None:
            if not self.runs_at(records.settings):
                return None
            group = self.group_at(records.settings)
        if isinstance(self.quantity, SpeedUp):
            return self.quantity.paired(records, group, paper_values)
        values = [self.quantity.values(records, group, m) for m in (self.a, self.b)]
        return paired_values(*values, method_label(self.a), method_label(self.b),
                             paper=self.paper_effect(paper_values, root), unit=self.unit)

    def beside(self, records: Records, paper_values: dict, root: str | Path | None = None) -> Paired | None:
        """Our per-seed differences of :attr:`paper_quantity`, shown beside the tested ones;
        ``None`` without one, or where the preset does not run the group."""
        if self.paper_quantity is None or not self.runs_at(records.settings):
            return None
        group = self.group_at(records.settings)
        values = [self.paper_quantity.values(records, group, m) for m in (self.a, self.b)]
        return paired_values(*values, method_label(self.a), method_label(self.b),
                             paper=self.paper_effect(paper_values, root), unit=self.unit)

    def request(self, preset: str, seeds: int) -> Request | None:
        """The trainings of this endpoint at ``preset`` for its first ``seeds`` seeds, as a
        GPU plan's request; ``None`` where the preset does not run its group."""
        if not self.runs_at(get_preset(preset)):
            return None
        return Request.of(EXPERIMENTS[self.experiment], tuple(range(seeds)), self.group_at(get_preset(preset)),
                          (self.a, self.b))


@dataclass(frozen=True)
class Study:
    """How the book reads one experiment (:class:`~convnorm_lab.experiments.experiment.Experiment`):
    ``where`` its claims are made, in a reader's words (``"under label noise"``), the paper's
    ``claims`` about it, and those of them tested as ``primary`` endpoints."""

    experiment: Experiment
    where: str
    claims: tuple[Claim, ...] = ()
    primary: tuple[Endpoint, ...] = ()
