r"""What an interval says about a comparison's size, in words that mean what they say.

A comparison that is not a primary endpoint (:mod:`~convnorm_book.results.endpoints`) is
described, not tested: by its mean difference, its 95 % interval
:math:`[X_{\mathrm{low}}, X_{\mathrm{high}}]` (:class:`~convnorm_book.results.stats.Paired`),
and what that interval rules in and out against the paper's claim
(:class:`~convnorm_book.results.claims.Claim`). The rules:

* a value *is consistent with* the interval when it lies inside it, and is *ruled out*
  when it lies outside;
* our effect *agrees in size* with the paper's :math:`X_{\mathrm{paper}}` only when the
  interval holds it and is narrower than it,
  :math:`X_{\mathrm{high}} - X_{\mathrm{low}} < |X_{\mathrm{paper}}|`; a wider interval that holds it
  is merely consistent with it (and, where it holds zero too, with no effect at all);
* a claim with a size reads against its margin :math:`M`: "on par" is ruled in when the
  interval lies inside :math:`(-M, M)`; "maintaining" when it lies above :math:`-M`;
  "slightly worse" when it lies in :math:`[-M, 0)`;
* an interval wider than the range the quantity itself spans (100 points for an accuracy
  or a rate, the most queries an attack may spend) says nothing: the comparison is *not
  estimable* with so few seeds, and the per-seed differences are shown instead;
* numbers are rounded to what the data can resolve (:func:`decimals`): two significant
  digits of the interval's half-width, and never finer than one image of the evaluation
  set.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from .claims import DIFFERENCE, NO_CLAIM, NON_INFERIOR, PARITY, SLIGHT
from .stats import Paired
from .words import listing


def _digits(value: float, significant: int) -> int:
    """Decimals that show ``significant`` significant digits of ``value`` (none below 0)."""
    if not value or not math.isfinite(value):
        return 0
    return max(0, significant - 1 - math.floor(math.log10(abs(value))))


def decimals(half_width: float | None, resolution: float | None = None) -> int:
    """Decimals to print an effect with: two significant digits of its interval's
    ``half_width`` (the precision the seeds give it), and no more than the first
    significant digit of the data's ``resolution`` allows (one image of the evaluation
    set: 0.05 points on 2,000 images); one decimal where neither is known."""
    if half_width is None:
        return 1 if resolution is None else _digits(resolution, 1)
    wanted = _digits(half_width, 2)
    return wanted if resolution is None else min(wanted, _digits(resolution, 1))


def signed(value: float, places: int) -> str:
    """``value`` with its sign (a true minus sign) and ``places`` decimals, or more where
    those would print a value that is not zero as zero: −0.04 is "−0.04", never "+0.0",
    so that an interval's bound keeps its side of zero."""
    if value and not round(abs(value), places):
        places = _digits(value, 1)
    return ("−" if value < 0 else "+") + f"{abs(value):,.{places}f}"


def paper_places(value: float) -> int:
    """Decimals to print one of the paper's numbers (or a difference of two) as it prints
    them: two, or three where it has three (its condition ratios)."""
    return 2 if abs(round(value, 2) - value) < 1e-9 else 3


def places(c: Paired, resolution: float | None = None) -> int:
    """:func:`decimals` for the comparison ``c``."""
    return decimals(None if c.interval is None else (c.interval[1] - c.interval[0]) / 2, resolution)


def estimable(c: Paired, span: float | None) -> bool:
    """Whether ``c``'s interval says anything: it exists and is no wider than ``span``, the
    range the quantity itself covers (``None``: unbounded)."""
    return c.interval is not None and (span is None or c.interval[1] - c.interval[0] <= span)


def agrees_in_size(c: Paired) -> bool:
    """Whether our effect agrees in size with the paper's: the interval holds it and is
    narrower than it."""
    if c.paper is None or c.interval is None:
        return False
    low, high = c.interval
    return low <= c.paper <= high and high - low < abs(c.paper)


