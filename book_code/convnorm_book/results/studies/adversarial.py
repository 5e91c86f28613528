"""Adversarial robustness (the paper's Table 1): ConvNorm+BN resists white-box attacks best
while maintaining its clean accuracy."""
from __future__ import annotations

from convnorm_lab.experiments.catalog import ADVERSARIAL
from convnorm_lab.models.normalizations import BN, CONVNORM_BN, OCNN_BN, ONI_BN, SN_BN

from ..claims import DIFFERENCE, FROM_THE_TABLE, NON_INFERIOR, PARITY_MARGIN, Claim, Study
from ..quantities import Measured

STUDY = Study(
    ADVERSARIAL, "after adversarial training",
    claims=tuple(
        Claim(ADVERSARIAL.name, CONVNORM_BN, other, Measured(measure), kind, "Table 1 and its text: ConvNorm "
              "'outperforms other methods in terms of robustness under white-box attack while maintaining a good "
              "performance on clean test accuracy'", reason, sign=+1, margin=margin)
        for other in (SN_BN, BN, ONI_BN, OCNN_BN)
        for measure, kind, margin, reason in (
            ("clean", NON_INFERIOR, PARITY_MARGIN, "'maintaining' clean accuracy: not worse by more than the margin"),
            ("fgsm", DIFFERENCE, None, FROM_THE_TABLE),
            ("pgd{}", DIFFERENCE, None, FROM_THE_TABLE + "; an attack the paper did not run is claimed in the "
                                                         "direction of its text"))))
