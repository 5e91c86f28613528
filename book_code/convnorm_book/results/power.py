r"""How many seeds a paired comparison needs to find an effect: the power of the paired
t-test, exactly (the non-central t distribution), and the fewest seeds that reach a power.

With :math:`N_{\mathrm{seed}}` seeds whose differences have standard deviation
:math:`\sigma` and true mean :math:`\delta`, the statistic
:math:`\bar X / (\operatorname{sd}(X) / \sqrt{N_{\mathrm{seed}}})` follows the non-central
t distribution with :math:`\nu = N_{\mathrm{seed}} - 1` degrees of freedom and
non-centrality :math:`\lambda = \delta \sqrt{N_{\mathrm{seed}}} / \sigma`:
:math:`T' = (Z + \lambda) / \sqrt{V / \nu}` with :math:`Z` standard normal and :math:`V`
chi-squared with :math:`\nu` degrees of freedom, independent. The two-sided test at level
:math:`\alpha` rejects when :math:`|T'| > c`, :math:`c = \mathrm t_{1-\alpha/2,\,\nu}`, so its
power is

.. math::

    \Pr(|T'| > c) = \mathbb E_V\Bigl[\Phi\bigl(\lambda - c\sqrt{V/\nu}\bigr)
    + \Phi\bigl(-\lambda - c\sqrt{V/\nu}\bigr)\Bigr],

an integral over :math:`V` computed here by quadrature (in :math:`u = \sqrt V`, where the
chi-squared density is smooth), with no dependency beyond the standard library and numpy.

The power rests on :math:`\sigma`, which is known only from a few seeds. A plan takes it at
an upper confidence bound (:func:`sd_upper_bound`), not at its estimate: with
:math:`\nu` degrees of freedom behind an estimate :math:`s`, :math:`\nu s^2 / \sigma^2` is
chi-squared with :math:`\nu` degrees of freedom, so

.. math::

    \sigma \le \sigma_{\mathrm{up}} = s \sqrt{\nu / \chi^2_{1-c,\,\nu}}

with one-sided confidence :math:`c` (:math:`\chi^2_{q,\nu}` its :math:`q` quantile).
"""
from __future__ import annotations

import math

import numpy as np

from .stats import chi2_quantile, t_quantile

#: the power a primary endpoint must reach at the paper's effect
TARGET_POWER = 0.8
#: the one-sided confidence of the upper bound on a spread that a plan takes (:func:`sd_upper_bound`).
#: 80 %, not 90 or 95 %: the spreads rest on two to four seeds, where the 90 % bound is 2 to 8
#: times the estimate and the 80 % one 1.6 to 4 times (one to four degrees of freedom); a plan
#: already takes the largest of its recorded spreads and Holm's strictest level, and 80 % matches
#: the power asked, so that a plan holds its power in four cases out of five of its spread
SPREAD_CONFIDENCE = 0.8
#: the most seeds a plan may ask of one endpoint
MOST_SEEDS = 40
_POINTS = 4001


def _normal_cdf(x: np.ndarray) -> np.ndarray:
    return 0.5 * np.array([math.erfc(-v / math.sqrt(2)) for v in x.ravel()]).reshape(x.shape)


def _trapezoid(values: np.ndarray, u: np.ndarray) -> float:
    return float(np.sum((values[1:] + values[:-1]) * np.diff(u)) / 2)


def power(effect: float, sd: float, seeds: int, alpha: float) -> float:
    """The power of the two-sided paired t-test at level ``alpha`` with ``seeds`` seeds,
    for a true mean difference ``effect`` and a standard deviation ``sd`` of the per-seed
    differences (see the module). One for a nonzero effect without spread.

    Raises:
        ValueError: for fewer than two seeds, a negative ``sd`` or ``alpha`` outside (0, 1).
    """
    if seeds < 2 or sd < 0 or not 0 < alpha < 1:
        raise ValueError(f"need seeds >= 2, sd >= 0 and 0 < alpha < 1, got {seeds}, {sd}, {alpha}")
    if sd == 0:
        return 1.0 if effect else alpha
    df, shift = seeds - 1, effect * math.sqrt(seeds) / sd
    critical = t_quantile(1 - alpha / 2, df)
    top = math.sqrt(df + 12 * math.sqrt(2 * df) + 60)  # sqrt V far in the chi-squared tail
    u = np.linspace(0.0, top, _POINTS)
    density = np.exp((df - 1) * np.log(np.maximum(u, 1e-300)) - u ** 2 / 2 - (df / 2 - 1) * math.log(2)
                     - math.lgamma(df / 2))  # the density of sqrt V, chi-squared with df degrees
    scale = critical * u / math.sqrt(df)
    rejected = _normal_cdf(shift - scale) + _normal_cdf(-shift - scale)
    return float(_trapezoid(rejected * density, u) / _trapezoid(density, u))


def sd_upper_bound(sd: float, df: int, confidence: float = SPREAD_CONFIDENCE) -> float:
    """The one-sided upper confidence bound on the standard deviation :math:`\\sigma` whose
    estimate ``sd`` has ``df`` degrees of freedom, at ``confidence``:
    :math:`s \\sqrt{\\nu / \\chi^2_{1-c,\\,\\nu}}` (see the module). It assumes normal
    differences, as the t-test does.

    Raises:
        ValueError: for a negative ``sd``, ``df`` below one or ``confidence`` outside (0, 1).
    """
    if sd < 0 or not 0 < confidence < 1 or not isinstance(df, int) or df < 1:
        raise ValueError(f"need sd >= 0, an integer df >= 1 and 0 < confidence < 1, got {sd}, {df}, {confidence}")
    return sd * math.sqrt(df / chi2_quantile(1 - confidence, df))


def seeds_needed(effect: float, sd: float, alpha: float, target: float = TARGET_POWER) -> int | None:
    """The fewest seeds (from two) whose :func:`power` reaches ``target``; ``None`` if
    :data:`MOST_SEEDS` do not."""
    return next((n for n in range(2, MOST_SEEDS + 1) if power(effect, sd, n, alpha) >= target), None)
