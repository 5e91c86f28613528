r"""Numbers over seeds, paired differences with their t-intervals and p-values, and Holm's
correction (in the symbols of the chapter on training and generalization).

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
seeds cannot check that; the interval is a yardstick, not a guarantee), and the paired
t-test's p-value for a mean difference of zero is
:math:`\mathrm p = P(|T_{N_{\mathrm{seed}}-1}| \ge |\bar X| / \operatorname{se})`, below 0.05
exactly when the 95 % interval excludes zero.

A training that failed to train enters a difference as
:func:`~convnorm_book.results.records.measured` says (an accuracy as measured, any other
number left out), and every count says how many seeds a failure touched.

Only the primary endpoints (:mod:`~convnorm_book.results.endpoints`) are tested; their
p-values are corrected together by :func:`holm`, so that the chance of even one false
verdict among them stays below 5 %, whatever the dependence between them: with the
:math:`N_{\mathrm{cmp}}` p-values sorted, :math:`\mathrm p_{(0)} \le \dots \le
\mathrm p_{(N_{\mathrm{cmp}}-1)}`, the adjusted :math:`\tilde{\mathrm p}_{(J)} = \max_{J' \le J}
\min\bigl(1, (N_{\mathrm{cmp}} - J')\, \mathrm p_{(J')}\bigr)` (Holm 1979; never less
powerful than Bonferroni's :math:`N_{\mathrm{cmp}}\,\mathrm p`). Every other comparison is a
description: its interval, and what that interval rules in and out
(:mod:`~convnorm_book.results.sizes`).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from .records import FAILED, FailedValue, Records, classes, failed_count, failure, is_diverged, lookup, measured

#: the level of every test and interval: 95 % intervals, p below 0.05
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
    return _inverse(lambda x: _t_two_sided(x, df), 2 * p - 1, 1.0)


def _inverse(increasing: Callable[[float], float], target: float, high: float) -> float:
    """The :math:`x \\ge 0` where the increasing ``increasing(x)`` reaches ``target``: ``high``
    doubled until it brackets it, then bisection to a relative width of 1e-13 (a quantile
    needs no faster root-finder, and bisection cannot leave the bracket)."""
    low = 0.0
    while increasing(high) < target:
        high *= 2
    while high - low > 1e-13 * high:
        middle = (low + high) / 2
        low, high = (middle, high) if increasing(middle) < target else (low, middle)
    return (low + high) / 2


def _chi2_cdf(x: float, df: int) -> float:
    """:math:`P(V \\le x)` for :math:`V` chi-squared with ``df`` degrees of freedom: the
    regularized lower incomplete gamma function :math:`P(\\nu/2, x/2)`, by its power series
    :math:`e^{-y} y^a \\sum_k y^k / \\Gamma(a + k + 1)` (Abramowitz & Stegun 6.5.29), which
    converges for every :math:`x \\ge 0`."""
    if x <= 0:
        return 0.0
    a, y = df / 2, x / 2
    term = math.exp(a * math.log(y) - y - math.lgamma(a + 1))
    total, k = term, 0
    while term > 1e-17 * total:
        k += 1
        term *= y / (a + k)
        total += term
    return min(1.0, total)


@cache
def chi2_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of the chi-squared distribution with ``df`` degrees of freedom
    (``p`` in (0, 1)), by bisection on :func:`_chi2_cdf`.

    Raises:
        ValueError: for ``p`` outside (0, 1) or ``df`` not a positive integer.
    """
    if not 0 < p < 1:
        raise ValueError(f"p must lie in (0, 1), got {p!r}")
    if not isinstance(df, int) or df < 1:
        raise ValueError(f"df must be a positive integer, got {df!r}")
    return _inverse(lambda x: _chi2_cdf(x, df), p, float(df))


@dataclass(frozen=True)
class SeedStats:
    """A number measured once per seed: the ``values`` (those of failed trainings
    included, where they enter), how many seeds had a training that ``failed`` (entered
    or left out) and how many recorded no value (``absent``). ``std`` is the sample
    standard deviation (``ddof=1``)."""

    values: tuple[float, ...]
    failed: int = 0
    absent: int = 0
    left_out: int = 0

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def seeds(self) -> int:
        return self.n + self.left_out + self.absent

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
    def failed_note(self) -> str:
        """``"1 of 3 seeds failed to train"``, with ``"left out"`` where their number is
        not given; empty when none failed."""
        note = failed_count(self.failed, self.seeds)
        if note and self.left_out:
            note += ", left out" if self.left_out == self.failed else f" ({self.left_out} left out)"
        return note


def seed_stats(values: Sequence) -> SeedStats:
    """Statistics of per-seed values (as :func:`per_seed` gives them): a
    :class:`~convnorm_book.results.records.FailedValue` enters and counts as failed,
    :data:`~convnorm_book.results.records.FAILED` counts as failed and left out, ``None``
    and NaN as absent."""
    left_out = sum(v is FAILED for v in values)
    entered = tuple(v for v in values if v is not FAILED and v is not None and math.isfinite(float(v)))
    failed = left_out + sum(isinstance(v, FailedValue) for v in entered)
    return SeedStats(tuple(float(v) for v in entered), failed, len(values) - len(entered) - left_out, left_out)


def scaled(value, scale: float):
    """``value * scale``, keeping what :func:`per_seed` marks (a failed training's value
    stays a :class:`~convnorm_book.results.records.FailedValue`)."""
    if value is None or value is FAILED:
        return value
    return FailedValue(float(value) * scale) if isinstance(value, FailedValue) else float(value) * scale


def per_seed(records: Records, path: Sequence[str | int], scale: float = 1.0, accuracy: bool = False) -> list:
    """The number at ``path`` of each seed's results (times ``scale``), as
    :func:`~convnorm_book.results.records.measured` reads it (``accuracy``: a failed
    training's accuracy enters, any other number of it is left out); ``None`` where absent."""
    return [scaled(measured(file.results, path, accuracy), scale) for file in records.files]


def collect(records: Records, path: Sequence[str | int], scale: float = 1.0, accuracy: bool = False) -> SeedStats:
    """:class:`SeedStats` of the number at ``path`` over the seeds."""
    return seed_stats(per_seed(records, path, scale, accuracy))


@dataclass(frozen=True)
class Band:
    """A curve over seeds: ``x``, the mean, the minimum and the maximum (as long as the
    shortest seed's curve), from ``n`` seeds, of which ``failed`` failed to train (their
    curves included); ``left_out`` diverged seeds, whose partial curves are not."""

    x: np.ndarray
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    n: int
    failed: int = 0
    left_out: int = 0

    @property
    def failed_note(self) -> str:
        """``"1 of 3 seeds failed to train"`` (with how many diverged curves are left out),
        or empty."""
        note = failed_count(self.failed, self.n + self.left_out)
        return note + (f" ({self.left_out} diverged, left out)" if self.left_out else "")


def curve_band(histories: Sequence, metric: str, x: str = "steps", scale: float = 1.0, failed: int = 0) -> Band:
    """Mean, minimum and maximum over seeds of ``history[metric]`` against ``history[x]``;
    a history given as :data:`~convnorm_book.results.records.FAILED` (a diverged training)
    is left out and counted; ``failed`` of the others failed to train.

    Raises:
        ValueError: if no history is left, or one lacks ``metric`` or ``x``.
    """
    finished = [h for h in histories if h is not FAILED]
    if not finished:
        raise ValueError("histories is empty" if not histories else "every history diverged")
    for h in finished:
        if metric not in h or x not in h:
            raise ValueError(f"history lacks {metric!r} or {x!r} (has {sorted(h)})")
    length = min(len(h[metric]) for h in finished)
    values = np.array([[np.nan if v is None else v for v in h[metric][:length]] for h in finished], float) * scale
    left_out = len(histories) - len(finished)
    return Band(np.asarray(finished[0][x][:length], float), np.nanmean(values, 0), np.nanmin(values, 0),
                np.nanmax(values, 0), len(histories) - left_out, failed + left_out, left_out)


def history_band(records: Records, method: str, metric: str, group: str | None = None, x: str = "steps",
                 scale: float = 1.0) -> Band:
    """:func:`curve_band` of ``history[metric]`` of one method's runs: the curves of
    trainings that failed to train are included and counted, those of diverged ones
    (partial) left out and counted."""
    path = records.schema.record_path(group, method)
    trainings = [lookup(file.results, path) for file in records.files]
    failed = sum(failure(t, classes(path)) is not None and not is_diverged(t) for t in trainings)
    return curve_band([FAILED if is_diverged(t) else t["history"] for t in trainings], metric, x, scale, failed)


@dataclass(frozen=True)
class Paired:
    """Per-seed differences ``a - b`` (paired by seed) over ``seeds`` seeds; of these, a
    training of ``a`` failed to train in ``failed_a`` seeds and one of ``b`` in
    ``failed_b``, and ``left_out`` seeds have no difference because a failed training does
    not give the number; the paper's ``a - b`` where it reports both, the unit, and
    ``context``: where they were measured (a noise rate, an epoch)."""

    a: str
    b: str
    differences: tuple[float, ...]
    paper: float | None = None
    unit: str = "points"
    context: str = ""
    seeds: int | None = None
    failed_a: int = 0
    failed_b: int = 0
    left_out: int = 0

    @property
    def label(self) -> str:
        return f"{self.a} − {self.b}" + (f", {self.context}" if self.context else "")

    @property
    def n(self) -> int:
        return len(self.differences)

    @property
    def over_seeds(self) -> SeedStats:
        """The differences as :class:`SeedStats` (mean, sample standard deviation, ...)."""
        seeds = self.n + self.left_out if self.seeds is None else self.seeds
        return SeedStats(self.differences, max(self.failed_a, self.failed_b), seeds - self.n - self.left_out,
                         self.left_out)

    @property
    def mean(self) -> float:
        return self.over_seeds.mean

    @property
    def standard_error(self) -> float | None:
        """:math:`\\operatorname{sd}(X) / \\sqrt n`; ``None`` below two seeds."""
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

    def holds(self, value: float) -> bool:
        """Whether the 95 % interval holds ``value`` (``False`` without an interval)."""
        return self.interval is not None and self.interval[0] <= value <= self.interval[1]

    @property
    def p_value(self) -> float | None:
        """The two-sided paired t-test's p-value for a mean difference of zero; ``None``
        below two seeds."""
        error = self.standard_error
        if error is None:
            return None
        t = self.mean / error if error > 0 else (math.inf if self.mean else 0.0)
        return min(1.0, 2 * t_upper_tail(abs(t), self.n - 1))

    @property
    def failed_note(self) -> str:
        """Which side's trainings failed and how they entered: ``"ConvNorm failed to train
        in 1 of 3 seeds (entered as measured)"``; empty when none failed."""
        seeds = self.n + self.left_out if self.seeds is None else self.seeds
        how = "left out" if self.left_out else "entered as measured"
        parts = [f"{name} failed to train in {count} of {seeds} seed{'s' if seeds > 1 else ''}"
                 for name, count in ((self.a, self.failed_a), (self.b, self.failed_b)) if count]
        return f"{' and '.join(parts)} ({how})" if parts else ""

    @property
    def failed_short(self) -> str:
        """:attr:`failed_note` in few words, for a table's cell: ``"failed: BN 1 of 3"``."""
        seeds = self.n + self.left_out if self.seeds is None else self.seeds
        parts = [f"{name} {count} of {seeds}" for name, count in ((self.a, self.failed_a), (self.b, self.failed_b))
                 if count]
        return f"failed to train: {', '.join(parts)}" + (" (left out)" if self.left_out else "") if parts else ""


def paired_values(a: Sequence, b: Sequence, label_a: str, label_b: str, **options) -> Paired:
    """The per-seed differences ``a[s] - b[s]`` (values as :func:`per_seed` gives them): a
    seed where either value is :data:`~convnorm_book.results.records.FAILED` is left out
    and counted, one where either is absent is left out; a failed training's
    :class:`~convnorm_book.results.records.FailedValue` enters and is counted."""
    pairs = list(zip(a, b))
    differences = tuple(float(x) - float(y) for x, y in pairs
                        if all(v is not None and v is not FAILED for v in (x, y)))
    failed = [sum(v is FAILED or isinstance(v, FailedValue) for v in side) for side in (a, b)]
    left_out = sum(FAILED in (x, y) for x, y in pairs)
    return Paired(label_a, label_b, differences, seeds=len(pairs), failed_a=failed[0], failed_b=failed[1],
                  left_out=left_out, **options)


def paired(records: Records, path_a: Sequence[str | int], path_b: Sequence[str | int], a: str, b: str,
           scale: float = 1.0, accuracy: bool = False, **options) -> Paired:
    """The per-seed differences ``value(path_a) - value(path_b)`` of ``records``
    (:func:`paired_values`; ``accuracy`` as for :func:`per_seed`)."""
    return paired_values(per_seed(records, path_a, scale, accuracy), per_seed(records, path_b, scale, accuracy),
                         a, b, **options)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's adjusted p-values, in the order given (see the module)."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted, running = [1.0] * len(p_values), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted
