r"""The primary endpoints: the paper's claims that Part IV tests, declared before the data
(each in its experiment's study, :mod:`~convnorm_book.results.studies`), the seeds each
needs, and their test.

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
  standard deviation of a per-seed difference taken at the upper confidence bound
  (:func:`~convnorm_book.results.power.sd_upper_bound`, one-sided
  :data:`~convnorm_book.results.power.SPREAD_CONFIDENCE`) of the largest of the recorded
  spreads (:func:`spreads`), largest by that bound: the paper's own (its two methods'
  standard deviations combined, :math:`\sqrt{s_a^2 + s_b^2}`, as if unpaired, with the
  degrees of freedom of its seeds, :math:`2(N_{\mathrm{seed}} - 1)`) and ours, from the cpu
  scale of the GPU protocol's network (:data:`SPREAD_PRESET`) where at least two of its
  seeds are complete, else from the pilot, the reduced-scale records made on the JPEG copy
  before any of the GPU protocol's (:func:`~convnorm_book.results.records.pilot`), at the
  endpoint's group or, where the records did not run it, at every group of the same
  comparison they ran; an estimate over :math:`N` seeds has :math:`N - 1` degrees of freedom;
* whether a scale can test it at all (:mod:`~convnorm_book.results.scope`): where it cannot,
  it needs no seeds there.

Every other comparison of Part IV is a description: its interval, without a verdict
(:mod:`~convnorm_book.results.comparisons`).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from convnorm_lab.experiments import EXPERIMENTS
from convnorm_lab.experiments.gpu_queue import Request

from . import sizes
from .claims import Endpoint
from .power import power, sd_upper_bound, seeds_needed
from .records import PILOT_FOLDER, Records, pilot, stored
from .scope import Scope, complete_records, scope
from .stats import ALPHA, Paired, holm
from .studies import PRIMARY
from .words import scale_name

SUPPORTED, CONTRADICTED, INCONCLUSIVE, NOT_RUN = "supported", "contradicted", "inconclusive", "not run at this scale"
#: the level of each endpoint's test in the power analysis: Holm's first step, Bonferroni's
PLANNING_ALPHA = ALPHA / len(PRIMARY)
#: the records whose spreads plan the GPU protocol once two seeds of an endpoint are complete:
#: the same network at the cpu scale
SPREAD_PRESET = "airbench-cpu"
#: the fewest complete seeds whose spread replaces the pilot's
MIN_SPREAD_SEEDS = 2


@dataclass(frozen=True)
class Spread:
    """A standard deviation of one endpoint's per-seed difference, the degrees of freedom of
    its estimate, and where it comes from."""

    sd: float
    df: int
    source: str

    @property
    def bound(self) -> float:
        """The upper confidence bound on the standard deviation that a plan takes
        (:func:`~convnorm_book.results.power.sd_upper_bound`)."""
        return sd_upper_bound(self.sd, self.df)


def _paper_seeds(paper_values: dict, experiment: str) -> int:
    """The seeds behind the paper's standard deviations of ``experiment``, from its table's setting."""
    setting = paper_values["tables"][EXPERIMENTS[experiment].schema.paper_table]["setting"]
    found = re.search(r"over (\d+) seeds", setting)
    if found is None:
        raise ValueError(f"the paper's table of {experiment!r} does not say over how many seeds: {setting!r}")
    return int(found.group(1))


def _record_spreads(endpoint: Endpoint, records: Records, paper_values: dict, name: str,
                    root: str | Path | None) -> list[Spread]:
    """The spreads of ``endpoint`` in ``records``: at its group, or at every group of the same
    comparison they ran where they did not run that one."""
    schema, own = records.schema, endpoint.runs_at(records.settings)
    groups = [endpoint.group_at(records.settings)] if own else list(schema.group_keys(records.settings))
    found = []
    for group in groups:
        c = endpoint.paired(records, paper_values, group, root)
        if c is not None and c.n >= MIN_SPREAD_SEEDS:
            where = "" if own or group is None else f" at {schema.group.paper_name(group)}"
            found.append(Spread(c.over_seeds.std, c.n - 1, f"{name} ({c.n} seeds{where})"))
    return found


def spreads(endpoint: Endpoint, paper_values: dict, root: str | Path | None = None) -> list[Spread]:
    """The recorded spreads of ``endpoint``: the paper's (where it reports standard
    deviations) and ours, from the :data:`SPREAD_PRESET` records where they hold
    :data:`MIN_SPREAD_SEEDS` complete seeds, else from the pilot (see the module)."""
    found = []
    paper = endpoint.paper_spread(paper_values)
    if paper is not None:
        table = paper_values["tables"][EXPERIMENTS[endpoint.experiment].schema.paper_table]
        seeds = _paper_seeds(paper_values, endpoint.experiment)
        found.append(Spread(paper, 2 * (seeds - 1), f"the paper's {table['label']} ({seeds} seeds each)"))
    cpu = complete_records(endpoint.experiment, SPREAD_PRESET, root)
    ours = [] if cpu is None else _record_spreads(endpoint, cpu, paper_values, f"the {SPREAD_PRESET} records", root)
    piloted = None if ours else pilot(endpoint.experiment, root)
    if piloted is not None:
        ours = _record_spreads(endpoint, piloted, paper_values, "the pilot", root)
    return found + ours


@dataclass(frozen=True)
class SampleSize:
    """The seeds one endpoint needs: the paper's effect, the spread planned with (the
    largest recorded, by its upper bound) and its source, whether the plan's scale can test
    it (``None``: no scale given), the seeds needed (``None``: none where it cannot be tested,
    or more than the plan allows) and their power."""

    endpoint: Endpoint
    effect: float
    spread: Spread
    scope: Scope | None
    seeds: int | None
    power: float | None

    @property
    def testable(self) -> bool:
        """Whether the plan's scale can test it, or may (not known until trained)."""
        return self.scope is None or self.scope.testable is not False


def sample_sizes(paper_values: dict, root: str | Path | None = None, preset: str | None = None) -> list[SampleSize]:
    """The seeds every primary endpoint needs, at ``preset`` where given: none for an
    endpoint it cannot test (see the module)."""
    found = []
    for endpoint in PRIMARY:
        effect = endpoint.paper_effect(paper_values, root)
        recorded = spreads(endpoint, paper_values, root)
        if not recorded:
            raise ValueError(f"no spread of the primary endpoint {endpoint.name!r} is recorded: neither the paper, "
                             f"the {SPREAD_PRESET} records nor the pilot (under {PILOT_FOLDER}) give one")
        spread = max(recorded, key=lambda s: s.bound)
        limit = None if preset is None else scope(endpoint, preset, paper_values, root)
        seeds = seeds_needed(effect, spread.bound, PLANNING_ALPHA) if limit is None or limit.testable is not False \
            else None
        found.append(SampleSize(endpoint, effect, spread, limit, seeds,
                                None if seeds is None else power(effect, spread.bound, seeds, PLANNING_ALPHA)))
    return found


def requests(preset: str, needed: Sequence[SampleSize]) -> tuple[Request, ...]:
    """The trainings of the primary endpoints at ``preset``, each for the seeds it needs
    (the endpoints a preset does not run left out)."""
    return tuple(r for n in needed if n.seeds is not None and (r := n.endpoint.request(preset, n.seeds)) is not None)


@dataclass(frozen=True)
class Result:
    """One primary endpoint tested on stored records: the records' scale, our paired
    differences (``None`` where the preset does not run the endpoint), the paper's
    effect, the p-value, Holm's adjusted p-value over every primary endpoint, the
    verdict, and ``beside``: our differences of the quantity the paper reports, where the
    endpoint tests another (:meth:`~convnorm_book.results.claims.Endpoint.beside`), never tested."""

    endpoint: Endpoint
    paired: Paired | None
    scale: str
    p_value: float
    adjusted: float
    verdict: str
    beside: Paired | None = None

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


def test(paper_values: dict, root: str | Path | None = None, records: dict[str, Records] | None = None) -> list[Result]:
    """Every primary endpoint tested on the stored records (:func:`~convnorm_book.results.records.stored`,
    or ``records`` by experiment), corrected together by Holm's method."""
    records = records or {}
    found = []
    for endpoint in PRIMARY:
        data = records.get(endpoint.experiment) or stored(endpoint.experiment, root)
        c = endpoint.paired(data, paper_values, root=root)
        p = c.p_value if c is not None else None
        beside = endpoint.beside(data, paper_values, root)
        found.append((endpoint, c, scale_name(data), 1.0 if p is None else p, beside))
    adjusted = holm([p for *_, p, _ in found])
    return [Result(e, c, scale, p, q, verdict(c, q, e.direction), beside)
            for (e, c, scale, p, beside), q in zip(found, adjusted)]