def effect(c: Paired, resolution: float | None = None, span: float | None = None) -> str:
    """Our effect in words: ``"+1.9 points (95 % interval +0.3 to +3.5, 3 seeds)"``; one
    seed's value without an interval; the per-seed differences where the interval is not
    estimable; the failed trainings and how they entered."""
    unit = f" {c.unit}" if c.unit else ""
    p = places(c, resolution)
    note = c.failed_note
    if not c.n:
        return "no pair of trained runs" + (f" ({note})" if note else "")
    if c.interval is None:
        return f"{signed(c.mean, p)}{unit} (one seed, so no interval{'; ' + note if note else ''})"
    if not estimable(c, span):
        return f"per seed {per_seed_text(c.differences, p, c.unit)} ({c.n} seeds{'; ' + note if note else ''})"
    low, high = c.interval
    if low == high:  # every seed gave the same difference: no spread to make an interval of
        return (f"{signed(c.mean, p)}{unit} in each of the {c.n} seeds (no spread, so no interval"
                f"{'; ' + note if note else ''})")
    return (f"{signed(c.mean, p)}{unit} (95 % interval {signed(low, p)} to {signed(high, p)}, {c.n} seeds"
            f"{'; ' + note if note else ''})")


def reading(c: Paired, kind: str, sign: int | None = None, margin: float | None = None,
            resolution: float | None = None, span: float | None = None) -> str:
    """What the interval of ``c`` rules in and out against a claim of ``kind`` (with its
    claimed ``sign`` and ``margin``) and the paper's difference ``c.paper`` (see the
    module); empty where there is no interval (one seed) or nothing to read in it (no
    difference in any seed), and "not estimable" where it is wider than ``span``."""
    if c.interval is None or c.interval == (0, 0):
        return ""
    p = places(c, resolution)
    unit = f" {c.unit}" if c.unit else ""
    low, high = c.interval
    if not estimable(c, span):
        return (f"not estimable with {c.n} seeds: the interval is {high - low:,.{min(p, 1)}f}{unit} wide, wider than "
                f"the {span:,.0f}{unit} the quantity itself spans")
    bounds = f"rules out effects below {signed(low, p)} and above {signed(high, p)}{unit}"
    if kind in (PARITY, NON_INFERIOR, SLIGHT):
        return _sized(kind, low, high, margin, f"{margin:g}{unit.removesuffix('s') if margin == 1 else unit}")
    if c.paper is not None and kind == DIFFERENCE:
        paper = f"the paper's {signed(c.paper, paper_places(c.paper))}"
        inside, zero = low <= c.paper <= high, low <= 0 <= high
        if agrees_in_size(c):
            return f"agrees in size with {paper} and rules out zero"
        if inside:
            return (f"consistent with {paper}" + (" and with zero; " + bounds if zero else
                                                  f"; rules out zero, and effects below {signed(low, p)} and above "
                                                  f"{signed(high, p)}{unit}"))
        if zero:
            return f"consistent with zero; rules out {paper}"
        size = ("of the opposite sign" if c.mean * c.paper < 0 else
                "larger" if abs(c.mean) > abs(c.paper) else "smaller")
        return f"rules out zero and {paper}: ours is {size}"
    side = "above" if low > 0 else "below" if high < 0 else None
    if side is None:
        return "consistent with zero; " + bounds
    if kind == NO_CLAIM or not sign:
        return f"{side} zero"
    return f"{side} zero, " + ("the side the paper claims" if (side == "above") == (sign > 0) else
                                "the side opposite to the paper's claim")


def _sized(kind: str, low: float, high: float, margin: float, shown: str) -> str:
    """The reading of a claim with a size (see :func:`reading`)."""
    if kind == PARITY:
        if -margin < low and high < margin:
            return f"within ±{shown}: on par, as the paper says (rules out differences beyond the margin)"
        if low >= margin or high <= -margin:
            return f"beyond ±{shown}: rules out 'on par'"
        return f"cannot tell whether the difference lies within ±{shown}"
    if kind == NON_INFERIOR:
        if low > -margin:
            return f"rules out a deficit beyond {shown}: 'maintaining', as the paper says"
        if high < -margin:
            return f"a deficit beyond {shown}: rules out 'maintaining'"
        return f"cannot rule out a deficit beyond {shown}"
    if high < -margin:
        return f"a drop beyond {shown}: more than 'slightly' worse"
    if low > 0:
        return "rules out a drop"
    if low >= -margin:
        return (f"a drop of at most {shown}: slightly worse, as the paper says" if high < 0 else
                f"rules out a drop beyond {shown}; consistent with no drop")
    return (f"a drop, which may exceed {shown}" if high < 0 else
            f"cannot tell whether there is a drop, nor whether it stays within {shown}")


def per_seed_text(values: Sequence[float], p: int, unit: str = "") -> str:
    """The per-seed differences in words, ``"+1.2, −0.4 and +3.0 points"``."""
    return listing(signed(v, p) for v in values) + (f" {unit}" if unit else "")
