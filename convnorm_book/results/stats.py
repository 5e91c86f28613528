r"""Numbers over seeds, paired differences with t-intervals and p-values, the verdicts
they allow, and Holm's correction for making many comparisons at once (in the symbols of
the chapter on training and generalization).

Every experiment trains each method once per seed, and the runs of one seed share the
data order, the data subset and the seed of the initial weights. Methods 1 and 2 (``a``
and ``b``) are therefore compared by the per-seed differences
:math:`X_h = Y^{(1)}_h - Y^{(2)}_h` (paired by seed :math:`h`). Over
:math:`N_{\mathrm{seed}}` seeds, with mean :math:`\bar X`, sample standard deviation
:math:`\operatorname{sd}(X)` and standard error
:math:`\operatorname{se} = \operatorname{sd}(X) / \sqrt{N_{\mathrm{seed}}}`, the level-:math:`L`
t-interval for the mean difference is

.. math::

    \bar X \pm \mathrm t_{(1+L)/2,\,N_{\mathrm{seed}}-1}\, \operatorname{se},

which assumes the :math:`X_h` are independent draws from a normal distribution (few
seeds cannot check that; the interval is a yardstick, not a guarantee). A seed whose run
of ``a`` or ``b`` diverged has no difference: it is left out and counted.

Two kinds of claim are tested (:mod:`~convnorm_book.results.claims` declares which one
the paper makes for each comparison):

* a **difference** of sign :math:`\sigma`: *supported* when the 95 % interval lies on
  the claimed side of zero, *contradicted* when it lies on the other side,
  *inconclusive* when it contains zero. Its p-value is the paired t-test's,
  :math:`\mathrm p = P(|T_{N_{\mathrm{seed}}-1}| \ge |\bar X| / \operatorname{se})`, below
  0.05 exactly when the interval excludes zero.
* **parity** within a margin :math:`M_{\mathrm{par}}` (the paper's "on par"), by two one-sided tests
  (TOST): *shown* when the 90 % interval lies inside :math:`(-M_{\mathrm{par}}, M_{\mathrm{par}})`, i.e. when

  .. math::

      \mathrm p = \max\bigl(P(T \ge (\bar X + M_{\mathrm{par}})/\operatorname{se}),\
      P(T \le (\bar X - M_{\mathrm{par}})/\operatorname{se})\bigr) < 0.05;

  *contradicted* when the 95 % interval lies wholly beyond :math:`+M_{\mathrm{par}}` or :math:`-M_{\mathrm{par}}`
  (the difference is shown to exceed the margin); *not shown* otherwise.

A chapter makes many comparisons, and at 5 % each, some would come out supported or
contradicted by chance alone. :func:`holm` adjusts the p-values so that the chance of
even one false verdict among all of a chapter's comparisons stays below 5 %, whatever
the dependence between them (comparisons share runs, so they are not independent):
with the :math:`N_{\mathrm{cmp}}` p-values sorted, :math:`\mathrm p_{(0)} \le \dots \le
\mathrm p_{(N_{\mathrm{cmp}}-1)}`, the adjusted :math:`\tilde{\mathrm p}_{(J)} = \max_{J' \le J}
\min\bigl(1, (N_{\mathrm{cmp}} - J')\, \mathrm p_{(J')}\bigr)` (Holm 1979; never less
powerful than Bonferroni's :math:`N_{\mathrm{cmp}}\,\mathrm p`).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from .records import DIVERGED, Records, diverged_count, measured
from .words import signed

SUPPORTED, CONTRADICTED, INCONCLUSIVE = "supported", "contradicted", "inconclusive"
#: the level of every test: a verdict other than inconclusive needs p below it
ALPHA = 0.05


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


def t_upper_tail(t: float, df: int) -> float:
    """:math:`P(T \\ge t)` for Student's t with ``df`` degrees of freedom (any real ``t``;
    ``±inf`` allowed)."""
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    tail = (1 - _t_two_sided(abs(t), df)) / 2
    return tail if t >= 0 else 1 - tail


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
    """A number measured once per seed: the finite ``values``, how many seeds
    ``diverged`` and how many recorded no value (``absent``). ``std`` is the sample
    standard deviation (``ddof=1``)."""

    values: tuple[float, ...]
    diverged: int = 0
    absent: int = 0

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def seeds(self) -> int:
        return self.n + self.diverged + self.absent

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

    @property
    def diverged_note(self) -> str:
        """``"1 of 3 seeds diverged"``, or empty."""
        return diverged_count(self.diverged, self.seeds)


def seed_stats(values: Sequence) -> SeedStats:
    """Statistics of per-seed values: :data:`~convnorm_book.results.records.DIVERGED`
    counts as diverged, ``None`` and NaN as absent."""
    diverged = sum(v is DIVERGED for v in values)
    finite = tuple(float(v) for v in values if v is not DIVERGED and v is not None and math.isfinite(float(v)))
    return SeedStats(finite, diverged, len(values) - len(finite) - diverged)


def per_seed(records: Records, path: Sequence[str | int], scale: float = 1.0) -> list:
    """The number at ``path`` of each seed's results (times ``scale``): ``DIVERGED`` where
    the path passes through a diverged training, ``None`` where absent."""
    values = (measured(run.results, path) for run in records.runs)
    return [v if v is None or v is DIVERGED else float(v) * scale for v in values]


def collect(records: Records, path: Sequence[str | int], scale: float = 1.0) -> SeedStats:
    """:class:`SeedStats` of the number at ``path`` over the seeds."""
    return seed_stats(per_seed(records, path, scale))


@dataclass(frozen=True)
class Band:
    """A curve over seeds: ``x``, the mean, the minimum and the maximum (as long as the
    shortest seed's curve), from ``n`` seeds; ``diverged`` seeds are left out."""

    x: np.ndarray
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    n: int
    diverged: int = 0

    @property
    def diverged_note(self) -> str:
        """``"1 of 3 seeds diverged"``, or empty."""
        return diverged_count(self.diverged, self.n + self.diverged)


def curve_band(histories: Sequence, metric: str, x: str = "steps", scale: float = 1.0) -> Band:
    """Mean, minimum and maximum over seeds of ``history[metric]`` against ``history[x]``;
    a history given as :data:`~convnorm_book.results.records.DIVERGED` is left out and
    counted.

    Raises:
        ValueError: if no history is left, or one lacks ``metric`` or ``x``.
    """
    finished = [h for h in histories if h is not DIVERGED]
    if not finished:
        raise ValueError("histories is empty" if not histories else "every history diverged")
    for h in finished:
        if metric not in h or x not in h:
            raise ValueError(f"history lacks {metric!r} or {x!r} (has {sorted(h)})")
    length = min(len(h[metric]) for h in finished)
    values = np.array([[np.nan if v is None else v for v in h[metric][:length]] for h in finished], float) * scale
    return Band(np.asarray(finished[0][x][:length], float), np.nanmean(values, 0), np.nanmin(values, 0),
                np.nanmax(values, 0), len(finished), len(histories) - len(finished))


def history_band(records: Records, method: str, metric: str, group: str | None = None, x: str = "steps",
                 scale: float = 1.0) -> Band:
    """:func:`curve_band` of ``history[metric]`` of one method's runs (diverged runs left out)."""
    path = records.schema.record_path(group, method) + ("history",)
    return curve_band([measured(run.results, path) for run in records.runs], metric, x, scale)


def first_reach(band: Band, target: float) -> float | None:
    """The first ``x`` at which the mean curve reaches ``target``; ``None`` if it never does."""
    above = np.nonzero(band.mean >= target)[0]
    return float(band.x[above[0]]) if len(above) else None


def difference_outcome(interval: tuple[float, float] | None, sign: int | None) -> str:
    """The verdict on a claimed difference of ``sign`` from a 95 % ``interval`` (see the
    module): ``SUPPORTED``, ``CONTRADICTED`` or ``INCONCLUSIVE``."""
    if interval is None or not sign or interval[0] <= 0 <= interval[1]:
        return INCONCLUSIVE
    return SUPPORTED if np.sign(interval[0]) == np.sign(sign) else CONTRADICTED


@dataclass(frozen=True)
class Paired:
    """Per-seed differences ``a - b`` (paired by seed) over ``seeds`` seeds, of which
    ``diverged`` had a diverged run on either side; the paper's ``a - b`` where it
    reports both, and the sign the paper claims (that of its difference unless given);
    ``context`` says where they were measured (a noise rate, an epoch)."""

    a: str
    b: str
    differences: tuple[float, ...]
    diverged: int = 0
    paper: float | None = None
    claim: int | None = None
    unit: str = "points"
    context: str = ""
    seeds: int | None = None

    @property
    def label(self) -> str:
        return f"{self.a} − {self.b}" + (f", {self.context}" if self.context else "")

    @property
    def over_seeds(self) -> SeedStats:
        """The differences as :class:`SeedStats` (mean, sample standard deviation, ...)."""
        seeds = len(self.differences) + self.diverged if self.seeds is None else self.seeds
        return SeedStats(self.differences, self.diverged, seeds - len(self.differences) - self.diverged)

    @property
    def n(self) -> int:
        return len(self.differences)

    @property
    def mean(self) -> float:
        return self.over_seeds.mean

    @property
    def standard_error(self) -> float | None:
        """:math:`s_d / \\sqrt n`; ``None`` below two seeds."""
        return self.over_seeds.std / math.sqrt(self.n) if self.n > 1 else None

    def interval_at(self, level: float) -> tuple[float, float] | None:
        """The level-``level`` t-interval of the mean difference; ``None`` below two seeds."""
        if self.standard_error is None:
            return None
        half = t_quantile((1 + level) / 2, self.n - 1) * self.standard_error
        return self.mean - half, self.mean + half

    @property
    def interval(self) -> tuple[float, float] | None:
        """The 95 % t-interval of the mean difference; ``None`` below two seeds."""
        return self.interval_at(1 - ALPHA)

    def _t(self, shift: float = 0.0) -> float:
        """:math:`(\\bar d - \\text{shift}) / e`, infinite when every difference is equal."""
        error, centred = self.standard_error, self.mean - shift
        if error > 0:
            return centred / error
        return math.copysign(math.inf, centred) if centred else 0.0

    @property
    def p_value(self) -> float | None:
        """The two-sided paired t-test's p-value for a mean difference of zero; ``None``
        below two seeds."""
        return None if self.standard_error is None else min(1.0, 2 * t_upper_tail(abs(self._t()), self.n - 1))

    def parity_p_values(self, margin: float) -> tuple[float, float] | None:
        """For parity within ``±margin`` (see the module): the TOST p-value (equivalence)
        and the two-sided p-value of the difference lying beyond the margin; ``None``
        below two seeds."""
        if self.standard_error is None:
            return None
        df = self.n - 1
        above, below = t_upper_tail(self._t(margin), df), 1 - t_upper_tail(self._t(-margin), df)
        equivalence = max(1 - t_upper_tail(self._t(margin), df), t_upper_tail(self._t(-margin), df))
        return equivalence, min(1.0, 2 * min(above, below))

    @property
    def claimed_sign(self) -> int | None:
        if self.claim is not None:
            return int(np.sign(self.claim))
        return None if self.paper is None or self.paper == 0 else int(np.sign(self.paper))

    @property
    def verdict(self) -> str:
        """``"supported"``, ``"contradicted"`` or ``"inconclusive"`` for the claimed sign
        (see :func:`difference_outcome`)."""
        return difference_outcome(self.interval, self.claimed_sign)

    @property
    def paper_inside(self) -> bool | None:
        """Whether the paper's difference lies in our interval (``None`` if either is absent)."""
        if self.paper is None or self.interval is None:
            return None
        return self.interval[0] <= self.paper <= self.interval[1]

    def effect(self) -> str:
        """Our effect in words: ``+1.03 points (95 % interval +0.55 to +1.51, 3 seeds)``,
        with the count of diverged seeds where any."""
        unit = f" {self.unit}" if self.unit else ""
        note = self.over_seeds.diverged_note
        if not self.n:
            return "no finished pair of runs" + (f" ({note})" if note else "")
        if self.interval is None:
            return signed(self.mean) + unit + f" (one seed, so no interval{'; ' + note if note else ''})"
        low, high = self.interval
        like = max(abs(self.mean), abs(low), abs(high))  # one number of decimals for the three
        return (signed(self.mean, like) + unit + f" (95 % interval {signed(low, like)} to {signed(high, like)}, "
                f"{self.n} seeds{'; ' + note if note else ''})")

    def sentence(self) -> str:
        """``a − b: mean (95 % interval low to high, n seeds); the paper: x. Verdict.``"""
        unit = f" {self.unit}" if self.unit else ""
        text = f"{self.label}: {self.effect()}"
        if not self.n:
            return text + "."
        if self.paper is not None:
            text += f"; the paper: {signed(self.paper)}{unit}"
        elif self.claimed_sign is not None:
            text += f"; the paper claims it is {'positive' if self.claimed_sign > 0 else 'negative'}"
        if self.claimed_sign is None:
            return text + "."
        return text + f". {self.verdict.capitalize()} at this scale."


def paired_values(a: Sequence, b: Sequence, label_a: str, label_b: str, **options) -> Paired:
    """The per-seed differences ``a[s] - b[s]`` (values as :func:`per_seed` gives them); a
    seed where either run diverged is left out and counted in ``diverged``, one where
    either value is absent is left out."""
    pairs = list(zip(a, b))
    differences = tuple(x - y for x, y in pairs if all(v is not None and v is not DIVERGED for v in (x, y)))
    diverged = sum(DIVERGED in (x, y) for x, y in pairs)
    return Paired(label_a, label_b, differences, diverged, seeds=len(pairs), **options)


def paired(records: Records, path_a: Sequence[str | int], path_b: Sequence[str | int], a: str, b: str,
           scale: float = 1.0, paper: float | None = None, claim: int | None = None,
           unit: str = "points", context: str = "") -> Paired:
    """The per-seed differences ``value(path_a) - value(path_b)`` of ``records``
    (:func:`paired_values`)."""
    return paired_values(per_seed(records, path_a, scale), per_seed(records, path_b, scale), a, b, paper=paper,
                         claim=claim, unit=unit, context=context)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's adjusted p-values, in the order given (see the module)."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted, running = [1.0] * len(p_values), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted
