"""The convergence study (the paper's Figure 4): adding ConvNorm trains faster and ends ahead."""
from __future__ import annotations

from convnorm_lab.experiments.catalog import CONVERGENCE
from convnorm_lab.models.normalizations import BN, CONVNORM, CONVNORM_BN, NONE

from ..claims import DIFFERENCE, Claim, Endpoint, Study
from ..quantities import AtEpoch, SpeedUp

_FIGURE_4 = ("the paper's Figure 4 and its text: adding ConvNorm 'consistently results in faster convergence, "
             "stable training ... and superior performance'")
_EARLY = "the figure is not tabulated; faster convergence means ahead after the first epoch"
_LATE = "the figure is not tabulated; superior performance means ahead after the last epoch"

STUDY = Study(
    CONVERGENCE, "in the convergence study",
    claims=tuple(
        claim
        for a, b in ((CONVNORM_BN, BN), (CONVNORM, NONE))
        for epoch, why in (("first", _EARLY), ("last", _LATE))
        for claim in (Claim(CONVERGENCE.name, a, b, AtEpoch("test_acc", epoch), DIFFERENCE, _FIGURE_4,
                            f"{why}, in test accuracy", sign=+1),
                      Claim(CONVERGENCE.name, a, b, AtEpoch("train_loss", epoch), DIFFERENCE, _FIGURE_4,
                            f"{why}, in training loss (ahead is lower)", sign=-1))),
    primary=(
        Endpoint("convergence speed", CONVERGENCE.name, "resnet18", CONVNORM_BN, BN, SpeedUp(),
                 "Figure 4 and its text: '1000 iterations of training with ConvNorm lead to generalization "
                 "performance comparable to 8000 iterations of training using BatchNorm' (in images seen, so that "
                 "batches compare)"),
    ))
