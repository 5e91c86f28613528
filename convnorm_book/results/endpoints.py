r"""The primary endpoints: the paper's claims that Part IV tests, declared once, before the
data, with the seeds each needs.

A book can afford a few seeds, and a test decides only what its seeds can resolve: the
paper's clean-accuracy gain of ConvNorm+BN over BN (+0.13 points) or its gains under
attack (under a point) would need more seeds than any GPU window holds, and dozens of
comparisons corrected together would decide nothing. So five claims are primary: those
central to the paper whose effect is large against the spread between seeds (its
label-noise and data-scarcity gaps of ConvNorm+BN over BN, its convergence claim as a
ratio of images, and the mechanism it rests on, channels made tight frames, as the
channel condition number of the trained layers, where the pilot found the opposite).
Each declares, before the records it will be tested on exist:

* the comparison and the quantity (:mod:`~convnorm_book.results.quantities`), its
  direction, and the paper's effect, read from its tables;
* the statistic: the paired t-test of :mod:`~convnorm_book.results.stats`, two-sided at
  5 %, with Holm's correction over the primary endpoints only (an endpoint a preset does
  not run counts with :math:`\mathrm p = 1`);
* how a training that failed to train enters it (never averaged in silently, never
  dropped silently);
* the seeds it needs: the fewest for a power of at least
  :data:`~convnorm_book.results.power.TARGET_POWER` at the paper's effect
  (:mod:`~convnorm_book.results.power`), at the level Holm's first step uses, 5 % over the
  number of endpoints (each endpoint's power under Holm is at least that), with the
  standard deviation of a per-seed difference taken as the largest of the recorded
  spreads (:func:`spreads`): the paper's own (its two methods' standard deviations
  combined, :math:`\sqrt{s_a^2 + s_b^2}`, as if unpaired) and the pilot's, the
  reduced-scale records made on the JPEG copy before any of the GPU protocol's
  (:data:`PILOT`), at the endpoint's group or, where the pilot did not run it, at every
  group of the same comparison it ran.

Every other comparison of Part IV is a description: its interval, without a verdict
(:mod:`~convnorm_book.results.comparisons`).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from convnorm.experiments import EXPERIMENTS, Preset, get_preset
from convnorm.experiments.gpu_plan import Request

from . import sizes
from .power import power, seeds_needed
from .quantities import LayerMean, Measured, SpeedUp
from .records import Records, load_runs, results_dir, stored
from .reference import paper_value
from .stats import ALPHA, Paired, holm, paired_values
from .words import method_label

#: the pilot: the reduced-scale records on the JPEG copy, made before any record of the GPU protocol
PILOT = ("archive/cpu-jpeg-q75", "cpu")
SUPPORTED, CONTRADICTED, INCONCLUSIVE, NOT_RUN = "supported", "contradicted", "inconclusive", "not run at this scale"


@dataclass(frozen=True)
class Endpoint:
    """One primary endpoint: ``a`` − ``b`` of ``quantity`` in ``experiment`` at ``group``
    (``None`` for an experiment without groups; ``resnet18`` in the convergence study stands
    for the preset's only network where it trains a smaller one), claimed in
    ``direction``, as the paper says in ``claim``; ``runs``: how the experiment names its
    trainings of a group and method; ``effect``: the paper's effect where its tables do not
    give it as a difference of two of their cells (with the reason in ``claim``)."""

    name: str
    experiment: str
    group: str | None
    a: str
    b: str
    quantity: Measured | SpeedUp | LayerMean
    claim: str
    runs: Callable[[str | None, str], str]
    direction: int = +1
    effect: Callable[[dict], float] | None = None

    def runs_at(self, settings: Preset) -> bool:
        """Whether the preset runs this endpoint's group."""
        keys = EXPERIMENTS[self.experiment].schema.group_keys(settings)
        return self.group in keys or (self.experiment == "convergence" and settings.arch is not None)

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

    def paper_effect(self, reference: dict) -> float:
        """The paper's ``a`` − ``b``, read from its tables (or :attr:`effect`)."""
        if self.effect is not None:
            return self.effect(reference)
        if isinstance(self.quantity, SpeedUp):
            return self.quantity.paper_effect(reference)
        measure = EXPERIMENTS[self.experiment].schema.measure(self.quantity.name, get_preset("paper"))
        cells = [paper_value(reference, self.experiment, m, measure, self.group) for m in (self.a, self.b)]
        return cells[0][0] - cells[1][0]

    def paper_spread(self, reference: dict) -> float | None:
        """The standard deviation of a difference of the paper's two runs, as if unpaired,
        :math:`\\sqrt{s_a^2 + s_b^2}` from its tables; ``None`` where it reports none."""
        if not isinstance(self.quantity, Measured):
            return None
        measure = EXPERIMENTS[self.experiment].schema.measure(self.quantity.name, get_preset("paper"))
        cells = [paper_value(reference, self.experiment, m, measure, self.group) for m in (self.a, self.b)]
        return math.hypot(cells[0][1], cells[1][1])

    def paired(self, records: Records, reference: dict, group: str | None = None) -> Paired | None:
        """Our per-seed differences at ``group`` (default: :meth:`group_at` the records'
        preset), failures entered as :attr:`failure_rule` declares; ``None`` where the
        preset does not run the group."""
        if group is None:
            if not self.runs_at(records.settings):
                return None
            group = self.group_at(records.settings)
        if isinstance(self.quantity, SpeedUp):
            return self.quantity.paired(records, group, reference)
        values = [self.quantity.values(records, group, m) for m in (self.a, self.b)]
        return paired_values(*values, method_label(self.a), method_label(self.b),
                             paper=self.paper_effect(reference), unit=self.unit)

    def request(self, preset: str, seeds: int) -> Request | None:
        """The trainings of this endpoint at ``preset`` for its first ``seeds`` seeds, as a
        GPU plan's request; ``None`` where the preset does not run its group."""
        if not self.runs_at(get_preset(preset)):
            return None
        group = self.group_at(get_preset(preset))
        return Request(self.experiment, tuple(range(seeds)), tuple(self.runs(group, m) for m in (self.a, self.b)))


_LABEL_NOISE = ("Table 6 and its caption: 'adding ConvNorm and BatchNorm together makes a network more robust to label "
                "noise' (the maximum test accuracy over the epochs, the paper's metric)")

#: the primary endpoints, in the order of the chapters
PRIMARY: tuple[Endpoint, ...] = (
    Endpoint("convergence speed", "convergence", "resnet18", "convnorm+bn", "bn", SpeedUp(),
             "Figure 4 and its text: '1000 iterations of training with ConvNorm lead to generalization performance "
             "comparable to 8000 iterations of training using BatchNorm' (in images seen, so that batches compare)",
             lambda group, method: f"{group}-{method}"),
    Endpoint("label noise 40 %", "label-noise", "0.4", "convnorm+bn", "bn", Measured("max_test_acc"), _LABEL_NOISE,
             lambda group, method: f"noise{group}-{method}"),
    Endpoint("label noise 80 %", "label-noise", "0.8", "convnorm+bn", "bn", Measured("max_test_acc"), _LABEL_NOISE,
             lambda group, method: f"noise{group}-{method}"),
    Endpoint("data scarcity 10 %", "data-scarcity", "0.1", "convnorm+bn", "bn", Measured("test_acc"),
             "Table 7 and its caption: 'adding ConvNorm and BatchNorm together helps improve data efficiency' (the "
             "test accuracy at the best validation epoch)", lambda group, method: f"subset{group}-{method}"),
    Endpoint("channel conditioning", "conditioning", None, "convnorm", "none",
             LayerMean("channel_condition_number", log=True),
             "Figure 2 and its caption: ConvNorm 'normalizes the channel-wise condition number to 1' (the operator "
             "each trained layer applies, its running normalizer and affine kernel included; the log of the ratio "
             "of geometric means over the layers). The figure gives no number for the vanilla network, so the "
             "paper's effect is ConvNorm's log 1 = 0 less the vanilla networks' mean of the pilot",
             lambda group, method: method, direction=-1,
             effect=lambda reference: -_pilot_vanilla_log_condition()),
)

def _pilot_vanilla_log_condition() -> float:
    """The pilot's vanilla networks' mean log channel condition number (over seeds and
    layers): what the paper's claim of tight frames, log 1 = 0, stands against."""
    values = LayerMean("channel_condition_number", log=True).values(pilot_records("conditioning"), None, "none")
    finite = [v for v in values if isinstance(v, float)]
    return sum(finite) / len(finite)


#: the level of each endpoint's test in the power analysis: Holm's first step, Bonferroni's
PLANNING_ALPHA = ALPHA / len(PRIMARY)


def pilot_records(experiment: str, root: str | Path | None = None) -> Records | None:
    """The pilot's records of ``experiment`` (:data:`PILOT`), or ``None`` where it has none."""
    folder, preset = PILOT
    runs = load_runs(experiment, preset, folder=results_dir(root) / folder)
    return Records(experiment, preset, tuple(runs)) if runs else None


@dataclass(frozen=True)
class Spread:
    """A standard deviation of one endpoint's per-seed difference, and where it comes from."""

    sd: float
    source: str


def spreads(endpoint: Endpoint, reference: dict, root: str | Path | None = None) -> list[Spread]:
    """The recorded spreads of ``endpoint``: the paper's (where it reports standard
    deviations) and the pilot's at the endpoint's group, or at every group of the same
    comparison the pilot ran where it did not run that one (see the module)."""
    found = []
    paper = endpoint.paper_spread(reference)
    if paper is not None:
        table = reference["tables"][EXPERIMENTS[endpoint.experiment].schema.reference]
        found.append(Spread(paper, f"the paper's {table['label']}"))
    pilot = pilot_records(endpoint.experiment, root)
    if pilot is not None:
        schema = pilot.schema
        own = endpoint.runs_at(pilot.settings)
        groups = [endpoint.group_at(pilot.settings)] if own else list(schema.group_keys(pilot.settings))
        for group in groups:
            c = endpoint.paired(pilot, reference, group)
            if c is not None and c.n > 1:
                where = "" if own or group is None else f" at {schema.group.paper_name(group)}"
                found.append(Spread(c.over_seeds.std, f"the pilot ({c.n} seeds{where})"))
    return found


@dataclass(frozen=True)
class Plan:
    """One endpoint's plan: the paper's effect, the spread planned with (the largest
    recorded) and its source, the seeds needed and their power."""

    endpoint: Endpoint
    effect: float
    spread: Spread
    seeds: int | None
    power: float | None


def plan(reference: dict, root: str | Path | None = None) -> list[Plan]:
    """Every primary endpoint's plan (see the module)."""
    plans = []
    for endpoint in PRIMARY:
        effect = endpoint.paper_effect(reference)
        spread = max(spreads(endpoint, reference, root), key=lambda s: s.sd)
        seeds = seeds_needed(effect, spread.sd, PLANNING_ALPHA)
        plans.append(Plan(endpoint, effect, spread, seeds,
                          None if seeds is None else power(effect, spread.sd, seeds, PLANNING_ALPHA)))
    return plans


def requests(preset: str, plans: Sequence[Plan]) -> tuple[Request, ...]:
    """The trainings of the primary endpoints at ``preset``, each for its planned seeds
    (the endpoints a preset does not run left out)."""
    return tuple(r for p in plans if p.seeds is not None and (r := p.endpoint.request(preset, p.seeds)) is not None)


@dataclass(frozen=True)
class Result:
    """One primary endpoint tested on stored records: the records' scale, our paired
    differences (``None`` where the preset does not run the endpoint), the paper's
    effect, the p-value, Holm's adjusted p-value over every primary endpoint, and the
    verdict."""

    endpoint: Endpoint
    paired: Paired | None
    scale: str
    p_value: float
    adjusted: float
    verdict: str

    @property
    def effect(self) -> str:
        """Our effect in words (:func:`~convnorm_book.results.sizes.effect`)."""
        return sizes.effect(self.paired) if self.paired is not None else NOT_RUN


def verdict(paired: Paired | None, adjusted: float, direction: int) -> str:
    """``SUPPORTED`` when Holm's adjusted p-value is below 5 % and our mean lies in the
    claimed ``direction``, ``CONTRADICTED`` when it is below and the mean lies the other
    way, ``INCONCLUSIVE`` otherwise; ``NOT_RUN`` without records."""
    if paired is None:
        return NOT_RUN
    if adjusted >= ALPHA or not paired.n:
        return INCONCLUSIVE
    return SUPPORTED if paired.mean * direction > 0 else CONTRADICTED


def test(reference: dict, root: str | Path | None = None, records: dict[str, Records] | None = None) -> list[Result]:
    """Every primary endpoint tested on the stored records (:func:`~convnorm_book.results.records.stored`,
    or ``records`` by experiment), corrected together by Holm's method."""
    from .words import scale_name

    records = records or {}
    found = []
    for endpoint in PRIMARY:
        data = records.get(endpoint.experiment) or stored(endpoint.experiment, root)
        c = endpoint.paired(data, reference)
        p = c.p_value if c is not None else None
        found.append((endpoint, c, scale_name(data), 1.0 if p is None else p))
    adjusted = holm([p for *_, p in found])
    return [Result(e, c, scale, p, q, verdict(c, q, e.direction)) for (e, c, scale, p), q in zip(found, adjusted)]
