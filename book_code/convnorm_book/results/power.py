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
"""
from __future__ import annotations

import math

import numpy as np

from .stats import t_quantile

#: the power a primary endpoint must reach at the paper's effect
TARGET_POWER = 0.8
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


def seeds_needed(effect: float, sd: float, alpha: float, target: float = TARGET_POWER) -> int | None:
    """The fewest seeds (from two) whose :func:`power` reaches ``target``; ``None`` if
    :data:`MOST_SEEDS` do not."""
    return next((n for n in range(2, MOST_SEEDS + 1) if power(effect, sd, n, alpha) >= target), None)
