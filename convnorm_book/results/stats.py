r"""Numbers over seeds, paired differences with t-intervals, and the verdicts they allow.

Every experiment trains each method once per seed, and the runs of one seed share the
data order, the data subset and the seed of the initial weights. Methods ``a`` and
``b`` are therefore compared by the per-seed differences :math:`d_s = a_s - b_s`
(paired by seed). Over :math:`n` seeds, with mean :math:`\bar d` and sample standard
deviation :math:`s_d`, the 95 % t-interval for the mean difference is

.. math::

    \bar d \pm t_{0.975,\,n-1}\, s_d / \sqrt n,

which assumes the :math:`d_s` are independent draws from a normal distribution (few
seeds cannot check that; the interval is a yardstick, not a guarantee). A claim that
``a`` beats ``b`` is *supported* at the scale of the runs when the whole interval lies
on the claim's side of zero, *contradicted* when it lies on the other side, and
*inconclusive* when it contains zero (or when there are fewer than two seeds).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from .records import Records, lookup

SUPPORTED, CONTRADICTED, INCONCLUSIVE = "supported", "contradicted", "inconclusive"


def _t_two_sided(t: float, df: int) -> float:
    """:math:`P(|T| < t)` for Student's t with ``df`` degrees of freedom, in closed form
    (Abramowitz & Stegun 26.7.3-4, with :math:`\\theta = \\arctan(t/\\sqrt{df})`)."""
    theta = math.atan(t / math.sqrt(df))
    c2 = math.cos(theta) ** 2
    if df % 2:  # odd: 2/pi (theta + sin cos (1 + 2/3 c^2 + 2*4/(3*5) c^4 + ...))
        term, total = 1.0, 1.0
        for k in range(1, (df - 1) // 2):
            term *= c2 * (2 * k) / (2 * k + 1)
            total += term
        series = math.sin(theta) * math.cos(theta) * total if df > 1 else 0.0
        return 2 / math.pi * (theta + series)
    term, total = 1.0, 1.0  # even: sin (1 + 1/2 c^2 + 1*3/(2*4) c^4 + ...)
    for k in range(1, df // 2):
        term *= c2 * (2 * k - 1) / (2 * k)
        total += term
    return math.sin(theta) * total


@cache
def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (``p`` in
    (0.5, 1)), by bisection on the closed-form distribution function.

    Raises:
        ValueError: for ``p`` outside (0.5, 1) or ``df`` not a positive integer.
    """
    if not 0.5 < p < 1:
        raise ValueError(f"p must lie in (0.5, 1), got {p!r}")
    if not isinstance(df, int) or df < 1:
        raise ValueError(f"df must be a positive integer, got {df!r}")
    target, low, high = 2 * p - 1, 0.0, 1.0
    while _t_two_sided(high, df) < target:
        high *= 2
    while high - low > 1e-13 * high:
        middle = (low + high) / 2
        low, high = (middle, high) if _t_two_sided(middle, df) < target else (low, middle)
    return (low + high) / 2


@dataclass(frozen=True)
class SeedStats:
    """A number measured once per seed: the finite ``values`` and how many seeds are
    ``missing`` (a diverged run). ``std`` is the sample standard deviation (``ddof=1``)."""

    values: tuple[float, ...]
    missing: int = 0

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return float(np.mean(self.values)) if self.values else math.nan

    @property
    def std(self) -> float:
        return float(np.std(self.values, ddof=1)) if self.n > 1 else (0.0 if self.n else math.nan)

    @property
    def min(self) -> float:
        return min(self.values) if self.values else math.nan

    @property
    def max(self) -> float:
        return max(self.values) if self.values else math.nan


def seed_stats(values: Sequence[float | None]) -> SeedStats:
    """Statistics of per-seed values; ``None`` and NaN count as missing."""
    finite = tuple(float(v) for v in values if v is not None and math.isfinite(float(v)))
    return SeedStats(finite, len(values) - len(finite))


def per_seed(records: Records, path: Sequence[str | int], scale: float = 1.0) -> list[float | None]:
    """The number at ``path`` of each seed's results (times ``scale``), ``None`` where absent."""
    values = (lookup(run.results, path) for run in records.runs)
    return [None if v is None else float(v) * scale for v in values]


def collect(records: Records, path: Sequence[str | int], scale: float = 1.0) -> SeedStats:
    """:class:`SeedStats` of the number at ``path`` over the seeds."""
    return seed_stats(per_seed(records, path, scale))


@dataclass(frozen=True)
class Band:
    """A curve over seeds: ``x``, the mean, the minimum and the maximum (as long as the
    shortest seed's curve), from ``n`` seeds."""

    x: np.ndarray
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    n: int


def curve_band(histories: Sequence[dict], metric: str, x: str = "steps", scale: float = 1.0) -> Band:
    """Mean, minimum and maximum over seeds of ``history[metric]`` against ``history[x]``.

    Raises:
        ValueError: if there is no history, or one lacks ``metric`` or ``x``.
    """
    if not histories:
        raise ValueError("histories is empty")
    for h in histories:
        if metric not in h or x not in h:
            raise ValueError(f"history lacks {metric!r} or {x!r} (has {sorted(h)})")
    length = min(len(h[metric]) for h in histories)
    values = np.array([[np.nan if v is None else v for v in h[metric][:length]] for h in histories], float) * scale
    return Band(np.asarray(histories[0][x][:length], float), np.nanmean(values, 0), np.nanmin(values, 0),
                np.nanmax(values, 0), len(histories))


def history_band(records: Records, method: str, metric: str, group: str | None = None, x: str = "steps",
                 scale: float = 1.0) -> Band:
    """:func:`curve_band` of ``history[metric]`` of one method's runs."""
    path = records.schema.record_path(group, method) + ("history",)
    return curve_band([lookup(run.results, path) for run in records.runs], metric, x, scale)


def first_reach(band: Band, target: float) -> float | None:
    """The first ``x`` at which the mean curve reaches ``target``; ``None`` if it never does."""
    above = np.nonzero(band.mean >= target)[0]
    return float(band.x[above[0]]) if len(above) else None


@dataclass(frozen=True)
class Paired:
    """Per-seed differences ``a - b`` (paired by seed), the paper's ``a - b`` where it
    reports both, and the sign the paper claims (that of its difference unless given);
    ``context`` says where they were measured (a noise rate, an epoch)."""

    a: str
    b: str
    differences: tuple[float, ...]
    missing: int = 0
    paper: float | None = None
    claim: int | None = None
    unit: str = "points"
    context: str = ""

    @property
    def label(self) -> str:
        return f"{self.a} − {self.b}" + (f", {self.context}" if self.context else "")

    @property
    def over_seeds(self) -> SeedStats:
        """The differences as :class:`SeedStats` (mean, sample standard deviation, ...)."""
        return SeedStats(self.differences, self.missing)

    @property
    def n(self) -> int:
        return self.over_seeds.n

    @property
    def mean(self) -> float:
        return self.over_seeds.mean

    @property
    def interval(self) -> tuple[float, float] | None:
        """The 95 % t-interval of the mean difference; ``None`` below two seeds."""
        if self.n < 2:
            return None
        half = t_quantile(0.975, self.n - 1) * self.over_seeds.std / math.sqrt(self.n)
        return self.mean - half, self.mean + half

    @property
    def claimed_sign(self) -> int | None:
        if self.claim is not None:
            return int(np.sign(self.claim))
        return None if self.paper is None or self.paper == 0 else int(np.sign(self.paper))

    @property
    def verdict(self) -> str:
        """``"supported"``, ``"contradicted"`` or ``"inconclusive"`` (see the module)."""
        interval, sign = self.interval, self.claimed_sign
        if interval is None or sign is None or interval[0] <= 0 <= interval[1]:
            return INCONCLUSIVE
        return SUPPORTED if np.sign(interval[0]) == sign else CONTRADICTED

    @property
    def paper_inside(self) -> bool | None:
        """Whether the paper's difference lies in our interval (``None`` if either is absent)."""
        if self.paper is None or self.interval is None:
            return None
        return self.interval[0] <= self.paper <= self.interval[1]

    def sentence(self, digits: int = 2) -> str:
        """``a − b: mean (95 % interval low to high, n seeds); the paper: x. Verdict.``"""
        unit = f" {self.unit}" if self.unit else ""
        if not self.n:
            return f"{self.label}: no finished pair of runs."
        text = f"{self.label}: {self.mean:+.{digits}f}{unit}"
        if self.interval is None:
            text += " (one seed: no interval)"
        else:
            low, high = self.interval
            text += f" (95 % interval {low:+.{digits}f} to {high:+.{digits}f}, {self.n} seeds)"
        if self.paper is not None:
            text += f"; the paper: {self.paper:+.{digits}f}{unit}"
        elif self.claimed_sign is not None:
            text += f"; the paper claims it is {'positive' if self.claimed_sign > 0 else 'negative'}"
        if self.claimed_sign is None:
            return text + "."
        return text + f". {self.verdict.capitalize()} at this scale."


def paired(records: Records, path_a: Sequence[str | int], path_b: Sequence[str | int], a: str, b: str,
           scale: float = 1.0, paper: float | None = None, claim: int | None = None,
           unit: str = "points", context: str = "") -> Paired:
    """The per-seed differences ``value(path_a) - value(path_b)`` of ``records``; a seed
    where either value is absent (a diverged run) is left out and counted in ``missing``."""
    pairs = zip(per_seed(records, path_a, scale), per_seed(records, path_b, scale))
    differences = [x - y for x, y in pairs if x is not None and y is not None]
    return Paired(a, b, tuple(differences), len(records.runs) - len(differences), paper, claim, unit, context)
