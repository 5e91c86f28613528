"""What the paper claims for every comparison Part IV makes, declared once, with the size
its words give the claim.

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
(:mod:`~convnorm_book.results.endpoints`). Each is described by its interval and what
that interval rules in and out against the claim (:mod:`~convnorm_book.results.sizes`),
so a claim with a size ("slightly", "maintaining", "on par") carries its margin, declared
here with the reason for its value. Every number of the paper is read from
``paper_reference_values.json``, never typed here. A claim covers every group (noise
rate, training fraction, data set, network) of the records' preset, or only the groups
from ``at_least`` up.
"""
from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass

from convnorm.experiments import PRESETS, Preset

from .quantities import AtEpoch, LayerMean, Measured, Quantity
from .records import simba_iterations
from .reference import paper_mean
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


def parity_margin_basis(reference: dict) -> float:
    """Twice the standard deviation of a difference of two of the paper's data-scarcity
    runs, :math:`2\\sqrt2\\,\\tilde s` with :math:`\\tilde s` the median standard deviation
    of its Table 7: the basis of :data:`PARITY_MARGIN`."""
    cells = [cell for row in reference["tables"]["data_scarcity"]["rows"].values() for cell in row]
    return 2 * 2 ** 0.5 * statistics.median(cell[1] for cell in cells)


def slight_margin_basis(reference: dict) -> float:
    """Twice the paper's ConvNorm − BN of its Table 4 (the difference its text calls
    "slightly worse"), in points: the basis of :data:`SLIGHT_MARGIN`."""
    table = reference["tables"]["generalization"]
    row = table["rows"]["cifar10"]
    return 2 * abs(paper_mean(row[table["columns"].index("ConvNorm")]) - paper_mean(row[table["columns"].index("BN")]))


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
    on the paper's own number, computed from the reference values (``None`` when there is
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


def _affine_is_bn(reference: dict) -> str | None:
    """The paper's Table 5 cell "ConvNorm+BN without the affine kernel" repeats Table 4's
    cell for BN alone: its affine effect with BN is then ConvNorm+BN − BN."""
    without_affine = paper_mean(reference["tables"]["ablation"]["rows"]["without affine"][0])
    table4 = reference["tables"]["generalization"]
    bn = paper_mean(table4["rows"]["cifar10"][table4["columns"].index("BN")])
    if without_affine != bn:
        return None
    return (f"The paper's value for ConvNorm+BN without the affine kernel, {without_affine:.2f}, is the value its "
            f"{table4['label']} gives for BN alone, so the affine effect with BN it reports is in fact ConvNorm+BN "
            "against BN; ours is measured between ConvNorm+BN with and without the affine kernel.")


def _simba_budget(settings: Preset) -> str | None:
    """Queries and success rates count against the attack's budget: sizes compare only
    at the paper's number of iterations."""
    ours, paper = simba_iterations(settings), simba_iterations(PRESETS["paper"])
    return None if ours == paper else f"our attack runs {ours:,} iterations an image, the paper's {paper:,}"


_FIGURE_4 = ("the paper's Figure 4 and its text: adding ConvNorm 'consistently results in faster convergence, "
             "stable training ... and superior performance'")
_EARLY = "the figure is not tabulated; faster convergence means ahead after the first epoch"
_LATE = "the figure is not tabulated; superior performance means ahead after the last epoch"


def _convergence() -> tuple[Claim, ...]:
    claims = []
    for a, b in (("convnorm+bn", "bn"), ("convnorm", "none")):
        for epoch, why in (("first", _EARLY), ("last", _LATE)):
            claims += [Claim("convergence", a, b, AtEpoch("test_acc", epoch), DIFFERENCE, _FIGURE_4,
                             f"{why}, in test accuracy", sign=+1),
                       Claim("convergence", a, b, AtEpoch("train_loss", epoch), DIFFERENCE, _FIGURE_4,
                             f"{why}, in training loss (ahead is lower)", sign=-1)]
    return tuple(claims)


_TEST = Measured("test_acc")
_MAXIMUM = Measured("max_test_acc")
_TABLE = "the paper's table gives both numbers; the direction is that of its difference"

#: every comparison Part IV makes, by experiment
CLAIMS: dict[str, tuple[Claim, ...]] = {
    "convergence": _convergence(),
    "generalization": (
        Claim("generalization", "convnorm+bn", "bn", _TEST, DIFFERENCE, "Table 4 and its text: adding ConvNorm "
              "before BN 'can boost the performance'", _TABLE),
        Claim("generalization", "convnorm", "bn", _TEST, SLIGHT, "Table 4 and its text: ConvNorm alone "
              "'results in slightly worse test accuracy against BatchNorm'",
              "'slightly worse' is a drop of at most the margin, twice the paper's own difference", sign=-1,
              margin=SLIGHT_MARGIN),
        Claim("generalization", "convnorm", "none", _TEST, DIFFERENCE, "Table 4", _TABLE),
    ),
    "ablation": (
        Claim("ablation", "convnorm+bn, affine=on", "convnorm+bn, affine=off", _TEST, DIFFERENCE,
              "Table 5 and its text: 'both affine transform and batch norm provide an independent performance "
              "boost'", _TABLE, note=_affine_is_bn, label="affine kernel, with BN"),
        Claim("ablation", "convnorm, affine=on", "convnorm, affine=off", _TEST, DIFFERENCE, "Table 5", _TABLE,
              label="affine kernel, without BN"),
        Claim("ablation", "convnorm+bn, affine=on", "convnorm, affine=on", _TEST, DIFFERENCE, "Table 5", _TABLE,
              label="BN, with the affine kernel"),
        Claim("ablation", "convnorm+bn, affine=off", "convnorm, affine=off", _TEST, DIFFERENCE, "Table 5", _TABLE,
              label="BN, without the affine kernel"),
    ),
    "adversarial": tuple(
        Claim("adversarial", "convnorm+bn", other, Measured(measure), kind, "Table 1 and its text: ConvNorm "
              "'outperforms other methods in terms of robustness under white-box attack while maintaining a good "
              "performance on clean test accuracy'", reason, sign=+1, margin=margin)
        for other in ("sn+bn", "bn", "oni+bn", "ocnn+bn")
        for measure, kind, margin, reason in (
            ("clean", NON_INFERIOR, PARITY_MARGIN, "'maintaining' clean accuracy: not worse by more than the margin"),
            ("fgsm", DIFFERENCE, None, _TABLE), ("pgd{}", DIFFERENCE, None,
                                                  _TABLE + "; an attack the paper did not run is claimed in the "
                                                           "direction of its text"))),
    "simba": tuple(
        Claim("simba", "convnorm", other, quantity, DIFFERENCE, "Table 2 and its text: 'ConvNorm resists the "
              "most queries, and ... SimBA has the lowest attack success rate for ConvNorm'",
              _TABLE + "; query counts and success rates depend on the attack's budget, so their sizes are "
                       "compared only at the paper's number of iterations", size_check=_simba_budget)
        for other in ("sn", "oni", "ocnn") for quantity in (Measured("queries", "queries"), Measured("success"))),
    "label-noise": (
        Claim("label-noise", "convnorm+bn", "bn", _MAXIMUM, DIFFERENCE, "Table 6 and its caption: 'adding ConvNorm "
              "and BatchNorm together makes a network more robust to label noise'",
              _TABLE + "; a rate the paper did not run is claimed in the direction of its caption", sign=+1),
        Claim("label-noise", "convnorm", "none", _MAXIMUM, DIFFERENCE, "Table 6 and its text: ConvNorm improves "
              "on the vanilla network 'for the most cases'",
              _TABLE + " (at 80 % it is negative); a rate the paper did not run carries no claim"),
        *(Claim("label-noise", "convnorm+bn", other, _MAXIMUM, DIFFERENCE, "Figure 3 (left) and its text: "
                "ConvNorm 'outperforms the others on most noisy rates by a hefty margin when the noise level is "
                "high'", "the figure is not tabulated and the text does not say at which low rates; only the high "
                "rates (half of the labels or more) are claimed", sign=+1, at_least=0.5)
          for other in ("sn+bn", "oni+bn", "ocnn+bn")),
    ),
    "data-scarcity": (
        Claim("data-scarcity", "convnorm+bn", "bn", _TEST, DIFFERENCE, "Table 7 and its caption: 'adding ConvNorm "
              "and BatchNorm together helps improve data efficiency'", _TABLE),
        Claim("data-scarcity", "convnorm", "none", _TEST, DIFFERENCE, "Table 7 and its text: ConvNorm improves on "
              "the vanilla network 'for the most cases'", _TABLE),
        *(Claim("data-scarcity", "convnorm+bn", other, _TEST, PARITY, "Figure 3 (right) and its text: ConvNorm "
                "'achieves on par performance compared with baseline methods'",
                "the paper's words are 'on par': the difference within the margin (its appendix speaks of a boost "
                "over the baselines, without numbers)", margin=PARITY_MARGIN)
          for other in ("sn+bn", "oni+bn", "ocnn+bn")),
    ),
    "conditioning": (
        Claim("conditioning", "convnorm", "none", Measured("rho"), DIFFERENCE,
              "Table 9: the paper's ρ (this book's R_κ) of ConvNorm above 1",
              "R_κ of the vanilla network is 1 by definition; the paper's value for ConvNorm is above it",
              sign=+1),
        *(Claim("conditioning", "convnorm", other, Measured("rho"), DIFFERENCE, "Table 9 and its text: 'ConvNorm "
                "shows the best result in terms of improvement of layer-wise condition number'", _TABLE)
          for other in ("sn", "oni", "ocnn")),
        Claim("conditioning", "convnorm", "none", LayerMean("spectral_norm"), DIFFERENCE, "Figure 2 and its "
              "caption: ConvNorm 'reduces the layer-wise spectral norm'", "the figure is not tabulated; the "
              "claim is tested on the mean over the layers of each network", sign=-1),
    ),
}
